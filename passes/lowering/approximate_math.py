"""``lowerline-approximate-math``: f32 tanh, erf, log and log1p as vector
polynomials (no libm calls).

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
    log(x)   x = 2^k (1 + f), sqrt(2)/2 <= 1 + f < sqrt(2)  (subnormals
             scaled by 2^23 first), s = f / (2 + f):
             k ln2_hi + (f - f^2/2 + s (f^2/2 + R(s^2)) + k ln2_lo)
             R: fdlibm/musl ``logf``'s four coefficients
    log1p(x) the same on u = 1 + x, plus the rounding error of 1 + x as a
             correction (x - (u - 1)) / u, as musl's ``log1pf`` does;
             x itself below 2^-24.

exp itself comes from ``lowerline-approximate-exp``. bf16/f16 ops reach here
already widened to f32 (``math-extend-to-supported-types`` in the llvm stage)
and are rounded once at the end. Other element types keep libm.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, math

from lowerline.passes.lowering.approximate_exp import build_exp
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

# fdlibm / musl logf: log(1 + f) = f - f^2/2 + s (f^2/2 + R), s = f / (2 + f).
_LOG_LG = (0.66666662693, 0.40000972152, 0.28498786688, 0.24279078841)
_LN2_HI = 6.9313812256e-01
_LN2_LO = 9.0580006145e-06
_SQRT_HALF_BITS = 0x3F3504F3  # sqrt(2)/2
_ONE_BITS = 0x3F800000
_MANTISSA = 0x007FFFFF
_TINY = 2.0**-126  # the smallest normal f32
_INF = float("inf")


def _i32(t: ir.Type) -> ir.Type:
    return like(t, ir.IntegerType.get_signless(32))


def _horner(coefficients: Sequence[float], t: ir.Value) -> ir.Value:
    """``sum c_i t^i`` by fma, coefficients highest degree first."""
    p = constant(t.type, coefficients[0])
    for c in coefficients[1:]:
        p = math.fma(p, t, constant(t.type, c))
    return p


def _cmp(predicate: arith.CmpFPredicate, a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.CmpFOp(predicate, a, b).result


def _select(condition: ir.Value, a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.SelectOp(condition, a, b).result


def _mul(a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.MulFOp(a, b).result


def _add(a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.AddFOp(a, b).result


def _sub(a: ir.Value, b: ir.Value) -> ir.Value:
    return arith.SubFOp(a, b).result


def _tanh(x: ir.Value) -> ir.Value:
    t = x.type
    z = _mul(x, x)
    small = math.fma(_mul(x, z), _horner(_TANH_P, z), x)
    a = arith.MinimumFOp(math.absf(x), constant(t, _TANH_ONE)).result
    e = build_exp(_add(a, a))
    big = _sub(constant(t, 1.0), arith.DivFOp(constant(t, 2.0), _add(e, constant(t, 1.0))).result)
    is_small = _cmp(arith.CmpFPredicate.OLT, math.absf(x), constant(t, _TANH_SMALL))
    # copysign also keeps -0 (the fma rounds -0 + -0 * p to +0).
    return math.copysign(_select(is_small, small, big), x)


def _erf(x: ir.Value) -> ir.Value:
    t = x.type
    small = math.fma(x, _horner(_ERF_Q, _mul(x, x)), x)
    a = arith.MinimumFOp(math.absf(x), constant(t, _ERF_ONE)).result
    square = _mul(a, a)
    square_lo = math.fma(a, a, arith.NegFOp(square).result)
    e = build_exp(arith.NegFOp(square).result)
    e = math.fma(arith.NegFOp(e).result, square_lo, e)  # exp(-hi - lo)
    r = _horner(_ERF_R, _sub(a, constant(t, _ERF_MID)))
    big = _sub(constant(t, 1.0), _mul(e, r))
    is_small = _cmp(arith.CmpFPredicate.OLT, math.absf(x), constant(t, _ERF_SMALL))
    # copysign also keeps -0 (the fma rounds -0 + -0 * p to +0).
    return math.copysign(_select(is_small, small, big), x)


def _split(u: ir.Value) -> tuple[ir.Value, ir.Value]:
    """``(k, f)`` with ``u = 2^k (1 + f)``, ``sqrt(2)/2 <= 1 + f < sqrt(2)``,
    for a positive normal ``u``; ``k`` an i32."""
    t, i32 = u.type, _i32(u.type)
    bits = arith.BitcastOp(i32, u).result
    bits = arith.AddIOp(bits, constant(i32, _ONE_BITS - _SQRT_HALF_BITS)).result
    k = arith.SubIOp(arith.ShRSIOp(bits, constant(i32, 23)).result, constant(i32, 127)).result
    mantissa = arith.AndIOp(bits, constant(i32, _MANTISSA)).result
    m = arith.BitcastOp(t, arith.AddIOp(mantissa, constant(i32, _SQRT_HALF_BITS)).result).result
    return k, _sub(m, constant(t, 1.0))


def _log_reduced(k: ir.Value, f: ir.Value, correction: ir.Value) -> ir.Value:
    """``k ln2 + log(1 + f) + correction`` for ``|f| <= sqrt(2) - 1``."""
    t = f.type
    s = arith.DivFOp(f, _add(constant(t, 2.0), f)).result
    z = _mul(s, s)
    w = _mul(z, z)
    lg1, lg2, lg3, lg4 = (constant(t, c) for c in _LOG_LG)
    r = _add(_mul(z, math.fma(w, lg3, lg1)), _mul(w, math.fma(w, lg4, lg2)))
    half_f2 = _mul(_mul(constant(t, 0.5), f), f)
    dk = arith.SIToFPOp(t, k).result
    low = math.fma(dk, constant(t, _LN2_LO), correction)
    y = _sub(math.fma(s, _add(half_f2, r), low), half_f2)
    return math.fma(dk, constant(t, _LN2_HI), _add(y, f))


def _log_specials(x: ir.Value, y: ir.Value, at_zero: float) -> ir.Value:
    """``y`` where the argument ``x`` of log(x) or log1p(x - 1) is finite
    and positive; -inf at 0 (``x == at_zero``), NaN below, x at +inf and NaN."""
    t = x.type
    y = _select(_cmp(arith.CmpFPredicate.OEQ, x, constant(t, at_zero)), constant(t, -_INF), y)
    y = _select(
        _cmp(arith.CmpFPredicate.OLT, x, constant(t, at_zero)), constant(t, float("nan")), y
    )
    return _select(_cmp(arith.CmpFPredicate.UEQ, x, constant(t, _INF)), x, y)


def _log(x: ir.Value) -> ir.Value:
    t = x.type
    i32 = _i32(t)
    subnormal = _cmp(arith.CmpFPredicate.OLT, x, constant(t, _TINY))
    scaled = _select(subnormal, _mul(x, constant(t, 2.0**23)), x)
    k, f = _split(scaled)
    k = arith.SubIOp(k, _select(subnormal, constant(i32, 23), constant(i32, 0))).result
    return _log_specials(x, _log_reduced(k, f, constant(t, 0.0)), 0.0)


def _log1p(x: ir.Value) -> ir.Value:
    t = x.type
    i32 = _i32(t)
    u = _add(constant(t, 1.0), x)
    k, f = _split(u)
    # The rounding error of 1 + x, relative to u: exact below 2^25.
    c_large = _sub(constant(t, 1.0), _sub(u, x))
    c_small = _sub(x, _sub(u, constant(t, 1.0)))
    k_large = arith.CmpIOp(arith.CmpIPredicate.sge, k, constant(i32, 2)).result
    c = arith.DivFOp(_select(k_large, c_large, c_small), u).result
    k_huge = arith.CmpIOp(arith.CmpIPredicate.sge, k, constant(i32, 25)).result
    c = _select(k_huge, constant(t, 0.0), c)
    y = _log_specials(x, _log_reduced(k, f, c), -1.0)
    # Below 2^-24, log1p(x) rounds to x (and keeps the sign of -0).
    tiny = _cmp(arith.CmpFPredicate.OLT, math.absf(x), constant(t, 2.0**-24))
    return _select(tiny, x, y)


_BUILDERS: dict[str, Callable[[ir.Value], ir.Value]] = {
    "math.tanh": _tanh,
    "math.erf": _erf,
    "math.log": _log,
    "math.log1p": _log1p,
}


def _is_f32_known(op: ir.Operation) -> bool:
    return op.name in _BUILDERS and isinstance(element(op.operands[0].type), ir.F32Type)


@dataclass(frozen=True)
class ApproximateMath(Pass):
    flag = "lowerline-approximate-math"
    summary = "Expand f32 math.tanh/erf/log/log1p into vectorizable polynomials (no libm calls)"
    anchor = None

    def run(self, op: ir.Operation) -> None:
        for found in ops_matching(op, _is_f32_known):
            expand(found, _BUILDERS[found.name])
