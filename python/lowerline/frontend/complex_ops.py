"""Complex elementwise ops as real arithmetic on their parts, before import.

torch-mlir's linalg lowering of these ops on complex tensors is unusable in
torch-mlir 20261001 (measured on complex64 and complex128):

* ``abs``, ``exp``, ``log``, ``neg`` and ``reciprocal`` emit ``math.absf``,
  ``math.exp``, ``math.log``, ``arith.negf``, ``arith.divf`` on ``complex<f32>``,
  which fail verification ("operand #0 must be floating-point-like");
* ``add.Tensor`` / ``sub.Tensor`` scale the second operand by ``alpha`` with
  ``arith.muli`` on complex values (invalid IR too);
* ``mul`` by a real scalar and ``div.Tensor`` report "unimplemented: Only
  integer/float dtype supported" / "non-floating point and non-integer dtype";
* ``angle`` has no torch dialect op at all (it imports as ``torch.operator``),
  for real inputs too.

What torch-mlir does lower is ``view_as_real``, ``view_as_complex``, ``stack``,
``select`` and real arithmetic, so each op here is written with those:
``(re, im) = view_as_real(z)``, the real formula, ``view_as_complex(stack(...))``.
The formulas are ATen's (c10/util/complex.h): ``abs`` is ``hypot`` (scaled,
no overflow for large parts), division is Smith's scaled algorithm. An entry
returns ``NotImplemented`` (keeps the op, or the entry it replaced) when no
operand is complex, except ``angle``, whose real form torch-mlir lacks too.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

aten = torch.ops.aten

_REAL_OF = {torch.complex64: torch.float32, torch.complex128: torch.float64}
Parts = tuple[Any, Any]  # (real part, imaginary part): tensors or Python numbers


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


def _hypot(re: torch.Tensor, im: torch.Tensor) -> torch.Tensor:
    # std::hypot: the larger part times sqrt(1 + ratio^2), 0 for 0 + 0i.
    big = torch.maximum(re.abs(), im.abs())
    small = torch.minimum(re.abs(), im.abs())
    safe = torch.where(big == 0, torch.ones_like(big), big)
    ratio = small / safe
    return torch.where(big == 0, big, big * torch.sqrt(1 + ratio * ratio))


def _binary(formula: Callable[[Parts, Parts], Parts]) -> Callable[..., Any]:
    def decomposition(a: Any, b: Any, **kwargs: Any) -> Any:
        dtype = _complex_dtype(a, b)
        if dtype is None:
            return NotImplemented
        real = _REAL_OF[dtype]
        alpha = kwargs.get("alpha", 1)
        b_re, b_im = _parts(b, real)
        b_parts = (b_re * alpha, b_im * alpha) if alpha != 1 else (b_re, b_im)
        return _join(*formula(_parts(a, real), b_parts))

    return decomposition


def _add(a: Parts, b: Parts) -> Parts:
    return a[0] + b[0], a[1] + b[1]


def _sub(a: Parts, b: Parts) -> Parts:
    return a[0] - b[0], a[1] - b[1]


def _mul(a: Parts, b: Parts) -> Parts:
    return a[0] * b[0] - a[1] * b[1], a[0] * b[1] + a[1] * b[0]


def _div(a: Parts, b: Parts) -> Parts:
    """Smith's algorithm, as c10::complex's operator/: scale by the larger part."""
    (x, y), (c, d) = a, b
    c_big = abs(c) >= abs(d)
    ratio = torch.where(c_big, d / c, c / d)
    scale = 1.0 / torch.where(c_big, c + d * ratio, d + c * ratio)
    re = torch.where(c_big, (x + y * ratio) * scale, (x * ratio + y) * scale)
    im = torch.where(c_big, (y - x * ratio) * scale, (y * ratio - x) * scale)
    return re, im


def _as_tensor(value: Any, like: torch.Tensor) -> torch.Tensor:
    return value if isinstance(value, torch.Tensor) else torch.full_like(like, value)


def div(a: Any, b: Any) -> Any:
    dtype = _complex_dtype(a, b)
    if dtype is None:
        return NotImplemented
    real = _REAL_OF[dtype]
    a_parts, (c, d) = _parts(a, real), _parts(b, real)
    like = next(p for p in (*a_parts, c, d) if isinstance(p, torch.Tensor))
    return _join(*_div(a_parts, (_as_tensor(c, like), _as_tensor(d, like))))


def complex_abs(z: torch.Tensor) -> Any:
    if not z.is_complex():
        return NotImplemented
    return _hypot(*_parts(z, _REAL_OF[z.dtype]))


def complex_exp(z: torch.Tensor) -> Any:
    if not z.is_complex():
        return NotImplemented
    re, im = _parts(z, _REAL_OF[z.dtype])
    magnitude = torch.exp(re)
    return _join(magnitude * torch.cos(im), magnitude * torch.sin(im))


def complex_neg(z: torch.Tensor) -> Any:
    if not z.is_complex():
        return NotImplemented
    re, im = _parts(z, _REAL_OF[z.dtype])
    return _join(-re, -im)


def complex_log(z: torch.Tensor) -> Any:
    # log|z| + i arg(z), as std::log of a complex.
    if not z.is_complex():
        return NotImplemented
    re, im = _parts(z, _REAL_OF[z.dtype])
    return _join(torch.log(_hypot(re, im)), torch.atan2(im, re))


def complex_reciprocal(z: torch.Tensor) -> Any:
    if not z.is_complex():
        return NotImplemented
    c, d = _parts(z, _REAL_OF[z.dtype])
    return _join(*_div((torch.ones_like(c), torch.zeros_like(d)), (c, d)))


def angle(z: torch.Tensor) -> torch.Tensor:
    if z.is_complex():
        re, im = _parts(z, _REAL_OF[z.dtype])
        return torch.atan2(im, re)
    if not z.is_floating_point():  # ATen: integers and bools give float angles
        z = z.to(torch.get_default_dtype())
    # ATen's angle of a real: pi for negatives, 0 otherwise, NaN stays NaN.
    zero = torch.zeros_like(z)
    return torch.where(torch.isnan(z), z, torch.where(z < 0, zero + math.pi, zero))


def table() -> dict[Any, Callable[..., Any]]:
    """The entries, by ATen overload."""
    return {
        aten.add.Tensor: _binary(_add),
        aten.sub.Tensor: _binary(_sub),
        aten.mul.Tensor: _binary(_mul),
        aten.div.Tensor: div,
        aten.abs.default: complex_abs,
        aten.exp.default: complex_exp,
        aten.neg.default: complex_neg,
        aten.log.default: complex_log,
        aten.reciprocal.default: complex_reciprocal,
        aten.angle.default: angle,
    }
