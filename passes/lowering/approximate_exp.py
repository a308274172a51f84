"""``lowerline-approximate-exp``: f32 ``math.exp`` as a polynomial, vectorized.

Why: LLVM has no vector ``exp`` of its own; ``llvm.exp`` on a vector is split
into one call of libm's scalar ``expf`` per lane (an encoder layer's softmax
spent 7-10% of its time there, measured). Upstream MLIR has the rewrite
(``populatePolynomialApproximateExpPatterns``) but registers it only in a
test pass, absent from the released tools and bindings. This pass expands
every f32 ``math.exp``, scalar or vector, into arithmetic that stays in
vector registers (Cephes' ``expf``, the same scheme as upstream's)::

    n = floor(x * log2(e) + 1/2)                x clamped to [-104, 89]
    r = x - n * ln2_hi - n * ln2_lo             |r| <= ln(2) / 2
    p = 1 + r + r^2 * P(r)                      P: degree 5, Cephes' coefficients
    exp(x) = p * 2^(n >> 1) * 2^(n - (n >> 1))  two exact powers of two, so that
                                                the product under- and overflows
                                                as expf does (0, subnormals, inf)
    NaN in, NaN out.

Within 2 ulp of the correctly rounded result over the normal range (the lit
and pytest suites compare with torch). Other element types keep libm.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, math

from lowerline.passes.support.elementwise_ir import constant, element, expand, like
from lowerline.pipeline.pass_api import Pass, ops_matching

_LOG2E = 1.44269504088896341
_LN2_HI = 0.693359375
_LN2_LO = -2.12194440e-4
# Cephes expf, highest degree first.
_P = (
    1.9875691500e-4,
    1.3981999507e-3,
    8.3334519073e-3,
    4.1665795894e-2,
    1.6666665459e-1,
    5.0000001201e-1,
)
_LOW, _HIGH = -104.0, 89.0  # below: 0 (after subnormals); above: inf


def _is_f32_exp(op: ir.Operation) -> bool:
    return op.name == "math.exp" and isinstance(element(op.operands[0].type), ir.F32Type)


def _power_of_two(n: ir.Value, f32: ir.Type) -> ir.Value:
    """2^n for an integer n in [-126, 127], built in the exponent bits."""
    i32 = n.type
    biased = arith.AddIOp(n, constant(i32, 127)).result
    return arith.BitcastOp(f32, arith.ShLIOp(biased, constant(i32, 23)).result).result


def build_exp(x: ir.Value) -> ir.Value:
    """f32 ``exp(x)`` (scalar or vector ``x``) as the polynomial above;
    ``lowerline-approximate-math`` builds tanh and erf on it."""
    t = x.type
    i32 = like(t, ir.IntegerType.get_signless(32))
    below_high = arith.MinimumFOp(x, constant(t, _HIGH)).result
    clamped = arith.MaximumFOp(below_high, constant(t, _LOW)).result
    scaled = math.fma(clamped, constant(t, _LOG2E), constant(t, 0.5))
    n = math.floor(scaled)
    r = math.fma(n, constant(t, -_LN2_HI), clamped)
    r = math.fma(n, constant(t, -_LN2_LO), r)
    p = constant(t, _P[0])
    for coefficient in _P[1:]:
        p = math.fma(p, r, constant(t, coefficient))
    r2 = arith.MulFOp(r, r).result
    y = arith.AddFOp(math.fma(p, r2, r), constant(t, 1.0)).result
    k = arith.FPToSIOp(i32, n).result
    half = arith.ShRSIOp(k, constant(i32, 1)).result
    rest = arith.SubIOp(k, half).result
    y = arith.MulFOp(y, _power_of_two(half, t)).result
    y = arith.MulFOp(y, _power_of_two(rest, t)).result
    is_nan = arith.CmpFOp(arith.CmpFPredicate.UNO, x, x).result
    return arith.SelectOp(is_nan, x, y).result


@dataclass(frozen=True)
class ApproximateExp(Pass):
    flag = "lowerline-approximate-exp"
    summary = "Expand f32 math.exp into a vectorizable polynomial (no libm calls)"
    anchor = None

    def run(self, op: ir.Operation) -> None:
        for exp in ops_matching(op, _is_f32_exp):
            expand(exp, build_exp)
