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


@dataclass(frozen=True)
class CheckIntegerDivision(Pass):
    flag = "lowerline-check-integer-division"
    summary = "Check an integer division's non-constant divisor for zero (cf.assert)"
    anchor = "builtin.module"

    def run(self, op: ir.Operation) -> None:
        for division in ops_matching(op, _checked):
            with division.location, ir.InsertionPoint(division):
                ok = _nonzero(division.operands[1])
                cf.AssertOp(ok, f"{MESSAGE} ({division.name})")
