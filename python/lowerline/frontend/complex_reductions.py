"""Sums, means and products of complex tensors, on the parts.

torch-mlir 20261001 cannot reduce complex tensors: ``sum`` and ``prod`` of
a ``complex64`` tensor kill its process during the import (measured: "the
import worker died", no diagnostic), ``mean`` is left unlowered. A sum or
mean is the same reduction of the real and the imaginary part (a
variance: the sum of theirs, ``mean`` unlowered as well); a product is
a pairwise tree of complex multiplications (the halves multiplied
elementwise, a 1 padding an odd length): ``ceil(log2(n))`` elementwise
steps, in another order than ATen's loop (a rounding difference, no more);
a cumulative product is a log-step scan of them (``cumprod`` has no complex
lowering either).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from lowerline.frontend import complex_math as cm

aten = torch.ops.aten

_REAL_OF = cm.REAL_OF


def _dims(z: torch.Tensor, dim: Any) -> list[int]:
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return list(range(z.dim()))
    dims = [dim] if isinstance(dim, int) else list(dim)
    return sorted(d % max(z.dim(), 1) for d in dims)


def _complex_input(z: torch.Tensor, dtype: Any) -> torch.Tensor | None:
    """``z`` in the result's complex dtype, or None for a real reduction."""
    if dtype is not None:
        if dtype not in _REAL_OF:
            return None
        z = z.to(dtype)
    return z if z.dtype in _REAL_OF else None


def _on_parts(reduce: Callable[..., torch.Tensor]) -> Callable[..., Any]:
    """``sum`` or ``mean`` (either overload) as that reduction of each part."""

    def decomposition(
        z: torch.Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None
    ) -> Any:
        converted = _complex_input(z, dtype)
        if converted is None:
            return NotImplemented
        dims = _dims(converted, dim)
        pair = torch.view_as_real(converted)
        if not dims:  # a 0-d tensor
            return converted.clone()
        reduced = reduce(pair, dims, keepdim=keepdim)
        return torch.view_as_complex(reduced.contiguous())

    return decomposition


def _product_along(re: torch.Tensor, im: torch.Tensor, dim: int) -> cm.Parts:
    """The product along ``dim`` (kept, length 1) by halving."""
    while re.shape[dim] > 1:
        if re.shape[dim] % 2:
            pad = [0, 0] * (re.dim() - 1 - dim) + [0, 1]
            re = torch.nn.functional.pad(re, pad, value=1.0)
            im = torch.nn.functional.pad(im, pad, value=0.0)
        half = re.shape[dim] // 2
        first = (re.narrow(dim, 0, half), im.narrow(dim, 0, half))
        second = (re.narrow(dim, half, half), im.narrow(dim, half, half))
        re, im = cm.mul(first, second)
    return re, im


def prod(x: torch.Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:
    z = _complex_input(x, dtype)
    if z is None:
        return NotImplemented
    if z.dim() == 0:
        return z.clone()
    pair = torch.view_as_real(z)
    re, im = pair[..., 0], pair[..., 1]
    if dim is None:  # prod.default: every element
        re, im = re.reshape(-1), im.reshape(-1)
    axis = 0 if dim is None else dim % z.dim()
    re, im = _product_along(re, im, axis)
    if dim is None:
        re, im = re.reshape(()), im.reshape(())
    elif not keepdim:
        re, im = re.squeeze(axis), im.squeeze(axis)
    return torch.view_as_complex(torch.stack([re, im], dim=-1).contiguous())


def cumprod(x: torch.Tensor, dim: int, *, dtype: Any = None) -> Any:
    """A log-step (Hillis-Steele) scan of complex products, as
    ``decompositions.cumsum`` scans sums: ``z * shift(z, 2**k)``, the
    shifted-in places 1."""
    z = _complex_input(x, dtype)
    if z is None:
        return NotImplemented
    if z.dim() == 0:
        return z.clone()
    dim = dim % z.dim()
    pair = torch.view_as_real(z)
    re, im = pair[..., 0], pair[..., 1]
    length, shift = z.shape[dim], 1
    while shift < length:
        pad = [0, 0] * (z.dim() - 1 - dim) + [shift, 0]
        earlier_re = torch.nn.functional.pad(re.narrow(dim, 0, length - shift), pad, value=1.0)
        earlier_im = torch.nn.functional.pad(im.narrow(dim, 0, length - shift), pad, value=0.0)
        re, im = cm.mul((re, im), (earlier_re, earlier_im))
        shift *= 2
    return torch.view_as_complex(torch.stack([re, im], dim=-1).contiguous())


def _variance(root: bool) -> Callable[..., Any]:
    """``var`` (``std``: its root) of a complex tensor: the real result
    ``var(re) + var(im)``, as ATen defines it (the mean squared distance)."""

    def decomposition(
        z: torch.Tensor, dim: Any = None, *, correction: Any = None, keepdim: bool = False
    ) -> Any:
        if z.dtype not in _REAL_OF:
            return NotImplemented
        pair = torch.view_as_real(z)
        re, im = (
            torch.var(pair[..., part], dim, correction=correction, keepdim=keepdim)
            for part in (0, 1)
        )
        variance = re + im
        return torch.sqrt(variance) if root else variance

    return decomposition


def table() -> dict[Any, Callable[..., Any]]:
    """The entries, by ATen overload."""
    sums = _on_parts(lambda pair, dims, keepdim: pair.sum(dims, keepdim=keepdim))
    means = _on_parts(lambda pair, dims, keepdim: pair.mean(dims, keepdim=keepdim))
    return {
        aten.sum.default: sums,
        aten.sum.dim_IntList: sums,
        aten.mean.default: means,
        aten.mean.dim: means,
        aten.prod.default: prod,
        aten.prod.dim_int: prod,
        aten.cumprod.default: cumprod,
        aten.var.correction: _variance(root=False),
        aten.std.correction: _variance(root=True),
    }
