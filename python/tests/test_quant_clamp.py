"""ReLU6, hardtanh and clamp between a quantized layer and its quantize
fold into the integer kernel's requantize range (lowerline-fold-qdq-matmul,
-conv; lit: lowerline-fold-qdq-matmul-clamp.mlir): a PT2E MLP and a
MobileNet-style block (conv, batch norm, ReLU6; depthwise, batch norm,
ReLU6; pointwise) become integer matmuls and convolutions with no float
clamp left, and match the converted model run eagerly within one output
step (see test_quant_pt2e for the reference and the step).
"""

import re

import pytest
import torch
from test_quant_conv import assert_within_steps, convolutions, quantized_model, x86_quantizer
from test_quant_pt2e import integer_matmuls

import lowerline

pytest.importorskip("torchao")


class ClampMlp(torch.nn.Module):
    """Linear, ReLU6, Linear, hardtanh(-1, 2), Linear, ReLU: odd widths."""

    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(37, 29)
        self.b = torch.nn.Linear(29, 23)
        self.c = torch.nn.Linear(23, 11)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.nn.functional.relu6(self.a(x))
        y = torch.nn.functional.hardtanh(self.b(y), -1.0, 2.0)
        return torch.relu(self.c(y))


class MobileBlock(torch.nn.Module):
    """A MobileNet block: conv, batch norm and ReLU6, the same depthwise,
    then a 1x1 convolution (its ReLU makes the output QuantizedOutput's)."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.stem_norm = torch.nn.BatchNorm2d(8)
        self.depthwise = torch.nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.depthwise_norm = torch.nn.BatchNorm2d(8)
        self.pointwise = torch.nn.Conv2d(8, 5, 1)
        for norm in (self.stem_norm, self.depthwise_norm):
            # Statistics that move the batch norm away from the identity.
            norm.running_mean.uniform_(-0.5, 0.5)
            norm.running_var.uniform_(0.5, 2.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.nn.functional.relu6(self.stem_norm(self.stem(x)))
        y = torch.nn.functional.relu6(self.depthwise_norm(self.depthwise(y)))
        return torch.relu(self.pointwise(y))


class OneLinear(torch.nn.Module):
    """One Linear and its activation: the layer whose output QuantizedOutput
    quantizes, so compiled and eager differ by one output step at most."""

    def __init__(self, activation) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(37, 29)
        self.activation = activation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.activation(self.linear(x))


ACTIVATIONS = {
    "relu6": torch.nn.functional.relu6,
    "hardtanh": lambda y: torch.nn.functional.hardtanh(y, -0.25, 0.75),
    "clamp": lambda y: torch.clamp(y, 0.1, 1.3),
}


def float_clamps(graph: str) -> int:
    """The NaN tests (``x != x``) of torch-mlir's clamps left in the IR."""
    return len(re.findall(r"arith\.cmpf une", graph))


def check_folded(make, shape: tuple, steps: int) -> str:
    """Compile ``make``'s PT2E-quantized model; check that no float clamp is
    left and the outputs are within ``steps`` of eager; the graph IR."""
    quantized = quantized_model(make, x86_quantizer, torch.randn(shape))
    compiled = lowerline.compile(quantized, torch.randn(shape))
    graph = compiled.ir("graph")
    assert float_clamps(graph) == 0
    assert_within_steps(compiled, quantized, shape, steps=steps)
    return graph


@pytest.mark.parametrize("batch", [1, 5, 8])
@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
def test_linear_clamp_folds_within_one_step(activation, batch):
    shape = (batch, 37)
    make = ACTIVATIONS[activation]
    graph = check_folded(lambda: OneLinear(make), shape, steps=1)
    assert integer_matmuls(graph) == (1, 0)


def test_mlp_clamps_fold_and_match_eager():
    shape = (16, 37)
    # A one-step tie in an inner layer may move the output by more than one
    # step (see test_quant_conv's chain): two steps here.
    assert integer_matmuls(check_folded(ClampMlp, shape, steps=2)) == (3, 0)


@pytest.mark.parametrize("batch", [2, 8])
def test_mobilenet_block_relu6_folds_and_matches_eager(batch):
    shape = (batch, 3, 15, 13)
    assert convolutions(check_folded(MobileBlock, shape, steps=2)) == (3, 0)


def test_float_model_keeps_its_clamp():
    """Without quantization nothing folds: the clamp stays, NaN-aware."""
    model = torch.nn.Sequential(torch.nn.Linear(7, 5), torch.nn.ReLU6()).eval()
    x = torch.randn(3, 7) * 4
    compiled = lowerline.compile(model, x)
    torch.testing.assert_close(compiled(x), model(x))
    graph = compiled.ir("graph")
    assert integer_matmuls(graph) == (0, 1)
    assert float_clamps(graph) == 2  # one NaN test per bound


@pytest.mark.parametrize("batch", [1, 6])
def test_in_compiler_quantization_folds_relu6(batch):
    """lowerline's own quantizer (``quantize=Int8``) observes the output after
    the ReLU6, so each convolution and its ReLU6 become one integer kernel,
    each layer within one step of its QDQ reference (``quant_report``).
    Without batch norms: this quantizer does not fold them into the
    convolutions, so one would sit between a convolution and its ReLU6."""
    torch.manual_seed(0)
    nn = torch.nn
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, stride=2, padding=1),
        nn.ReLU6(),
        nn.Conv2d(8, 8, 3, padding=1, groups=8),
        nn.ReLU6(),
        nn.Conv2d(8, 5, 1),
        nn.ReLU(),
    ).eval()
    generator = torch.Generator().manual_seed(4)
    batches = [torch.randn(4, 3, 15, 13, generator=generator) for _ in range(3)]
    config = lowerline.quant.Int8(calibration=batches)
    x = torch.randn(batch, 3, 15, 13)
    compiled = lowerline.compile(model, x, quantize=config)
    graph = compiled.ir("graph")
    assert convolutions(graph) == (3, 0)
    assert float_clamps(graph) == 0
    report = compiled.quant_report()
    assert report.ok, str(report)
