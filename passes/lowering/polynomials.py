"""Small builders shared by the math expansions (``lowerline-approximate-math``
and its sibling modules): fma-Horner polynomials and one-line wrappers of the
arith ops they chain, scalar or vector alike."""

from __future__ import annotations

from collections.abc import Sequence

from mlir import ir
from mlir.dialects import arith, math

from lowerline.passes.support.elementwise_ir import constant, like


def i32_like(t: ir.Type) -> ir.Type:
    return like(t, ir.IntegerType.get_signless(32))


def horner(coefficients: Sequence[float], t: ir.Value) -> ir.Value:
    """``sum c_i t^i`` by fma, coefficients highest degree first."""
    p = constant(t.type, coefficients[0])
    for c in coefficients[1:]:
        p = math.fma(p, t, constant(t.type, c))
    return p


def cmp(predicate: arith.CmpFPredicate, a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.CmpFOp(predicate, a, b).result


def select(condition: ir.Value, a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.SelectOp(condition, a, b).result


def mul(a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.MulFOp(a, b).result


def add(a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.AddFOp(a, b).result


def sub(a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.SubFOp(a, b).result


def power_of_two(n: ir.Value, t: ir.Type) -> ir.Value:
    """2^n (type ``t``, f32) for an i32 ``n`` in [-126, 127], built in the
    exponent bits."""
    i32 = n.type
    biased = arith.AddIOp(n, constant(i32, 127)).result
    return arith.BitcastOp(t, arith.ShLIOp(biased, constant(i32, 23)).result).result


def scale(y: ir.Value, n: ir.Value) -> ir.Value:
    """``y * 2^n`` for an i32 ``n`` in [-252, 254] as two exact powers of two,
    so that the product under- and overflows (and rounds to subnormals) once."""
    i32 = n.type
    half = arith.ShRSIOp(n, constant(i32, 1)).result
    rest = arith.SubIOp(n, half).result
    return mul(mul(y, power_of_two(half, y.type)), power_of_two(rest, y.type))
