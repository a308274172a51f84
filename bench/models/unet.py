"""UNet steps: an encoder step (two convolutions, max pool) and decoder
steps that upsample (transposed convolution or bilinear), concatenate the
skip connection and convolve."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from .convnets import image


def double_conv(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU(),
        nn.Conv2d(cout, cout, 3, padding=1), nn.ReLU(),
    )  # fmt: skip


class EncoderStep(nn.Module):
    """Returns the skip tensor and the pooled one, as a UNet's encoder does."""

    def __init__(self, cin: int = 16, cout: int = 32):
        super().__init__()
        self.conv = double_conv(cin, cout)

    def forward(self, x):
        skip = self.conv(x)
        return F.max_pool2d(skip, 2), skip


class DecoderStep(nn.Module):
    """``bilinear=False``: ConvTranspose2d 2x2/2; True: bilinear upsampling
    and a 1x1 convolution. Then concat with the skip and a double conv."""

    def __init__(self, cin: int = 64, cout: int = 32, bilinear: bool = False):
        super().__init__()
        self.bilinear = bilinear
        if bilinear:
            self.up = nn.Conv2d(cin, cout, 1)
        else:
            self.up = nn.ConvTranspose2d(cin, cout, 2, stride=2)
        self.conv = double_conv(2 * cout, cout)

    def forward(self, x, skip):
        if self.bilinear:
            x = F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)
        return self.conv(torch.cat([self.up(x), skip], dim=1))


def _decoder(batch: int, bilinear: bool):
    return DecoderStep(bilinear=bilinear), (
        torch.randn(batch, 64, 12, 12),
        torch.randn(batch, 32, 24, 24),
    )


MODELS = {
    "unet_down": lambda b: (EncoderStep(), image(b, 16, 32)),
    "unet_up_transpose": lambda b: _decoder(b, bilinear=False),
    "unet_up_bilinear": lambda b: _decoder(b, bilinear=True),
}
