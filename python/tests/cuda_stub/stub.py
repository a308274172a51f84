"""Reads what the stub CUDA driver (stub_driver.c) recorded.

Use it in the process that loaded the stub, e.g.
``StubDriver(lowerline.runtime.cuda.load_driver())`` with ``$LOWERLINE_CUDA_DRIVER``
set to the stub; the ctypes structures mirror the C ones.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from enum import IntEnum

MAX_NAME = 256
MAX_PARAMS = 512  # STUB_MAX_PARAMS: more are counted, not recorded


class ImageKind(IntEnum):
    """What a module image was, as the stub told it from its first bytes."""

    NONE = 0  # no image loaded (since the last reset)
    PTX = 1  # text starting with `//` or `.version`
    FATBIN = 2  # magic 0xBA55ED50
    CUBIN = 3  # ELF
    UNKNOWN = 4  # rejected with CUDA_ERROR_INVALID_IMAGE


class _Launch(ctypes.Structure):
    _fields_ = [
        ("kernel", ctypes.c_char * MAX_NAME),
        ("grid", ctypes.c_uint * 3),
        ("block", ctypes.c_uint * 3),
        ("shared_bytes", ctypes.c_uint),
        ("image_kind", ctypes.c_int),
        ("param_count", ctypes.c_int),
        ("param_sizes", ctypes.c_int * MAX_PARAMS),
        ("param_values", ctypes.c_ulonglong * MAX_PARAMS),
        ("param_on_device", ctypes.c_ubyte * MAX_PARAMS),
    ]


_COUNTER_NAMES = (
    "allocations",
    "frees",
    "bytes_allocated",
    "bytes_freed",
    "live_bytes",
    "host_to_device",
    "device_to_host",
    "device_to_device",
    "host_to_host",
    "modules_loaded",
    "modules_unloaded",
)


class _Counters(ctypes.Structure):
    _fields_ = [(name, ctypes.c_longlong) for name in _COUNTER_NAMES]


@dataclass(frozen=True)
class Launch:
    """One cuLaunchKernel (or cuLaunchKernelEx)."""

    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int
    image_kind: ImageKind  # of the module the kernel came from
    # Parameters, read from the kernel's PTX signature; -1 and () when the
    # module was a fatbin or cubin, whose signature the stub does not read.
    param_count: int
    param_sizes: tuple[int, ...]
    # The first bytes of each parameter of at most 8 bytes (0 for larger ones).
    param_values: tuple[int, ...]
    # Whether each parameter held an address inside a live device allocation.
    param_on_device: tuple[bool, ...]


@dataclass(frozen=True)
class Counters:
    """Device memory and copies (bytes), and module loads, since the last reset."""

    allocations: int
    frees: int
    bytes_allocated: int
    bytes_freed: int
    live_bytes: int  # allocated and not freed, reset or not
    host_to_device: int
    device_to_host: int
    device_to_device: int
    host_to_host: int
    modules_loaded: int
    modules_unloaded: int


def _launch(raw: _Launch) -> Launch:
    known = max(0, min(raw.param_count, MAX_PARAMS))
    return Launch(
        kernel=raw.kernel.decode(),
        grid=tuple(raw.grid),
        block=tuple(raw.block),
        shared_bytes=raw.shared_bytes,
        image_kind=ImageKind(raw.image_kind),
        param_count=raw.param_count,
        param_sizes=tuple(raw.param_sizes[:known]),
        param_values=tuple(raw.param_values[:known]),
        param_on_device=tuple(bool(flag) for flag in raw.param_on_device[:known]),
    )


class StubDriver:
    """The records of a loaded stub driver library."""

    def __init__(self, library: ctypes.CDLL):
        self._lib = library
        self._lib.stub_launch_count.restype = ctypes.c_longlong
        self._lib.stub_launch.argtypes = [ctypes.c_longlong, ctypes.POINTER(_Launch)]
        self._lib.stub_is_device_pointer.argtypes = [ctypes.c_ulonglong]
        self._lib.stub_reset.restype = None
        self._lib.stub_counters.restype = None
        if self._lib.stub_max_params() != MAX_PARAMS:
            raise RuntimeError("stub.py and stub_driver.c disagree on STUB_MAX_PARAMS")

    def launches(self) -> list[Launch]:
        raw = _Launch()
        result = []
        for i in range(self._lib.stub_launch_count()):
            if self._lib.stub_launch(i, ctypes.byref(raw)) == 0:
                result.append(_launch(raw))
        return result

    def counters(self) -> Counters:
        raw = _Counters()
        self._lib.stub_counters(ctypes.byref(raw))
        return Counters(*(getattr(raw, name) for name in _COUNTER_NAMES))

    def image_kind(self) -> ImageKind:
        """The kind of the last image a module was loaded from."""
        return ImageKind(self._lib.stub_image_kind())

    def is_device_pointer(self, pointer: int) -> bool:
        return bool(self._lib.stub_is_device_pointer(pointer))

    def reset(self) -> None:
        """Forget launches, counters (but live_bytes) and the last image kind."""
        self._lib.stub_reset()
