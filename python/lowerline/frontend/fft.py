"""The complex FFTs torch-mlir does not lower, as DFT matrix products.

torch-mlir 20261001 lowers ``fft_rfft`` (and ``stft`` without centering)
as a product with a DFT coefficient matrix, but leaves ``fft_fft`` and
``fft_ifft`` as torch ops ("no lowering") and ``stft.center`` too. Here:

* ``fft_fft`` / ``fft_ifft``: the same DFT, on the real and imaginary parts
  as real matmuls (``re @ C + im @ S``, ``im @ C - re @ S`` for the forward
  transform, ``C = cos``, ``S = sin`` of ``2 pi j k / n``). The angles come
  from ``(j * k) mod n`` in integers, so large ``j * k`` lose no precision.
  ``n`` trims or zero-pads the input along ``dim``; ``norm`` scales as
  torch does (``backward``: ``ifft`` by ``1/n``; ``ortho``: both by
  ``1/sqrt(n)``; ``forward``: ``fft`` by ``1/n``). O(n^2) work per
  transform, as torch-mlir's ``rfft``: fine for the short transforms of
  models (spectrogram frames), not a replacement for an FFT of 1e6 points.
* ``fft_irfft`` (no torch dialect op: it imports as ``torch.operator``):
  the same DFT from the one-sided spectrum, to real points.
* ``fft_rfft`` with ``n`` or a normalization: torch-mlir's rfft after
  trimming or padding, then scaled.
* the 2-D and n-D forms (``fft2``, ``fftn``, ``rfft2``, ``rfftn``,
  ``irfft2``, ``irfftn`` and their inverses): one 1-D transform per dim.
  ``hfft`` / ``ihfft`` (1-D, 2-D, n-D): ``irfft`` of the conjugate / the
  conjugate of ``rfft``, normalized the other way round. ``fftshift`` / ``ifftshift``:
  rolls. (They import as ``torch.operator`` otherwise.)
* ``stft.center``: torch's own ``torch.stft`` steps, the input padded by
  ``n_fft // 2`` on both sides with ``pad_mode``, then the ``stft`` overload
  torch-mlir lowers.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from lowerline.frontend import complex_math

aten = torch.ops.aten

_REAL_OF = complex_math.REAL_OF
_NORMS = (None, "backward", "ortho", "forward")


def _check_norm(name: str, norm: Any) -> None:
    """A clear error for a normalization torch.fft does not define, named by
    the transform (``fft_irfft``)."""
    if norm not in _NORMS:
        raise ValueError(f"aten.{name}: norm={norm!r} is not one of {_NORMS[1:]}")


def _dft_matrices(n: int, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """``cos`` and ``sin`` of ``2 pi j k / n`` (``j`` rows, ``k`` columns)."""
    index = torch.arange(n, dtype=torch.int64)
    turns = (index.unsqueeze(1) * index.unsqueeze(0)) % n
    angle = turns.to(dtype) * (2 * math.pi / n)
    return torch.cos(angle), torch.sin(angle)


def _resized(x: torch.Tensor, n: int, dim: int) -> torch.Tensor:
    """``x`` trimmed or zero-padded to ``n`` along ``dim``."""
    length = x.shape[dim]
    if n <= length:
        return x.narrow(dim, 0, n)
    pad = [0, 0] * (x.dim() - 1 - dim) + [0, n - length]
    return torch.nn.functional.pad(x, pad)


def _scale(n: int, norm: str | None, inverse: bool) -> float:
    if norm == "ortho":
        return 1 / math.sqrt(n)
    divided = (norm == "forward") != inverse  # backward (or None) divides the inverse
    return 1 / n if divided else 1.0


def _transform(inverse: bool) -> Callable[..., Any]:
    def decomposition(x: torch.Tensor, n: Any = None, dim: int = -1, norm: Any = None) -> Any:
        _check_norm(f"fft_{'i' if inverse else ''}fft", norm)
        if not x.is_complex():
            x = x.to(torch.complex128 if x.dtype == torch.float64 else torch.complex64)
        if x.dtype not in _REAL_OF or x.dim() == 0:
            return NotImplemented
        dim = dim % x.dim()
        n = x.shape[dim] if n is None else int(n)
        if n < 1:
            raise ValueError(f"aten.fft_fft: n={n}; the transform needs at least one point")
        pair = torch.view_as_real(_resized(x, n, dim).movedim(dim, -1))
        re, im = pair[..., 0], pair[..., 1]
        cos, sin = _dft_matrices(n, re.dtype)
        if inverse:  # e^{+i theta}
            out_re, out_im = re @ cos - im @ sin, im @ cos + re @ sin
        else:  # e^{-i theta}
            out_re, out_im = re @ cos + im @ sin, im @ cos - re @ sin
        scale = _scale(n, norm, inverse)
        if scale != 1.0:
            out_re, out_im = out_re * scale, out_im * scale
        joined = torch.view_as_complex(torch.stack([out_re, out_im], dim=-1).contiguous())
        return joined.movedim(-1, dim)

    return decomposition


def irfft(x: torch.Tensor, n: Any = None, dim: int = -1, norm: Any = None) -> Any:
    """The real inverse of a one-sided spectrum: ``n`` real points (``2 (m -
    1)`` by default) from the ``n // 2 + 1`` first bins, each bin but the
    first (and the middle one of an even ``n``) counted twice for its
    conjugate twin; their imaginary parts drop out, as in ATen's c2r."""
    _check_norm("fft_irfft", norm)
    if not x.is_complex():
        x = x.to(torch.complex128 if x.dtype == torch.float64 else torch.complex64)
    if x.dtype not in _REAL_OF or x.dim() == 0:
        return NotImplemented
    dim = dim % x.dim()
    n = 2 * (x.shape[dim] - 1) if n is None else int(n)
    if n < 1:
        raise ValueError(f"aten.fft_irfft: n={n}; the transform needs at least one point")
    bins = n // 2 + 1
    pair = torch.view_as_real(_resized(x, bins, dim).movedim(dim, -1))
    cos, sin = _dft_matrices(n, pair.dtype)
    k = torch.arange(bins, dtype=torch.int64).unsqueeze(1)
    once = (k == 0) | (2 * k == n)  # the bins without a conjugate twin
    twice = torch.where(once, 1.0, 2.0).to(pair.dtype)
    cos, sin = cos[:bins] * twice, sin[:bins] * twice
    out = pair[..., 0] @ cos - pair[..., 1] @ sin
    scale = _scale(n, norm, inverse=True)
    return (out * scale if scale != 1.0 else out).movedim(-1, dim)


def rfft(x: torch.Tensor, n: Any = None, dim: int = -1, norm: Any = None) -> Any:
    """``rfft`` with a length or a normalization: torch-mlir lowers only
    ``n=None`` with the default normalization; the input is trimmed or
    zero-padded here and the result scaled."""
    _check_norm("fft_rfft", norm)
    if (n is None and norm in (None, "backward")) or x.is_complex() or x.dim() == 0:
        return NotImplemented  # as torch-mlir lowers it (complex: eager refuses it)
    dim = dim % x.dim()
    n = x.shape[dim] if n is None else int(n)
    if n < 1:
        raise ValueError(f"aten.fft_rfft: n={n}; the transform needs at least one point")
    out = aten.fft_rfft.default(_resized(x, n, dim), None, dim, None)
    scale = _scale(n, norm, inverse=False)
    return out * scale if scale != 1.0 else out


_SWAPPED_NORM = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}


def _dims_and_sizes(x: torch.Tensor, s: Any, dim: Any, name: str) -> list[tuple[int, Any]]:
    """``(dim, n)`` per transformed dim, as torch.fft's n-dimensional
    transforms read ``s`` and ``dim``: both given, paired; only ``s``, the
    last ``len(s)`` dims; only ``dim``, each at its size; neither, all dims."""
    if dim is None:
        dims = list(range(x.dim() - len(s), x.dim())) if s is not None else list(range(x.dim()))
    else:
        dims = [dim] if isinstance(dim, int) else list(dim)
    dims = [d % x.dim() for d in dims] if x.dim() else dims
    if len(set(dims)) != len(dims):
        raise ValueError(f"aten.{name}: dims {list(dims)} repeat a dim")
    sizes = [None] * len(dims) if s is None else [None if n == -1 else int(n) for n in s]
    if len(sizes) != len(dims):
        raise ValueError(f"aten.{name}: s has {len(sizes)} sizes for {len(dims)} dims")
    return list(zip(dims, sizes, strict=True))


def _c2c_nd(inverse: bool, name: str, default_dim: Any = None) -> Callable[..., Any]:
    """``fftn`` / ``ifftn`` (and their 2-D forms): one 1-D transform per dim,
    each normalized by its own length (which multiplies to torch's
    normalization by the product)."""
    one_dim = _transform(inverse)

    def decomposition(x: torch.Tensor, s: Any = None, dim: Any = default_dim, norm: Any = None):
        for d, n in _dims_and_sizes(x, s, dim, name):
            x = one_dim(x, n, d, norm)
        return x

    return decomposition


def _rfft_nd(name: str, default_dim: Any = None) -> Callable[..., Any]:
    """``rfftn`` / ``rfft2``: the one-sided ``rfft`` along the last dim (which
    torch-mlir lowers), then complex transforms along the others."""
    forward = _transform(inverse=False)

    def decomposition(x: torch.Tensor, s: Any = None, dim: Any = default_dim, norm: Any = None):
        pairs = _dims_and_sizes(x, s, dim, name)
        (last, n_last), others = pairs[-1], pairs[:-1]
        x = aten.fft_rfft.default(x, n_last, last, norm)
        for d, n in others:
            x = forward(x, n, d, norm)
        return x

    return decomposition


def _irfft_nd(name: str, default_dim: Any = None) -> Callable[..., Any]:
    """``irfftn`` / ``irfft2``: complex inverse transforms along all but the
    last dim, then ``irfft`` to real points along it."""
    inverse = _transform(inverse=True)

    def decomposition(x: torch.Tensor, s: Any = None, dim: Any = default_dim, norm: Any = None):
        pairs = _dims_and_sizes(x, s, dim, name)
        (last, n_last), others = pairs[-1], pairs[:-1]
        for d, n in others:
            x = inverse(x, n, d, norm)
        return irfft(x, n_last, last, norm)

    return decomposition


def hfft(x: torch.Tensor, n: Any = None, dim: int = -1, norm: Any = None) -> Any:
    """The real transform of a Hermitian signal: ``irfft`` of the conjugate,
    normalized the other way round (ATen's c2r with ``forward=True``)."""
    _check_norm("fft_hfft", norm)
    if x.is_complex():
        x = torch.conj_physical(x)
    return irfft(x, n, dim, _SWAPPED_NORM[norm])


def ihfft(x: torch.Tensor, n: Any = None, dim: int = -1, norm: Any = None) -> Any:
    """The inverse of ``hfft``: the conjugate of ``rfft``, normalized the other
    way round."""
    _check_norm("fft_ihfft", norm)
    return torch.conj_physical(aten.fft_rfft.default(x, n, dim, _SWAPPED_NORM[norm]))


def _hfft_nd(name: str, default_dim: Any = None) -> Callable[..., Any]:
    """``hfftn`` / ``hfft2``: ``irfftn`` of the conjugate, normalized the
    other way round."""
    inverse = _irfft_nd(name, default_dim)

    def decomposition(x: torch.Tensor, s: Any = None, dim: Any = default_dim, norm: Any = None):
        _check_norm(name, norm)
        if x.is_complex():
            x = torch.conj_physical(x)
        return inverse(x, s, dim, _SWAPPED_NORM[norm])

    return decomposition


def _ihfft_nd(name: str, default_dim: Any = None) -> Callable[..., Any]:
    """``ihfftn`` / ``ihfft2``: the conjugate of ``rfftn``, normalized the
    other way round."""
    forward = _rfft_nd(name, default_dim)

    def decomposition(x: torch.Tensor, s: Any = None, dim: Any = default_dim, norm: Any = None):
        _check_norm(name, norm)
        return torch.conj_physical(forward(x, s, dim, _SWAPPED_NORM[norm]))

    return decomposition


def _shift(inverse: bool) -> Callable[..., Any]:
    """``fftshift`` / ``ifftshift``: a roll by half of each dim (rounded down
    forward, up inverse), as torch.fft does."""

    def decomposition(x: torch.Tensor, dim: Any = None) -> Any:
        dims = list(range(x.dim())) if dim is None else [dim] if isinstance(dim, int) else dim
        shifts = [(x.shape[d] + 1) // 2 if inverse else x.shape[d] // 2 for d in dims]
        return torch.roll(x, shifts, list(dims))

    return decomposition


def stft_center(
    x: torch.Tensor,
    n_fft: int,
    hop_length: Any = None,
    win_length: Any = None,
    window: Any = None,
    center: bool = True,
    pad_mode: str = "reflect",
    normalized: bool = False,
    onesided: Any = None,
    return_complex: Any = None,
    align_to_window: Any = None,
) -> Any:
    if not center:  # the stft overload (which calls this one back with center=False)
        return NotImplemented
    # torch.functional.stft's padding, on a (1, 1, L) or (1, B, L) view.
    pad = n_fft // 2
    extended = [1] * (3 - x.dim()) + list(x.shape)
    padded = torch.nn.functional.pad(x.reshape(extended), [pad, pad], pad_mode)
    x = padded.reshape(*x.shape[:-1], padded.shape[-1])
    return aten.stft.default(
        x,
        n_fft,
        hop_length,
        win_length,
        window,
        normalized,
        onesided,
        return_complex,
        align_to_window,
    )


def table() -> dict[Any, Callable[..., Any]]:
    """The entries, by ATen overload."""
    return {
        aten.fft_fft.default: _transform(inverse=False),
        aten.fft_ifft.default: _transform(inverse=True),
        aten.fft_irfft.default: irfft,
        aten.fft_rfft.default: rfft,
        aten.fft_fft2.default: _c2c_nd(False, "fft_fft2", (-2, -1)),
        aten.fft_ifft2.default: _c2c_nd(True, "fft_ifft2", (-2, -1)),
        aten.fft_fftn.default: _c2c_nd(False, "fft_fftn"),
        aten.fft_ifftn.default: _c2c_nd(True, "fft_ifftn"),
        aten.fft_rfft2.default: _rfft_nd("fft_rfft2", (-2, -1)),
        aten.fft_rfftn.default: _rfft_nd("fft_rfftn"),
        aten.fft_irfft2.default: _irfft_nd("fft_irfft2", (-2, -1)),
        aten.fft_irfftn.default: _irfft_nd("fft_irfftn"),
        aten.fft_hfft.default: hfft,
        aten.fft_ihfft.default: ihfft,
        aten.fft_hfft2.default: _hfft_nd("fft_hfft2", (-2, -1)),
        aten.fft_hfftn.default: _hfft_nd("fft_hfftn"),
        aten.fft_ihfft2.default: _ihfft_nd("fft_ihfft2", (-2, -1)),
        aten.fft_ihfftn.default: _ihfft_nd("fft_ihfftn"),
        aten.fft_fftshift.default: _shift(inverse=False),
        aten.fft_ifftshift.default: _shift(inverse=True),
        aten.stft.center: stft_center,
    }
