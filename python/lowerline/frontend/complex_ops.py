"""Complex elementwise ops as real arithmetic on their parts, before import.

torch-mlir's linalg lowering of these ops on complex tensors is unusable in
torch-mlir 20261001 (measured on complex64 and complex128):

* ``abs``, ``exp``, ``log``, ``sqrt``, ``rsqrt``, the trigonometric and
  hyperbolic functions and their inverses, ``log1p``, ``log2``, ``log10``,
  ``expm1``, ``neg``, ``reciprocal``, ``sigmoid``, ``silu`` and the logical
  ops emit ``math.sqrt``, ``math.acos``, ``arith.negf``, ``arith.sitofp``...
  on ``complex<f32>``, which fail verification ("operand #0 must be
  floating-point-like");
* ``add.Tensor`` / ``sub.Tensor`` scale the second operand by ``alpha`` with
  ``arith.muli`` on complex values (invalid IR too);
* ``add``, ``sub``, ``mul`` and ``div`` by a scalar, ``div.Tensor``, ``pow``
  (``Scalar``, ``Tensor_Tensor``; ``exp2`` and ``ldexp`` are ``pow.Scalar``),
  ``eq`` and ``ne`` report "unimplemented: Only integer/float dtype
  supported", "non-floating point dtype", "type promotion from tensor to
  scalar";
* ``isinf`` and ``isnan`` become ``abs`` / ``ne`` of the complex tensor
  inside torch-mlir, which fail as above; ``nan_to_num`` has no complex
  lowering (torch's own entry calls ``isneginf``, which refuses complex);
* a complex Python scalar (``lerp.Scalar``'s weight) fails the importer
  ("Unsupported argument type <class 'complex'>");
* ``angle`` has no torch dialect op at all (it imports as ``torch.operator``),
  for real inputs too.

What torch-mlir does lower is ``view_as_real``, ``view_as_complex``, ``stack``,
``select`` and real arithmetic, so each op here is written with those:
``(re, im) = view_as_real(z)``, the real formula (``complex_math``: glibc's
and c10's, which eager torch calls), ``view_as_complex(stack(...))``. An
entry returns ``NotImplemented`` (keeps the op, or the entry it replaced)
when no operand is complex, except ``angle``, whose real form torch-mlir
lacks too.
"""

from __future__ import annotations

import cmath
import math
from collections.abc import Callable
from typing import Any

import torch

from lowerline.frontend import complex_math as cm

aten = torch.ops.aten

_REAL_OF = cm.REAL_OF
_COMPLEX_OF = {real: complex_dtype for complex_dtype, real in _REAL_OF.items()}
Parts = cm.Parts


def _complex_dtype(*values: Any) -> torch.dtype | None:
    """The result's complex dtype, or None when no operand is complex."""
    tensors = [v for v in values if isinstance(v, torch.Tensor)]
    if not any(t.is_complex() for t in tensors) and not any(isinstance(v, complex) for v in values):
        return None
    dtype = torch.result_type(*values) if len(values) > 1 else tensors[0].dtype
    return dtype if dtype in _REAL_OF else None


def _parts(value: Any, real: torch.dtype) -> Parts:
    if isinstance(value, torch.Tensor):
        if value.is_complex():
            pair = torch.view_as_real(value).to(real)
            return pair[..., 0], pair[..., 1]
        return value.to(real), torch.zeros_like(value, dtype=real)
    number = complex(value)
    return number.real, number.imag


def _join(re: torch.Tensor, im: torch.Tensor) -> torch.Tensor:
    re, im = torch.broadcast_tensors(re, im)
    return torch.view_as_complex(torch.stack([re, im], dim=-1).contiguous())


def _unary(formula: Callable[[Parts], Parts]) -> Callable[..., Any]:
    """The entry of a complex function ``formula`` of one complex tensor."""

    def decomposition(z: torch.Tensor) -> Any:
        if not z.is_complex() or z.dtype not in _REAL_OF:
            return NotImplemented
        return _join(*formula(_parts(z, _REAL_OF[z.dtype])))

    return decomposition


def _binary(formula: Callable[[Parts, Parts], Parts]) -> Callable[..., Any]:
    """The entry of ``formula`` of a tensor and a tensor or a number (kept a
    number: see ``complex_math.div``), the second scaled by ``alpha`` as
    ``add`` and ``sub`` do."""

    def decomposition(a: torch.Tensor, b: Any, alpha: Any = 1) -> Any:
        dtype = _complex_dtype(a, b)
        if dtype is None:
            return NotImplemented
        real = _REAL_OF[dtype]
        b_parts = _parts(b, real)
        if alpha != 1:
            b_parts = cm.mul(b_parts, _parts(alpha, real))
        return _join(*formula(_parts(a, real), b_parts))

    return decomposition


def pow_scalar(base: Any, exponent: torch.Tensor) -> Any:
    """``number ** z``: ``exp(z log(number))``, the logarithm taken here."""
    dtype = _complex_dtype(base, exponent)
    if dtype is None:
        result = torch.result_type(base, exponent)
        if result.is_floating_point and not exponent.is_floating_point():
            # torch-mlir rejects an integer exponent ("non-floating point
            # dtype"); ldexp is 2 ** an integer tensor.
            return torch.pow(base, exponent.to(result))
        return NotImplemented
    real = _REAL_OF[dtype]
    z = _parts(exponent, real)
    if complex(base) == 0:
        zero_re, zero_im = cm.zero_power(z[0])
        return _join(zero_re + 0 * z[1], zero_im + 0 * z[1])
    logarithm = cmath.log(complex(base))
    return _join(*cm.exp(cm.mul(z, (logarithm.real, logarithm.imag))))


def _add(a: Parts, b: Parts) -> Parts:
    return a[0] + b[0], a[1] + b[1]


def _sub(a: Parts, b: Parts) -> Parts:
    return a[0] - b[0], a[1] - b[1]


def _logaddexp(a: Parts, b: Parts) -> Parts:
    """ATen's complex ``logaddexp``: ``log1p(exp(small - big)) + big``, the
    operands ordered by real part (its infinite special cases aside)."""
    a_small = a[0] < b[0]
    small = (torch.where(a_small, a[0], b[0]), torch.where(a_small, a[1], b[1]))
    big = (torch.where(a_small, b[0], a[0]), torch.where(a_small, b[1], a[1]))
    return _add(cm.log1p(cm.exp(_sub(small, big))), big)


def _scaled(factor: float, formula: Callable[[Parts], Parts]) -> Callable[[Parts], Parts]:
    """``formula`` of ``z`` times a real ``factor`` (``log2`` is ``log / ln 2``)."""
    return lambda z: tuple(part * factor for part in formula(z))


def _neg(z: Parts) -> Parts:
    return -z[0], -z[1]


def _rsqrt(z: Parts) -> Parts:
    return cm.reciprocal(cm.sqrt(z))


def _sigmoid(z: Parts) -> Parts:
    # ATen's: 1 / (1 + exp(-z)).
    e = cm.exp(_neg(z))
    return cm.reciprocal((1 + e[0], e[1]))


def _silu(z: Parts) -> Parts:
    # ATen's: z / (1 + exp(-z)).
    e = cm.exp(_neg(z))
    return cm.div(z, (1 + e[0], e[1]))


def _exp2(z: Parts) -> Parts:
    return cm.exp((z[0] * math.log(2), z[1] * math.log(2)))


def complex_abs(z: torch.Tensor) -> Any:
    if not z.is_complex() or z.dtype not in _REAL_OF:
        return NotImplemented
    return cm.hypot(*_parts(z, _REAL_OF[z.dtype]))


def sgn(z: torch.Tensor) -> Any:
    # ATen's: 0 for 0, else z / |z|. (torch's own entry builds its 0 with
    # scalar_tensor(dtype=complex128), a literal torch-mlir's importer lacks.)
    if not z.is_complex() or z.dtype not in _REAL_OF:
        return NotImplemented
    re, im = _parts(z, _REAL_OF[z.dtype])
    modulus = cm.hypot(re, im)
    safe = torch.where(modulus == 0, torch.ones_like(modulus), modulus)
    return _join(re / safe, im / safe)


def to_copy(x: torch.Tensor, *, dtype: torch.dtype | None = None, **options: Any) -> Any:
    """A conversion to or between complex dtypes, part by part: torch-mlir's
    importer has no literal for ``complex128`` (``KeyError: torch.complex128``
    in ``TORCH_DTYPE_TO_INT``), and ``float_power`` converts to it. From
    complex to a real float or integer type: the real part (as eager, which
    warns), where torch-mlir emits ``arith.sitofp`` or ``arith.trunci`` on
    ``complex<f32>``, invalid IR; to bool: either part nonzero."""
    if options.get("memory_format") not in (None, torch.preserve_format):
        return NotImplemented
    if x.is_complex() and x.dtype in _REAL_OF and dtype is not None and dtype not in _REAL_OF:
        if dtype == torch.bool:
            return _truth(x)
        return _parts(x, _REAL_OF[x.dtype])[0].to(dtype)
    if dtype not in _REAL_OF:
        return NotImplemented
    if not x.is_complex() and not x.is_floating_point():
        x = x.to(_REAL_OF[dtype])
    return _join(*_parts(x, _REAL_OF[dtype]))


def conj_physical(z: torch.Tensor) -> Any:
    # No torch dialect op (it imports as torch.operator "aten._conj_physical").
    if not z.is_complex() or z.dtype not in _REAL_OF:
        return NotImplemented
    re, im = _parts(z, _REAL_OF[z.dtype])
    return _join(re, -im)


def assert_tensor_metadata(x: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
    """Dropped for complex tensors: torch-mlir's importer numbers complex
    dtypes one off (``TORCH_DTYPE_TO_INT``: complex64 is 10, c10's
    ComplexDouble), so the check of a complex64 tensor fails its own
    canonicalization ("the dtype does not match"). torch.export has checked
    the metadata already."""
    return None if x.is_complex() else NotImplemented


def ldexp(z: torch.Tensor, exponent: torch.Tensor) -> Any:
    # z * 2 ** exponent (torch-mlir's own decomposition multiplies the
    # complex tensor by it, which it then cannot lower).
    if not z.is_complex() or z.dtype not in _REAL_OF:
        return NotImplemented
    real = _REAL_OF[z.dtype]
    parts = _parts(z, real)
    if exponent.is_complex():  # 2 ** w = exp(w ln 2)
        w = _parts(exponent, real)
        return _join(*cm.mul(parts, _exp2(w)))
    scale = torch.pow(2.0, exponent.to(real))
    return _join(parts[0] * scale, parts[1] * scale)


# Ops that take a number: a complex one fails torch-mlir's importer
# ("Unsupported argument type <class 'complex'>"); filled part by part.


def _filled(shape: Any, value: Any, dtype: torch.dtype) -> torch.Tensor:
    number = complex(value)
    real = _REAL_OF[dtype]
    return _join(
        torch.full(shape, number.real, dtype=real), torch.full(shape, number.imag, dtype=real)
    )


def full(size: Any, value: Any, *, dtype: Any = None, **options: Any) -> Any:
    if dtype is None and isinstance(value, complex):
        dtype = _COMPLEX_OF[torch.get_default_dtype()]
    if dtype not in _REAL_OF:
        return NotImplemented
    return _filled(size, value, dtype)


def full_like(x: torch.Tensor, value: Any, *, dtype: Any = None, **options: Any) -> Any:
    dtype = dtype or x.dtype
    if dtype not in _REAL_OF:
        return NotImplemented
    return _filled(x.shape, value, dtype)


def fill(z: torch.Tensor, value: Any) -> Any:
    return full_like(z, value)


def masked_fill(z: torch.Tensor, mask: torch.Tensor, value: Any) -> Any:
    if z.dtype not in _REAL_OF or isinstance(value, torch.Tensor):
        return NotImplemented
    re, im = _parts(z, _REAL_OF[z.dtype])
    number = complex(value)
    return _join(torch.where(mask, number.real, re), torch.where(mask, number.imag, im))


def angle(z: torch.Tensor) -> torch.Tensor:
    if z.is_complex():
        re, im = _parts(z, _REAL_OF[z.dtype])
        return torch.atan2(im, re)
    if not z.is_floating_point():  # ATen: integers and bools give float angles
        z = z.to(torch.get_default_dtype())
    # ATen's angle of a real: pi for negatives, 0 otherwise, NaN stays NaN.
    zero = torch.zeros_like(z)
    return torch.where(torch.isnan(z), z, torch.where(z < 0, zero + math.pi, zero))


# pow.Tensor_Scalar's exponents that ATen's kernel computes without std::pow
# (PowKernel.cpp: sqrt, rsqrt, reciprocal, and products for 2, 3, -2).
_POWERS: dict[complex, Callable[[Parts], Parts]] = {
    0.5: cm.sqrt,
    -0.5: _rsqrt,
    -1: cm.reciprocal,
    2: lambda z: cm.mul(z, z),
    3: lambda z: cm.mul(cm.mul(z, z), z),
    -2: lambda z: cm.reciprocal(cm.mul(z, z)),
}


def pow_tensor_scalar(z: torch.Tensor, exponent: Any) -> Any:
    dtype = _complex_dtype(z, exponent)
    if dtype is None:
        return NotImplemented
    parts = _parts(z, _REAL_OF[dtype])
    special = _POWERS.get(complex(exponent))
    return _join(*(special(parts) if special else cm.pow(parts, _parts(exponent, _REAL_OF[dtype]))))


def _compare(equal: bool) -> Callable[..., Any]:
    """``eq`` (both parts equal) or ``ne`` (either part differs)."""

    def decomposition(a: torch.Tensor, b: Any) -> Any:
        dtype = _complex_dtype(a, b)
        if dtype is None:
            return NotImplemented
        real = _REAL_OF[dtype]
        (a_re, a_im), (b_re, b_im) = _parts(a, real), _parts(b, real)
        if equal:
            return (a_re == b_re) & (a_im == b_im)
        return (a_re != b_re) | (a_im != b_im)

    return decomposition


def _real_test(test: Callable[[torch.Tensor], torch.Tensor]) -> Callable[..., Any]:
    """``isnan`` / ``isinf`` of a complex tensor: the test of either part."""

    def decomposition(z: torch.Tensor) -> Any:
        if not z.is_complex() or z.dtype not in _REAL_OF:
            return NotImplemented
        re, im = _parts(z, _REAL_OF[z.dtype])
        return test(re) | test(im)

    return decomposition


def _truth(value: torch.Tensor) -> torch.Tensor:
    """A tensor's truth value: a complex number is true when either part is."""
    if value.is_complex():
        re, im = _parts(value, _REAL_OF[value.dtype])
        return (re != 0) | (im != 0)
    return value != 0


def _logical(combine: Callable[..., torch.Tensor]) -> Callable[..., Any]:
    def decomposition(*tensors: torch.Tensor) -> Any:
        if not any(t.is_complex() for t in tensors):
            return NotImplemented
        return combine(*(_truth(t) for t in tensors))

    return decomposition


def nan_to_num(z: torch.Tensor, nan: Any = None, posinf: Any = None, neginf: Any = None) -> Any:
    # ATen replaces in each part on its own.
    if not z.is_complex() or z.dtype not in _REAL_OF:
        return NotImplemented
    re, im = _parts(z, _REAL_OF[z.dtype])
    return _join(*(torch.nan_to_num(part, nan, posinf, neginf) for part in (re, im)))


def lerp_scalar(start: torch.Tensor, end: torch.Tensor, weight: Any) -> Any:
    # ATen's lerp: from the nearer end, by |weight| < 0.5. (lerp requires
    # ``end`` in ``start``'s dtype.)
    dtype = _complex_dtype(start, weight)
    if dtype is None:
        return NotImplemented
    real = _REAL_OF[dtype]
    a, b, w = _parts(start, real), _parts(end, real), _parts(weight, real)
    if abs(complex(weight)) < 0.5:
        return _join(*_add(a, cm.mul(_sub(b, a), w)))
    return _join(*_sub(b, cm.mul(_sub(b, a), (1 - w[0], -w[1]))))


UNARY: dict[Any, Callable[[Parts], Parts]] = {
    aten.exp.default: cm.exp,
    aten.neg.default: _neg,
    aten.log.default: cm.log,
    aten.reciprocal.default: cm.reciprocal,
    aten.sqrt.default: cm.sqrt,
    aten.rsqrt.default: _rsqrt,
    aten.sin.default: cm.sin,
    aten.cos.default: cm.cos,
    aten.tan.default: cm.tan,
    aten.sinh.default: cm.sinh,
    aten.cosh.default: cm.cosh,
    aten.tanh.default: cm.tanh,
    aten.asin.default: cm.asin,
    aten.acos.default: cm.acos,
    aten.atan.default: cm.atan,
    aten.asinh.default: cm.asinh,
    aten.acosh.default: cm.acosh,
    aten.atanh.default: cm.atanh,
    aten.log1p.default: cm.log1p,
    aten.expm1.default: cm.expm1,
    aten.log2.default: _scaled(1 / math.log(2), cm.log),
    aten.log10.default: _scaled(1 / math.log(10), cm.log),
    aten.exp2.default: _exp2,
    aten.sigmoid.default: _sigmoid,
    aten.silu.default: _silu,
}

BINARY: dict[Any, Callable[[Parts, Parts], Parts]] = {
    aten.add.Tensor: _add,
    aten.add.Scalar: _add,
    aten.sub.Tensor: _sub,
    aten.sub.Scalar: _sub,
    aten.mul.Tensor: cm.mul,
    aten.mul.Scalar: cm.mul,
    aten.div.Tensor: cm.div,
    aten.div.Scalar: cm.div,
    aten.pow.Tensor_Tensor: cm.pow,
    aten.logaddexp.default: _logaddexp,
}


def table() -> dict[Any, Callable[..., Any]]:
    """The entries, by ATen overload."""
    entries: dict[Any, Callable[..., Any]] = {op: _unary(f) for op, f in UNARY.items()}
    entries.update({op: _binary(f) for op, f in BINARY.items()})
    entries.update(
        {
            aten.abs.default: complex_abs,
            aten.angle.default: angle,
            aten.sgn.default: sgn,
            aten.ldexp.Tensor: ldexp,
            aten.full.default: full,
            aten.full_like.default: full_like,
            aten.fill.Scalar: fill,
            aten.masked_fill.Scalar: masked_fill,
            aten._conj_physical.default: conj_physical,
            aten.conj_physical.default: conj_physical,
            aten._assert_tensor_metadata.default: assert_tensor_metadata,
            aten._to_copy.default: to_copy,
            aten.pow.Tensor_Scalar: pow_tensor_scalar,
            aten.pow.Scalar: pow_scalar,
            aten.eq.Tensor: _compare(equal=True),
            aten.eq.Scalar: _compare(equal=True),
            aten.ne.Tensor: _compare(equal=False),
            aten.ne.Scalar: _compare(equal=False),
            aten.isnan.default: _real_test(torch.isnan),
            aten.isinf.default: _real_test(lambda part: part.abs() == math.inf),
            aten.logical_not.default: _logical(torch.logical_not),
            aten.logical_and.default: _logical(torch.logical_and),
            aten.logical_or.default: _logical(torch.logical_or),
            aten.logical_xor.default: _logical(torch.logical_xor),
            aten.nan_to_num.default: nan_to_num,
            aten.lerp.Scalar: lerp_scalar,
        }
    )
    return entries
