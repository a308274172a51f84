"""Dynamic and per-token quantization: the ``quantized_decomposed`` ops whose
parameters are tensors, which torch-mlir does not lower.

``choose_qparams{,_symmetric}.tensor``, ``{quantize,dequantize}_per_tensor``
``.tensor`` / ``.tensor2`` (a dynamic-quantization flow: parameters chosen
from the input at run time) and the per-token ops were an
``UnsupportedOpsError`` (or, for the per-token flows, a bare "torch-mlir
failed" at the import); they are decomposed into the ATen arithmetic eager
runs (``lowerline.frontend.quantized``), and the results must match eager's
bit for bit.
"""

import pytest
import torch

import lowerline


def _ops():
    import torch.ao.quantization.fx._decomposed  # defines the ops

    return torch.ops.quantized_decomposed


class DynamicPerTensor(torch.nn.Module):
    """Parameters chosen from the input, then a quantize-dequantize round
    trip with them as tensors (quant_min/quant_max as tensors too where
    ``bounds`` says so: the ``.tensor2`` overloads)."""

    def __init__(self, symmetric: bool, dtype: torch.dtype, bounds: bool) -> None:
        super().__init__()
        self.symmetric, self.dtype, self.bounds = symmetric, dtype, bounds

    def forward(self, x):
        ops = _ops()
        low, high = (-128, 127) if self.dtype == torch.int8 else (0, 255)
        choose = ops.choose_qparams_symmetric if self.symmetric else ops.choose_qparams
        scale, zero_point = choose.tensor(x, low, high, torch.finfo(torch.float32).eps, self.dtype)
        if self.bounds:
            low = torch.tensor(low, dtype=torch.int32)
            high = torch.tensor(high, dtype=torch.int32)
            quantize, dequantize = (
                ops.quantize_per_tensor.tensor2,
                ops.dequantize_per_tensor.tensor2,
            )
        else:
            quantize, dequantize = ops.quantize_per_tensor.tensor, ops.dequantize_per_tensor.tensor
        q = quantize(x, scale, zero_point, low, high, self.dtype)
        return scale, zero_point, q, dequantize(q, scale, zero_point, low, high, self.dtype)


class PerToken(torch.nn.Module):
    """Per-token parameters (one per row of the last dim), then a
    quantize-dequantize round trip with them."""

    def __init__(self, symmetric: bool) -> None:
        super().__init__()
        self.symmetric = symmetric

    def forward(self, x):
        ops = _ops()
        if self.symmetric:
            scales, zero_points = ops.choose_qparams_per_token(x, torch.int8)
        else:
            scales, zero_points = ops.choose_qparams_per_token_asymmetric(x, torch.int8)
        q = ops.quantize_per_token(x, scales, zero_points, -128, 127, torch.int8)
        return (
            scales,
            zero_points,
            # Converted: the import failed on the symmetric op's types (its
            # implementation's float32, not its declared float64).
            scales.to(torch.float32),
            zero_points.to(torch.float32),
            q,
            ops.dequantize_per_token(q, scales, zero_points, -128, 127, torch.int8, torch.float32),
        )


def _check(module: torch.nn.Module, x: torch.Tensor, cache_dir: str) -> None:
    compiled = lowerline.compile(module, x, num_threads=1, cache_dir=cache_dir)
    for got, want in zip(compiled(x), module(x), strict=True):
        # choose_qparams_per_token declares float64 scales and int64 zero
        # points (the exported program's types) but returns float32 in eager.
        torch.testing.assert_close(got, want.to(got.dtype), rtol=0, atol=0)


# An odd shape, one all positive (zero point at quant_min) and one all negative.
INPUTS = {
    "mixed": lambda: 10 * torch.rand(3, 5, 37) - 4,
    "positive": lambda: torch.rand(7, 33) + 0.5,
    "negative": lambda: -torch.rand(2, 65) - 1,
}


@pytest.mark.parametrize(
    "symmetric, dtype, bounds, inputs",
    [
        (False, torch.int8, False, "mixed"),
        (False, torch.int8, False, "negative"),
        (False, torch.uint8, True, "positive"),
        (True, torch.int8, True, "negative"),
        # The largest value quantizes to 128 + 128, clamped to 255: the uint8
        # conversion lost the clamp (decompositions.float_to_uint8_via_int32).
        (True, torch.uint8, False, "mixed"),
    ],
)
def test_dynamic_per_tensor_quantization_matches_eager(symmetric, dtype, bounds, inputs, cache_dir):
    torch.manual_seed(0)
    _check(DynamicPerTensor(symmetric, dtype, bounds), INPUTS[inputs](), cache_dir)


@pytest.mark.parametrize(
    "symmetric, inputs", [(False, "mixed"), (False, "positive"), (True, "mixed")]
)
def test_per_token_quantization_matches_eager(symmetric, inputs, cache_dir):
    torch.manual_seed(0)
    _check(PerToken(symmetric), INPUTS[inputs](), cache_dir)
