"""Image convolution blocks: ResNet, VGG, small CNNs, Inception-, Dense-,
Squeeze- and ShuffleNet-style blocks. Inputs are NCHW float32."""

from __future__ import annotations

import torch
from torch import nn


def conv_bn_relu(cin: int, cout: int, kernel: int, stride: int = 1, groups: int = 1):
    return nn.Sequential(
        nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU(inplace=True),
    )


def randomize_batchnorm(module: nn.Module) -> nn.Module:
    """Non-trivial running statistics: a fresh BatchNorm is the identity,
    which would hide a wrong folding of its scale and shift."""
    for m in module.modules():
        if isinstance(m, nn.BatchNorm1d | nn.BatchNorm2d):
            m.running_mean.uniform_(-0.2, 0.2)
            m.running_var.uniform_(0.5, 1.5)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.2, 0.2)
    return module


class ResNetStem(nn.Module):
    """7x7/2 convolution, batch norm, ReLU, 3x3/2 max pool (ResNet's first layers)."""

    def __init__(self):
        super().__init__()
        self.conv = conv_bn_relu(3, 64, 7, stride=2)
        self.pool = nn.MaxPool2d(3, 2, 1)

    def forward(self, x):
        return self.pool(self.conv(x))


class Bottleneck(nn.Module):
    """ResNet-50 bottleneck with a strided 1x1 downsample on the shortcut."""

    def __init__(self, cin: int, width: int, cout: int, stride: int):
        super().__init__()
        self.body = nn.Sequential(
            conv_bn_relu(cin, width, 1),
            conv_bn_relu(width, width, 3, stride),
            nn.Conv2d(width, cout, 1, bias=False),
            nn.BatchNorm2d(cout),
        )
        self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        return torch.relu(self.body(x) + self.down(x))


class BasicBlock(nn.Module):
    """ResNet-18 basic block, stride 2 with a downsample."""

    def __init__(self, cin: int, cout: int):
        super().__init__()
        self.conv1 = conv_bn_relu(cin, cout, 3, 2)
        self.conv2 = nn.Sequential(nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout))
        self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, 2, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        return torch.relu(self.conv2(self.conv1(x)) + self.down(x))


class LeNet(nn.Module):
    """LeNet-5-like digit classifier: convolutions, max pooling, linear head."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
        )  # fmt: skip
        self.head = nn.Sequential(nn.Linear(16 * 4 * 4, 120), nn.ReLU(), nn.Linear(120, 10))

    def forward(self, x):
        return self.head(torch.flatten(self.features(x), 1))


class AvgPoolCNN(nn.Module):
    """CIFAR-sized CNN with average pooling and a global average pool."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            conv_bn_relu(3, 32, 3), nn.AvgPool2d(2),
            conv_bn_relu(32, 64, 3), nn.AvgPool2d(2),
            conv_bn_relu(64, 128, 3), nn.AdaptiveAvgPool2d(1),
        )  # fmt: skip
        self.head = nn.Linear(128, 10)

    def forward(self, x):
        return self.head(torch.flatten(self.features(x), 1))


class VGGBlock(nn.Module):
    """Two 3x3 convolutions with bias and ReLU, then a 2x2 max pool."""

    def __init__(self, cin: int = 64, cout: int = 128):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU(),
            nn.Conv2d(cout, cout, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        )  # fmt: skip

    def forward(self, x):
        return self.body(x)


class InceptionBlock(nn.Module):
    """GoogLeNet-style branches (1x1, 3x3, 5x5, pool + 1x1) concatenated."""

    def __init__(self, cin: int = 64):
        super().__init__()
        self.b1 = conv_bn_relu(cin, 32, 1)
        self.b3 = nn.Sequential(conv_bn_relu(cin, 32, 1), conv_bn_relu(32, 48, 3))
        self.b5 = nn.Sequential(conv_bn_relu(cin, 8, 1), conv_bn_relu(8, 16, 5))
        self.bp = nn.Sequential(nn.MaxPool2d(3, 1, 1), conv_bn_relu(cin, 16, 1))

    def forward(self, x):
        return torch.cat([self.b1(x), self.b3(x), self.b5(x), self.bp(x)], dim=1)


class DenseLayer(nn.Module):
    """DenseNet layer: BN-ReLU-1x1, BN-ReLU-3x3, output concatenated to the input."""

    def __init__(self, cin: int = 64, growth: int = 32):
        super().__init__()
        self.body = nn.Sequential(
            nn.BatchNorm2d(cin), nn.ReLU(), nn.Conv2d(cin, 4 * growth, 1, bias=False),
            nn.BatchNorm2d(4 * growth), nn.ReLU(),
            nn.Conv2d(4 * growth, growth, 3, padding=1, bias=False),
        )  # fmt: skip

    def forward(self, x):
        return torch.cat([x, self.body(x)], dim=1)


class FireModule(nn.Module):
    """SqueezeNet fire module: 1x1 squeeze, 1x1 and 3x3 expands concatenated."""

    def __init__(self, cin: int = 128, squeeze: int = 16, expand: int = 64):
        super().__init__()
        self.squeeze = nn.Sequential(nn.Conv2d(cin, squeeze, 1), nn.ReLU())
        self.e1 = nn.Sequential(nn.Conv2d(squeeze, expand, 1), nn.ReLU())
        self.e3 = nn.Sequential(nn.Conv2d(squeeze, expand, 3, padding=1), nn.ReLU())

    def forward(self, x):
        s = self.squeeze(x)
        return torch.cat([self.e1(s), self.e3(s)], dim=1)


class ShuffleUnit(nn.Module):
    """ShuffleNetV2 unit (stride 1): channel split, 1x1 / depthwise 3x3 / 1x1
    on one half, concat, channel shuffle (reshape-transpose-reshape)."""

    def __init__(self, channels: int = 116):
        super().__init__()
        half = channels // 2
        self.branch = nn.Sequential(
            conv_bn_relu(half, half, 1),
            nn.Conv2d(half, half, 3, 1, 1, groups=half, bias=False), nn.BatchNorm2d(half),
            conv_bn_relu(half, half, 1),
        )  # fmt: skip

    def forward(self, x):
        a, b = x.chunk(2, dim=1)
        y = torch.cat([a, self.branch(b)], dim=1)
        n, c, h, w = y.shape
        return y.view(n, 2, c // 2, h, w).transpose(1, 2).reshape(n, c, h, w)


class GroupNormBlock(nn.Module):
    """3x3 convolution, GroupNorm (32 groups), SiLU: the diffusion-UNet block."""

    def __init__(self, channels: int = 64):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(channels, channels, 3, padding=1), nn.GroupNorm(32, channels), nn.SiLU(),
            nn.Conv2d(channels, channels, 3, padding=1), nn.GroupNorm(32, channels), nn.SiLU(),
        )  # fmt: skip

    def forward(self, x):
        return self.body(x) + x


def image(batch: int, channels: int, size: int) -> tuple[torch.Tensor]:
    return (torch.randn(batch, channels, size, size),)


def _bn(module: nn.Module) -> nn.Module:
    return randomize_batchnorm(module)


MODELS = {
    "resnet_stem": lambda b: (_bn(ResNetStem()), image(b, 3, 64)),
    "resnet_bottleneck": lambda b: (_bn(Bottleneck(128, 64, 256, 2)), image(b, 128, 28)),
    "resnet_basic": lambda b: (_bn(BasicBlock(64, 128)), image(b, 64, 20)),
    "lenet": lambda b: (LeNet(), image(b, 1, 28)),
    "cnn_avgpool": lambda b: (_bn(AvgPoolCNN()), image(b, 3, 32)),
    "vgg_block": lambda b: (VGGBlock(32, 64), image(b, 32, 20)),
    "inception_block": lambda b: (_bn(InceptionBlock()), image(b, 64, 14)),
    "densenet_layer": lambda b: (_bn(DenseLayer()), image(b, 64, 14)),
    "squeezenet_fire": lambda b: (FireModule(), image(b, 128, 28)),
    "shufflenet_unit": lambda b: (_bn(ShuffleUnit()), image(b, 116, 28)),
    "groupnorm_block": lambda b: (GroupNormBlock(), image(b, 64, 16)),
}
