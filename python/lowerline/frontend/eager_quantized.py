"""Eager quantized tensors (``torch.quantize_per_tensor(...).dequantize()``)
as float and ``quantized_decomposed`` ops, in the caller's process.

torch.export keeps ``aten.quantize_per_tensor`` and ``aten.dequantize``,
but a ``torch.quint8``/``qint8`` value cannot be saved for the import worker
(no serialized form). Eager torch's x86 kernels (measured, docs/
quantization.md) quantize as ``rint(fma(x, 1.0f / f32(scale), zero_point))``
(the zero point added before the one rounding) and dequantize as
``f32(q - zero_point) * f32(scale)``; written here with ops that save and
compile: the fused multiply-add in double (exact: a float32 product and a
small integer), the dequantize as ``quantized_decomposed.dequantize_per_tensor``,
which the QDQ folds read. The quantize is not torch's decomposed one (its zero
point is added after rounding), so it stays float arithmetic, unmarked.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

aten = torch.ops.aten
_RANGES = {torch.quint8: (0, 255, torch.uint8), torch.qint8: (-128, 127, torch.int8)}


def _quantize(x: torch.Tensor, scale: float, zero_point: int, dtype: torch.dtype) -> torch.Tensor:
    """The quantized tensor's dequantized values, as eager torch computes them."""
    import torch.ao.quantization.fx._decomposed  # defines the quantized_decomposed ops

    if dtype not in _RANGES:
        raise ValueError(f"torch.quantize_per_tensor to {dtype} is not supported (quint8, qint8)")
    low, high, stored = _RANGES[dtype]
    inverse = float(np.float32(1.0) / np.float32(scale))
    fused = (x.to(torch.float32).to(torch.float64) * inverse + zero_point).to(torch.float32)
    q = torch.clamp(torch.round(fused), low, high).to(stored)
    ops = torch.ops.quantized_decomposed
    return ops.dequantize_per_tensor(q, float(np.float32(scale)), zero_point, low, high, stored)


def _dequantize(x: torch.Tensor) -> torch.Tensor:
    return x  # _quantize already returned the dequantized values


def decompose(exported: Any) -> Any:
    """``exported`` with its eager quantize -> dequantize pairs rewritten; a
    quantized tensor read by anything else is refused, named."""
    quantizes = [n for n in exported.graph.nodes if n.target == aten.quantize_per_tensor.default]
    if not quantizes:
        return exported
    for node in quantizes:
        others = sorted({str(u.target) for u in node.users if u.target != aten.dequantize.self})
        if others:
            raise ValueError(
                "a quantized tensor (torch.quantize_per_tensor) is read by "
                f"{', '.join(others)}: lowerline compiles quantize -> dequantize only"
            )
    table = {aten.quantize_per_tensor.default: _quantize, aten.dequantize.self: _dequantize}
    return exported.run_decompositions(table)
