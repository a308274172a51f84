"""f32 ``powf(x, y)`` for ``lowerline-approximate-math``, vectorized,
computed as ``2^(y log2|x|)`` in f64 lanes.

Why f64: ``y log2|x|`` reaches +-150 before the result saturates, so an
absolute error e in it is a relative error e ln2 in the result; within 1 ulp
of f32 needs log2|x| to ~2^-32 relative, which f32 arithmetic only reaches
with a double-float log2 (musl's ``powf`` uses f64 internally for the same
reason). In f64 plain series suffice, and the one rounding to f32 at the end
(``arith.truncf``) also rounds overflow to inf and underflow to subnormals::

    |x| = 2^k m, sqrt(2)/2 <= m < sqrt(2)    on the f64 bits (f32 subnormals
                                              are normal in f64)
    s = (m - 1) / (m + 1)
    log2|x| = k + 2 s (1 + s^2/3 + ... + s^18/19) / ln2   (|s| < 0.172)
    w = y log2|x|, clamped to [-200, 200]
    2^w = 2^n exp(r ln2), n = roundeven(w), r = w - n (Taylor to r^11)

then C99's special cases on top: pow(x, +-0) = 1 (NaN x too), pow(1, y) = 1
(NaN y too), pow(-1, +-inf) = 1, the sign of x for odd integer y, NaN for
finite x < 0 and non-integer y; +-0 and +-inf bases follow from log2 = -inf
/ +inf. Upstream MLIR expands ``powf`` only as ``exp(y log x)`` in f32
(``math-expand-ops``: many ulps off for large results and NaN for x < 0 with
integer y) or calls scalar libm ``powf`` per lane.
"""

from __future__ import annotations

from math import factorial, log

from mlir import ir
from mlir.dialects import arith, math

from lowerline.passes.lowering.polynomials import add, cmp, horner, i32_like, mul, select, sub
from lowerline.passes.support.elementwise_ir import constant, like

_F64_ONE_BITS = 0x3FF0000000000000
_F64_SQRT_HALF_BITS = 0x3FE6A09E667F3BCD  # sqrt(2)/2
_F64_MANTISSA = 0x000FFFFFFFFFFFFF
_LN2 = log(2.0)
# log(m) = 2 s A(s^2), A = 1 + z/3 + ... + z^9/19 (truncation 1e-16 at
# |s| = 0.172); highest degree first, times 2/ln2 for log2.
_LOG2_A = tuple(2.0 / (_LN2 * (2 * k + 1)) for k in range(9, -1, -1))
# exp(r ln2) on |r| <= 1/2: Taylor to r^11 (truncation 1e-14).
_EXP2_P = tuple(_LN2**k / factorial(k) for k in range(11, -1, -1))
_CLAMP = 200.0  # 2^200 overflows f32, 2^-200 underflows it, both normal in f64
_INF = float("inf")
_ODD_LIMIT = 2.0**24  # every f32 at or above is an even integer


def _log2_abs(x: ir.Value) -> ir.Value:
    """log2|x| in f64 for f32 ``x``: -inf at 0, +inf at inf (garbage at NaN)."""
    f64, i64 = like(x.type, ir.F64Type.get()), like(x.type, ir.IntegerType.get_signless(64))
    a = math.absf(arith.ExtFOp(f64, x).result)
    bits = arith.BitcastOp(i64, a).result
    bits = arith.AddIOp(bits, constant(i64, _F64_ONE_BITS - _F64_SQRT_HALF_BITS)).result
    k = arith.SubIOp(arith.ShRSIOp(bits, constant(i64, 52)).result, constant(i64, 1023)).result
    mantissa = arith.AndIOp(bits, constant(i64, _F64_MANTISSA)).result
    m = arith.BitcastOp(f64, arith.AddIOp(mantissa, constant(i64, _F64_SQRT_HALF_BITS)).result)
    s = arith.DivFOp(sub(m.result, constant(f64, 1.0)), add(m.result, constant(f64, 1.0))).result
    y = math.fma(s, horner(_LOG2_A, mul(s, s)), arith.SIToFPOp(f64, k).result)
    y = select(cmp(arith.CmpFPredicate.OEQ, a, constant(f64, 0.0)), constant(f64, -_INF), y)
    return select(cmp(arith.CmpFPredicate.OEQ, a, constant(f64, _INF)), a, y)


def exp2_wide(w: ir.Value) -> ir.Value:
    """2^w for f64 ``w`` (NaN kept, +-inf saturated), in f64."""
    f64 = w.type
    i64 = like(f64, ir.IntegerType.get_signless(64))
    w = arith.MaximumFOp(arith.MinimumFOp(w, constant(f64, _CLAMP)).result, constant(f64, -_CLAMP))
    n = math.roundeven(w.result)
    p = horner(_EXP2_P, sub(w.result, n))
    biased = arith.AddIOp(arith.FPToSIOp(i64, n).result, constant(i64, 1023)).result
    two_n = arith.BitcastOp(f64, arith.ShLIOp(biased, constant(i64, 52)).result).result
    return mul(p, two_n)


def build_powf(x: ir.Value, y: ir.Value) -> ir.Value:
    """f32 ``pow(x, y)`` with C99's special cases (see the module docstring)."""
    t = x.type
    i32 = i32_like(t)
    f64 = like(t, ir.F64Type.get())
    w = mul(arith.ExtFOp(f64, y).result, _log2_abs(x))
    magnitude = arith.TruncFOp(t, exp2_wide(w)).result
    # The parity of y: only |y| < 2^24 can be odd; y is replaced by 0 above
    # so that fptosi stays in range.
    ay = math.absf(y)
    small = cmp(arith.CmpFPredicate.OLT, ay, constant(t, _ODD_LIMIT))
    y_int = arith.FPToSIOp(i32, select(small, y, constant(t, 0.0))).result
    odd = arith.CmpIOp(
        arith.CmpIPredicate.ne, arith.AndIOp(y_int, constant(i32, 1)).result, constant(i32, 0)
    ).result
    odd = arith.AndIOp(odd, cmp(arith.CmpFPredicate.OEQ, math.roundeven(y), y)).result
    x_bits = arith.BitcastOp(i32, x).result
    x_negative = arith.CmpIOp(arith.CmpIPredicate.slt, x_bits, constant(i32, 0)).result
    flip = arith.AndIOp(x_negative, odd).result
    r = select(flip, arith.NegFOp(magnitude).result, magnitude)
    # Finite x < 0 and a non-integer y: NaN (not -inf: pow(-inf, 0.5) = inf).
    finite_negative = arith.AndIOp(
        cmp(arith.CmpFPredicate.OLT, x, constant(t, 0.0)),
        cmp(arith.CmpFPredicate.OGT, x, constant(t, -_INF)),
    ).result
    fraction = cmp(arith.CmpFPredicate.ONE, math.roundeven(y), y)
    nan = constant(t, float("nan"))
    r = select(arith.AndIOp(finite_negative, fraction).result, nan, r)
    r = select(cmp(arith.CmpFPredicate.UNO, x, y), add(x, y), r)
    one = constant(t, 1.0)
    unit_to_inf = arith.AndIOp(
        cmp(arith.CmpFPredicate.OEQ, math.absf(x), one),
        cmp(arith.CmpFPredicate.OEQ, ay, constant(t, _INF)),
    ).result
    r = select(unit_to_inf, one, r)
    r = select(cmp(arith.CmpFPredicate.OEQ, x, one), one, r)
    return select(cmp(arith.CmpFPredicate.OEQ, y, constant(t, 0.0)), one, r)
