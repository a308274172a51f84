"""The CUDA driver, found and started before a compiled GPU library is loaded.

A compiled GPU model is a shared library whose host code calls the ``mgpu*``
functions of MLIR's ``libmlir_cuda_runtime.so``, which needs the CUDA driver
``libcuda.so.1``. Its kernels are loaded by a constructor as soon as the
library is opened, so the driver must be there, and working, before that.

``load_driver()`` opens the driver with ``RTLD_GLOBAL``: its soname is then
taken, and the runtime's ``libcuda.so.1`` dependency binds to it even when it
came from another file. ``$LOWERLINE_CUDA_DRIVER`` names such a file (the
tests' stub driver); without it the system's ``libcuda.so.1`` is used. The
first driver opened in a process stays bound to it.

A GPU library's destructor unloads its kernel modules (``cuModuleUnload``).
Left to the end of the process, it runs after the driver has shut down (the
driver's exit handler, registered by ``cuInit``, runs before any library
destructor), so every unload fails and MLIR's runtime prints
``'cuModuleUnload(module)' failed with '<unknown>'`` once per kernel module
(seen on an H100: 159 lines after 15 models). ``load_library`` therefore
closes the libraries it opened from Python's ``atexit``, which runs first,
while the driver still works.

A compiled function's device buffers (its weights, uploaded once, and the
scratch of its calls: ``lowerline.runtime.native.GpuFunction``) come from
``DeviceMemory``: allocated in the primary context, the one MLIR's runtime
uses, and freed by their owner, or at exit by ``close_libraries`` before it
closes the libraries, while the driver still works.
"""

from __future__ import annotations

import _ctypes
import atexit
import ctypes
import functools
import os
import threading
from collections.abc import Callable

DRIVER_ENV = "LOWERLINE_CUDA_DRIVER"
SYSTEM_DRIVER = "libcuda.so.1"

_NO_DRIVER = (
    "no CUDA driver (libcuda.so.1) on this machine: compiled GPU modules can be built and "
    "inspected here but run only where an NVIDIA driver and device exist; set "
    f"{DRIVER_ENV} to use another driver library"
)

# The driver opened in this process: (path, handle). Set once.
_loaded: tuple[str, ctypes.CDLL] | None = None

# GPU libraries opened by load_library (dlopen handles), closed at exit.
_libraries: list[int] = []
_libraries_lock = threading.Lock()
_closed = False


class NoCudaDevice(RuntimeError):
    """No usable CUDA driver or device: GPU code cannot run here."""


class GpuFault(RuntimeError):
    """The device failed while compiled code ran (a kernel's illegal address,
    say): the call's outputs are not computed and the CUDA context is
    unusable for the rest of the process."""


class GpuOutOfMemory(RuntimeError):
    """The device has too little free memory for a compiled function's
    buffers (its weights, or the scratch of one more concurrent call)."""


CUDA_ERROR_OUT_OF_MEMORY = 2


def _driver_path() -> str:
    return os.environ.get(DRIVER_ENV) or SYSTEM_DRIVER


def _open(path: str) -> ctypes.CDLL:
    try:
        return ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    except OSError as error:
        if path == SYSTEM_DRIVER:
            raise NoCudaDevice(_NO_DRIVER) from None
        message = f"cannot load the CUDA driver {path} (from ${DRIVER_ENV}): {error}"
        raise NoCudaDevice(message) from None


def _error_name(driver: ctypes.CDLL, code: int) -> str:
    name = ctypes.c_char_p()
    if driver.cuGetErrorName(code, ctypes.byref(name)) != 0 or not name.value:
        return f"CUDA error {code}"
    return f"{name.value.decode()} ({code})"


def _check(driver: ctypes.CDLL, path: str, call: str, code: int) -> None:
    if code != 0:
        raise NoCudaDevice(f"CUDA driver {path}: {call} failed with {_error_name(driver, code)}")


def _start(driver: ctypes.CDLL, path: str) -> None:
    """cuInit, then make sure there is a device to run on."""
    try:
        init, get_count = driver.cuInit, driver.cuDeviceGetCount
    except AttributeError:
        raise NoCudaDevice(f"{path} is not a CUDA driver: it has no cuInit") from None
    init.argtypes = [ctypes.c_uint]
    _check(driver, path, "cuInit", init(0))
    count = ctypes.c_int()
    _check(driver, path, "cuDeviceGetCount", get_count(ctypes.byref(count)))
    if count.value == 0:
        raise NoCudaDevice(f"CUDA driver {path} found no CUDA device")


def load_driver() -> ctypes.CDLL:
    """The started CUDA driver, opened globally; raises NoCudaDevice.

    Loaded and started once per process. A failure is not remembered, so a
    later call tries again (after ``$LOWERLINE_CUDA_DRIVER`` is set, say).
    """
    global _loaded
    path = _driver_path()
    if _loaded is not None:
        if _loaded[0] != path:
            # libmlir_cuda_runtime.so can bind to one libcuda.so.1 only.
            raise NoCudaDevice(
                f"the CUDA driver {_loaded[0]} is already loaded in this process; "
                f"{path} cannot replace it"
            )
        return _loaded[1]
    driver = _open(path)
    _start(driver, path)
    _loaded = (path, driver)
    return driver


# The device's primary context, retained once: the one MLIR's runtime uses.
_context: ctypes.c_void_p | None = None


def _primary_context(driver: ctypes.CDLL) -> ctypes.c_void_p:
    global _context
    if _context is None:
        device, context = ctypes.c_int(), ctypes.c_void_p()
        path = _loaded[0] if _loaded else SYSTEM_DRIVER
        _check(driver, path, "cuDeviceGet", driver.cuDeviceGet(ctypes.byref(device), 0))
        code = driver.cuDevicePrimaryCtxRetain(ctypes.byref(context), device)
        _check(driver, path, "cuDevicePrimaryCtxRetain", code)
        driver.cuCtxPushCurrent_v2.argtypes = [ctypes.c_void_p]
        _context = context
    return _context


def _in_context(driver: ctypes.CDLL, call: Callable[[], int]) -> int:
    """``call()`` (a driver call's CUresult) with the primary context current."""
    driver.cuCtxPushCurrent_v2(_primary_context(driver))
    try:
        return call()
    finally:
        driver.cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p()))


def check_faults(what: str) -> None:
    """Raise ``GpuFault`` if the device holds an error after ``what`` ran.

    MLIR's CUDA runtime prints a failed driver call on stderr and goes on: a
    kernel that faults makes the stream synchronization and the copies back
    fail, and the call would return outputs never written. A kernel's fault
    is sticky, so ``cuCtxSynchronize`` on the context still returns it (the
    stream is synchronized already: this costs a few driver calls)."""
    driver = load_driver()
    code = _in_context(driver, driver.cuCtxSynchronize)
    if code != 0:
        raise GpuFault(
            f"the GPU failed while running {what}: {_error_name(driver, code)}; "
            "the CUDA context is unusable now, restart the process"
        )


def device_status() -> str | None:
    """None when GPU code can run here, else why not (for test skips)."""
    try:
        load_driver()
    except NoCudaDevice as error:
        return str(error)
    return None


def require_device() -> None:
    """Raise NoCudaDevice, saying why, unless GPU code can run here."""
    load_driver()


def load_library(path: str | os.PathLike[str]) -> ctypes.CDLL:
    """Open a compiled GPU library, after the driver it needs.

    Opening it runs its constructors, which load its kernels onto the device;
    it is closed (its kernels unloaded) when the interpreter exits.
    """
    load_driver()
    with _libraries_lock:
        if _closed:
            raise NoCudaDevice("the process is exiting: its GPU libraries are closed")
        library = ctypes.CDLL(os.fspath(path))
        if not _libraries:
            atexit.register(close_libraries)
        _libraries.append(library._handle)
    return library


def close_libraries() -> None:
    """Free every ``DeviceMemory``'s buffers, then close every library
    ``load_library`` opened, newest first: their destructors unload their
    kernels while the driver still runs. Calling one of their functions
    afterwards is an error (``closed()`` says so)."""
    global _closed
    with _libraries_lock:
        _closed = True
        owners = list(_memories)
    for owner in owners:  # release() takes the lock
        owner.release()
    with _libraries_lock:
        while _libraries:
            _ctypes.dlclose(_libraries.pop())


def closed() -> bool:
    """Whether the GPU libraries were closed (the interpreter is exiting)."""
    return _closed


# DeviceMemory objects holding buffers: freed by close_libraries.
_memories: set[DeviceMemory] = set()


class DeviceMemory:
    """Device buffers of one owner (``what``: named in errors), allocated
    one by one and freed together by ``release()``, which ``close_libraries``
    calls at exit for whatever is still held. Thread-safe."""

    def __init__(self, what: str):
        self.what = what
        self._pointers: list[int] = []
        self._lock = threading.Lock()

    def allocate(self, size: int, purpose: str) -> int:
        """A device buffer of ``size`` bytes (256-byte aligned, as
        ``cuMemAlloc`` gives); 0, no buffer, for 0 bytes. Raises
        ``GpuOutOfMemory`` when the device has no room, ``GpuFault`` when
        the context is broken."""
        if size == 0:
            return 0
        driver = load_driver()
        pointer = ctypes.c_uint64()
        with _libraries_lock:
            if _closed:
                raise NoCudaDevice("the process is exiting: its GPU memory is freed")
            _memories.add(self)
        allocate = driver.cuMemAlloc_v2
        code = _in_context(driver, lambda: allocate(ctypes.byref(pointer), ctypes.c_size_t(size)))
        if code == CUDA_ERROR_OUT_OF_MEMORY:
            raise GpuOutOfMemory(
                f"the GPU has no {size} bytes free for the {purpose} of {self.what} "
                f"({_error_name(driver, code)})"
            )
        if code != 0:
            raise GpuFault(
                f"allocating {size} bytes for the {purpose} of {self.what} failed with "
                f"{_error_name(driver, code)}"
            )
        with self._lock:
            self._pointers.append(pointer.value)
        return pointer.value

    def release(self) -> None:
        """Free every buffer (again: nothing). Not while a call uses them."""
        with self._lock:
            pointers, self._pointers = self._pointers, []
        with _libraries_lock:
            _memories.discard(self)
        if not pointers:
            return
        driver = load_driver()
        free = driver.cuMemFree_v2
        free.argtypes = [ctypes.c_uint64]
        for pointer in pointers:
            # A failure (a context a fault broke) leaves nothing to do.
            _in_context(driver, functools.partial(free, pointer))
