"""PT2E quantized graphs: the ``quantized_decomposed`` ops.

torchao's (and torch.ao's) ``convert_pt2e`` leaves quantize/dequantize pairs
as ``quantized_decomposed.{quantize,dequantize}_per_{tensor,channel}`` calls
around float ops. Those ops live in a library that torch registers only when
``torch.ao.quantization.fx._decomposed`` is imported: the import worker must
do that before it loads a program holding them.

torch-mlir lowers the per-tensor and per-channel ops with number
parameters, and none of the others: the per-tensor ops whose parameters are
tensors (``.tensor``, ``.tensor2``: dynamic quantization's form),
``choose_qparams{,_symmetric}.tensor`` and the per-token ops. Those are
decomposed here into the ATen arithmetic eager runs (``table``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def register_ops() -> None:
    """Define the ``quantized_decomposed`` ops in this process (idempotent)."""
    import torch.ao.quantization.fx._decomposed  # noqa: F401  (registers on import)


def _unsigned_zero_points(entry: Callable[..., Any]) -> Callable[..., Any]:
    """``entry`` (torch's own implementation of the op, which eager runs)
    where the zero points are uint8; the op kept otherwise. torch-mlir's
    lowering of ``{quantize,dequantize}_per_channel`` sign-extends uint8 zero
    points (128..255 read as -128..-1: results off by 256 steps), while its
    lowering of the ATen ops torch's implementation uses reads them unsigned.
    Other zero points keep the op, whose form lowerline's QDQ folding knows."""

    def decomposition(x: Any, scales: Any, zero_points: Any, *args: Any, **kwargs: Any) -> Any:
        import torch

        if zero_points is None or zero_points.dtype != torch.uint8:
            return NotImplemented
        return entry(x, scales, zero_points, *args, **kwargs)

    return decomposition


def _number(parameter: Any, dtype: Any) -> Any:
    """A one-element parameter tensor as the 0-d tensor of ``dtype`` that
    stands for the Python number eager reads from it (``.item()``): 0-d, so
    that it broadcasts as a number does, converted as eager converts a
    number operand to the other operand's type."""
    return parameter.reshape(()).to(dtype)


def quantize_per_tensor_tensor(
    x: Any, scale: Any, zero_point: Any, quant_min: Any, quant_max: Any, dtype: Any
) -> Any:
    """``quantize_per_tensor.tensor`` and ``.tensor2`` as eager computes them
    without ``.item()`` (a data-dependent number torch.export cannot trace):
    ``clamp(round(x * (1 / scale)) + zero_point, quant_min, quant_max)``, the
    reciprocal taken in float64 (the number's type) and rounded to the
    input's type as eager's multiply by a number does."""
    import torch

    if x.dtype in (torch.float16, torch.bfloat16):
        x = x.to(torch.float32)
    inverse = _number(1.0 / scale.to(torch.float64), x.dtype)
    shifted = torch.round(x * inverse) + _number(zero_point, x.dtype)
    if isinstance(quant_min, torch.Tensor):
        quant_min, quant_max = _number(quant_min, x.dtype), _number(quant_max, x.dtype)
    return torch.clamp(shifted, quant_min, quant_max).to(dtype)


def dequantize_per_tensor_tensor(
    x: Any,
    scale: Any,
    zero_point: Any,
    quant_min: Any,
    quant_max: Any,
    dtype: Any,
    *,
    out_dtype: Any = None,
) -> Any:
    """``dequantize_per_tensor.tensor`` and ``.tensor2``:
    ``(x - zero_point) * scale`` in ``out_dtype``, as eager computes it with
    the parameters read as numbers."""
    import torch

    out_dtype = torch.float32 if out_dtype is None else out_dtype
    return (x.to(out_dtype) - _number(zero_point, out_dtype)) * _number(scale, out_dtype)


def _choose_qparams(symmetric: bool) -> Callable[..., Any]:
    """``choose_qparams{,_symmetric}.tensor``: torch's ``determine_qparams``
    for a whole tensor without its data-dependent steps (the validity check
    of min <= max, always true of a non-empty tensor's extremes, and
    ``float(scale)``, which only reshapes a 0-d result to one element)."""

    def choose(x: Any, quant_min: int, quant_max: int, eps: float, dtype: Any) -> Any:
        import torch

        low, high = torch.aminmax(x)
        low = torch.min(low, torch.zeros_like(low))
        high = torch.max(high, torch.zeros_like(high))
        floor = torch.full((1,), eps, dtype=torch.float32)  # torch.Tensor([eps])
        zero_point = torch.zeros((1,), dtype=torch.int64)
        if symmetric:
            scale = torch.max(torch.max(-low, high) / (float(quant_max - quant_min) / 2), floor)
            if dtype in (torch.uint8, torch.quint8):
                zero_point = torch.full((1,), 128, dtype=torch.int64)
        else:
            scale = torch.max((high - low) / float(quant_max - quant_min), floor)
            zero_point = quant_min - torch.round(low / scale).to(torch.int)
            zero_point = torch.clamp(zero_point, quant_min, quant_max)
        return scale.reshape(1).to(torch.float64), zero_point.reshape(1).to(torch.int64)

    return choose


def _choose_qparams_per_token(x: Any, dtype: Any) -> Any:
    """``choose_qparams_per_token``: torch's implementation, its results in
    the types the op declares (float64 scales, int64 zero points: its meta
    kernel, which the exported program follows) where the implementation
    returns float32 for both. The values are the same: float32 converts to
    both exactly."""
    import torch
    from torch.ao.quantization.fx import _decomposed

    scales, zero_points = _decomposed.choose_qparams_per_token(x, dtype)
    return scales.to(torch.float64), zero_points.to(torch.int64)


def table() -> dict:
    """Decompositions of ``quantized_decomposed`` ops: per-channel ops with
    uint8 zero points (``_unsigned_zero_points``) and the ops torch-mlir does
    not lower (the module docstring). The per-token ops are torch's own
    implementations, which are ATen arithmetic already."""
    import torch
    from torch.ao.quantization.fx import _decomposed

    register_ops()
    ops = torch.ops.quantized_decomposed
    return {
        ops.quantize_per_channel.default: _unsigned_zero_points(_decomposed.quantize_per_channel),
        ops.dequantize_per_channel.default: _unsigned_zero_points(
            _decomposed.dequantize_per_channel
        ),
        ops.quantize_per_tensor.tensor: quantize_per_tensor_tensor,
        ops.quantize_per_tensor.tensor2: quantize_per_tensor_tensor,
        ops.dequantize_per_tensor.tensor: dequantize_per_tensor_tensor,
        ops.dequantize_per_tensor.tensor2: dequantize_per_tensor_tensor,
        ops.choose_qparams.tensor: _choose_qparams(symmetric=False),
        ops.choose_qparams_symmetric.tensor: _choose_qparams(symmetric=True),
        ops.choose_qparams_per_token.default: _choose_qparams_per_token,
        ops.choose_qparams_per_token_asymmetric.default: (
            _decomposed._choose_qparams_per_token_asymmetric_impl
        ),
        ops.quantize_per_token.default: _decomposed.quantize_per_token,
        ops.dequantize_per_token.default: _decomposed.dequantize_per_token,
    }
