"""``lowerline-bound-dynamic-dims``: the sizes of dynamic argument dims are
clamped to their declared ranges, so that upstream's
``int-range-optimizations`` folds the size checks torch-mlir emits for them.

Why: torch-mlir lowers a broadcast or a view over a dynamic dim with
run-time checks of its size, inside the ops themselves. Attention over a
dynamic sequence length gets, for each head split, a copy that reads its
source at ``select(seq == 1, 0, i)`` (a broadcast of a possible size 1):
the vectorizer makes that a ``vector.gather``, where the index ``i`` alone
is a contiguous read. A view's size goes through ``select(seq < 0, ...)``
(an inferred size), and the softmax after it gets sizes no tiling can
relate to the sequence length::

    %s = tensor.dim %arg0, %c1               %s = tensor.dim %arg0, %c1
    %e = arith.cmpi eq, %s, %c1        ->    %lo = arith.minsi %s, %c128
                                             %b = arith.maxsi %lo, %c2
                                             %e = arith.cmpi eq, %b, %c1  // false

A call outside the range is refused before the code runs
(``lowerline.frontend.dynamic``), so the clamp never changes a size; with
it, the integer range analysis knows ``2 <= seq <= 128`` and folds the
comparison, the select and the view's inferred size (``int-range-optimizations``
and canonicalization, which run after this pass). ``lowerline-plan-arena``
bounds a buffer sized by the clamp like one sized by the dim.

Upstream's integer range analysis has no way to learn a function
argument's dim range (its only assume op is in the test dialect); this pass
states the ranges (``lowerline.dynamic_ranges``) in ops the analysis reads.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith

from lowerline.pipeline import protocol
from lowerline.pipeline.pass_api import Pass, ops_matching


def _ranges(func: ir.Operation) -> dict[tuple[int, int], tuple[int, int]]:
    """``{(argument, dim): (min, max)}`` from ``lowerline.dynamic_ranges``."""
    flat = protocol.DYNAMIC_RANGES.get(func) or []
    return {(flat[i], flat[i + 1]): (flat[i + 2], flat[i + 3]) for i in range(0, len(flat), 4)}


def _argument_dim(op: ir.Operation, func: ir.Operation) -> tuple[int, int] | None:
    """(argument, dim) of a ``tensor.dim`` of an argument of ``func`` at a constant index."""
    source, index = op.operands
    if not isinstance(source.owner, ir.Block) or source.owner.owner != func:
        return None
    constant = index.owner
    if isinstance(constant, ir.Block) or constant.name != "arith.constant":
        return None
    return ir.BlockArgument(source).arg_number, ir.IntegerAttr(constant.attributes["value"]).value


def bound(size: ir.Value, low: int, high: int) -> None:
    """Replace the uses of ``size`` by ``max(min(size, high), low)``."""
    index = ir.IndexType.get()
    with ir.InsertionPoint.after(size.owner), size.owner.location:
        upper = arith.minsi(size, arith.constant(index, high))
        clamped = arith.maxsi(upper, arith.constant(index, low))
    size.replace_all_uses_except(clamped, upper.owner.operation)


@dataclass(frozen=True)
class BoundDynamicDims(Pass):
    flag = "lowerline-bound-dynamic-dims"
    summary = "Clamp the sizes of dynamic argument dims to their declared ranges"
    anchor = "func.func"

    def run(self, op: ir.Operation) -> None:
        ranges = _ranges(op)
        if not ranges:
            return
        for dim in ops_matching(op, lambda o: o.name == "tensor.dim"):
            found = _argument_dim(dim, op)
            if found in ranges:
                bound(dim.results[0], *ranges[found])
