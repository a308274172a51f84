"""Complex elementary functions on (real, imaginary) pairs of real tensors.

Eager torch computes these with the C library's complex functions (ATen's
CPU kernels ``map`` ``std::sqrt``, ``std::asin``... of ``c10::complex``, that
is glibc's ``csqrtf``, ``casinf``...; ``log1p`` and ``expm1`` are c10's own,
in ``c10/util/complex_math.h``), so these follow the same C99 (Annex G)
branch cuts: a zero's sign on a cut picks the side (``sqrt(-4 - 0i)`` is
``-2i``), which is why the formulas negate a part (``1 - z`` is
``(1 - x, -y)``, not ``0 - y``) instead of subtracting it from zero.

* ``sqrt``: Kahan's, from ``|x|`` and ``|z|`` (no cancellation on either
  half-plane, no overflow of ``x*x``);
* ``asin``, ``acos``, ``acosh``: Kahan's ("Branch cuts for complex elementary
  functions", 1987), from ``sqrt(1 - z)`` and ``sqrt(1 + z)``: accurate near
  0 and for large ``|z|``, and right on the cuts; ``asinh`` and ``atan`` are
  ``-i asin(iz)`` and ``-i atanh(iz)``;
* ``atanh``: glibc's ``catanh``: ``log1p(4|x| / ((1 - |x|)^2 + y^2)) / 4``
  with ``x``'s sign, and ``atan2(2y, (1 - x)(1 + x) - y^2) / 2``;
* ``tanh``: glibc's ``ctanh`` (``sinh x cosh x`` and ``sin y cos y`` over
  ``sinh^2 x + cos^2 y``, the limit ``+-1`` past the point where ``cosh``
  would overflow); ``tan`` is ``-i tanh(iz)``;
* ``pow``: ``exp(b log a)`` as ``cpow``, 0 for a zero base and an exponent
  whose real part is positive (``cexp(-inf + i nan)``'s special value).

Every function takes and returns ``Parts``; the operands are tensors of one
real dtype.
"""

from __future__ import annotations

import math
from typing import Any

import torch

Parts = tuple[Any, Any]  # (real part, imaginary part)
# The complex dtypes written out as pairs, and the dtype of their parts.
REAL_OF = {torch.complex64: torch.float32, torch.complex128: torch.float64}


def hypot(re: torch.Tensor, im: torch.Tensor) -> torch.Tensor:
    # std::hypot: the larger part times sqrt(1 + ratio^2), 0 for 0 + 0i.
    big = torch.maximum(re.abs(), im.abs())
    small = torch.minimum(re.abs(), im.abs())
    safe = torch.where(big == 0, torch.ones_like(big), big)
    ratio = small / safe
    return torch.where(big == 0, big, big * torch.sqrt(1 + ratio * ratio))


def negative(x: torch.Tensor) -> torch.Tensor:
    """Whether ``x``'s sign bit is set, -0.0 included (``signbit`` and
    ``copysign`` reach torch-mlir as ``view.dtype``, which it does not lower;
    ``1 / -0.0`` is ``-inf``)."""
    return (x < 0) | ((x == 0) & (1 / x < 0))


def copysign(magnitude: torch.Tensor, sign: torch.Tensor) -> torch.Tensor:
    """``|magnitude|`` with ``sign``'s sign."""
    return torch.where(negative(sign), -magnitude.abs(), magnitude.abs())


def _times(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a * b``, a signed zero where ``a`` is zero (``0 * inf`` is NaN;
    glibc's ``csin(0 + 1e4i)`` is ``0 + inf i``)."""
    return torch.where(a == 0, torch.where(negative(b), -a, a), a * b)


def mul(a: Parts, b: Parts) -> Parts:
    return a[0] * b[0] - a[1] * b[1], a[0] * b[1] + a[1] * b[0]


def _div_by_number(a: Parts, divisor: complex) -> Parts:
    """``div`` by a number, its ratio and scale computed here: torch-mlir
    folds ``full_like(x, 3.0, dtype=float64) == 0`` to true (measured), so
    a divisor must not become a filled tensor that is compared."""
    (x, y), c, d = a, divisor.real, divisor.imag
    if c == 0 and d == 0:
        return x / abs(c), y / abs(d)
    if abs(c) >= abs(d):
        ratio = d / c
        scale = 1.0 / (c + d * ratio)
        return (x + y * ratio) * scale, (y - x * ratio) * scale
    ratio = c / d
    scale = 1.0 / (d + c * ratio)
    return (x * ratio + y) * scale, (y * ratio - x) * scale


def div(a: Parts, b: Parts) -> Parts:
    """Smith's algorithm, as c10::complex's operator/: scale by the larger part."""
    if not isinstance(b[0], torch.Tensor):
        return _div_by_number(a, complex(b[0], b[1]))
    (x, y), (c, d) = a, b
    c_big = abs(c) >= abs(d)
    ratio = torch.where(c_big, d / c, c / d)
    scale = 1.0 / torch.where(c_big, c + d * ratio, d + c * ratio)
    re = torch.where(c_big, (x + y * ratio) * scale, (x * ratio + y) * scale)
    im = torch.where(c_big, (y - x * ratio) * scale, (y * ratio - x) * scale)
    # By zero: each part over zero (an infinity or NaN), as c10 does.
    zero = (c == 0) & (d == 0)
    return torch.where(zero, x / abs(c), re), torch.where(zero, y / abs(d), im)


def reciprocal(z: Parts) -> Parts:
    return div((torch.ones_like(z[0]), torch.zeros_like(z[1])), z)


def times_i(z: Parts) -> Parts:
    """``i z``."""
    return -z[1], z[0]


def times_minus_i(z: Parts) -> Parts:
    """``-i z``."""
    return z[1], -z[0]


def exp(z: Parts) -> Parts:
    magnitude = torch.exp(z[0])
    return _times(torch.cos(z[1]), magnitude), _times(torch.sin(z[1]), magnitude)


def log(z: Parts) -> Parts:
    # log|z| + i arg(z), as std::log of a complex.
    return torch.log(hypot(*z)), torch.atan2(z[1], z[0])


def sqrt(z: Parts) -> Parts:
    x, y = z
    modulus = hypot(x, y)
    # Halved before the sum: |x| + |z| overflows for parts near the largest float.
    t = torch.sqrt(0.5 * x.abs() + 0.5 * modulus)
    safe = torch.where(t == 0, torch.ones_like(t), t)
    re = torch.where(x >= 0, t, y.abs() / (2 * safe))
    im = torch.where(x >= 0, y / (2 * safe), copysign(t, y))
    infinite = y.abs() == math.inf  # sqrt(x +- i inf) = inf +- i inf, even for a NaN x
    re = torch.where(infinite, y.abs(), torch.where(modulus == 0, modulus, re))
    im = torch.where(infinite | (modulus == 0), y, im)
    return re, im


def _one_minus(z: Parts) -> Parts:
    return 1 - z[0], -z[1]


def _one_plus(z: Parts) -> Parts:
    return 1 + z[0], z[1]


def asin(z: Parts) -> Parts:
    below, above = sqrt(_one_minus(z)), sqrt(_one_plus(z))
    re = torch.atan2(z[0], below[0] * above[0] - below[1] * above[1])
    im = torch.asinh(below[0] * above[1] - below[1] * above[0])
    return re, im


def acos(z: Parts) -> Parts:
    below, above = sqrt(_one_minus(z)), sqrt(_one_plus(z))
    re = 2 * torch.atan2(below[0], above[0])
    im = torch.asinh(above[0] * below[1] - above[1] * below[0])
    return re, im


def acosh(z: Parts) -> Parts:
    below, above = sqrt((z[0] - 1, z[1])), sqrt((z[0] + 1, z[1]))
    re = torch.asinh(below[0] * above[0] + below[1] * above[1])
    im = 2 * torch.atan2(below[1], above[0])
    return re, im


def asinh(z: Parts) -> Parts:
    return times_minus_i(asin(times_i(z)))


def atanh(z: Parts) -> Parts:
    x, y = z
    # The real part from |x|, then x's sign: log1p near 0 keeps small results exact.
    size = x.abs()
    gap = 1 - size
    re = 0.25 * torch.log1p(4 * size / (gap * gap + y * y))
    re = torch.where(negative(x), -re, re)
    im = 0.5 * torch.atan2(2 * y, (1 - x) * (1 + x) - y * y)
    return re, im


def atan(z: Parts) -> Parts:
    return times_minus_i(atanh(times_i(z)))


def sin(z: Parts) -> Parts:
    x, y = z
    return _times(torch.sin(x), torch.cosh(y)), _times(torch.cos(x), torch.sinh(y))


def cos(z: Parts) -> Parts:
    x, y = z
    return _times(torch.cos(x), torch.cosh(y)), _times(-torch.sin(x), torch.sinh(y))


def sinh(z: Parts) -> Parts:
    x, y = z
    return _times(torch.cos(y), torch.sinh(x)), _times(torch.sin(y), torch.cosh(x))


def cosh(z: Parts) -> Parts:
    x, y = z
    return _times(torch.cos(y), torch.cosh(x)), _times(torch.sin(y), torch.sinh(x))


def _tanh_limit(dtype: torch.dtype) -> float:
    """Past this |x|, tanh(x + iy) is +-1 to the precision (glibc's
    ``(MANT_DIG - 1) * ln 2 / 2``), and sinh(x)^2 may overflow."""
    return -math.log(torch.finfo(dtype).eps) / 2


def tanh(z: Parts) -> Parts:
    x, y = z
    far = x.abs() > _tanh_limit(x.dtype)
    near_x = torch.where(far, torch.zeros_like(x), x)
    s, c = torch.sinh(near_x), torch.cosh(near_x)
    sin_y, cos_y = torch.sin(y), torch.cos(y)
    denominator = s * s + cos_y * cos_y
    re = torch.where(far, torch.where(x > 0, 1.0, -1.0).to(x.dtype), s * c / denominator)
    far_im = 4 * sin_y * cos_y * torch.exp(-2 * x.abs())
    im = torch.where(far, far_im, sin_y * cos_y / denominator)
    return re, im


def tan(z: Parts) -> Parts:
    return times_minus_i(tanh(times_i(z)))


def log1p(z: Parts) -> Parts:
    """c10's ``log1p``: near 0, ``log1p(x(2 + x) + y^2) / 2`` (no rounding
    of 1 + x); elsewhere ``log|1 + z|``."""
    x, y = z
    theta = torch.atan2(y, x + 1)
    small = hypot(x, y) < 0.5
    r = x * (2 + x) + y * y
    near = torch.where(r == 0, x, 0.5 * torch.log1p(r))
    return torch.where(small, near, torch.log(hypot(x + 1, y))), theta


def expm1(z: Parts) -> Parts:
    """c10's ``expm1``: ``expm1(x) cos y - 2 sin^2(y / 2)``, ``e^x sin y``."""
    x, y = z
    half = torch.sin(y / 2)
    return torch.expm1(x) * torch.cos(y) - 2 * half * half, torch.exp(x) * torch.sin(y)


def zero_power(power: Any) -> Parts:
    """``0 ** b`` by ``power``, the real part of ``b``: glibc's ``cpow`` gives
    0, inf + i nan or nan + i nan by its sign (exp of -inf, +inf or NaN plus
    i NaN)."""
    if not isinstance(power, torch.Tensor):
        return (0.0, 0.0) if power > 0 else (math.inf if power < 0 else math.nan, math.nan)
    re = torch.where(power > 0, 0.0, torch.where(power < 0, math.inf, math.nan))
    return re.to(power.dtype), torch.where(power > 0, 0.0, math.nan).to(power.dtype)


def pow(base: Parts, exponent: Parts) -> Parts:
    re, im = exp(mul(exponent, log(base)))
    zero_re, zero_im = zero_power(exponent[0])
    zero = (base[0] == 0) & (base[1] == 0)
    return torch.where(zero, zero_re, re), torch.where(zero, zero_im, im)
