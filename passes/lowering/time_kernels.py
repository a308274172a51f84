"""``lowerline-time-kernels``: time each kernel of a function, for the
explorer's roofline (an opt-in build: ``CpuOptions.time_kernels``, which
only ``compiled.explore`` sets; normal libraries have no timers).

Why: the compiled library is one entry function whose kernels are its
top-level loop nests (a tiled ``scf.forall``, a plain ``scf.for`` nest, a
linalg op or copy still to become loops), so a profiler of the whole call
cannot tell them apart. Upstream has no pass that instruments ops with
calls (``-mlir-timing`` times passes, not the code they emit).

Runs at the start of the ``loops`` stage, on memrefs, before parallel loops
become OpenMP regions: each kernel ``K`` (numbered in order over the
module) is bracketed by two calls on the calling thread, so an OpenMP
region is timed whole, workers included::

    %t = llvm.call @lowerline_kernel_clock() : () -> i64
    <kernel K>
    llvm.call @lowerline_kernel_done(%K, %t) : (i64, i64) -> ()

(``llvm.func`` declarations, not ``func.func``: the llvm stage's
``llvm-request-c-wrappers`` would give a ``func`` declaration a C wrapper
the library would then need to define.)

``runtime_support.c`` accumulates nanoseconds and calls per kernel, which
the runtime reads after the calls it times (``NativeFunction.kernel_times``).

The pass also counts each kernel's work from the IR, published as one
remark per kernel (``KERNEL_FORMAT``; the explorer parses it):

- flop: floating-point arithmetic ops (an FMA counts 2), times the lanes of
  their vectors, times the static trip counts of the loops around them:
  the arithmetic the code executes, lanes of a padded or masked remainder
  tile included (more than the model's own count there); "?" when a loop
  around one has a trip count not known when compiling;
- bytes: the size of every statically shaped buffer the kernel touches
  that lives outside it, once: the traffic it cannot avoid, not what its
  caches re-read.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, llvm

from lowerline.passes.support.ir_constants import int_constant
from lowerline.passes.support.linalg_info import static_loop_sizes
from lowerline.pipeline import remarks
from lowerline.pipeline.pass_api import Pass, ops_matching

CLOCK = "lowerline_kernel_clock"  # runtime_support.c
DONE = "lowerline_kernel_done"
# runtime_support.c's table: kernels past it are not timed (a remark says so).
MAX_KERNELS = 1024
# The remark's text, one per kernel; lowerline.explore.roofline parses it.
KERNEL_FORMAT = "kernel {index}: {flop} flop, {bytes} bytes"

_LOOPS = ("scf.forall", "scf.for", "scf.parallel")
# Float ops counted as one flop per lane; an FMA is two.
_ONE_FLOP = {
    "arith.addf",
    "arith.subf",
    "arith.mulf",
    "arith.divf",
    "arith.maximumf",
    "arith.minimumf",
    "arith.maxnumf",
    "arith.minnumf",
}
_TWO_FLOP = {"math.fma", "vector.fma"}


def is_kernel(op: ir.Operation) -> bool:
    """A top-level op of a function that does a kernel's work."""
    return op.name in _LOOPS or op.name.startswith("linalg.") or op.name == "memref.copy"


def _lanes(t: ir.Type) -> int:
    if isinstance(t, ir.VectorType):
        count = 1
        for size in ir.VectorType(t).shape:
            count *= size
        return count
    return 1


def _op_flop(op: ir.Operation) -> int:
    per_lane = 2 if op.name in _TWO_FLOP else 1 if op.name in _ONE_FLOP else 0
    if per_lane == 0 or not op.results:
        return 0
    return per_lane * _lanes(op.results[0].type)


def _trip(lower: int | None, upper: int | None, step: int | None) -> int | None:
    if lower is None or upper is None or not step or step <= 0:
        return None
    return max(0, -(-(upper - lower) // step))


def _forall_trips(op: ir.Operation) -> int | None:
    dynamic = ir.ShapedType.get_dynamic_size()
    bounds = [
        list(ir.DenseI64ArrayAttr(op.attributes[name]))
        for name in ("staticLowerBound", "staticUpperBound", "staticStep")
    ]
    count = 1
    for lower, upper, step in zip(*bounds, strict=True):
        known = [None if v == dynamic else v for v in (lower, upper, step)]
        trips = _trip(*known)
        if trips is None:
            return None
        count *= trips
    return count


def _loop_trips(op: ir.Operation) -> int | None:
    """How many times ``op``'s body runs; None when not static."""
    if op.name == "scf.forall":
        return _forall_trips(op)
    if op.name == "scf.for":
        return _trip(*(int_constant(op.operands[i]) for i in range(3)))
    if op.name == "scf.parallel":
        rank = (len(op.operands) - len(op.results)) // 3  # lbs, ubs, steps, inits
        count = 1
        for d in range(rank):
            values = (op.operands[d], op.operands[rank + d], op.operands[2 * rank + d])
            trips = _trip(*(int_constant(v) for v in values))
            if trips is None:
                return None
            count *= trips
        return count
    if op.name.startswith("linalg.") and "indexing_maps" in op.attributes:
        sizes = static_loop_sizes(op)
        return None if sizes is None else _product(sizes)
    return 1


def _product(sizes: list[int]) -> int:
    count = 1
    for size in sizes:
        count *= size
    return count


def count_flop(op: ir.Operation) -> int | None:
    """The flop ``op`` does, its nested ops included; None when a loop
    around a counted op has no static trip count."""
    own = _op_flop(op)
    nested = 0
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                flop = count_flop(inner.operation)
                if flop is None:
                    return None
                nested += flop
    if nested == 0:
        return own
    trips = _loop_trips(op)
    return None if trips is None else own + trips * nested


def _static_bytes(t: ir.Type) -> int:
    if not isinstance(t, ir.MemRefType):
        return 0
    shaped = ir.MemRefType(t)
    element = shaped.element_type
    width = getattr(element, "width", 0)
    if not shaped.has_static_shape or not width:
        return 0
    return _product(list(shaped.shape)) * max(width // 8, 1)


def _defined_in(value: ir.Value, inside: set[ir.Operation]) -> bool:
    if isinstance(value, ir.OpResult):
        return value.owner.operation in inside
    return ir.BlockArgument(value).owner.owner.operation in inside


def count_bytes(kernel: ir.Operation) -> int:
    """Bytes of the statically shaped buffers defined outside ``kernel``
    that it (or an op nested in it) uses, each once."""
    inside = {o.operation for o in ops_matching(kernel, lambda _: True)}
    seen: list[ir.Value] = []
    for op in inside:
        for value in op.operands:
            used = isinstance(value.type, ir.MemRefType) and not _defined_in(value, inside)
            if used and all(value != s for s in seen):
                seen.append(value)
    return sum(_static_bytes(v.type) for v in seen)


def _private(function: ir.Operation) -> bool:
    if "sym_visibility" not in function.attributes:
        return False
    return ir.StringAttr(function.attributes["sym_visibility"]).value == "private"


@dataclass(frozen=True)
class TimeKernels(Pass):
    flag = "lowerline-time-kernels"
    summary = "Bracket each top-level kernel of a function with calls to a timer (explorer builds)"
    anchor = "builtin.module"

    def run(self, op: ir.Operation) -> None:
        body = op.regions[0].blocks[0]
        # Public functions only: a private one is called from inside a kernel,
        # whose time already holds it.
        functions = [
            o.operation
            for o in body.operations
            if o.operation.name == "func.func" and not _private(o.operation)
        ]
        kernels = [
            k.operation
            for f in functions
            if f.regions[0].blocks
            for k in f.regions[0].blocks[0].operations
            if is_kernel(k.operation)
        ]
        if not kernels:
            return
        self._declare(body)
        for index, kernel in enumerate(kernels):
            if index >= MAX_KERNELS:
                message = f"not timed: the runtime's table holds {MAX_KERNELS} kernels"
                remarks.publish([remarks.about(kernel, self.flag, message, remarks.REFUSAL)])
                continue
            self._figures(kernel, index)
            self._bracket(kernel, index)

    def _figures(self, kernel: ir.Operation, index: int) -> None:
        flop = count_flop(kernel)
        text = KERNEL_FORMAT.format(
            index=index, flop="?" if flop is None else flop, bytes=count_bytes(kernel)
        )
        remarks.publish([remarks.about(kernel, self.flag, text)])

    def _bracket(self, kernel: ir.Operation, index: int) -> None:
        i64 = ir.IntegerType.get_signless(64)
        with kernel.location, ir.InsertionPoint(kernel):
            start = llvm.CallOp(i64, [], [], [], callee=CLOCK).result
        with kernel.location, ir.InsertionPoint.after(kernel):
            number = arith.ConstantOp(i64, index).result
            llvm.CallOp(None, [number, start], [], [], callee=DONE)

    def _declare(self, body: ir.Block) -> None:
        declared = {
            ir.StringAttr(o.attributes["sym_name"]).value
            for o in body.operations
            if "sym_name" in o.attributes
        }
        signatures = {CLOCK: "() -> i64", DONE: "(i64, i64)"}
        with ir.InsertionPoint.at_block_begin(body):
            for name, signature in signatures.items():
                if name not in declared:
                    body.append(ir.Operation.parse(f"llvm.func @{name}{signature}"))
