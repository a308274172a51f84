"""f32 ``atan`` and ``atan2`` for ``lowerline-approximate-math``, vectorized,
computed in f64 lanes.

Why f64: the Cephes/musl ``atanf`` scheme in f32 arithmetic is ~1 ulp before
the quadrant fix-ups of atan2 add their own roundings (``pi - r`` cancels
nothing but rounds twice); in f64 the reduction ``(a - 1) / (a + 1)`` and
``y / x`` are exact to 2^-53 for f32 inputs (no f32 quotient over- or
underflows in f64), and a degree-5 polynomial in ``t^2`` (relative 2.4e-11,
fitted) leaves one rounding to f32 at the end::

    a = |x|                               in f64
    a > tan(3pi/8): t = -1/a,             base = pi/2
    a > tan(pi/8):  t = (a - 1)/(a + 1),  base = pi/4
    else:           t = a,                base = 0
    atan(x) = copysign(base + t + t^3 P(t^2), x)

    atan2(y, x) = copysign(q, y),  r = atan(|y| / |x|),  q = r or pi - r
                  (sign bit of x set); |y| / |x| taken as 0 for y = 0 and as
                  1 for |x| = |y| = inf; NaN if either is NaN.

That covers C99's special cases: atan2(+-0, +-0) = +-0 / +-pi,
atan2(+-y, -inf) = +-pi, atan2(+-inf, x) = +-pi/2, atan2(+-inf, -inf) =
+-3pi/4. Upstream MLIR has a float ``atan`` approximation only in the test
pass ``-test-math-polynomial-approximation`` (not registered in the tools or
the Python bindings) and ``convert-math-to-libm`` makes one scalar
``atanf``/``atan2f`` call per vector lane.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, math

from lowerline.passes.lowering.polynomials import add, cmp, horner, mul, select, sub
from lowerline.passes.support.elementwise_ir import constant, like

# atan(t) = t + t^3 P(t^2) on |t| <= tan(pi/8) (least squares on Chebyshev
# nodes, relative error 2.4e-11); highest degree first.
_ATAN_P = (
    0.047383439256019566,
    -0.08473283010256927,
    0.11044102604277613,
    -0.14281953966752206,
    0.19999901691801392,
    -0.3333333246754298,
)
_TAN_3PI_8 = 2.414213562373095
_TAN_PI_8 = 0.41421356237309503
_PI = 3.141592653589793
_INF = float("inf")


def _atan_positive(a: ir.Value) -> ir.Value:
    """atan of an f64 ``a >= 0`` (+inf included), in f64."""
    t64 = a.type
    one = constant(t64, 1.0)
    far = cmp(arith.CmpFPredicate.OGT, a, constant(t64, _TAN_3PI_8))
    mid = cmp(arith.CmpFPredicate.OGT, a, constant(t64, _TAN_PI_8))
    t = select(mid, arith.DivFOp(sub(a, one), add(a, one)).result, a)
    t = select(far, arith.DivFOp(constant(t64, -1.0), a).result, t)
    base = select(mid, constant(t64, _PI / 4), constant(t64, 0.0))
    base = select(far, constant(t64, _PI / 2), base)
    z = mul(t, t)
    return add(base, math.fma(mul(t, z), horner(_ATAN_P, z), t))


def _wide(x: ir.Value) -> ir.Value:
    return arith.ExtFOp(like(x.type, ir.F64Type.get()), x).result


def build_atan(x: ir.Value) -> ir.Value:
    """f32 ``atan(x)``; NaN stays NaN, -0 stays -0."""
    r = _atan_positive(math.absf(_wide(x)))
    return math.copysign(arith.TruncFOp(x.type, r).result, x)


def build_atan2(y: ir.Value, x: ir.Value) -> ir.Value:
    """f32 ``atan2(y, x)`` with every C99 special case (see the module
    docstring)."""
    t = y.type
    ay, ax = math.absf(_wide(y)), math.absf(_wide(x))
    t64 = ay.type
    ratio = arith.DivFOp(ay, ax).result
    ratio = select(cmp(arith.CmpFPredicate.OEQ, ay, ax), constant(t64, 1.0), ratio)
    ratio = select(cmp(arith.CmpFPredicate.OEQ, ay, constant(t64, 0.0)), constant(t64, 0.0), ratio)
    r = _atan_positive(ratio)
    i32 = like(t, ir.IntegerType.get_signless(32))
    x_bits = arith.BitcastOp(i32, x).result
    x_negative = arith.CmpIOp(arith.CmpIPredicate.slt, x_bits, constant(i32, 0)).result
    r = select(x_negative, sub(constant(t64, _PI), r), r)
    q = math.copysign(arith.TruncFOp(t, r).result, y)
    return select(cmp(arith.CmpFPredicate.UNO, x, y), add(x, y), q)
