"""1D convolution models over audio-like signals: a keyword-spotting
convolution stack on MFCC frames and a temporal convolutional network
(dilated causal convolutions with residuals). Inputs are (batch, channels, time)."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from .convnets import randomize_batchnorm


class KeywordSpotter(nn.Module):
    """Conv1d + BN + ReLU stack with a stride, global average pool, classifier."""

    def __init__(self, features: int = 40, width: int = 128, classes: int = 12):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv1d(features, width, 5, padding=2), nn.BatchNorm1d(width), nn.ReLU(),
            nn.Conv1d(width, width, 3, stride=2, padding=1), nn.BatchNorm1d(width), nn.ReLU(),
            nn.Conv1d(width, width, 3, padding=1), nn.BatchNorm1d(width), nn.ReLU(),
        )  # fmt: skip
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        return self.head(self.body(x).mean(dim=-1))


class TemporalBlock(nn.Module):
    """Two dilated causal convolutions (left padding only) with ReLU and a residual."""

    def __init__(self, channels: int, dilation: int, kernel: int = 3):
        super().__init__()
        self.pad = (kernel - 1) * dilation
        self.conv1 = nn.Conv1d(channels, channels, kernel, dilation=dilation)
        self.conv2 = nn.Conv1d(channels, channels, kernel, dilation=dilation)

    def forward(self, x):
        y = torch.relu(self.conv1(F.pad(x, (self.pad, 0))))
        y = torch.relu(self.conv2(F.pad(y, (self.pad, 0))))
        return torch.relu(x + y)


class TCN(nn.Module):
    def __init__(self, channels: int = 64, levels: int = 4):
        super().__init__()
        self.blocks = nn.Sequential(*(TemporalBlock(channels, 2**i) for i in range(levels)))

    def forward(self, x):
        return self.blocks(x)


MODELS = {
    "audio_conv1d": lambda b: (randomize_batchnorm(KeywordSpotter()), (torch.randn(b, 40, 101),)),
    "tcn": lambda b: (TCN(), (torch.randn(b, 64, 250),)),
}
