"""f32 ``sin`` and ``cos`` for ``lowerline-approximate-math``, vectorized,
computed in f64 lanes (the scheme of musl's ``sinf``/``cosf``).

Why f64: an f32 Cody-Waite reduction loses the low bits of ``r = x - k pi/2``
once ``k`` has more than a few bits; in f64, with pi/2 in two parts
(33 + 53 bits), ``r`` keeps f32 accuracy for ``|x| < 2^28 pi/2`` (musl's
bound), and f64 polynomials of degree 8/9 leave under 1 ulp after the final
rounding to f32::

    k = roundeven(x 2/pi)              x, k, r in f64
    r = x - k pio2_hi - k pio2_lo      |r| <= pi/4
    S(r) = r + r^3 (S1 + ...)          C(r) = 1 + r^2 (C0 + ...)   (musl __sindf/__cosdf)
    sin x = [S, C, -S, -C][k mod 4]    cos x = [C, -S, -C, S][k mod 4]

Lanes with ``|x| >= 2^28 pi/2`` (or inf/NaN) need a Payne-Hanek reduction,
which this module does not have: when any lane of a vector is that large
(``vector.reduction <or>`` under an ``scf.if``), every lane of that vector is
recomputed by f64 libm ``sin``/``cos`` and rounded to f32 (one scalar call
per lane, only for such vectors). NaN and +-inf give NaN, -0 stays -0 (sin).
"""

from __future__ import annotations

import itertools

from mlir import ir
from mlir.dialects import arith, math, scf, vector

from lowerline.passes.lowering.polynomials import cmp, horner, mul, select
from lowerline.passes.support.elementwise_ir import constant, like

_TWO_OVER_PI = 6.36619772367581382433e-01
_PIO2_HI = 1.57079631090164184570e00  # 33 bits: k * hi exact for k < 2^20
_PIO2_LO = 1.58932547735281966916e-08
_REDUCIBLE = 2.0**28 * 1.5707963267948966  # musl's medium-size bound
# musl __sindf: sin(r) = r + r^3 (S1 + r^2 S2 + r^4 (S3 + r^2 S4)), |r| <= pi/4.
_SIN = (2.7183114939898219064e-06, -1.98393348360966317347e-04, 8.3333293858894631756e-03,
        -1.66666666416265235595e-01)  # fmt: skip
# musl __cosdf: cos(r) = 1 + r^2 (C0 + r^2 C1 + r^4 (C2 + r^2 C3)).
_COS = (2.43904487962774090654e-05, -1.38867637746099294692e-03, 4.16666233237390631894e-02,
        -4.99999997251031003120e-01)  # fmt: skip


def _reduced(x: ir.Value, shift: int) -> ir.Value:
    """sin (``shift`` 0) or cos (``shift`` 1) of f32 ``x`` for
    ``|x| < 2^28 pi/2``, computed in f64 and rounded to f32; other lanes
    are garbage (finite or NaN) for the caller to replace."""
    t = x.type
    f64, i64 = like(t, ir.F64Type.get()), like(t, ir.IntegerType.get_signless(64))
    big = cmp(arith.CmpFPredicate.UGE, math.absf(x), constant(t, _REDUCIBLE))
    xd = arith.ExtFOp(f64, select(big, constant(t, 0.0), x)).result
    k = math.roundeven(mul(xd, constant(f64, _TWO_OVER_PI)))
    r = math.fma(k, constant(f64, -_PIO2_HI), xd)
    r = math.fma(k, constant(f64, -_PIO2_LO), r)
    z = mul(r, r)
    s = math.fma(mul(z, r), horner(_SIN, z), r)
    c = math.fma(z, horner(_COS, z), constant(f64, 1.0))
    q = arith.AddIOp(arith.FPToSIOp(i64, k).result, constant(i64, shift)).result
    odd = arith.CmpIOp(
        arith.CmpIPredicate.ne, arith.AndIOp(q, constant(i64, 1)).result, constant(i64, 0)
    ).result
    negative = arith.CmpIOp(
        arith.CmpIPredicate.ne, arith.AndIOp(q, constant(i64, 2)).result, constant(i64, 0)
    ).result
    y = select(odd, c, s)
    y = select(negative, arith.NegFOp(y).result, y)
    return arith.TruncFOp(t, y).result


def _libm(x: ir.Value, name: str) -> ir.Value:
    """f32 ``x`` through f64 ``math.sin``/``math.cos`` (libm), rounded to f32."""
    f64 = ir.F64Type.get()
    wide = arith.ExtFOp(f64, x).result
    op = math.sin(wide) if name == "sin" else math.cos(wide)
    return arith.TruncFOp(x.type, op).result


def _build(x: ir.Value, shift: int, name: str) -> ir.Value:
    t = x.type
    y = _reduced(x, shift)
    if shift == 0:  # sin(-0) = -0 (the f64 reduction rounds it to +0)
        y = select(cmp(arith.CmpFPredicate.OEQ, x, constant(t, 0.0)), x, y)
    big = cmp(arith.CmpFPredicate.UGE, math.absf(x), constant(t, _REDUCIBLE))
    if isinstance(t, ir.VectorType):
        any_big = vector.reduction(ir.IntegerType.get_signless(1), vector.CombiningKind.OR, big)
    else:
        any_big = big
    branch = scf.IfOp(any_big, [t], has_else=True)
    with ir.InsertionPoint(branch.then_block):
        if isinstance(t, ir.VectorType):
            slow = y
            for index in itertools.product(*(range(n) for n in t.shape)):
                lane = vector.extract(x, [], list(index))
                slow = vector.insert(_libm(lane, name), slow, [], list(index))
            scf.YieldOp([select(big, slow, y)])
        else:
            scf.YieldOp([_libm(x, name)])
    with ir.InsertionPoint(branch.else_block):
        scf.YieldOp([y])
    return branch.results[0]


def build_sin(x: ir.Value) -> ir.Value:
    return _build(x, 0, "sin")


def build_cos(x: ir.Value) -> ir.Value:
    return _build(x, 1, "cos")
