"""Run functions of a module lowered to the LLVM dialect with MLIR's ExecutionEngine.

The CPU pipeline turns every tensor result into an out-parameter
(``buffer-results-to-out-params``) and requests C wrappers, so a function
``@f(tensor<AxB>, ...) -> tensor<CxD>`` is called as
``_mlir_ciface_f(memref*, ..., memref* out)``. ``Signature`` records the
tensor types before lowering so numpy arrays can be checked and outputs
allocated. An entry function with an arena (``lowerline-plan-arena``) gets
one more trailing argument, an aligned byte array of the planned size.
"""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass

import numpy as np
from mlir import execution_engine, ir
from mlir import runtime as mlir_runtime

from lowerline.errors import LowerlineError, runtime_check_error
from lowerline.pipeline import protocol
from lowerline.runtime.libraries import openmp_library, runtime_library
from lowerline.weights import NUMPY_DTYPES

_LIBC = ctypes.CDLL(None)
_ALLOCATION_FUNCTIONS = {
    "_mlir_memref_to_llvm_alloc": ctypes.cast(_LIBC.malloc, ctypes.c_void_p).value,
    "_mlir_memref_to_llvm_aligned_alloc": ctypes.cast(_LIBC.aligned_alloc, ctypes.c_void_p).value,
    "_mlir_memref_to_llvm_free": ctypes.cast(_LIBC.free, ctypes.c_void_p).value,
}


class RunError(LowerlineError):
    """A function cannot be called as asked (signature, shapes, dtypes)."""


# lowerline-report-failed-asserts' call on a failed check; compiled libraries
# bind runtime_support.c's, a JIT module this one. ctypes releases the GIL
# during the call, so OpenMP workers calling it take the GIL without deadlock.
_FAILED_CHECK = ctypes.CFUNCTYPE(None, ctypes.c_char_p)

# lowerline-time-kernels' timer calls (explorer builds): the stage numerics
# JIT-run the loops stage's IR, which holds them; a JIT module times nothing.
_KERNEL_CLOCK = ctypes.CFUNCTYPE(ctypes.c_int64)(lambda: 0)
_KERNEL_DONE = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64)(lambda kernel, start: None)


@dataclass(frozen=True)
class TensorSpec:
    shape: tuple[int, ...]
    dtype: np.dtype

    def __str__(self) -> str:
        return f"{'x'.join(map(str, self.shape)) or 'scalar'} {np.dtype(self.dtype).name}"


@dataclass(frozen=True)
class Signature:
    name: str
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]


def _spec(t: ir.Type, where: str) -> TensorSpec:
    if not isinstance(t, ir.RankedTensorType):
        raise RunError(f"{where} has type {t}; only ranked tensors can be passed")
    if not t.has_static_shape:
        raise RunError(f"{where} has dynamic shape {t}; give it a static shape")
    key = str(t.element_type)
    if key not in NUMPY_DTYPES:
        raise RunError(f"{where} has element type {key}, which numpy cannot hold")
    return TensorSpec(tuple(t.shape), np.dtype(NUMPY_DTYPES[key]))


def public_functions(module: ir.Module) -> list[ir.Operation]:
    funcs = []
    for op in module.body.operations:
        op = op.operation
        if op.name != "func.func" or len(op.regions[0].blocks) == 0:
            continue
        visibility = op.attributes.get("sym_visibility", None)
        if visibility is None or ir.StringAttr(visibility).value == "public":
            funcs.append(op)
    return funcs


def signature_of(module: ir.Module, entry: str | None) -> Signature:
    """The tensor signature of ``entry`` (default: the only public function)."""
    funcs = public_functions(module)
    names = [ir.StringAttr(f.attributes["sym_name"]).value for f in funcs]
    if entry is None:
        if len(funcs) != 1:
            found = ", ".join(names) or "none"
            raise RunError(f"name the function to run with --entry (public functions: {found})")
        entry = names[0]
    if entry not in names:
        raise RunError(f"no public function '@{entry}' (found: {', '.join(names) or 'none'})")
    func = funcs[names.index(entry)]
    ftype = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    inputs = tuple(_spec(t, f"argument #{i} of @{entry}") for i, t in enumerate(ftype.inputs))
    outputs = tuple(_spec(t, f"result #{i} of @{entry}") for i, t in enumerate(ftype.results))
    return Signature(entry, inputs, outputs)


class JitFunction:
    """A function of an LLVM-dialect module, compiled once, callable on numpy arrays."""

    def __init__(self, llvm_module: ir.Module, signature: Signature, opt_level: int = 3):
        self.signature = signature
        self._engine = execution_engine.ExecutionEngine(
            llvm_module,
            opt_level=opt_level,
            # A strided memref.copy calls into this library (DESIGN.md).
            shared_libs=[runtime_library("libmlir_c_runner_utils.so")]
            + ([openmp_library()] if openmp_library() else []),
        )
        # The llvm stage's allocation functions (finalize-memref-to-llvm
        # {use-generic-functions}) are plain malloc and free here: only
        # compiled libraries count allocations (runtime_support.c).
        for name, address in _ALLOCATION_FUNCTIONS.items():
            self._engine.raw_register_runtime(name, ctypes.c_void_p(address))
        self._failed: list[bytes] = []  # the messages of the call running
        self._on_failed = _FAILED_CHECK(self._failed.append)  # kept alive with the engine
        self._engine.raw_register_runtime(
            "lowerline_assert_failed", ctypes.cast(self._on_failed, ctypes.c_void_p)
        )
        for name, callback in (
            ("lowerline_kernel_clock", _KERNEL_CLOCK),
            ("lowerline_kernel_done", _KERNEL_DONE),
        ):
            self._engine.raw_register_runtime(name, ctypes.cast(callback, ctypes.c_void_p))
        arena = protocol.arena_plan(llvm_module.operation, signature.name)
        self._arena_bytes = None if arena is None else arena["bytes"]
        # The arena's failure word (lowerline.failure_record), where the
        # code's checks report instead of calling lowerline_assert_failed.
        self._record = None if arena is None else arena.get("failure_record")
        self._slot_lock = threading.Lock()  # the callback's list is the engine's

    def __call__(self, *arrays: np.ndarray) -> list[np.ndarray]:
        sig = self.signature
        if len(arrays) != len(sig.inputs):
            raise RunError(f"@{sig.name} takes {len(sig.inputs)} arrays, got {len(arrays)}")
        for i, (array, spec) in enumerate(zip(arrays, sig.inputs, strict=True)):
            if array.shape != spec.shape or array.dtype != spec.dtype:
                got = TensorSpec(tuple(array.shape), array.dtype)
                raise RunError(f"argument #{i} of @{sig.name}: expected {spec}, got {got}")
        inputs = [np.ascontiguousarray(a) for a in arrays]
        outputs = [np.zeros(spec.shape, spec.dtype) for spec in sig.outputs]
        arena = self._arena()  # held until the call returns: descriptors do not own memory
        pointers = [
            ctypes.pointer(ctypes.pointer(mlir_runtime.get_ranked_memref_descriptor(a)))
            for a in [*inputs, *outputs, *arena]
        ]
        if self._record is not None:
            self._engine.invoke(sig.name, *pointers)
            failed = _failure_word(arena[0], self._record) if self._record >= 0 else 0
            if failed:
                raise runtime_check_error(ctypes.string_at(failed).decode(errors="replace"))
            return outputs
        with self._slot_lock:  # calls of other threads fail into the same list
            self._failed.clear()
            self._engine.invoke(sig.name, *pointers)
            if self._failed:
                raise runtime_check_error(self._failed[0].decode(errors="replace"))
        return outputs

    def _arena(self) -> list[np.ndarray]:
        """The arena argument (a fresh one per call), if the function takes one."""
        if self._arena_bytes is None:
            return []
        raw = np.empty(self._arena_bytes + protocol.ARENA_ALIGNMENT, np.uint8)
        skip = -raw.ctypes.data % protocol.ARENA_ALIGNMENT
        arena = raw[skip : skip + self._arena_bytes]
        if self._record is not None and self._record >= 0:
            arena[self._record : self._record + 8] = 0  # no failure yet
        return [arena]


def _failure_word(arena: np.ndarray, offset: int) -> int:
    """The message address a failed check left in the arena's failure word (0: none)."""
    return int(arena[offset : offset + 8].view(np.int64)[0])
