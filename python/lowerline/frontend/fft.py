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
        if norm not in _NORMS:
            raise ValueError(
                f"aten.fft_{'i' if inverse else ''}fft: norm={norm!r} is not one of {_NORMS[1:]}"
            )
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
    if norm not in _NORMS:
        raise ValueError(f"aten.fft_irfft: norm={norm!r} is not one of {_NORMS[1:]}")
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
        aten.stft.center: stft_center,
    }
