"""``lowerline-check-integer-division``: an integer division or remainder
checks its divisor for zero first, with a ``cf.assert`` that
lowerline-report-failed-asserts turns into a reported failure.

Why: ``arith.divsi`` / ``remsi`` / ``floordivsi`` (and the unsigned and
ceiling forms) by zero are undefined behaviour in MLIR and LLVM; on x86 the
``idiv`` instruction traps, so ``torch.remainder``, ``torch.fmod`` or ``//``
of integer tensors by a zero element killed the user's process with SIGFPE,
where eager PyTorch raises. Upstream has no pass that guards a division:
``arith-expand`` and ``int-range-optimizations`` assume the divisor is not
zero.

Only integer (not ``index``) divisions whose divisor is not a constant get a
check: float division by zero is defined (inf / nan), a constant divisor is
known not to be zero when the model is compiled (a zero one is left to the
folders), and ``index`` divisions are the compiler's own (tile counts,
strides) over sizes. A vector divisor is checked lane by lane, reduced with
``vector.reduction <and>``. The assert carries the division's location, so
the failure names the model's line.

Signed divisions also get ``INT_MIN / -1`` defined: it overflows, which is
undefined behaviour too and traps on x86. A divisor of -1 is replaced by 1
and the quotient negated (wrapping, so ``INT_MIN // -1`` is ``INT_MIN`` as in
eager ``torch.floor_divide``); the remainder by 1 is already the remainder
by -1, zero. Upstream's ``arith-expand`` rewrites ``floordivsi`` and
``ceildivsi`` into ``divsi`` with the same overflow.

Before / after::

    %q = arith.remsi %a, %b : i32          %z = arith.constant 0 : i32
                                           %ok = arith.cmpi ne, %b, %z : i32
                                           cf.assert %ok, "integer division by zero (arith.remsi)"
                                           %q = arith.remsi %a, %b : i32
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, cf, vector

from lowerline.pipeline.pass_api import Pass, ops_matching

DIVISIONS = frozenset(
    {
        "arith.divsi",
        "arith.divui",
        "arith.remsi",
        "arith.remui",
        "arith.floordivsi",
        "arith.ceildivsi",
        "arith.ceildivui",
    }
)
MESSAGE = "integer division by zero"  # lowerline.errors.runtime_check_error's prefix


def _checked(op: ir.Operation) -> bool:
    """An integer division whose divisor is not a constant."""
    if op.name not in DIVISIONS:
        return False
    divisor = op.operands[1]
    element = divisor.type.element_type if isinstance(divisor.type, ir.VectorType) else divisor.type
    if not isinstance(element, ir.IntegerType):  # index: the compiler's own
        return False
    owner = divisor.owner
    return not (isinstance(owner, ir.OpView | ir.Operation) and owner.name == "arith.constant")


def _nonzero(divisor: ir.Value) -> ir.Value:
    """An i1 that holds when no element of ``divisor`` is zero."""
    t = divisor.type
    if isinstance(t, ir.VectorType):
        zero = arith.ConstantOp(t, ir.DenseElementsAttr.get_splat(t, _zero_attr(t.element_type)))
        lanes = arith.cmpi(arith.CmpIPredicate.ne, divisor, zero.result)
        return vector.reduction(ir.IntegerType.get_signless(1), vector.CombiningKind.AND, lanes)
    zero = arith.ConstantOp(t, _zero_attr(t))
    return arith.cmpi(arith.CmpIPredicate.ne, divisor, zero.result)


def _zero_attr(t: ir.Type) -> ir.Attribute:
    return ir.IntegerAttr.get(t, 0)


SIGNED = frozenset({"arith.divsi", "arith.remsi", "arith.floordivsi", "arith.ceildivsi"})
QUOTIENTS = frozenset({"arith.divsi", "arith.floordivsi", "arith.ceildivsi"})


def _splat(t: ir.Type, value: int) -> ir.Value:
    if isinstance(t, ir.VectorType):
        attr = ir.DenseElementsAttr.get_splat(t, ir.IntegerAttr.get(t.element_type, value))
        return arith.ConstantOp(t, attr).result
    return arith.ConstantOp(t, ir.IntegerAttr.get(t, value)).result


def _define_overflow(division: ir.Operation) -> None:
    """``a / -1`` as ``-(a / 1)``: no ``INT_MIN / -1`` reaches the op.

    Inserted before ``division``; the negation and select go after it."""
    a, b = division.operands[0], division.operands[1]
    by_minus_one = arith.cmpi(arith.CmpIPredicate.eq, b, _splat(b.type, -1))
    division.operands[1] = arith.select(by_minus_one, _splat(b.type, 1), b)
    if division.name not in QUOTIENTS:
        return  # x rem 1 == x rem -1 == 0
    quotient = division.results[0]
    with ir.InsertionPoint.after(division):
        negated = arith.subi(_splat(a.type, 0), quotient)
        chosen = arith.select(by_minus_one, negated, quotient)
    quotient.replace_all_uses_except(chosen, [negated.owner.operation, chosen.owner.operation])


@dataclass(frozen=True)
class CheckIntegerDivision(Pass):
    flag = "lowerline-check-integer-division"
    summary = (
        "Check an integer division's non-constant divisor for zero (cf.assert) and "
        "define INT_MIN / -1"
    )
    anchor = "builtin.module"

    def run(self, op: ir.Operation) -> None:
        for division in ops_matching(op, _checked):
            with division.location, ir.InsertionPoint(division):
                ok = _nonzero(division.operands[1])
                cf.AssertOp(ok, f"{MESSAGE} ({division.name})")
                if division.name in SIGNED:
                    _define_overflow(division)
