"""``lowerline-expand-minmax-reductions``: a horizontal max/min of a vector
as a tree of ``vmaxps``/``vminps`` over halves, with one NaN check for the
whole vector.

A row max ends in ``vector.reduction <maximumf>`` (IEEE ``maximum``: a
NaN wins, -0 orders below +0). LLVM expands ``llvm.vector.reduce.fmaximum``
of 16 lanes on x86 into about 55 instructions, four halving steps of a
blend to order the zeros, ``vmaxps``, an unordered compare and a masked
move each, all in one dependent chain; softmax over a dynamic sequence of
17 keys spent most of its row max there (``bench/dynamic-seq17-ab.md``).
Here::

    %r = vector.reduction <maximumf>, %v, %acc : vector<16xf32> into f32

becomes halving steps of ``a > b ? a : b`` (x86: one ``vmaxps`` each)
on shuffled halves, the last lane compared with ``%acc`` the same way,
and the NaN check done once, off the chain: an unordered compare of the
whole vector (and of ``%acc``), or-reduced (``kortest``), selects a quiet
NaN. An odd length takes overlapping halves (a lane taken twice does not
change a max). NaN still wins; of -0 and +0 either may be returned, as
with ``lowerline-minmax-accumulators``' steps and ATen's own reductions
(``torch.tensor([-0., 0.]).amax()`` is -0). ``minimumf`` likewise with
``<``. Only 1-D float vectors outside ``vector.mask``.

Upstream lowers the reduction to the LLVM intrinsic, which keeps IEEE
zero ordering, and ``arith-expand`` only expands the elementwise
``maximumf``; no upstream pattern splits a reduction into halves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, vector

from lowerline.pipeline.pass_api import Pass, ops_matching

_ORDER = {"maximumf": arith.CmpFPredicate.OGT, "minimumf": arith.CmpFPredicate.OLT}


def _kind(op: ir.Operation) -> str | None:
    """``maximumf`` or ``minimumf`` for a reduction this pass expands."""
    text = str(op.attributes["kind"])
    kind = next((k for k in _ORDER if f"<{k}>" in text), None)
    if kind is None or op.parent.name == "vector.mask":
        return None
    vtype = op.operands[0].type
    if not isinstance(vtype, ir.VectorType) or ir.VectorType(vtype).rank != 1:
        return None
    if ir.VectorType(vtype).scalable or ir.VectorType(vtype).shape[0] < 2:
        return None
    return kind


def _pick(order: arith.CmpFPredicate, a: ir.Value, b: ir.Value) -> ir.Value:
    """``a`` where it orders before ``b`` (``order``), else ``b``."""
    return arith.select(arith.cmpf(order, a, b), a, b)


def _halves(order: arith.CmpFPredicate, values: ir.Value) -> ir.Value:
    """The max (min) of ``values``' lanes in lane 0, by halving steps."""
    lanes = ir.VectorType(values.type).shape[0]
    while lanes > 1:
        half = math.ceil(lanes / 2)
        low = vector.shuffle(values, values, list(range(half)))
        high = vector.shuffle(values, values, list(range(lanes - half, lanes)))
        values = _pick(order, low, high)
        lanes = half
    return vector.extract(values, [], [0])


def _any_nan(values: ir.Value, acc: ir.Value | None) -> ir.Value:
    unordered = arith.cmpf(arith.CmpFPredicate.UNO, values, values)
    found = vector.reduction(ir.IntegerType.get_signless(1), vector.CombiningKind.OR, unordered)
    if acc is None:
        return found
    return arith.ori(found, arith.cmpf(arith.CmpFPredicate.UNO, acc, acc))


def _expand(op: ir.Operation, kind: str) -> None:
    order = _ORDER[kind]
    values = op.operands[0]
    acc = op.operands[1] if len(op.operands) > 1 else None
    etype = op.results[0].type
    with ir.InsertionPoint(op), op.location:
        best = _halves(order, values)
        if acc is not None:
            best = _pick(order, best, acc)
        nan = arith.constant(etype, ir.FloatAttr.get(etype, float("nan")))
        result = arith.select(_any_nan(values, acc), nan, best)
    op.results[0].replace_all_uses_with(result)
    op.erase()


def expand_minmax_reductions(root: ir.Operation) -> int:
    """Expand every max/min reduction under ``root``; returns the count."""
    found = [(op, _kind(op)) for op in ops_matching(root, lambda o: o.name == "vector.reduction")]
    count = 0
    for op, kind in found:
        if kind is not None:
            _expand(op, kind)
            count += 1
    return count


@dataclass(frozen=True)
class ExpandMinmaxReductions(Pass):
    flag = "lowerline-expand-minmax-reductions"
    summary = (
        "Expand a horizontal vector.reduction <maximumf|minimumf> into halving compare-and-"
        "select steps with one NaN check of the whole vector"
    )
    anchor = None

    def run(self, op: ir.Operation) -> None:
        expand_minmax_reductions(op)
