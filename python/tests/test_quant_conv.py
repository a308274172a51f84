"""PT2E-quantized CNNs (X86InductorQuantizer and XNNPACKQuantizer) compile
to integer convolutions (lowerline-fold-qdq-conv) whose layout ops between
layers run on the stored integers (lowerline-sink-qdq-through-layout-ops),
and match the converted model run eagerly within one output step.

The reference is eager torch running the converted graph (its
``quantized_decomposed`` ops); ``QuantizedOutput`` quantizes the last ReLU
to u8 as a quantized consumer would (see test_quant_pt2e).
"""

import re

import pytest
import torch
from test_quant_pt2e import QuantizedOutput
from test_quant_vnni import host_int8_instruction, kernel_code, x86_host

import lowerline
from lowerline.targets import cpu_target

pytest.importorskip("torchao")
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
from torchao.quantization.pt2e.quantizer import x86_inductor_quantizer as xiq
from torchao.testing.pt2e._xnnpack_quantizer import (
    XNNPACKQuantizer,
    get_symmetric_quantization_config,
)


class OneConv(torch.nn.Module):
    """One convolution and its ReLU: the layer whose output QuantizedOutput
    quantizes, so compiled and eager differ by one output step at most."""

    def __init__(self, conv: torch.nn.Conv2d) -> None:
        super().__init__()
        self.conv = conv

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.conv(x))


# name -> (the convolution, its input channels)
KINDS = {
    "dense_strided_padded": (lambda: torch.nn.Conv2d(3, 8, 3, stride=2, padding=1), 3),
    "grouped": (lambda: torch.nn.Conv2d(4, 6, 3, padding=1, groups=2), 4),
    "depthwise_strided": (lambda: torch.nn.Conv2d(5, 5, 3, stride=2, padding=1, groups=5), 5),
    "pointwise": (lambda: torch.nn.Conv2d(6, 7, 1), 6),
}


class ConvChain(torch.nn.Module):
    """Dense strided and padded, max pooling with padding, grouped and
    dilated, depthwise and 1x1 convolutions, each with its bias and ReLU."""

    def __init__(self) -> None:
        super().__init__()
        self.dense = torch.nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.pool = torch.nn.MaxPool2d(3, stride=2, padding=1)
        self.grouped = torch.nn.Conv2d(8, 6, 3, padding=2, dilation=2, groups=2)
        self.depthwise = torch.nn.Conv2d(6, 6, 3, padding=1, groups=6)
        self.pointwise = torch.nn.Conv2d(6, 5, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.pool(torch.relu(self.dense(x)))
        y = torch.relu(self.grouped(y))
        y = torch.relu(self.depthwise(y))
        return torch.relu(self.pointwise(y))


class PoolChain(torch.nn.Module):
    """conv -> ReLU -> max pooling -> conv: the pooling between two
    quantized layers."""

    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Conv2d(3, 7, 3)
        self.pool = torch.nn.MaxPool2d(2)
        self.b = torch.nn.Conv2d(7, 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.b(self.pool(torch.relu(self.a(x)))))


class CatChain(torch.nn.Module):
    """Two convolution branches concatenated along the channels, then a
    third convolution."""

    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.b = torch.nn.Conv2d(3, 5, 1)
        self.c = torch.nn.Conv2d(9, 6, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.cat([torch.relu(self.a(x)), torch.relu(self.b(x))], dim=1)
        return torch.relu(self.c(y))


def x86_quantizer():
    quantizer = xiq.X86InductorQuantizer()
    return quantizer.set_global(xiq.get_default_x86_inductor_quantization_config())


def xnnpack_quantizer():
    return XNNPACKQuantizer().set_global(get_symmetric_quantization_config(is_per_channel=True))


def quantized_model(make, quantizer, example: torch.Tensor) -> QuantizedOutput:
    torch.manual_seed(0)
    model = make().eval()
    prepared = prepare_pt2e(torch.export.export(model, (example,)).module(), quantizer())
    generator = torch.Generator().manual_seed(1)
    for _ in range(4):
        prepared(torch.randn(example.shape, generator=generator))
    converted = convert_pt2e(prepared)
    return QuantizedOutput(converted, high=converted(example * 3).max().item())


def convolutions(ir: str) -> tuple[int, int]:
    """(i8 x i8 convolutions, other convolutions) in a stage's IR."""
    found = re.findall(r"linalg\.\w*conv\w* \{[^}]*\} ins\([^)]*: (tensor<[^)]*>)\)", ir)
    integer = [c for c in found if re.fullmatch(r"tensor<\w+xi8>, tensor<\w+xi8>", c)]
    return len(integer), len(found) - len(integer)


def assert_within_steps(compiled, quantized: QuantizedOutput, shape: tuple, steps: int) -> None:
    generator = torch.Generator().manual_seed(2)
    for spread in (0.5, 1.0, 3.0):
        x = torch.randn(shape, generator=generator) * spread
        expected = quantized(x)
        got = compiled(x)
        assert got.shape == expected.shape
        # Both are multiples of the step; they may differ at a tie.
        assert (got - expected).abs().max().item() <= quantized.scale * (steps + 0.001)
        assert (got != expected).float().mean().item() < 0.05


QUANTIZERS = [x86_quantizer, xnnpack_quantizer]


@pytest.mark.parametrize("batch", [1, 8])
@pytest.mark.parametrize("quantizer", QUANTIZERS, ids=["x86", "xnnpack"])
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_conv_folds_and_matches_eager_within_one_step(kind, quantizer, batch):
    make, channels = KINDS[kind]
    shape = (batch, channels, 13, 11)
    quantized = quantized_model(lambda: OneConv(make()), quantizer, torch.randn(shape))
    compiled = lowerline.compile(quantized, torch.randn(shape))
    assert convolutions(compiled.ir("graph")) == (1, 0)
    assert_within_steps(compiled, quantized, shape, steps=1)


@pytest.mark.parametrize(("quantizer", "batch"), [(x86_quantizer, 8), (xnnpack_quantizer, 1)])
def test_conv_chain_folds_and_matches_eager(quantizer, batch):
    """Four layers: a one-step tie in an inner layer may move the output by
    more than one step (the next layer multiplies it by its weights), so
    the bound here is two steps, and almost every output is exact."""
    shape = (batch, 3, 13, 11)
    quantized = quantized_model(ConvChain, quantizer, torch.randn(shape))
    compiled = lowerline.compile(quantized, torch.randn(shape))
    assert convolutions(compiled.ir("graph")) == (4, 0)
    assert_within_steps(compiled, quantized, shape, steps=2)


# (model, input shape, convolutions, the layout op between them, the only
# 4-D f32 tensors: the input and the output)
CHAINS = {
    # Between the two convolutions: ReLU, pooling, quantize, dequantize, pad.
    "conv_pool_conv": (
        PoolChain,
        (2, 3, 10, 9),
        2,
        "linalg.pooling_nchw_max",
        {"2x3x10x9", "2x4x4x3"},
    ),
    # X86InductorQuantizer quantizes after the concat, XNNPACK before and
    # after it with shared parameters.
    "concat_of_convs": (CatChain, (1, 3, 9, 7), 3, "tensor.concat", {"1x3x9x7", "1x6x7x5"}),
}


@pytest.mark.parametrize("quantizer", QUANTIZERS, ids=["x86", "xnnpack"])
@pytest.mark.parametrize("chain", sorted(CHAINS))
def test_quantized_chain_stays_int8(chain, quantizer):
    make, shape, convs, layout_op, floats = CHAINS[chain]
    quantized = quantized_model(make, quantizer, torch.randn(shape))
    compiled = lowerline.compile(quantized, torch.randn(shape))
    graph = compiled.ir("graph")
    assert convolutions(graph) == (convs, 0)
    assert layout_op in graph
    assert activations_in_float(graph) == floats
    assert_within_steps(compiled, quantized, shape, steps=1)


def activations_in_float(graph: str) -> set[str]:
    """The shapes of the 4-D f32 tensors (activations; the epilogues'
    per-channel constants are 1-D)."""
    return set(re.findall(r"tensor<(\d+x\d+x\d+x\d+)xf32>", graph))


def test_float_conv_is_not_folded():
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU()).eval()
    x = torch.randn(2, 3, 7, 7)
    compiled = lowerline.compile(model, x)
    torch.testing.assert_close(compiled(x), model(x))
    assert convolutions(compiled.ir("graph")) == (0, 1)


def _znver4_build(make, shape):
    """The PT2E (X86InductorQuantizer) one-conv model of ``make()`` compiled
    for znver4 (AVX-512 VNNI without AMX; not run), and its kernels' code."""
    quantized = quantized_model(lambda: OneConv(make()), x86_quantizer, torch.randn(shape))
    compiled = lowerline.compile(quantized, torch.randn(shape), target="cpu:znver4")
    return compiled, kernel_code(compiled)


def _assert_host_int8_matches(make, quantizer, shape):
    """The one-conv model built for the host uses its int8 dot product and is
    within one output step of eager PT2E."""
    quantized = quantized_model(lambda: OneConv(make()), quantizer, torch.randn(shape))
    compiled = lowerline.compile(quantized, torch.randn(shape))
    assert host_int8_instruction() in kernel_code(compiled)
    assert_within_steps(compiled, quantized, shape, steps=1)


# Stride-1 dense convolutions whose input channels are a multiple of 4:
# their register tiles step 4 channels deep, as vpdpbusd where the target
# has VNNI (lowerline.passes.tiling.conv_tiles, int8_dot).
DOT_CONVS = {
    "3x3_padded": (lambda: torch.nn.Conv2d(8, 12, 3, padding=1), 8),
    "1x1_wide": (lambda: torch.nn.Conv2d(16, 33, 1), 16),
}


@pytest.mark.parametrize("kind", sorted(DOT_CONVS))
def test_vnni_target_conv_kernels_use_vpdpbusd(kind):
    """Cross-compiled for znver4 (AVX-512 VNNI without AMX; not run)."""
    make, channels = DOT_CONVS[kind]
    compiled, code = _znver4_build(make, (1, channels, 9, 13))
    assert convolutions(compiled.ir("graph")) == (1, 0)
    assert "vpdpbusd" in code
    assert "vpmulld" not in code  # the convolution is not left on outer products


@x86_host
def test_conv_without_vnni_keeps_outer_products():
    make, channels = DOT_CONVS["3x3_padded"]
    shape = (3, channels, 9, 13)
    quantized = quantized_model(lambda: OneConv(make()), x86_quantizer, torch.randn(shape))
    compiled = lowerline.compile(quantized, torch.randn(shape), target="cpu:haswell")
    code = kernel_code(compiled)
    assert "vpdpbusd" not in code and "vpmulld" in code
    assert_within_steps(compiled, quantized, shape, steps=1)


@pytest.mark.skipif(not cpu_target("host").vnni, reason="the host has no VNNI")
@x86_host
@pytest.mark.parametrize("batch", [1, 8])
@pytest.mark.parametrize("kind", sorted(DOT_CONVS))
def test_host_vnni_conv_matches_eager(kind, batch):
    make, channels = DOT_CONVS[kind]
    _assert_host_int8_matches(make, xnnpack_quantizer, (batch, channels, 9, 13))


# Strided dense convolutions with a constant filter (ResNet's 3x3/2 and
# 1x1/2 downsampling): lowerline-int8-conv-matmul's im2col matmul reads the
# strided taps, so they run on vpdpbusd too; odd planes.
STRIDED_DOT_CONVS = {
    "3x3_s2_padded": (lambda: torch.nn.Conv2d(8, 12, 3, stride=2, padding=1), 8),
    "1x1_s2": (lambda: torch.nn.Conv2d(16, 9, 1, stride=2), 16),
}


@pytest.mark.parametrize("kind", sorted(STRIDED_DOT_CONVS))
def test_vnni_target_strided_conv_kernels_use_vpdpbusd(kind):
    """Cross-compiled for znver4 (AVX-512 VNNI without AMX; not run)."""
    make, channels = STRIDED_DOT_CONVS[kind]
    _, code = _znver4_build(make, (1, channels, 13, 11))
    assert "vpdpbusd" in code
    assert "vpmulld" not in code


@pytest.mark.skipif(not cpu_target("host").vnni, reason="the host has no VNNI")
@x86_host
@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("kind", sorted(STRIDED_DOT_CONVS))
def test_host_vnni_strided_conv_matches_eager(kind, batch):
    make, channels = STRIDED_DOT_CONVS[kind]
    _assert_host_int8_matches(make, xnnpack_quantizer, (batch, channels, 13, 11))


# Grouped 3x3 convolutions with a constant filter and at least 16 output
# channels per group (the dot product's lanes): lowerline-int8-conv-matmul
# splits them into one dense convolution per group, each an im2col matmul
# on vpdpbusd (lowerline.passes.tiling.int8_grouped); groups of 4, 8 and 12
# input channels and of 6 (not a multiple of 4); odd planes.
GROUPED_DOT_CONVS = {
    "g2_c4": (lambda: torch.nn.Conv2d(8, 32, 3, padding=1, groups=2), 8),
    "g4_c12_s2": (lambda: torch.nn.Conv2d(48, 64, 3, stride=2, padding=1, groups=4), 48),
    "g8_c8": (lambda: torch.nn.Conv2d(64, 128, 3, padding=1, groups=8), 64),
    "g2_c6": (lambda: torch.nn.Conv2d(12, 32, 3, padding=1, groups=2), 12),
}


@pytest.mark.parametrize("kind", sorted(GROUPED_DOT_CONVS))
def test_vnni_target_grouped_conv_kernels_use_vpdpbusd(kind):
    """Cross-compiled for znver4 (AVX-512 VNNI without AMX; not run)."""
    make, channels = GROUPED_DOT_CONVS[kind]
    compiled, code = _znver4_build(make, (1, channels, 13, 11))
    assert convolutions(compiled.ir("graph")) == (1, 0)
    assert "vpdpbusd" in code
    assert "vpmulld" not in code  # no window nest of outer products left


@x86_host
def test_grouped_conv_without_vnni_matches_eager():
    make, channels = GROUPED_DOT_CONVS["g2_c6"]
    shape = (3, channels, 13, 11)
    quantized = quantized_model(lambda: OneConv(make()), x86_quantizer, torch.randn(shape))
    compiled = lowerline.compile(quantized, torch.randn(shape), target="cpu:haswell")
    assert "vpdpbusd" not in kernel_code(compiled)
    assert_within_steps(compiled, quantized, shape, steps=1)


@pytest.mark.skipif(not cpu_target("host").vnni, reason="the host has no VNNI")
@x86_host
@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("quantizer", QUANTIZERS, ids=["x86", "xnnpack"])
@pytest.mark.parametrize("kind", sorted(GROUPED_DOT_CONVS))
def test_host_vnni_grouped_conv_matches_eager(kind, quantizer, batch):
    make, channels = GROUPED_DOT_CONVS[kind]
    _assert_host_int8_matches(make, quantizer, (batch, channels, 13, 11))
