"""PT2E quantized graphs: the ``quantized_decomposed`` ops.

torchao's (and torch.ao's) ``convert_pt2e`` leaves quantize/dequantize pairs
as ``quantized_decomposed.{quantize,dequantize}_per_{tensor,channel}`` calls
around float ops. Those ops live in a library that torch registers only when
``torch.ao.quantization.fx._decomposed`` is imported: the import worker must
do that before it loads a program holding them.
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


def table() -> dict:
    """Decompositions of ``quantized_decomposed`` ops (``_unsigned_zero_points``)."""
    import torch
    from torch.ao.quantization.fx import _decomposed

    register_ops()
    ops = torch.ops.quantized_decomposed
    return {
        ops.quantize_per_channel.default: _unsigned_zero_points(_decomposed.quantize_per_channel),
        ops.dequantize_per_channel.default: _unsigned_zero_points(
            _decomposed.dequantize_per_channel
        ),
    }
