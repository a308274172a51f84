"""Integer convolutions against torch's eager quantized modules.

The other conv tests compare with the PT2E graph run eagerly (float
convolutions between ``quantized_decomposed`` ops). Here the reference is
the integer kernel itself: a convolution + ReLU quantized by torch's eager
mode (``torch.ao.quantization`` ``prepare``/``convert``, the ``x86``
qconfig and engine) runs ``torch.ao.nn.quantized.ConvReLU2d``. Its
parameters (input scale and zero point, the per-channel int8 weight, the
bias, the output scale and zero point) are written as the QDQ graph a PT2E
quantizer leaves, which lowerline folds into an integer convolution
(``lowerline-fold-qdq-conv``; on a VNNI host an im2col matmul or a
channels-last depthwise kernel, ``lowerline-int8-conv-matmul``). Both round
once per output, so they agree within one output step at odd sizes.
"""

import pytest
import torch
from test_quant_conv import convolutions
from torch.ao import quantization as tq

import lowerline

OPS = torch.ops.quantized_decomposed
ENGINE = "x86"

# name -> (the convolution, its input channels, input height and width)
KINDS = {
    "dense_3x3_padded": (lambda: torch.nn.Conv2d(12, 7, 3, padding=1), 12, (9, 13)),
    "dense_odd_channels_strided": (lambda: torch.nn.Conv2d(5, 6, 3, stride=2), 5, (13, 11)),
    "dense_dilated": (lambda: torch.nn.Conv2d(8, 5, 3, padding=2, dilation=2), 8, (11, 7)),
    "grouped": (lambda: torch.nn.Conv2d(6, 9, 3, padding=1, groups=3), 6, (7, 9)),
    "depthwise": (lambda: torch.nn.Conv2d(12, 12, 3, padding=1, groups=12), 12, (9, 11)),
    "pointwise": (lambda: torch.nn.Conv2d(20, 11, 1), 20, (5, 7)),
}


def eager_quantized(conv: torch.nn.Conv2d, shape: tuple) -> torch.nn.Module:
    """conv + ReLU quantized by torch's eager mode for the x86 engine,
    calibrated on 4 seeded batches of ``shape``."""
    torch.backends.quantized.engine = ENGINE
    model = tq.QuantWrapper(torch.nn.Sequential(conv, torch.nn.ReLU())).eval()
    model = tq.fuse_modules(model, [["module.0", "module.1"]])
    model.qconfig = tq.get_default_qconfig(ENGINE)
    prepared = tq.prepare(model)
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for _ in range(4):
            prepared(torch.randn(shape, generator=generator))
    return tq.convert(prepared).eval()


class QdqConv(torch.nn.Module):
    """The eager module's integer convolution as the QDQ graph PT2E leaves:
    u8 input, s8 weight per output channel, f32 bias, ReLU, u8 output."""

    def __init__(self, eager: torch.nn.Module) -> None:
        super().__init__()
        qconv = eager.module[0]
        weight = qconv.weight()
        self.register_buffer("weight", weight.int_repr())
        self.register_buffer("weight_scales", weight.q_per_channel_scales().float())
        self.register_buffer("weight_zeros", weight.q_per_channel_zero_points())
        self.register_buffer("bias", qconv.bias().detach())
        self.conv = {
            "stride": qconv.stride,
            "padding": qconv.padding,
            "dilation": qconv.dilation,
            "groups": qconv.groups,
        }
        self.x_scale, self.x_zero = float(eager.quant.scale), int(eager.quant.zero_point)
        self.y_scale, self.y_zero = float(qconv.scale), int(qconv.zero_point)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q = OPS.quantize_per_tensor(x, self.x_scale, self.x_zero, 0, 255, torch.uint8)
        xd = OPS.dequantize_per_tensor(q, self.x_scale, self.x_zero, 0, 255, torch.uint8)
        w = OPS.dequantize_per_channel(
            self.weight, self.weight_scales, self.weight_zeros, 0, -128, 127, torch.int8
        )
        y = torch.relu(torch.nn.functional.conv2d(xd, w, self.bias, **self.conv))
        q = OPS.quantize_per_tensor(y, self.y_scale, self.y_zero, 0, 255, torch.uint8)
        return OPS.dequantize_per_tensor(q, self.y_scale, self.y_zero, 0, 255, torch.uint8)


@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_int8_conv_matches_eager_quantized_module(kind, batch):
    make, channels, (height, width) = KINDS[kind]
    shape = (batch, channels, height, width)
    torch.manual_seed(0)
    eager = eager_quantized(make().eval(), shape)
    model = QdqConv(eager).eval()
    compiled = lowerline.compile(model, torch.randn(shape))
    assert convolutions(compiled.ir("graph")) == (1, 0)
    generator = torch.Generator().manual_seed(2)
    for _ in range(3):
        x = torch.randn(shape, generator=generator)
        with torch.inference_mode():
            expected = eager(x)
        got = compiled(x)
        assert got.shape == expected.shape
        # Both are multiples of the output step; a tie may round either way.
        assert (got - expected).abs().max().item() <= model.y_scale * 1.001
        assert (got != expected).float().mean().item() < 0.05
