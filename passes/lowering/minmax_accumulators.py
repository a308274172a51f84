"""``lowerline-minmax-accumulators``: a max/min reduction's loop-carried
step as one ``vmaxps``/``vminps``, with the NaN check off the accumulator's path.

A vectorized ``amax`` / ``amin`` row keeps its partial results in vector
accumulators (``reduction_chunks``) and takes one ``arith.maximumf`` per step::

    %r = scf.for ... iter_args(%acc = %init) {
      %x = vector.transfer_read ...
      %m = arith.maximumf %x, %acc     ->   %gt = arith.cmpf ogt, %x, %acc
      scf.yield %m                          %m0 = arith.select %gt, %x, %acc
    }                                       %nan = arith.cmpf uno, %x, %x
                                            %m = bitcast(bitcast(%m0) | sext(%nan))

``arith.maximumf`` is IEEE ``maximum``: a NaN of either operand wins and -0
orders below +0. x86 has no such instruction; LLVM lowers it to six
instructions per vector, four of them in a chain through the accumulator
(a blend to order the zeros, ``vmaxps``, an unordered compare and a masked
move), so a 16x4096 amax took 1.3x eager's CPU time where a sum of the same
rows did not (bench/ops-cpu-time.md). Here the chain is the compare and
select that x86 lowers to one ``vmaxps`` (``x > acc ? x : acc``) and one
masked move of all-ones bits (a NaN) whose mask depends on ``x`` only. (Two
selects would be merged by LLVM into one select on ``gt | nan``: a compare,
a mask ``or`` and a move, all on the chain.) NaN still wins: a NaN ``x``
makes the accumulator a NaN, and a NaN accumulator stays (``x > NaN`` is
false); its sign and payload are not ``x``'s, which torch does not
distinguish. Equal values keep the accumulator, so of -0 and +0 the one seen
first in a lane wins, as in ATen's own reductions
(``torch.tensor([-0., 0.]).amax()`` is -0); the final horizontal
``vector.reduction`` is left to ``lowerline-expand-minmax-reductions``.

Only a ``maximumf`` / ``minimumf`` with one operand read (through
``vector.extract`` / ``broadcast`` / ``shape_cast``) from an ``scf.for``
iter_arg and its result yielded (through the same) back into that iter_arg
is rewritten, or a chain of them between the two (a strided max pool's kw
taps, unrolled: ``lowerline.passes.tiling.window_tiles``): an elementwise
``torch.maximum`` keeps IEEE semantics.

Upstream's ``arith-expand`` expands ``maximumf`` for every use with a
compare on both operands (``cmpf ugt``, then ``cmpf uno`` of the second),
which keeps both compares on the accumulator's chain; it has no rewrite that
knows which operand is loop-carried.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith

from lowerline.passes.support.elementwise_ir import element, expand, like
from lowerline.pipeline.pass_api import Pass, ops_matching

# Ops that only move an accumulator between vector shapes.
_RESHAPES = ("vector.extract", "vector.broadcast", "vector.shape_cast")
_ORDER = {"arith.maximumf": arith.CmpFPredicate.OGT, "arith.minimumf": arith.CmpFPredicate.OLT}


def _source(value: ir.Value) -> ir.Value:
    """``value`` before the reshapes that produced it."""
    while isinstance(value, ir.OpResult) and value.owner.name in _RESHAPES:
        value = value.owner.operands[0]
    return value


def _single_user(value: ir.Value) -> ir.OpOperand | None:
    """The one use of ``value`` past the reshapes (each with one use)."""
    while True:
        uses = list(value.uses)
        if len(uses) != 1:
            return None
        if uses[0].owner.name not in _RESHAPES:
            return uses[0]
        value = uses[0].owner.results[0]


def _yield_index(op: ir.Operation) -> int | None:
    """The position at which ``op``'s result is yielded by an ``scf.yield``,
    directly or through a chain of steps of the same kind (an unrolled
    window: ``max(max(max(acc, x0), x1), x2)``, each result's one use the
    next step); None otherwise."""
    use = _single_user(op.results[0])
    while use is not None and use.owner.name == op.name:
        use = _single_user(use.owner.results[0])
    return use.operand_number if use is not None and use.owner.name == "scf.yield" else None


def _accumulator_operand(op: ir.Operation) -> int | None:
    """Which operand of ``op`` is the loop-carried accumulator it updates:
    the loop's iter_arg, or the result of the previous step of a chain."""
    yielded = _yield_index(op)
    if yielded is None:
        return None
    for index in range(2):
        source = _source(op.operands[index])
        if isinstance(source, ir.OpResult) and source.owner.name == op.name:
            if _accumulator_operand(source.owner) is not None:
                return index
            continue
        if not isinstance(source, ir.BlockArgument):
            continue
        loop = source.owner.owner
        # Block argument 0 is the induction variable; iter_arg i is i + 1.
        # ``op`` directly in the loop's body: the yield it reaches is the loop's.
        if loop.name == "scf.for" and source.arg_number == yielded + 1 and op.parent == loop:
            return index
    return None


def _step(order: arith.CmpFPredicate, x: ir.Value, acc: ir.Value) -> ir.Value:
    """``x`` where it orders before ``acc`` (``order``) or is a NaN, else ``acc``."""
    better = arith.CmpFOp(order, x, acc).result
    kept = arith.SelectOp(better, x, acc).result
    is_nan = arith.CmpFOp(arith.CmpFPredicate.UNO, x, x).result
    # All-ones bits where x is a NaN: or-ed in, they make a NaN.
    width = ir.FloatType(element(x.type)).width
    ints = like(x.type, ir.IntegerType.get_signless(width))
    ones = arith.ExtSIOp(ints, is_nan).result
    merged = arith.OrIOp(arith.BitcastOp(ints, kept).result, ones).result
    return arith.BitcastOp(x.type, merged).result


def _rewrite(op: ir.Operation, acc: int) -> None:
    order = _ORDER[op.name]
    expand(op, lambda *operands: _step(order, operands[1 - acc], operands[acc]))


@dataclass(frozen=True)
class MinmaxAccumulators(Pass):
    flag = "lowerline-minmax-accumulators"
    summary = (
        "Rewrite a loop-carried arith.maximumf/minimumf reduction step as compare and "
        "select with the NaN check off the accumulator's chain"
    )
    anchor = None

    def run(self, op: ir.Operation) -> None:
        found = [(m, _accumulator_operand(m)) for m in ops_matching(op, lambda o: o.name in _ORDER)]
        # All found first: a rewritten step is no longer the next one's operand.
        for minmax, acc in found:
            if acc is not None:
                _rewrite(minmax, acc)
