"""Mobile and efficient convolution blocks: MobileNetV1/V2/V3, EfficientNet
MBConv, ConvNeXt. Depthwise convolutions, ReLU6, hardswish, SiLU, GELU,
squeeze-excite, LayerNorm over channels."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from .convnets import image, randomize_batchnorm


def conv_bn(cin: int, cout: int, kernel: int, stride: int = 1, groups: int = 1, act=None):
    layers = [
        nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=False),
        nn.BatchNorm2d(cout),
    ]
    return nn.Sequential(*layers, act) if act is not None else nn.Sequential(*layers)


class SqueezeExcite(nn.Module):
    """Global average pool, 1x1 reduce, activation, 1x1 expand, gate."""

    def __init__(self, channels: int, reduced: int, act: nn.Module, gate: nn.Module):
        super().__init__()
        self.reduce = nn.Conv2d(channels, reduced, 1)
        self.expand = nn.Conv2d(reduced, channels, 1)
        self.act, self.gate = act, gate

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        return x * self.gate(self.expand(self.act(self.reduce(s))))


class DepthwiseSeparable(nn.Module):
    """MobileNetV1: depthwise 3x3 + BN + ReLU, pointwise 1x1 + BN + ReLU."""

    def __init__(self, cin: int = 64, cout: int = 128, stride: int = 2):
        super().__init__()
        self.body = nn.Sequential(
            conv_bn(cin, cin, 3, stride, groups=cin, act=nn.ReLU()),
            conv_bn(cin, cout, 1, act=nn.ReLU()),
        )

    def forward(self, x):
        return self.body(x)


class InvertedResidual(nn.Module):
    """MobileNetV2: 1x1 expand (x6) + ReLU6, depthwise 3x3 + ReLU6, 1x1
    project, residual."""

    def __init__(self, channels: int = 32, expand: int = 6):
        super().__init__()
        hidden = channels * expand
        self.body = nn.Sequential(
            conv_bn(channels, hidden, 1, act=nn.ReLU6()),
            conv_bn(hidden, hidden, 3, groups=hidden, act=nn.ReLU6()),
            conv_bn(hidden, channels, 1),
        )

    def forward(self, x):
        return x + self.body(x)


class ExpandDepthwiseSE(nn.Module):
    """1x1 expand + activation, depthwise kxk + activation, squeeze-excite,
    1x1 project, residual: MobileNetV3's bneck (hardswish, 5x5, hardsigmoid
    gate) and EfficientNet's MBConv (SiLU, 3x3, sigmoid gate)."""

    def __init__(self, channels: int, hidden: int, kernel: int, act, se: int, se_act, gate):
        super().__init__()
        self.expand = conv_bn(channels, hidden, 1, act=act())
        self.depthwise = conv_bn(hidden, hidden, kernel, groups=hidden, act=act())
        self.se = SqueezeExcite(hidden, se, se_act(), gate())
        self.project = conv_bn(hidden, channels, 1)

    def forward(self, x):
        return x + self.project(self.se(self.depthwise(self.expand(x))))


def mobilenetv3_block() -> nn.Module:
    return ExpandDepthwiseSE(40, 240, 5, nn.Hardswish, 60, nn.ReLU, nn.Hardsigmoid)


def efficientnet_mbconv() -> nn.Module:
    return ExpandDepthwiseSE(40, 240, 3, nn.SiLU, 10, nn.SiLU, nn.Sigmoid)


class ConvNeXtBlock(nn.Module):
    """ConvNeXt: depthwise 7x7, LayerNorm over channels (channels-last),
    Linear x4 + GELU + Linear, layer scale, residual."""

    def __init__(self, dim: int = 96):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pw1 = nn.Linear(dim, 4 * dim)
        self.pw2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(torch.full((dim,), 0.5))

    def forward(self, x):
        y = self.dwconv(x).permute(0, 2, 3, 1)
        y = self.gamma * self.pw2(F.gelu(self.pw1(self.norm(y))))
        return x + y.permute(0, 3, 1, 2)


def _bn(module: nn.Module) -> nn.Module:
    return randomize_batchnorm(module)


MODELS = {
    "mobilenetv1_dwsep": lambda b: (_bn(DepthwiseSeparable()), image(b, 64, 56)),
    "mobilenetv2_block": lambda b: (_bn(InvertedResidual(64)), image(b, 64, 10)),
    "mobilenetv3_block": lambda b: (_bn(mobilenetv3_block()), image(b, 40, 14)),
    "efficientnet_mbconv": lambda b: (_bn(efficientnet_mbconv()), image(b, 40, 14)),
    "convnext_block": lambda b: (ConvNeXtBlock(), image(b, 96, 14)),
}
