"""Call a compiled shared library on torch tensors, without copies.

The CPU pipeline gives every function a C wrapper ``_mlir_ciface_<name>``
taking one pointer per memref argument, tensor results turned into trailing
out-parameters. A memref descriptor is ``{allocated, aligned, offset,
sizes[rank], strides[rank]}`` (no sizes or strides at rank 0); the
descriptors here point straight at the tensors' storage.

Every library also holds ``runtime_support.c``, whose counters see each
allocation the code makes; ``NativeFunction.memory()`` reads them.

The CPU pipeline places the entry function's intermediate buffers in one
arena (``lowerline-plan-arena``), a trailing ``memref<?xi8>`` argument of a
size fixed when compiling. Each loaded function keeps an ``ArenaPool``: a
call takes a free arena (or makes one when all are in use, so the pool grows
to the number of concurrent callers) and gives it back, so that steady-state
calls allocate nothing and concurrent calls never share an arena.

Multithreaded code runs one OpenMP parallel region per parallel loop nest,
back to back within a call. Waking sleeping workers for each region costs
about 100 us here (measured: the encoder took 7.2 ms a call with
``KMP_BLOCKTIME=0`` and 1.5 ms with 1 ms), so each calling thread sets its
team's block time to ``LOWERLINE_OMP_BLOCKTIME`` milliseconds (default 1):
workers spin between the regions of a call and sleep soon after it.
``LOWERLINE_OMP_BLOCKTIME=env`` leaves ``KMP_BLOCKTIME`` / ``OMP_WAIT_POLICY``
in charge.

A team is only as fast as its latest thread: when another thread keeps a
core busy, the worker on that core runs in the scheduler's slices of
milliseconds, and the calling thread waits for it at the end of every
region. Each call of multithreaded code therefore caps its teams at the
cores no other thread runs on (``lowerline.runtime.teams``: a /proc sample
at most every 100 ms, applied by ``runtime_support.c``'s
``__kmpc_push_num_threads``); ``LOWERLINE_OMP_TEAMS=fixed`` turns that off.

``LOWERLINE_OMP_DYNAMIC=1`` makes each calling thread also set
``omp_set_dynamic(1)`` (default 0; ``env``: ``OMP_DYNAMIC`` decides):
Intel's OpenMP runtime then sizes each team by its ``load_balance`` mode,
counting the machine's running threads in /proc at most once a second
(``KMP_LOAD_BALANCE_INTERVAL``) and keeping the count for that long. Only
the compiled code's own runtime (``libiomp5``) is told; torch's threads run
on its own OpenMP runtime (``libgomp``) and keep their settings. It is not
the default: a count taken while torch's pool was still spinning after an
eager op shrank the team to one thread for a whole second (measured, quiet,
eager and lowerline in one process: bert_layer at batch 8 4.1 ms with
dynamic teams, 2.6 ms without; bench/busy-core.md).
"""

from __future__ import annotations

import ctypes
import itertools
import os
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, Generic, TypeVar

import torch

from lowerline.errors import runtime_check_error
from lowerline.runtime import amx, cuda, teams
from lowerline.runtime.sizes import SizeFunction


@cache
def _descriptor_class(rank: int) -> type[ctypes.Structure]:
    fields = [
        ("allocated", ctypes.c_void_p),
        ("aligned", ctypes.c_void_p),
        ("offset", ctypes.c_int64),
    ]
    if rank:
        fields += [("sizes", ctypes.c_int64 * rank), ("strides", ctypes.c_int64 * rank)]
    return type(f"MemRef{rank}D", (ctypes.Structure,), {"_fields_": fields})


def descriptor(tensor: torch.Tensor) -> ctypes.Structure:
    """A memref descriptor viewing ``tensor`` (which must be contiguous)."""
    rank = tensor.dim()
    pointer = tensor.data_ptr()
    if rank == 0:
        return _descriptor_class(0)(pointer, pointer, 0)
    cls = _descriptor_class(rank)
    return cls(
        pointer,
        pointer,
        0,
        (ctypes.c_int64 * rank)(*tensor.shape),
        (ctypes.c_int64 * rank)(*tensor.stride()),
    )


def byte_descriptor(pointer: int, size: int) -> ctypes.Structure:
    """A ``memref<?xi8>`` descriptor of ``size`` bytes at ``pointer`` (which
    may be device memory: it is never read here)."""
    one = ctypes.c_int64 * 1
    return _descriptor_class(1)(pointer, pointer, 0, one(size), one(1))


BLOCKTIME_ENV = "LOWERLINE_OMP_BLOCKTIME"
DYNAMIC_ENV = "LOWERLINE_OMP_DYNAMIC"


def omp_blocktime_ms() -> int | None:
    """The block time the runtime sets (ms), or None to leave OpenMP's own."""
    value = os.environ.get(BLOCKTIME_ENV, "1")
    if value == "env":
        return None
    if not value.isdigit():
        raise ValueError(f"{BLOCKTIME_ENV} takes milliseconds (an integer >= 0) or 'env'")
    return int(value)


def omp_dynamic() -> bool | None:
    """Whether the runtime lets OpenMP shrink busy teams, or None to leave
    ``OMP_DYNAMIC`` in charge."""
    value = os.environ.get(DYNAMIC_ENV, "0")
    if value not in ("0", "1", "env"):
        raise ValueError(f"{DYNAMIC_ENV} takes 1 (teams shrink on a busy machine), 0 or 'env'")
    return None if value == "env" else value == "1"


class _OmpSettings:
    """The calling thread's OpenMP settings, set once for each thread that
    calls into a library (both are settings of the thread, for the teams it
    starts): the block time, and dynamic teams (``omp_set_dynamic``)."""

    def __init__(self, lib: ctypes.CDLL):
        # dlsym on the library's handle also searches its dependencies: the
        # OpenMP runtime is there only if the code is multithreaded.
        self._calls: list[tuple[Callable[[ctypes.c_int], object], int]] = []
        if hasattr(lib, "kmp_set_blocktime") and (ms := omp_blocktime_ms()) is not None:
            self._calls.append((lib.kmp_set_blocktime, ms))
        if hasattr(lib, "omp_set_dynamic") and (on := omp_dynamic()) is not None:
            self._calls.append((lib.omp_set_dynamic, int(on)))
        self._done = threading.local()

    def ensure(self) -> None:
        if not self._calls or getattr(self._done, "set", False):
            return
        for function, value in self._calls:
            function(ctypes.c_int(value))
        self._done.set = True


@dataclass(frozen=True)
class MemoryStats:
    """What the code allocated during a call (its outputs are the caller's),
    and the arena its planned buffers live in."""

    peak_bytes: int  # largest total of intermediate buffers allocated at once
    allocations: int  # buffers allocated
    live_bytes: int  # still allocated after the call: 0 unless the code leaks
    arena_bytes: int = 0  # the arena each call uses (planned when compiling)
    lower_bound_bytes: int = 0  # the most planned bytes live at once: no arena is smaller

    def __str__(self) -> str:
        return f"{self.peak_bytes / 1024:.1f} KiB in {self.allocations} allocations"

    def arena(self) -> str:
        return (
            f"{self.arena_bytes / 1024:.1f} KiB "
            f"(liveness lower bound {self.lower_bound_bytes / 1024:.1f} KiB)"
        )


# protocol.ARENA_ALIGNMENT: lowerline-plan-arena's offsets assume it (this
# module runs in the user's process, which must not import MLIR).
ARENA_ALIGNMENT = 64


T = TypeVar("T")


class Pool(Generic[T]):
    """Buffers of one function for its calls: ``take`` one for a call,
    ``give`` it back after; ``new()`` makes one when all are in use, so the
    pool grows to the most calls that ran at once and no two calls share
    one. ``watch``, when set, is called as ``watch("take" | "give",
    address)``: a test's view of which call holds which buffer."""

    def __init__(self, new: Callable[[], T], address: Callable[[T], int]):
        self._make = new
        self._address = address
        self._free: list[T] = []
        self._lock = threading.Lock()
        self.created = 0  # buffers made: the most calls that ran at once
        self.watch: Callable[[str, int], None] | None = None

    def take(self) -> T:
        with self._lock:
            item = self._free.pop() if self._free else None
            self.created += item is None
        if item is None:
            item = self._make()
        if self.watch is not None:
            self.watch("take", self._address(item))
        return item

    def give(self, item: T) -> None:
        if self.watch is not None:
            self.watch("give", self._address(item))
        with self._lock:
            self._free.append(item)


class ArenaPool(Pool[torch.Tensor]):
    """Arenas of ``size`` bytes for one function's calls (host memory)."""

    def __init__(self, size: int):
        self.size = size
        super().__init__(self._new, torch.Tensor.data_ptr)

    def _new(self) -> torch.Tensor:
        # Over-allocate and slice: the offsets are planned from a 64-byte-aligned base.
        raw = torch.empty(self.size + ARENA_ALIGNMENT, dtype=torch.uint8)
        skip = -raw.data_ptr() % ARENA_ALIGNMENT
        return raw[skip : skip + self.size]


class _CallFrame:
    """The descriptors of one calling thread, built once and re-pointed at
    each call's tensors: a function's shapes are fixed, and contiguous
    tensors of one shape differ only in their data pointers. (Building them
    per call made enough Python garbage for the collector to take ~7% of an
    encoder call.)

    The descriptors lie back to back in one buffer, seen as machine words
    through a memoryview: a call writes each tensor's pointer into its
    descriptor's first two words (``allocated``, ``aligned``) by index.
    Measured for one input and one output: 0.4 us, against 0.8 us setting
    the ctypes fields of separate descriptors in a zip loop."""

    def __init__(
        self,
        inputs: Sequence[torch.Tensor],
        outputs: Sequence[torch.Tensor],
        raw: Sequence[int] = (),
    ):
        """``raw``: the sizes of byte buffers (device memory) passed after
        the tensors, pointed at with ``point_raw``."""
        images = [bytes(descriptor(t)) for t in (*inputs, *outputs)]
        images += [bytes(byte_descriptor(0, size)) for size in raw]
        offsets = list(itertools.accumulate(map(len, images), initial=0))
        self.buffer = ctypes.create_string_buffer(b"".join(images), offsets[-1])
        self.arguments = tuple(ctypes.byref(self.buffer, offset) for offset in offsets[:-1])
        self._words = memoryview(self.buffer).cast("B").cast("P")
        word = ctypes.sizeof(ctypes.c_void_p)  # descriptors are whole words
        self._starts = [offset // word for offset in offsets[:-1]]
        self._raw_starts = self._starts[len(self._starts) - len(raw) :]

    def point_raw(self, *pointers: int) -> None:
        """Point the byte buffers' descriptors at ``pointers``."""
        words = self._words
        for start, pointer in zip(self._raw_starts, pointers, strict=True):
            words[start] = words[start + 1] = pointer  # allocated, aligned

    def point_at(self, inputs: Sequence[torch.Tensor], outputs: Sequence[torch.Tensor]) -> None:
        # A counter, not zip: zip(strict=True) alone took ~0.4 us a call.
        words, starts, index = self._words, self._starts, 0
        for tensors in (inputs, outputs):
            for tensor in tensors:
                start = starts[index]
                words[start] = words[start + 1] = tensor.data_ptr()  # allocated, aligned
                index += 1


def _empty_sizes(shape: tuple[int, ...]) -> tuple:
    """``torch.empty``'s positional arguments for ``shape`` in their cheapest
    form: sizes as separate ints (measured: 0.95 us for a 1x16 float tensor,
    against 1.4 us from a size tuple), except at rank 0, which has no ints."""
    return tuple(shape) if shape else ((),)


_SLOT_LOCKS: dict[str, threading.Lock] = {}
_SLOT_LOCKS_LOCK = threading.Lock()


def _slot_lock(library: str) -> threading.Lock:
    """The lock of ``library``'s failure slot: every function loaded from the
    file (one handle: ``dlopen`` loads a file once) fails into the same slot."""
    with _SLOT_LOCKS_LOCK:
        return _SLOT_LOCKS.setdefault(os.path.realpath(library), threading.Lock())


class NativeFunction:
    """``_mlir_ciface_<entry>`` of a shared library, called on torch tensors."""

    def __init__(
        self,
        library: str,
        entry: str,
        outputs: Sequence[tuple[tuple[int, ...], torch.dtype]],
        arena: dict[str, int] | None = None,
        lib: ctypes.CDLL | None = None,  # the library, opened already (GPU libraries)
    ):
        self.library = library
        # The entry's trailing arena argument (lowerline-plan-arena), if it has one.
        self._arena = arena
        self.arenas = ArenaPool(arena["bytes"]) if arena is not None else None
        self._lib = ctypes.CDLL(library) if lib is None else lib
        # Tile code: the CPU's AMX state, asked of Linux before the first call.
        self._tiles = amx.TileState(self._lib, library)
        self._function = getattr(self._lib, f"_mlir_ciface_{entry}")
        self._function.restype = None
        self._outputs = list(outputs)
        self._allocators = [(_empty_sizes(shape), dtype) for shape, dtype in self._outputs]
        # Missing from libraries linked before runtime_support.c existed.
        self._reset = getattr(self._lib, "lowerline_memory_reset", None)
        self._stats = getattr(self._lib, "lowerline_memory_stats", None)
        if self._reset is not None:
            self._reset.restype = None
            self._reset.argtypes = []
        # The first failed check of a call: in the call's arena where the
        # function has a failure word (lowerline.failure_record; -1: it has
        # no check), else in the library's slot (runtime_support.c), which
        # calls of other threads share: those calls hold the library's lock.
        self._record = (arena or {}).get("failure_record")
        self._failed_slot = None
        self._slot_lock: threading.Lock | None = None
        self._failed_check = getattr(self._lib, "lowerline_failed_check", None)
        if self._failed_check is not None and self._record is None:
            self._failed_check.restype = ctypes.c_char_p
            self._failed_check.argtypes = []
            self._failed_slot = ctypes.c_void_p.in_dll(self._lib, "lowerline_failed_slot")
            self._slot_lock = _slot_lock(library)
        self._omp = _OmpSettings(self._lib)
        # Multithreaded code: each call sizes its teams by the free cores.
        self._sized_teams = teams.attach(self._lib)
        self._frames = threading.local()
        self._held_arenas: list[torch.Tensor] = []  # prepared()'s, for good

    def __call__(self, inputs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        shape, outputs = self._outputs_for(inputs)
        if self._slot_lock is None:
            self._run(shape, inputs, outputs)
            return outputs
        # The slot is the library's: no other call may fail into it (or take
        # this call's failure) between this call's start and its read.
        with self._slot_lock:
            self._run(shape, inputs, outputs)
            assert self._failed_slot is not None  # the lock exists only with it
            if self._failed_slot.value:
                raise self._failure()
        return outputs

    def _outputs_for(self, inputs: Sequence[torch.Tensor]) -> tuple[Any, list[torch.Tensor]]:
        """What ``_frame_for`` needs of the inputs' shapes (static: nothing)
        and fresh outputs."""
        return None, [torch.empty(*sizes, dtype=dtype) for sizes, dtype in self._allocators]

    def _frame_for(
        self, shape: Any, inputs: Sequence[torch.Tensor], trailing: Sequence[torch.Tensor]
    ) -> _CallFrame:
        frame = getattr(self._frames, "frame", None)
        if frame is None:  # this thread's first call
            frame = self._new_frame(inputs, trailing)
        return frame

    def _run(self, shape: Any, inputs: Sequence[torch.Tensor], outputs: list[torch.Tensor]) -> None:
        """One call of the entry; raises the failure its arena's word holds."""
        self._tiles.ensure()
        if self._sized_teams:
            teams.LIMIT.refresh()
        pool = self.arenas
        # The arena is one more out-parameter, after the outputs.
        trailing = outputs if pool is None else [*outputs, pool.take()]
        frame = self._frame_for(shape, inputs, trailing)
        if self._reset is not None:
            self._reset()  # memory() is about this call
        frame.point_at(inputs, trailing)
        word = None
        if pool is not None and self._record is not None and self._record >= 0:
            # Pooled arenas are reused: a failure of an earlier call may be there.
            word = ctypes.c_int64.from_address(trailing[-1].data_ptr() + self._record)
            word.value = 0
        try:
            self._function(*frame.arguments)
        finally:  # free on 3.11 when nothing is raised
            failed = word.value if word is not None else 0
            if pool is not None:
                pool.give(trailing[-1])
        if failed:  # the address of a message, a constant of the library
            raise runtime_check_error(ctypes.string_at(failed).decode(errors="replace"))

    def _failure(self) -> Exception:
        """The error for the failed check the slot holds (taking it)."""
        assert self._failed_check is not None  # the slot exists only with it
        return runtime_check_error(self._failed_check().decode(errors="replace"))

    def _new_frame(
        self, inputs: Sequence[torch.Tensor], outputs: Sequence[torch.Tensor]
    ) -> _CallFrame:
        """The calling thread's descriptors; its OpenMP block time is set with
        them, once per thread as the setting belongs to the thread's team."""
        self._omp.ensure()
        frame = self._frames.frame = _CallFrame(inputs, outputs)
        return frame

    def _static_view(self, allocators: list[tuple[tuple, torch.dtype]]) -> NativeFunction:
        """A static function on the same entry whose outputs ``allocators``
        make: it shares the library, the arena pool, the failure slot and
        OpenMP settings, and keeps its own descriptors per thread."""
        view = object.__new__(NativeFunction)
        view.__dict__.update(self.__dict__)
        view._allocators = allocators
        view._frames = threading.local()
        return view

    def prepared(self, inputs: Sequence[torch.Tensor]) -> tuple[Any, tuple, list[torch.Tensor]]:
        """The entry point, its arguments (descriptors built once over
        ``inputs`` and fresh outputs) and the outputs: ``entry(*arguments)``
        runs the code with no Python of lowerline's around it, the floor a
        call's overhead is measured from (``bench/call_overhead.py``)."""
        outputs = [torch.empty(*sizes, dtype=dtype) for sizes, dtype in self._allocators]
        return self._prepared_frame(inputs, outputs)

    def _prepared_frame(
        self, inputs: Sequence[torch.Tensor], outputs: list[torch.Tensor]
    ) -> tuple[Any, tuple, list[torch.Tensor]]:
        """``prepared``'s descriptors over ``inputs`` and ``outputs``."""
        trailing = outputs
        if self.arenas is not None:
            # One arena held for good: the floor has no pool traffic. The
            # function keeps it (the descriptors hold only its address).
            self._held_arenas.append(self.arenas.take())
            trailing = [*outputs, self._held_arenas[-1]]
        self._omp.ensure()
        self._tiles.ensure()
        frame = _CallFrame(inputs, trailing)
        frame.point_at(inputs, trailing)
        return self._function, frame.arguments, outputs

    def kernel_times(self, kernels: int) -> list[tuple[int, int]]:
        """Per kernel of an explorer build (``CpuOptions.time_kernels``):
        the nanoseconds and calls its timers added up since the last read,
        which clears them (``runtime_support.c``)."""
        read = getattr(self._lib, "lowerline_kernel_times", None)
        if read is None:
            raise RuntimeError(f"{self.library} has no kernel timers: compile again")
        ns, calls = (ctypes.c_int64 * kernels)(), (ctypes.c_int64 * kernels)()
        read.restype = ctypes.c_int64
        read(ns, calls, ctypes.c_int64(kernels))
        return list(zip(ns, calls, strict=True))

    def memory(self) -> MemoryStats:
        """The allocations of the last call (of any thread) into this library.

        The counters belong to the library: calls running at the same time,
        or other functions loaded from the same file, count together.
        """
        if self._stats is None:
            raise RuntimeError(f"{self.library} does not count its allocations: compile again")
        values = (ctypes.c_int64 * 3)()
        self._stats(values)
        live, peak, count = values
        arena = self._arena or {}
        return MemoryStats(
            peak_bytes=peak,
            allocations=count,
            live_bytes=live,
            arena_bytes=arena.get("bytes", 0),
            lower_bound_bytes=arena.get("lower_bound", 0),
        )


# Frames a thread keeps for a dynamic-shape function: one per set of input
# shapes seen, up to this many, then rebuilt at each new shape.
MAX_DYNAMIC_FRAMES = 16


class DynamicNativeFunction(NativeFunction):
    """A library compiled for dynamic input sizes (``lowerline.compile(...,
    dynamic=...)``): each call computes its outputs' sizes from the inputs'
    (``lowerline.runtime.sizes``) and uses descriptors for those shapes.

    A thread keeps one frame per set of input shapes (descriptors hold sizes
    and strides, which a static function fixes once) with its outputs' sizes,
    so a steady stream of calls at a few sizes evaluates no size expression
    and builds nothing but the output tensors; the compiled module's fast
    path goes further and calls a static view per signature (``at_shapes``).
    The sizes' ranges are the caller's check (``lowerline.api``): the code
    trusts its descriptors.
    """

    def __init__(
        self,
        library: str,
        entry: str,
        outputs: Sequence[tuple[tuple[int | str, ...], torch.dtype]],
        symbols: dict[str, Sequence[int]],
        arena: dict[str, int] | None = None,
    ):
        self._sizes = SizeFunction([shape for shape, _ in outputs], symbols)
        self._dtypes = [dtype for _, dtype in outputs]
        # The base class allocates from static shapes: none here (see _allocators_for).
        super().__init__(library, entry, [((), dtype) for dtype in self._dtypes], arena)

    def _allocators_for(self, shapes: tuple) -> list[tuple[tuple, torch.dtype]]:
        """``torch.empty``'s arguments for each output at these input shapes."""
        sizes = self._sizes(shapes)
        return [(_empty_sizes(s), dtype) for s, dtype in zip(sizes, self._dtypes, strict=True)]

    def _by_shape(self) -> dict[tuple, list]:
        """This thread's ``{input shapes: [output allocators, frame or None]}``."""
        by_shape = getattr(self._frames, "by_shape", None)
        if by_shape is None:  # this thread's first call
            self._omp.ensure()
            by_shape = self._frames.by_shape = {}
        return by_shape

    def _outputs_for(self, inputs: Sequence[torch.Tensor]) -> tuple[list, list[torch.Tensor]]:
        """The inputs' shapes' ``[allocators, frame or None]`` (kept for up to
        MAX_DYNAMIC_FRAMES shapes) and fresh outputs."""
        # torch.Size is a tuple: the key costs no conversion.
        known = self._known(tuple([t.shape for t in inputs]))
        return known, [torch.empty(*sizes, dtype=dtype) for sizes, dtype in known[0]]

    def _known(self, shapes: tuple) -> list:
        """``[allocators, frame or None]`` of these input shapes, kept for up
        to MAX_DYNAMIC_FRAMES shapes: each one's sizes evaluated once."""
        by_shape = self._by_shape()
        known = by_shape.get(shapes)
        if known is None:
            known = [self._allocators_for(shapes), None]
            if len(by_shape) < MAX_DYNAMIC_FRAMES:
                by_shape[shapes] = known
        return known

    def _frame_for(
        self, shape: Any, inputs: Sequence[torch.Tensor], trailing: Sequence[torch.Tensor]
    ) -> _CallFrame:
        if shape[1] is None:  # kept with its allocators (if its shapes are)
            shape[1] = _CallFrame(inputs, trailing)
        return shape[1]

    def at_shapes(self, shapes: Sequence[torch.Size]) -> NativeFunction:
        """This function for inputs of ``shapes`` only: a static function
        (its outputs' sizes evaluated now, descriptors built once per
        thread) on the same library, arena pool and failure slot. The fast
        path (``lowerline.api``) calls one per signature it has seen, so a
        dynamic call there costs what a static one does: no shape key, no
        lookup. The sizes' ranges are the caller's check."""
        return self._static_view(self._known(tuple(shapes))[0])

    def prepared(self, inputs: Sequence[torch.Tensor]) -> tuple[Any, tuple, list[torch.Tensor]]:
        allocators = self._allocators_for(tuple([t.shape for t in inputs]))
        outputs = [torch.empty(*sizes, dtype=dtype) for sizes, dtype in allocators]
        return self._prepared_frame(inputs, outputs)


class _DeviceEntry(NativeFunction):
    """A compiled GPU entry and its device buffers (see ``GpuFunction``):
    the weights, uploaded when made, and a pool of scratch buffers."""

    def __init__(
        self,
        library: str,
        entry: str,
        outputs: Sequence[tuple[tuple[int, ...], torch.dtype]],
        lib: ctypes.CDLL,
        buffers: dict[str, Any],
    ):
        super().__init__(library, entry, outputs, lib=lib)
        # The GPU stages report no failed check (no lowerline-report-failed-asserts):
        # nothing writes the library's failure slot, so calls need not hold its
        # lock, and calls at the same time run, each on a stream of its own.
        self._slot_lock = None
        self._sizes = (buffers["weights"], buffers["scratch"])
        self.device_memory = cuda.DeviceMemory(library)
        self.scratch: Pool[int] = Pool(
            lambda: self.device_memory.allocate(self._sizes[1], "scratch"), int
        )
        try:
            self.weights = self._upload(buffers["upload"])
            # One scratch buffer now: no room for a call fails the load, not the call.
            self.scratch.give(self.scratch.take())
        except BaseException:
            self.device_memory.release()
            raise

    def _upload(self, name: str) -> int:
        """The weights buffer, filled by the library's ``name`` function."""
        pointer = self.device_memory.allocate(self._sizes[0], "weights")
        if pointer:
            upload = getattr(self._lib, f"_mlir_ciface_{name}")
            upload.restype = None
            upload(ctypes.byref(byte_descriptor(pointer, self._sizes[0])))
            cuda.check_faults(f"{self.library} (uploading its weights)")
        return pointer

    def _new_frame(
        self, inputs: Sequence[torch.Tensor], outputs: Sequence[torch.Tensor]
    ) -> _CallFrame:
        self._omp.ensure()
        frame = self._frames.frame = _CallFrame(inputs, outputs, raw=self._sizes)
        return frame

    def _run(self, shape: Any, inputs: Sequence[torch.Tensor], outputs: list[torch.Tensor]) -> None:
        frame = self._frame_for(shape, inputs, outputs)
        frame.point_at(inputs, outputs)
        scratch = self.scratch.take()
        frame.point_raw(self.weights, scratch)
        try:
            self._function(*frame.arguments)
        finally:  # the call's stream is synchronized: its scratch is free
            self.scratch.give(scratch)


class GpuFunction:
    """The host entry of a GPU library: loaded on the first call, after the
    CUDA driver (``lowerline.runtime.cuda``), because loading it loads the kernels
    onto the device; without a driver and device the call raises
    ``NoCudaDevice`` (a RuntimeError) and the process goes on.

    A compiled entry takes two device buffers after its outputs
    (``lowerline-gpu-host-buffers``; ``buffers``: their sizes and the
    function that uploads the weights). The first call allocates the
    weights buffer and uploads the weights into it, for every later call;
    each call takes a scratch buffer from a pool (one more when all are in
    use: concurrent calls never share one) and gives it back, so that calls
    after the first allocate nothing and copy only their inputs in and
    outputs out. ``close()`` frees the device memory (a later call makes it
    again); so does collecting the function, or the process's exit, before
    the GPU libraries close. Without ``buffers`` (a hand-written library)
    the entry takes none."""

    def __init__(
        self,
        library: str,
        entry: str,
        outputs: Sequence[tuple[tuple[int, ...], torch.dtype]],
        buffers: dict[str, Any] | None = None,
    ):
        self.library = library
        self._entry = entry
        self._outputs = outputs
        self.buffers = buffers
        self._native: NativeFunction | None = None
        self._lock = threading.Lock()

    def __call__(self, inputs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        native = self._native
        if native is None or cuda.closed():
            native = self._load()
        outputs = native(inputs)
        cuda.check_faults(self.library)  # MLIR's runtime only prints a failure
        return outputs

    def _load(self) -> NativeFunction:
        with self._lock:  # one upload, whichever thread calls first
            if self._native is not None and not cuda.closed():
                return self._native
            # The library through cuda.load_library: its kernels are unloaded
            # at exit while the driver still runs (see lowerline.runtime.cuda).
            library = cuda.load_library(self.library)
            if self.buffers is None:
                native = NativeFunction(self.library, self._entry, self._outputs, lib=library)
            else:
                native = _DeviceEntry(
                    self.library, self._entry, self._outputs, library, self.buffers
                )
                # Freed with this function, not only at exit.
                weakref.finalize(self, native.device_memory.release)
            self._native = native
            return native

    @property
    def scratch(self) -> Pool[int] | None:
        """The loaded entry's pool of scratch buffers (None before the first call)."""
        return self._native.scratch if isinstance(self._native, _DeviceEntry) else None

    def close(self) -> None:
        """Free the device memory; a later call allocates and uploads again.
        Not while a call runs."""
        with self._lock:
            if isinstance(self._native, _DeviceEntry):
                self._native.device_memory.release()
            self._native = None

    def memory(self) -> MemoryStats:
        raise RuntimeError(
            "memory() counts host allocations of CPU code; GPU buffers are device memory"
        )
