"""PT2E-quantized models (torchao's prepare_pt2e/convert_pt2e with
X86InductorQuantizer) compile, match the converted model run eagerly, and
their linear layers become integer matmuls (lowerline-fold-qdq-matmul).

The reference is eager torch running the converted graph: its
``quantized_decomposed`` ops round half to even and clamp. Each model ends in
Linear + ReLU, whose output X86InductorQuantizer leaves in float (nothing
quantized reads it); ``QuantizedOutput`` quantizes it to u8 as a quantized
consumer would, so every folded layer ends in a requantize and the output is
a multiple of one scale. Compiled and eager may differ by one step of it where
a value lands next to a rounding tie (the folded layer adds the bias in i32
and multiplies once instead of dividing), never more.
"""

import re

import pytest
import torch

import lowerline

pytest.importorskip("torchao")
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
from torchao.quantization.pt2e.quantizer import x86_inductor_quantizer as xiq


class Mlp(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(37, 29)
        self.b = torch.nn.Linear(29, 11)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.b(torch.relu(self.a(x))))


class SequenceMlp(Mlp):
    """The MLP on (batch, 5, 37) inputs: torch-mlir collapses the rows into
    one matrix for each matmul and expands the result back."""


class SmallCnn(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 5, 3)
        self.fc = torch.nn.Linear(5 * 7 * 7, 13)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.conv(x))
        return torch.relu(self.fc(y.flatten(1)))


def quantize(model: torch.nn.Module, example: torch.Tensor) -> torch.fx.GraphModule:
    """The converted PT2E model, calibrated on a few random batches."""
    quantizer = xiq.X86InductorQuantizer()
    quantizer.set_global(xiq.get_default_x86_inductor_quantization_config())
    prepared = prepare_pt2e(torch.export.export(model, (example,)).module(), quantizer)
    generator = torch.Generator().manual_seed(1)
    for _ in range(4):
        prepared(torch.randn(example.shape, generator=generator))
    return convert_pt2e(prepared)


class QuantizedOutput(torch.nn.Module):
    """``converted``'s non-negative output through a u8 quantize/dequantize
    pair with zero point 0 and the scale that maps ``high`` to 255."""

    def __init__(self, converted: torch.fx.GraphModule, high: float) -> None:
        super().__init__()
        self.converted = converted
        self.scale = high / 255

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ops = torch.ops.quantized_decomposed
        q = ops.quantize_per_tensor(self.converted(x), self.scale, 0, 0, 255, torch.uint8)
        return ops.dequantize_per_tensor(q, self.scale, 0, 0, 255, torch.uint8)


def integer_matmuls(ir: str) -> tuple[int, int]:
    """(i8 x i8 -> i32 matmuls, other matmuls) in a stage's IR."""
    matmuls = re.findall(r"linalg\.matmul ins\([^)]*: (tensor<[^)]*>)\)", ir)
    integer = [m for m in matmuls if re.fullmatch(r"tensor<\w+xi8>, tensor<\w+xi8>", m)]
    return len(integer), len(matmuls) - len(integer)


CASES = [
    ("mlp", Mlp, (37,), 2),
    ("sequence", SequenceMlp, (5, 37), 2),
    ("cnn", SmallCnn, (3, 9, 9), 1),
]


@pytest.mark.parametrize("batch", [1, 8])
@pytest.mark.parametrize(("name", "make", "shape", "layers"), CASES, ids=[c[0] for c in CASES])
def test_pt2e_model_matches_eager_and_folds(name, make, shape, layers, batch):
    torch.manual_seed(0)
    model = make().eval()
    example = torch.randn(batch, *shape)
    converted = quantize(model, example)
    quantized = QuantizedOutput(converted, high=converted(example * 3).max().item())
    compiled = lowerline.compile(quantized, example)
    step = quantized.scale
    for spread in (0.5, 1.0, 3.0):
        x = torch.randn(batch, *shape) * spread
        expected = quantized(x)
        got = compiled(x)
        assert got.shape == expected.shape
        # Both are multiples of the step; they may differ by one at a tie.
        assert (got - expected).abs().max().item() <= step * 1.001, name
        assert (got != expected).float().mean().item() < 0.05, name
    assert integer_matmuls(compiled.ir("graph")) == (layers, 0)


def test_float_linear_is_not_folded():
    """A float model's matmuls stay float: the fold needs dequantized operands."""
    model = torch.nn.Sequential(torch.nn.Linear(13, 7), torch.nn.ReLU()).eval()
    x = torch.randn(3, 13)
    compiled = lowerline.compile(model, x)
    torch.testing.assert_close(compiled(x), model(x))
    assert integer_matmuls(compiled.ir("graph")) == (0, 1)
