"""int8 convolutions as matmuls with the filter as the packed dot-product
operand (lowerline-int8-conv-matmul): PT2E-quantized convolutions of odd
channel counts, strides and paddings, batch 1 and larger, match the
converted model run eagerly within one output step, and a ResNet basic
block (two convolutions, the second reading the first's output through a
pad, and a residual) within two.

The reference is eager torch running the converted graph (its
``quantized_decomposed`` ops), as in test_quant_conv.
"""

import re

import pytest
import torch
from test_quant_conv import OneConv, assert_within_steps, quantized_model, x86_quantizer
from test_quant_vnni import host_int8_instruction, kernel_code, x86_host

import lowerline
from lowerline.targets import cpu_target

pytest.importorskip("torchao")

vnni_host = pytest.mark.skipif(not cpu_target("host").vnni, reason="the host has no VNNI")

# name -> (the convolution, its input channels, input height and width)
CONVS = {
    "3_to_13_3x3_padded": (lambda: torch.nn.Conv2d(3, 13, 3, padding=1), 3, (11, 9)),
    "17_to_31_3x3_stride_2": (lambda: torch.nn.Conv2d(17, 31, 3, stride=2), 17, (13, 10)),
    "5_to_7_5x3_stride_2_padded": (
        lambda: torch.nn.Conv2d(5, 7, (5, 3), stride=2, padding=(2, 1)),
        5,
        (9, 12),
    ),
    "8_to_19_1x1": (lambda: torch.nn.Conv2d(8, 19, 1), 8, (7, 5)),
}


def rewritten(compiled) -> int:
    """How many convolutions lowerline-int8-conv-matmul rewrote: their
    filter matrices (``<filter>.im2col``, packed as ``.im2col.vnni``) are
    constants of the tiled IR."""
    return len(set(re.findall(r"([\w.]+)\.im2col\b", compiled.ir("tiled"))))


@vnni_host
@x86_host
@pytest.mark.parametrize("batch", [1, 4])
@pytest.mark.parametrize("kind", sorted(CONVS))
def test_int8_conv_as_matmul_matches_eager(kind, batch):
    make, channels, (height, width) = CONVS[kind]
    shape = (batch, channels, height, width)
    quantized = quantized_model(lambda: OneConv(make()), x86_quantizer, torch.randn(shape))
    compiled = lowerline.compile(quantized, torch.randn(shape))
    assert rewritten(compiled) == 1
    assert host_int8_instruction() in kernel_code(compiled)
    assert_within_steps(compiled, quantized, shape, steps=1)


class BasicBlock(torch.nn.Module):
    """bench/speed.py's ResNet block at an odd width: conv -> BN -> ReLU ->
    conv -> BN, plus the input, then ReLU."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(channels)
        self.conv2 = torch.nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(y)) + x)


@vnni_host
@x86_host
@pytest.mark.parametrize("batch", [1, 3])
def test_basic_block_reads_channels_last_between_convolutions(batch):
    """Both convolutions are rewritten, the second reading the first's
    channels-last rows through the pad (lit test lowerline-int8-conv-matmul
    shows the IR), the residual read channels-last in its epilogue."""
    shape = (batch, 6, 9, 7)
    quantized = quantized_model(lambda: BasicBlock(6), x86_quantizer, torch.randn(shape))
    compiled = lowerline.compile(quantized, torch.randn(shape))
    assert rewritten(compiled) == 2
    assert_within_steps(compiled, quantized, shape, steps=2)


def test_without_int8_dot_product_convolutions_stay_direct():
    """haswell (no VNNI): the direct kernels, cross-compiled (not run)."""
    make, channels, (height, width) = CONVS["3_to_13_3x3_padded"]
    shape = (2, channels, height, width)
    quantized = quantized_model(lambda: OneConv(make()), x86_quantizer, torch.randn(shape))
    compiled = lowerline.compile(quantized, torch.randn(shape), target="cpu:haswell")
    assert not rewritten(compiled)
