"""int8 depthwise convolutions channels-last (lowerline-int8-conv-matmul,
passes/tiling/int8_depthwise.py): PT2E-quantized depthwise convolutions of
1, 7 and 32 channels, stride 1 and 2, padded or not, batch 1 and 4, match
the converted model run eagerly within one output step; a MobileNetV2
inverted residual block (1x1 expand, depthwise 3x3, 1x1 project, residual)
at odd sizes within two, its three convolutions rewritten with no transpose
between them, its 1x1 convolutions on ``vpdpbusd``.

The reference is eager torch running the converted graph (its
``quantized_decomposed`` ops), as in test_quant_conv.
"""

import re

import pytest
import torch
from test_quant_conv import OneConv, assert_within_steps, quantized_model, x86_quantizer
from test_quant_conv_matmul import rewritten, vnni_host
from test_quant_vnni import host_int8_instruction, kernel_code, x86_host

import lowerline

pytest.importorskip("torchao")


def depthwise_rewritten(compiled) -> int:
    """How many depthwise convolutions became channels-last generics: their
    first tap's weights (``<filter>.tap0_0``) are constants of the tiled IR."""
    return len(set(re.findall(r"([\w.]+)\.tap0_0\b", compiled.ir("tiled"))))


def transposes(ir: str) -> int:
    return len(re.findall(r"linalg\.transpose", ir))


@vnni_host
@x86_host
# Batch 1 padded, batch 4 not: both at each stride and channel count.
@pytest.mark.parametrize(("batch", "padding"), [(1, 1), (4, 0)])
@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("channels", [1, 7, 32])
def test_int8_depthwise_matches_eager(channels, stride, padding, batch):
    shape = (batch, channels, 11, 8)

    def make():
        conv = torch.nn.Conv2d(channels, channels, 3, stride, padding, groups=channels)
        return OneConv(conv)

    quantized = quantized_model(make, x86_quantizer, torch.randn(shape))
    compiled = lowerline.compile(quantized, torch.randn(shape))
    # One channel: groups=1 is a dense convolution, an im2col matmul.
    assert (depthwise_rewritten(compiled), rewritten(compiled)) == (
        (1, 0) if channels > 1 else (0, 1)
    )
    assert_within_steps(compiled, quantized, shape, steps=1)


class InvertedResidual(torch.nn.Module):
    """bench/quant.py's MobileNetV2 block at odd sizes, batch norms moved
    away from the identity."""

    def __init__(self, channels: int, hidden: int) -> None:
        super().__init__()
        self.expand = torch.nn.Conv2d(channels, hidden, 1, bias=False)
        self.expand_norm = torch.nn.BatchNorm2d(hidden)
        self.depthwise = torch.nn.Conv2d(hidden, hidden, 3, padding=1, groups=hidden, bias=False)
        self.depthwise_norm = torch.nn.BatchNorm2d(hidden)
        self.project = torch.nn.Conv2d(hidden, channels, 1, bias=False)
        self.project_norm = torch.nn.BatchNorm2d(channels)
        for norm in (self.expand_norm, self.depthwise_norm, self.project_norm):
            norm.running_mean.uniform_(-0.5, 0.5)
            norm.running_var.uniform_(0.5, 2.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.nn.functional.relu6(self.expand_norm(self.expand(x)))
        y = torch.nn.functional.relu6(self.depthwise_norm(self.depthwise(y)))
        return x + self.project_norm(self.project(y))


@vnni_host
@x86_host
@pytest.mark.parametrize("batch", [1, 4])
def test_mobilenet_block_stays_channels_last(batch):
    """The depthwise convolution reads the expand's channels-last rows and
    the project reads its channels-last result: the only transposes left
    are the input's (read by the expand and the residual) and the output's."""
    shape = (batch, 5, 9, 7)
    quantized = quantized_model(lambda: InvertedResidual(5, 17), x86_quantizer, torch.randn(shape))
    compiled = lowerline.compile(quantized, torch.randn(shape))
    assert (depthwise_rewritten(compiled), rewritten(compiled)) == (1, 2)
    tiled = compiled.ir("tiled")
    assert transposes(tiled) <= 3, tiled
    assert host_int8_instruction() in kernel_code(compiled)
    assert_within_steps(compiled, quantized, shape, steps=2)


def test_without_int8_dot_product_depthwise_stays_direct():
    """haswell (no VNNI): the NCHW window nest, cross-compiled (not run)."""
    shape = (2, 7, 11, 8)
    make = lambda: OneConv(torch.nn.Conv2d(7, 7, 3, padding=1, groups=7))  # noqa: E731
    quantized = quantized_model(make, x86_quantizer, torch.randn(shape))
    compiled = lowerline.compile(quantized, torch.randn(shape), target="cpu:haswell")
    assert not depthwise_rewritten(compiled)
