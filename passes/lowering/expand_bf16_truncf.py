"""``lowerline-expand-bf16-truncf``: truncate to bf16 with integer ops, correctly rounded.

Why: LLVM lowers ``fptrunc`` to ``bfloat`` either to ``vcvtneps2bf16``
(AVX512-BF16), which flushes subnormal results to zero where torch keeps
them, or to calls of ``__truncsfbf2`` / ``__truncdfbf2``, which compiler-rt
has but libgcc before GCC 13 does not (the library then fails to load:
``undefined symbol: __truncdfbf2``). Upstream's ``arith-expand{include-bf16}``
expands f32 -> bf16 the same way as here, but only from f32, and the same
pass also expands every ``arith.maximumf``/``minimumf`` into compares and
selects, which would lose ``llvm.intr.maximum`` (one instruction on AArch64)
for every ReLU and max-pool; it has no option to expand only truncations.

From f32, round to nearest even on the bits (a NaN becomes the quiet NaN
0x7FC0)::

    %r = arith.truncf %x : f32 to bf16    %b = arith.bitcast %x : f32 to i32
                                          %l = (%b >> 16) & 1
                                          %h = trunci((%b + 0x7FFF + %l) >> 16) : i16
                                          %s = select(isnan(%x), 0x7FC0, %h) : i16
                                          %r = arith.bitcast %s : i16 to bf16

From f64, first truncate to f32 rounding to odd (round to nearest, step one
ulp toward zero if that rounded away from zero, set the last bit if
inexact), then as above: rounding to odd first keeps the pair correctly
rounded, since f32 has 16 more bits than bf16.

Scalars and vectors are expanded; a truncation with an explicit rounding
mode, or to any other type, is left alone. The CPU pipeline (which the
GPU-mapped IR run on the CPU shares) runs ``math-extend-to-supported-types``
and ``arith-emulate-unsupported-floats{source-types=bf16 target-type=f32}``
first, so bf16 arithmetic is f32 arithmetic and every rounding back to bf16
is a truncation expanded here: LLVM would otherwise promote each bf16
operation with a truncation of its own, a libcall where the CPU name lacks
AVX512-BF16 (``x86-64-v4`` on an AMD Zen 4 host, measured: ``undefined
symbol: __truncsfbf2``).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith

from lowerline.passes.support.elementwise_ir import constant as _constant
from lowerline.passes.support.elementwise_ir import element as _element
from lowerline.passes.support.elementwise_ir import expand
from lowerline.passes.support.elementwise_ir import like as _like
from lowerline.pipeline.pass_api import Pass

_CMP = arith.CmpFPredicate


def _matches(op: ir.Operation) -> bool:
    if op.name != "arith.truncf" or "roundingmode" in op.attributes:
        return False
    source, result = _element(op.operands[0].type), _element(op.results[0].type)
    return isinstance(source, ir.F32Type | ir.F64Type) and isinstance(result, ir.BF16Type)


def _f64_to_f32_round_to_odd(x: ir.Value) -> ir.Value:
    f32 = _like(x.type, ir.F32Type.get())
    i32 = _like(x.type, ir.IntegerType.get_signless(32))
    nearest = arith.TruncFOp(f32, x).result
    back = arith.ExtFOp(x.type, nearest).result
    bits = arith.BitcastOp(i32, nearest).result
    positive = arith.CmpFOp(_CMP.OGT, x, _constant(x.type, 0.0)).result
    above = arith.CmpFOp(_CMP.OGT, back, x).result
    below = arith.CmpFOp(_CMP.OLT, back, x).result
    away = arith.SelectOp(positive, above, below).result
    one = _constant(i32, 1)
    toward_zero = arith.SelectOp(away, arith.SubIOp(bits, one).result, bits).result
    inexact = arith.CmpFOp(_CMP.ONE, back, x).result  # false for NaN
    odd = arith.SelectOp(inexact, arith.OrIOp(toward_zero, one).result, bits).result
    return arith.BitcastOp(f32, odd).result


def _f32_to_bf16_nearest_even(x: ir.Value, result_type: ir.Type) -> ir.Value:
    i32 = _like(x.type, ir.IntegerType.get_signless(32))
    i16 = _like(x.type, ir.IntegerType.get_signless(16))
    bits = arith.BitcastOp(i32, x).result
    sixteen = _constant(i32, 16)
    lsb = arith.AndIOp(arith.ShRUIOp(bits, sixteen).result, _constant(i32, 1)).result
    bias = arith.AddIOp(_constant(i32, 0x7FFF), lsb).result
    rounded = arith.ShRUIOp(arith.AddIOp(bits, bias).result, sixteen).result
    high = arith.TruncIOp(i16, rounded).result
    is_nan = arith.CmpFOp(_CMP.UNO, x, x).result
    chosen = arith.SelectOp(is_nan, _constant(i16, 0x7FC0), high).result
    return arith.BitcastOp(result_type, chosen).result


def _expand(op: ir.Operation) -> None:
    result_type = op.results[0].type

    def build(x: ir.Value) -> ir.Value:
        if isinstance(_element(x.type), ir.F64Type):
            x = _f64_to_f32_round_to_odd(x)
        return _f32_to_bf16_nearest_even(x, result_type)

    expand(op, build)


@dataclass(frozen=True)
class ExpandBf16Truncf(Pass):
    flag = "lowerline-expand-bf16-truncf"
    summary = "Truncate f32/f64 to bf16 with integer ops (no libcalls, subnormals kept)"
    anchor = None

    def run(self, op: ir.Operation) -> None:
        found: list[ir.Operation] = []

        def visit(child: ir.Operation) -> ir.WalkResult:
            if _matches(child):
                found.append(child)
            return ir.WalkResult.ADVANCE

        op.walk(visit)
        for truncf in found:
            _expand(truncf)
        _drop_conversion_fastmath(op)


def _drop_conversion_fastmath(op: ir.Operation) -> None:
    """``arith-emulate-unsupported-floats`` and ``math-extend-to-supported-types``
    (run before this pass: bf16 arithmetic in f32) copy an op's fastmath flags
    onto the ``extf``/``truncf`` they insert; ``convert-arith-to-llvm`` keeps
    them on ``llvm.fpext``/``fptrunc`` as an ``arith`` attribute that
    ``mlir-translate`` rejects. Conversions do no arithmetic the flags could
    relax."""

    def visit(child: ir.Operation) -> ir.WalkResult:
        if child.name in ("arith.extf", "arith.truncf") and "fastmath" in child.attributes:
            del child.attributes["fastmath"]
        return ir.WalkResult.ADVANCE

    op.walk(visit)
