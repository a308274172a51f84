"""``lowerline-approximate-math``: f32 tanh, erf, erfc, log, log1p, log2, expm1,
exp2 (``powf`` of the constant 2, torch-mlir's ``torch.exp2``), sin, cos,
atan, atan2 and ``powf`` of any base as vector polynomials (no libm calls,
sin/cos aside for |x| >= 2^28 pi/2).

Why: LLVM has no vector ``tanh``, ``erf``, ``log`` or ``log1p`` of its own;
``llvm.tanh`` / ``llvm.log`` on a vector, and ``math.erf`` / ``math.log1p``
through ``convert-math-to-libm``, become one call of libm's scalar
``tanhf`` / ``erff`` / ``logf`` / ``log1pf`` per lane (GELU, tanh and Mish
ran 6-7x slower than eager, measured). Upstream MLIR has polynomial
approximations of these (``populateMathPolynomialApproximationPatterns``) but
registers them only in the test pass ``-test-math-polynomial-approximation``,
absent from the released tools and the Python bindings; they also trade
accuracy for speed (a rational tanh, a clamped rational erf). The registered
``math-expand-ops`` rewrites tanh as ``(1 - e^-2|x|) / (1 + e^-2|x|)``,
which loses all relative accuracy near 0. This pass expands every f32 op
it knows, scalar or vector, into fma/select arithmetic within 1 ulp of the
correctly rounded result over the whole f32 range (NaN, +-inf, +-0 and
subnormals included; the pytest suite sweeps bit patterns)::

    tanh(x)  |x| < 0.9:  x + x^3 P(x^2)                    P: degree 7, fitted
             else:       sign(x) (1 - 2 / (exp(2 min(|x|, 10)) + 1))
    erf(x)   |x| < 1:    x + x Q(x^2)                      Q: degree 7, fitted
             else:       sign(x) (1 - exp(-x^2) R(|x| - 5/2))
                         R ~ erfcx on [1, 3.925], degree 12; x^2 split in
                         two floats (fma) so exp(-x^2) keeps its accuracy;
                         above 3.925 this rounds to 1.
    erfc(x)  |x| < 3/4:  (1 - x) + (-x Q(x^2)), 1 - x as an exact sum
             else:       e^(-a^2) (1 + P(q)) / (1 + 2a), a = |x|,
                         q = (a - 2) / (a + 2) (N. Juffa's erfcf), P:
                         degree 11; e^(-a^2) and the product in f64 lanes;
                         2 - that below 0, 0 above 10.0546875
    log(x)   x = 2^k (1 + f), sqrt(2)/2 <= 1 + f < sqrt(2)  (subnormals
             scaled by 2^23 first), s = f / (2 + f):
             k ln2_hi + (f - f^2/2 + s (f^2/2 + R(s^2)) + k ln2_lo)
             R: fdlibm/musl ``logf``'s four coefficients
    log1p(x) the same on u = 1 + x, plus the rounding error of 1 + x as a
             correction (x - (u - 1)) / u, as musl's ``log1pf`` does;
             x itself below 2^-24.
    log2(x)  the same reduction; log(1 + f) = hi + lo with hi cut to 12 bits,
             times 1/ln2 in two parts (musl ``log2f``), plus k
    expm1(x) n = round(x / ln2), r = x - n ln2 (two parts, plus r's rounding
             error), p = r + r^2 Q(r) (Taylor to r^9), expm1 = fma(2^n, p,
             2^n - 1); n = 128 split as 2 * 2^127; x below 2^-25; -1 below
             -30. (``convert-math-to-llvm`` lowers expm1 to exp(x) - 1, wrong
             near 0: expm1(1e-6) gave 9.537e-7.)
    2^x      n = round(x), r = x - n exact, 2^r by Taylor to r^8, times 2^n
             as two exact powers of two (subnormal results rounded once)
    sin, cos in f64 lanes with musl's reduction and polynomials; see
             ``trigonometry.py`` (and its libm fallback for huge |x|)
    atan,    in f64 lanes: Cephes's reduction (pi/2 - atan(1/x), pi/4 +
    atan2    atan((x-1)/(x+1))) and a degree-5 polynomial in x^2; atan2 from
             atan(|y|/|x|) with C99's quadrants; see ``arctangent.py``
    x^y      2^(y log2|x|) in f64 lanes plus C99's special cases; see
             ``power.py`` (powf of the constant base 2 takes exp2 above)

exp itself comes from ``lowerline-approximate-exp``. bf16/f16 ops reach here
already widened to f32 (``math-extend-to-supported-types`` in the llvm stage)
and are rounded once at the end. Other element types keep libm.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from math import factorial

from mlir import ir
from mlir.dialects import arith, math

from lowerline.passes.lowering.approximate_exp import build_exp
from lowerline.passes.lowering.arctangent import build_atan, build_atan2
from lowerline.passes.lowering.polynomials import (
    add,
    cmp,
    horner,
    i32_like,
    mul,
    power_of_two,
    scale,
    select,
    sub,
)
from lowerline.passes.lowering.power import build_powf, exp2_wide
from lowerline.passes.lowering.trigonometry import build_cos, build_sin
from lowerline.passes.support.elementwise_ir import constant, element, expand, like
from lowerline.pipeline.pass_api import Pass, ops_matching

# tanh(x) = x + x^3 * P(x^2) on |x| < 0.9; highest degree first (minimax fit
# of the relative error, 5e-9 before rounding the coefficients to f32).
_TANH_SMALL = 0.9
_TANH_P = (
    -2.7291580408927985e-05,
    -0.00044946843991056085,
    0.002690315945073962,
    -0.008421149104833603,
    0.021754710003733635,
    -0.05395415425300598,
    0.1333327293395996,
    -0.3333333432674408,
)
_TANH_ONE = 10.0  # tanh rounds to +-1 beyond

# erf(x) = x + x * Q(x^2) on |x| < 1 (minimax, relative 4.5e-10).
_ERF_SMALL = 1.0
_ERF_Q = (
    -9.763401067175437e-06,
    0.0001129329830291681,
    -0.000848678348120302,
    0.00522112799808383,
    -0.02686542458832264,
    0.11283781379461288,
    -0.37612637877464294,
    0.12837916612625122,
)
# erfc(x) * exp(x^2) on [1, 3.925] as R(x - 5/2) (minimax, relative 4e-9).
_ERF_ONE = 3.925  # erf rounds to +-1 beyond
_ERF_MID = 2.5
_ERF_R = (
    1.0988114951260286e-07,
    -4.1773046177695505e-07,
    9.372785712002951e-07,
    -3.794604481299757e-06,
    1.619662180019077e-05,
    -5.943062205915339e-05,
    0.0002108389453496784,
    -0.0007332314271479845,
    0.002467099344357848,
    -0.008001667447388172,
    0.024937989190220833,
    -0.07434733957052231,
    0.21080636978149414,
)

# erfc(a) for a >= 0 (after N. Juffa's erfcf): (1 + 2a) exp(a^2) erfc(a) - 1
# as a polynomial in q = (a - 2) / (a + 2), which maps [0, 10.0546875] to
# [-1, 0.668]; highest degree first (least squares on Chebyshev nodes,
# relative error 8e-9 in 1 + p after rounding the coefficients to f32).
_ERFC_P = (
    8.050516044022515e-05,
    0.0001715689868433401,
    -0.0004008619871456176,
    -0.001423235167749226,
    0.0012519585434347391,
    0.008710047230124474,
    -0.00803049374371767,
    -0.054217979311943054,
    0.16405098140239716,
    -0.16603051126003265,
    -0.09276381880044937,
    0.27697837352752686,
)
_ERFC_ZERO = 10.0546875  # erfc rounds to +0 beyond
# 1 - erf(x) below (erf's polynomial; measured under 1 ulp to 0.8, 2.3 at
# 0.95, where erfc is 0.18 and the polynomial's rounding shows); the exp
# form above (1.6 ulps at worst, 2.6 near 0).
_ERFC_SMALL = 0.75
_LOG2E = 1.4426950408889634

# fdlibm / musl logf: log(1 + f) = f - f^2/2 + s (f^2/2 + R), s = f / (2 + f).
_LOG_LG = (0.66666662693, 0.40000972152, 0.28498786688, 0.24279078841)
_LN2_HI = 6.9313812256e-01
_LN2_LO = 9.0580006145e-06
_SQRT_HALF_BITS = 0x3F3504F3  # sqrt(2)/2
_ONE_BITS = 0x3F800000
_MANTISSA = 0x007FFFFF
_TINY = 2.0**-126  # the smallest normal f32
_INF = float("inf")

# expm1(r) = r + r^2 Q(r) on |r| <= ln(2)/2: Taylor to r^9 (truncation error
# 6e-10 relative); highest degree first.
_EXPM1_Q = tuple(1.0 / factorial(k) for k in range(9, 1, -1))
_EXPM1_LOW, _EXPM1_HIGH = -30.0, 89.0  # rounds to -1 below; overflows above
_INV_LN2 = 1.44269504088896341
# ln(2) = hi + lo, hi with 16 trailing zero bits so n * hi is exact (|n| < 2^8).
_EXPM1_LN2_HI = 0.693145751953125
_EXPM1_LN2_LO = 1.4286067653e-06

# 2^r on |r| <= 1/2: Taylor of exp(r ln2) to r^8 (truncation 3e-10).
_EXP2_P = tuple(0.6931471805599453**k / factorial(k) for k in range(8, 0, -1))
_EXP2_LOW, _EXP2_HIGH = -151.0, 129.0  # 0 below, inf above

# fdlibm / musl log2f: 1/ln2 split so that hi * (f - f^2/2, 12 bits) is exact.
_IVLN2_HI = 1.4428710938e00
_IVLN2_LO = -1.7605285393e-04
_HIGH_12_BITS = -4096  # 0xfffff000


def _tanh(x: ir.Value) -> ir.Value:
    t = x.type
    z = mul(x, x)
    small = math.fma(mul(x, z), horner(_TANH_P, z), x)
    a = arith.MinimumFOp(math.absf(x), constant(t, _TANH_ONE)).result
    e = build_exp(add(a, a))
    big = sub(constant(t, 1.0), arith.DivFOp(constant(t, 2.0), add(e, constant(t, 1.0))).result)
    is_small = cmp(arith.CmpFPredicate.OLT, math.absf(x), constant(t, _TANH_SMALL))
    # copysign also keeps -0 (the fma rounds -0 + -0 * p to +0).
    return math.copysign(select(is_small, small, big), x)


def _erf(x: ir.Value) -> ir.Value:
    t = x.type
    small = math.fma(x, horner(_ERF_Q, mul(x, x)), x)
    a = arith.MinimumFOp(math.absf(x), constant(t, _ERF_ONE)).result
    square = mul(a, a)
    square_lo = math.fma(a, a, arith.NegFOp(square).result)
    e = build_exp(arith.NegFOp(square).result)
    e = math.fma(arith.NegFOp(e).result, square_lo, e)  # exp(-hi - lo)
    r = horner(_ERF_R, sub(a, constant(t, _ERF_MID)))
    big = sub(constant(t, 1.0), mul(e, r))
    is_small = cmp(arith.CmpFPredicate.OLT, math.absf(x), constant(t, _ERF_SMALL))
    # copysign also keeps -0 (the fma rounds -0 + -0 * p to +0).
    return math.copysign(select(is_small, small, big), x)


def build_erfc(x: ir.Value) -> ir.Value:
    """f32 ``erfc(x)``: ``exp(-a^2) (1 + p(q)) / (1 + 2a)`` for ``a = |x|``,
    ``2 - erfc(a)`` below 0. Never ``1 - erf(x)``, which has no correct
    digit left once erfc(x) is below ulp(1) / 2 (x > 3.8)."""
    t = x.type
    a = math.absf(x)
    # q = (a - 2) / (a + 2), corrected by its residual (a - 2) - q (a + 2):
    # a - 2 and a + 2 round (by up to 1.5 ulps of q near a = 0).
    r = arith.DivFOp(constant(t, 1.0), add(a, constant(t, 2.0))).result
    q = mul(sub(a, constant(t, 2.0)), r)
    residual = math.fma(
        arith.NegFOp(q).result, a, math.fma(add(q, constant(t, 1.0)), constant(t, -2.0), a)
    )
    q = math.fma(r, residual, q)
    p = horner(_ERFC_P, q)
    # (1 + p) / (1 + 2a) as r / 2 with r = 1 / (a + 1/2), corrected by its
    # residual (1 + p) - y (1 + 2a), in which 1 + 2a is never rounded.
    r = mul(arith.DivFOp(constant(t, 1.0), add(a, constant(t, 0.5))).result, constant(t, 0.5))
    y = math.fma(p, r, r)
    residual = add(sub(p, y), math.fma(add(y, y), arith.NegFOp(a).result, constant(t, 1.0)))
    y = math.fma(residual, r, y)
    # exp(-a^2) and the product in f64 lanes: a^2 is exact there, and the
    # result rounds once (to a subnormal below 2^-126). In f32, exp(-a^2)
    # and the product each rounded: 2.1 ulps at worst.
    f64 = like(t, ir.F64Type.get())
    a_wide = arith.ExtFOp(f64, a).result
    e = exp2_wide(mul(mul(a_wide, a_wide), constant(f64, -_LOG2E)))
    y = arith.TruncFOp(t, mul(arith.ExtFOp(f64, y).result, e)).result
    y = select(cmp(arith.CmpFPredicate.OGT, a, constant(t, _ERFC_ZERO)), constant(t, 0.0), y)
    y = select(cmp(arith.CmpFPredicate.OLT, x, constant(t, 0.0)), sub(constant(t, 2.0), y), y)
    is_small = cmp(arith.CmpFPredicate.OLT, a, constant(t, _ERFC_SMALL))
    y = select(is_small, _erfc_small(x), y)
    return select(cmp(arith.CmpFPredicate.UNO, x, x), x, y)


def _erfc_small(x: ir.Value) -> ir.Value:
    """``1 - erf(x)`` for ``|x| < 3/4`` (a result in [0.28, 1.72]), with
    erf's polynomial ``x + x Q(x^2)`` and ``1 - x`` as an exact two-term sum,
    so that only the last addition rounds (the exp form above was off by
    2.6 ulps near 0, where exp(-x^2) and the polynomial in q both round)."""
    t = x.type
    one = constant(t, 1.0)
    head = sub(one, x)
    tail = sub(sub(one, head), x)  # exact: |x| < 1 (Fast2Sum)
    return add(head, math.fma(arith.NegFOp(x).result, horner(_ERF_Q, mul(x, x)), tail))


def _split(u: ir.Value) -> tuple[ir.Value, ir.Value]:
    """``(k, f)`` with ``u = 2^k (1 + f)``, ``sqrt(2)/2 <= 1 + f < sqrt(2)``,
    for a positive normal ``u``; ``k`` an i32."""
    t, i32 = u.type, i32_like(u.type)
    bits = arith.BitcastOp(i32, u).result
    bits = arith.AddIOp(bits, constant(i32, _ONE_BITS - _SQRT_HALF_BITS)).result
    k = arith.SubIOp(arith.ShRSIOp(bits, constant(i32, 23)).result, constant(i32, 127)).result
    mantissa = arith.AndIOp(bits, constant(i32, _MANTISSA)).result
    m = arith.BitcastOp(t, arith.AddIOp(mantissa, constant(i32, _SQRT_HALF_BITS)).result).result
    return k, sub(m, constant(t, 1.0))


def _log_terms(f: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value]:
    """fdlibm's pieces of ``log(1 + f) = f - f^2/2 + s (f^2/2 + r)``:
    ``s = f / (2 + f)``, the polynomial ``r`` and ``f^2/2``."""
    t = f.type
    s = arith.DivFOp(f, add(constant(t, 2.0), f)).result
    z = mul(s, s)
    w = mul(z, z)
    lg1, lg2, lg3, lg4 = (constant(t, c) for c in _LOG_LG)
    r = add(mul(z, math.fma(w, lg3, lg1)), mul(w, math.fma(w, lg4, lg2)))
    half_f2 = mul(mul(constant(t, 0.5), f), f)
    return s, r, half_f2


def _log_reduced(k: ir.Value, f: ir.Value, correction: ir.Value) -> ir.Value:
    """``k ln2 + log(1 + f) + correction`` for ``|f| <= sqrt(2) - 1``."""
    t = f.type
    s, r, half_f2 = _log_terms(f)
    dk = arith.SIToFPOp(t, k).result
    low = math.fma(dk, constant(t, _LN2_LO), correction)
    y = sub(math.fma(s, add(half_f2, r), low), half_f2)
    return math.fma(dk, constant(t, _LN2_HI), add(y, f))


def _log_specials(x: ir.Value, y: ir.Value, at_zero: float) -> ir.Value:
    """``y`` where the argument ``x`` of log(x) or log1p(x - 1) is finite
    and positive; -inf at 0 (``x == at_zero``), NaN below, x at +inf and NaN."""
    t = x.type
    y = select(cmp(arith.CmpFPredicate.OEQ, x, constant(t, at_zero)), constant(t, -_INF), y)
    y = select(cmp(arith.CmpFPredicate.OLT, x, constant(t, at_zero)), constant(t, float("nan")), y)
    return select(cmp(arith.CmpFPredicate.UEQ, x, constant(t, _INF)), x, y)


def _split_scaled(x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """``_split`` of positive ``x``, subnormals first scaled by 2^23 (their
    exponent field is 0) and the exponent corrected back."""
    t = x.type
    i32 = i32_like(t)
    subnormal = cmp(arith.CmpFPredicate.OLT, x, constant(t, _TINY))
    scaled = select(subnormal, mul(x, constant(t, 2.0**23)), x)
    k, f = _split(scaled)
    k = arith.SubIOp(k, select(subnormal, constant(i32, 23), constant(i32, 0))).result
    return k, f


def _log(x: ir.Value) -> ir.Value:
    k, f = _split_scaled(x)
    return _log_specials(x, _log_reduced(k, f, constant(x.type, 0.0)), 0.0)


def _log1p(x: ir.Value) -> ir.Value:
    t = x.type
    i32 = i32_like(t)
    u = add(constant(t, 1.0), x)
    k, f = _split(u)
    # The rounding error of 1 + x, relative to u: exact below 2^25.
    c_large = sub(constant(t, 1.0), sub(u, x))
    c_small = sub(x, sub(u, constant(t, 1.0)))
    k_large = arith.CmpIOp(arith.CmpIPredicate.sge, k, constant(i32, 2)).result
    c = arith.DivFOp(select(k_large, c_large, c_small), u).result
    k_huge = arith.CmpIOp(arith.CmpIPredicate.sge, k, constant(i32, 25)).result
    c = select(k_huge, constant(t, 0.0), c)
    y = _log_specials(x, _log_reduced(k, f, c), -1.0)
    # Below 2^-24, log1p(x) rounds to x (and keeps the sign of -0).
    tiny = cmp(arith.CmpFPredicate.OLT, math.absf(x), constant(t, 2.0**-24))
    return select(tiny, x, y)


def _log2(x: ir.Value) -> ir.Value:
    t = x.type
    i32 = i32_like(t)
    k, f = _split_scaled(x)
    # log(1 + f) = hi + lo with hi = f - f^2/2 cut to 12 bits (musl log2f),
    # so hi / ln2 is hi * ivln2_hi (exact) plus small terms.
    s, r, half_f2 = _log_terms(f)
    hi = sub(f, half_f2)
    hi_bits = arith.AndIOp(arith.BitcastOp(i32, hi).result, constant(i32, _HIGH_12_BITS)).result
    hi = arith.BitcastOp(t, hi_bits).result
    lo = math.fma(s, add(half_f2, r), sub(sub(f, hi), half_f2))
    small = math.fma(add(lo, hi), constant(t, _IVLN2_LO), mul(lo, constant(t, _IVLN2_HI)))
    dk = arith.SIToFPOp(t, k).result
    y = add(add(small, mul(hi, constant(t, _IVLN2_HI))), dk)
    return _log_specials(x, y, 0.0)


def _expm1(x: ir.Value) -> ir.Value:
    t = x.type
    i32 = i32_like(t)
    a = arith.MaximumFOp(
        arith.MinimumFOp(x, constant(t, _EXPM1_HIGH)).result, constant(t, _EXPM1_LOW)
    ).result
    n = math.roundeven(mul(a, constant(t, _INV_LN2)))
    # r = a - n ln2 in two parts; r_hi exact (Sterbenz), r_lo its correction.
    r_hi = math.fma(n, constant(t, -_EXPM1_LN2_HI), a)
    r = math.fma(n, constant(t, -_EXPM1_LN2_LO), r_hi)
    r_lo = math.fma(n, constant(t, -_EXPM1_LN2_LO), sub(r_hi, r))
    p = math.fma(mul(r, r), horner(_EXPM1_Q, r), r)
    # expm1(r + r_lo) ~ p + r_lo (1 + p)
    p = math.fma(r_lo, add(p, constant(t, 1.0)), p)
    # expm1(a) = 2^n (1 + p) - 1 = fma(2^n, p, 2^n - 1): 2^n - 1 is exact for
    # n <= 24 and negligible rounding above. n = 128 is split as 2 * 2^127.
    k = arith.FPToSIOp(i32, n).result
    k1 = arith.MinSIOp(k, constant(i32, 127)).result
    two_k = power_of_two(k1, t)
    y = math.fma(two_k, p, sub(two_k, constant(t, 1.0)))
    y = mul(y, power_of_two(arith.SubIOp(k, k1).result, t))
    # Below 2^-25, expm1(x) rounds to x (and keeps -0); NaN stays NaN.
    keep = cmp(arith.CmpFPredicate.ULT, math.absf(x), constant(t, 2.0**-25))
    return select(keep, x, y)


def build_exp2(x: ir.Value) -> ir.Value:
    """f32 ``2^x``: ``2^n 2^r``, ``n = round(x)``, ``r = x - n`` exact."""
    t = x.type
    i32 = i32_like(t)
    a = arith.MaximumFOp(
        arith.MinimumFOp(x, constant(t, _EXP2_HIGH)).result, constant(t, _EXP2_LOW)
    ).result
    n = math.roundeven(a)
    r = sub(a, n)
    p = math.fma(r, horner(_EXP2_P, r), constant(t, 1.0))
    y = scale(p, arith.FPToSIOp(i32, n).result)
    return select(cmp(arith.CmpFPredicate.UNO, x, x), x, y)


def _exp2_base(op: ir.Operation) -> bool:
    """Whether ``op`` is ``math.powf`` of the constant base 2 (torch-mlir's
    ``torch.exp2``)."""
    if op.name != "math.powf":
        return False
    owner = op.operands[0].owner
    if not isinstance(owner, ir.OpView) or owner.name != "arith.constant":
        return False
    value = owner.attributes["value"]
    if isinstance(value, ir.FloatAttr):
        return value.value == 2.0
    if isinstance(value, ir.DenseFPElementsAttr) and value.is_splat:
        return ir.FloatAttr(value.get_splat_value()).value == 2.0
    return False


_BUILDERS: dict[str, Callable[[ir.Value], ir.Value]] = {
    "math.tanh": _tanh,
    "math.erf": _erf,
    "math.erfc": build_erfc,
    "math.log": _log,
    "math.log1p": _log1p,
    "math.log2": _log2,
    "math.expm1": _expm1,
    "math.sin": build_sin,
    "math.cos": build_cos,
    "math.atan": build_atan,
}

# Two-operand functions; powf of the constant 2 is matched before these.
_BINARY_BUILDERS: dict[str, Callable[[ir.Value, ir.Value], ir.Value]] = {
    "math.atan2": build_atan2,
    "math.powf": build_powf,
}


def _is_f32_known(op: ir.Operation) -> bool:
    return op.name in _BUILDERS and isinstance(element(op.operands[0].type), ir.F32Type)


def _is_f32_exp2(op: ir.Operation) -> bool:
    return _exp2_base(op) and isinstance(element(op.operands[1].type), ir.F32Type)


def _is_f32_binary(op: ir.Operation) -> bool:
    return op.name in _BINARY_BUILDERS and isinstance(element(op.operands[0].type), ir.F32Type)


@dataclass(frozen=True)
class ApproximateMath(Pass):
    flag = "lowerline-approximate-math"
    summary = (
        "Expand f32 math.tanh/erf/erfc/log/log1p/log2/expm1/sin/cos/atan/atan2/powf"
        " into vectorizable polynomials (no libm calls)"
    )
    anchor = None

    def run(self, op: ir.Operation) -> None:
        for found in ops_matching(op, _is_f32_known):
            expand(found, _BUILDERS[found.name])
        for found in ops_matching(op, _is_f32_exp2):
            expand(found, lambda _, x: build_exp2(x))
        for found in ops_matching(op, _is_f32_binary):
            expand(found, _BINARY_BUILDERS[found.name])
