"""ATen's fake quantization (quantization-aware training) as float ops, before import.

torch.export keeps ``fake_quantize_per_tensor_affine`` (and its
``tensor_qparams`` overload) and ``fake_quantize_per_channel_affine``, and
decomposes them into the ``*_cachemask`` ops, which have no meta kernel: the
import worker's decomposition pass failed on them (``UnsupportedOperator``);
torch-mlir has no lowering of either. These entries write ATen's CPU kernel
(``aten/src/ATen/native/quantized/cpu/kernels/QuantizedOpKernels.cpp``,
``fake_quantize_tensor_cachemask_kernel`` and its per-channel twin) with
float ops torch-mlir lowers, in the same order of roundings::

    inv_scale = 1.0f / scale                      (float32)
    q = zero_point + nearbyint(x * inv_scale)     (float32, round half to even)
    out = (clamp(q, quant_min, quant_max) - zero_point) * scale
    mask = quant_min <= q <= quant_max

``q`` is an integer held in a float32 (exact below 2**24, as in ATen, which
adds the int64 zero point to the float ``nearbyint``); ``clamp(q) - zero_point``
is an exact integer whose product with ``scale`` ATen computes in double and
rounds to float: the correctly rounded float32 product. Half-precision inputs
compute in float32 (ATen converts each element) and round once at the end.

A floating-point per-channel zero point is ATen's "learnable" form: there the
zero point is added before rounding (``nearbyint(x * inv_scale + zero_point)``)
and ``clamp(q) - zero_point``, no longer an integer, is computed in double
with the product, as in ATen.

Kept apart from ``decompositions``' other entries (and from the PT2E
``quantized_decomposed`` ops, which are the quantization work's): merged into
its table by ``table()``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

aten = torch.ops.aten


def _as_f32(value: Any) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value.to(torch.float32)
    return torch.scalar_tensor(value, dtype=torch.float32)


def _fake_quantize(
    x: torch.Tensor,
    scale: Any,
    zero_point: Any,
    quant_min: int,
    quant_max: int,
    round_after_zero_point: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(output, mask) of ATen's kernel; ``scale`` and ``zero_point`` are
    numbers or tensors that broadcast against ``x``."""
    if quant_min > quant_max:
        raise ValueError(
            f"aten.fake_quantize: quant_min ({quant_min}) must not be greater than "
            f"quant_max ({quant_max})"
        )
    scale, zero_point = _as_f32(scale), _as_f32(zero_point)
    scaled = x.to(torch.float32) * torch.reciprocal(scale)
    if round_after_zero_point:
        q = torch.round(scaled + zero_point)
    else:
        q = torch.round(scaled) + zero_point
    clamped = torch.clamp(q, quant_min, quant_max)
    if round_after_zero_point:  # ATen: (clamped - zero_point) * scale in double
        clamped, zero_point, scale = (t.to(torch.float64) for t in (clamped, zero_point, scale))
    out = ((clamped - zero_point) * scale).to(x.dtype)
    return out, (q >= quant_min) & (q <= quant_max)


def per_tensor_cachemask(
    x: torch.Tensor, scale: Any, zero_point: Any, quant_min: int, quant_max: int
) -> tuple[torch.Tensor, torch.Tensor]:
    if isinstance(scale, torch.Tensor) and scale.numel() != 1:
        raise ValueError(
            f"aten.fake_quantize_per_tensor_affine: scale has {scale.numel()} "
            "elements; per-tensor quantization takes one"
        )
    if isinstance(scale, torch.Tensor):  # ATen reads the one element: any shape
        scale, zero_point = scale.reshape(()), zero_point.reshape(())
    return _fake_quantize(x, scale, zero_point, quant_min, quant_max)


def per_tensor(x: torch.Tensor, *args: Any) -> torch.Tensor:
    return per_tensor_cachemask(x, *args)[0]


def per_tensor_cachemask_tensor_qparams(
    x: torch.Tensor,
    scale: torch.Tensor,
    zero_point: torch.Tensor,
    fake_quant_enabled: torch.Tensor,
    quant_min: int,
    quant_max: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    out, mask = per_tensor_cachemask(x, scale, zero_point, quant_min, quant_max)
    # ATen quantizes only while fake_quant_enabled[0] >= 1 (an observer's switch).
    enabled = fake_quant_enabled.reshape(-1)[0] >= 1
    return torch.where(enabled, out, x), mask | ~enabled


def per_channel_cachemask(
    x: torch.Tensor,
    scale: torch.Tensor,
    zero_point: torch.Tensor,
    axis: int,
    quant_min: int,
    quant_max: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    axis = axis % max(x.dim(), 1)
    if scale.dim() != 1 or zero_point.dim() != 1 or scale.numel() != x.shape[axis]:
        raise ValueError(
            f"aten.fake_quantize_per_channel_affine: scale {tuple(scale.shape)} and "
            f"zero_point {tuple(zero_point.shape)} must be 1-D with one value per channel "
            f"of axis {axis} ({x.shape[axis]})"
        )
    shape = [x.shape[axis] if d == axis else 1 for d in range(x.dim())]
    learnable = zero_point.is_floating_point()
    return _fake_quantize(
        x, scale.reshape(shape), zero_point.reshape(shape), quant_min, quant_max, learnable
    )


def per_channel(x: torch.Tensor, *args: Any) -> torch.Tensor:
    return per_channel_cachemask(x, *args)[0]


def table() -> dict[Any, Callable[..., Any]]:
    """The entries, by ATen overload."""
    return {
        aten.fake_quantize_per_tensor_affine.default: per_tensor,
        aten.fake_quantize_per_tensor_affine.tensor_qparams: per_tensor,
        aten.fake_quantize_per_tensor_affine_cachemask.default: per_tensor_cachemask,
        aten._fake_quantize_per_tensor_affine_cachemask_tensor_qparams.default: (
            per_tensor_cachemask_tensor_qparams
        ),
        aten.fake_quantize_per_channel_affine.default: per_channel,
        aten.fake_quantize_per_channel_affine_cachemask.default: per_channel_cachemask,
    }
