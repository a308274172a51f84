"""Quantize bit for bit as eager torch at rounding ties (issue 16).

torch's ``quantized_decomposed`` kernels multiply by ``f32(1 / scale)``;
torch-mlir divides by the scale, which rounds the other way at some ties
(values ``(k + 0.5) * scale``). The frontend emits the multiply
(``lowerline.frontend.quantize_multiply``) and the QDQ matchers take it, so
the compiled quantize, alone or inside a folded integer layer, equals eager
torch exactly: per tensor (u8 and s8, with zero points, scales that are
float32 values and scales that are not), per channel (float32 and float64
scales), for PT2E graphs and for ``lowerline.quant.Int8``.
"""

import numpy as np
import pytest
import torch

import lowerline

pytest.importorskip("torchao")
import torch.ao.quantization.fx._decomposed

from lowerline.quant import Int8
from lowerline.quant.calibrate import quantize_model

OPS = torch.ops.quantized_decomposed


def type_range(dtype: torch.dtype) -> tuple[int, int]:
    return (0, 255) if dtype == torch.uint8 else (-128, 127)


def at_ties(scales: np.ndarray, shape: tuple[int, ...], seed: int) -> torch.Tensor:
    """``(k + 0.5) * scale`` for random k (float32), ``scales`` broadcast
    against ``shape``, with a random tenth left anywhere in the range."""
    rng = np.random.default_rng(seed)
    k = rng.integers(-160, 160, shape)
    values = (k + 0.5) * scales
    anywhere = rng.random(shape) < 0.1
    values[anywhere] = (
        rng.uniform(-160, 160, shape)[anywhere] * np.broadcast_to(scales, shape)[anywhere]
    )
    return torch.tensor(values.astype(np.float32))


class QuantizePerTensor(torch.nn.Module):
    def __init__(self, scale: float, zero_point: int, dtype: torch.dtype) -> None:
        super().__init__()
        self.scale, self.zero_point, self.dtype = scale, zero_point, dtype

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        low, high = type_range(self.dtype)
        return OPS.quantize_per_tensor(x, self.scale, self.zero_point, low, high, self.dtype)


class QuantizePerChannel(torch.nn.Module):
    def __init__(self, scales: torch.Tensor, zero_points: torch.Tensor, dtype: torch.dtype) -> None:
        super().__init__()
        self.dtype = dtype
        self.register_buffer("scales", scales)
        self.register_buffer("zero_points", zero_points)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        low, high = type_range(self.dtype)
        return OPS.quantize_per_channel(x, self.scales, self.zero_points, 1, low, high, self.dtype)


# 0.1 and 0.0123 are not float32 values (torch rounds 1 / scale in double to
# float32); 0.037 as float32 is.
@pytest.mark.parametrize("scale", [0.1, 0.0123, float(np.float32(0.037))])
@pytest.mark.parametrize(
    ("zero_point", "dtype"), [(3, torch.uint8), (131, torch.uint8), (-5, torch.int8)]
)
def test_quantize_per_tensor_is_bit_exact_at_ties(scale, zero_point, dtype):
    model = QuantizePerTensor(scale, zero_point, dtype)
    x = at_ties(np.float64(scale), (6, 7, 31), seed=1)
    compiled = lowerline.compile(model, x)
    assert "lowerline.quantize" in compiled.ir("linalg")
    assert torch.equal(compiled(x), model(x))


@pytest.mark.parametrize("scale_dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8])
def test_quantize_per_channel_is_bit_exact_at_ties(scale_dtype, dtype):
    rng = np.random.default_rng(2)
    scales = torch.tensor(rng.uniform(0.005, 0.5, 5)).to(scale_dtype)
    zero_points = torch.tensor(
        rng.integers(0, 20, 5) if dtype == torch.uint8 else rng.integers(-9, 9, 5)
    )
    model = QuantizePerChannel(scales, zero_points, dtype)
    x = at_ties(scales.double().numpy().reshape(1, 5, 1), (3, 5, 29), seed=3)
    compiled = lowerline.compile(model, x)
    assert torch.equal(compiled(x), model(x))


def qdq(x: torch.Tensor, scale: float, zero_point: int, dtype: torch.dtype) -> torch.Tensor:
    low, high = type_range(dtype)
    q = OPS.quantize_per_tensor(x, scale, zero_point, low, high, dtype)
    return OPS.dequantize_per_tensor(q, scale, zero_point, low, high, dtype)


class PermutingLinear(torch.nn.Module):
    """flatten -> quantize (u8, zero point 131) -> a linear layer whose int8
    weight permutes the features (scale 1/4 per channel) -> ReLU -> quantize
    with scale ``sx / 4``: every float step is exact or far from a tie, so the
    output is the input's quantized value (permuted) and eager and compiled
    agree exactly when the input quantize does."""

    def __init__(self, features: int, scale: float) -> None:
        super().__init__()
        self.scale = scale
        permutation = torch.randperm(features, generator=torch.Generator().manual_seed(0))
        weight = torch.zeros(features, features, dtype=torch.int8)
        weight[torch.arange(features), permutation] = 1
        self.register_buffer("weight", weight)
        self.register_buffer("weight_scales", torch.full((features,), 0.25))
        self.register_buffer("weight_zero_points", torch.zeros(features, dtype=torch.int64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = qdq(x.flatten(1), self.scale, 131, torch.uint8)
        w = OPS.dequantize_per_channel(
            self.weight, self.weight_scales, self.weight_zero_points, 0, -128, 127, torch.int8
        )
        y = torch.relu(torch.nn.functional.linear(x, w))
        return qdq(y, float(np.float32(self.scale) / 4), 0, torch.uint8)


@pytest.mark.parametrize("scale", [0.1, 0.0123])
def test_folded_integer_layer_is_bit_exact_at_input_ties(scale):
    model = PermutingLinear(24, scale)
    x = at_ties(np.float64(scale), (9, 4, 6), seed=4)
    compiled = lowerline.compile(model, x)
    graph = compiled.ir("graph")
    assert "tensor<9x24xi8>, tensor<24x24xi8>" in graph  # the integer matmul
    assert "lowerline.quantize" in graph  # the input's quantize, moved above the flatten
    assert torch.equal(compiled(x), model(x))


class Identity(torch.nn.Module):
    def __init__(self, features: int) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(features, features, bias=False)
        with torch.no_grad():
            self.fc.weight.copy_(torch.eye(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x))


def test_int8_calibrated_model_is_bit_exact_at_input_ties():
    """lowerline's own calibration emits the same quantize ops: the compiled
    model equals its QDQ graph run eagerly on inputs at the input's ties."""
    torch.manual_seed(0)
    model = Identity(16).eval()
    calibration = [torch.randn(8, 16) * 3 for _ in range(4)]
    config = Int8(calibration=calibration)
    reference = quantize_model(model, (calibration[0],), config).graph
    first = next(n for n in reference.graph.nodes if n.target == OPS.quantize_per_tensor.default)
    scale = first.args[1]
    x = at_ties(np.float64(scale), (32, 16), seed=5)
    compiled = lowerline.compile(model, x, quantize=config)
    assert "lowerline.quantize" in compiled.ir("linalg")
    with torch.no_grad():
        assert torch.equal(compiled(x), reference(x))


class EagerQuantized(torch.nn.Module):
    """Eager quantized-tensor code: torch.quantize_per_tensor, then dequantize."""

    def __init__(self, scale: float, zero_point: int, dtype: torch.dtype) -> None:
        super().__init__()
        self.scale, self.zero_point, self.dtype = scale, zero_point, dtype

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q = torch.quantize_per_tensor(x, self.scale, self.zero_point, self.dtype)
        return q.dequantize() * 2


@pytest.mark.parametrize(("zero_point", "dtype"), [(3, torch.quint8), (-7, torch.qint8)])
def test_eager_quantized_tensor_is_bit_exact_at_ties(zero_point, dtype):
    """Eager torch adds the zero point before its one rounding (an fma), so
    an odd zero point rounds a tie the other way from the decomposed ops."""
    model = EagerQuantized(0.1, zero_point, dtype)
    x = at_ties(np.float64(0.1), (5, 61), seed=6)
    compiled = lowerline.compile(model, x)
    assert torch.equal(compiled(x), model(x))


def test_eager_quantized_tensor_read_otherwise_is_named():
    class ReturnsQuantized(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.quantize_per_tensor(x, 0.1, 3, torch.quint8)

    with pytest.raises(lowerline.ExportError, match=r"read by the model.s output"):
        lowerline.compile(ReturnsQuantized(), torch.randn(4))
