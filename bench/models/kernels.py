"""Single-op workloads for compile time (``compile_time.py``), kept out of
the default suite: a softmax over GPT-2's 50257-word vocabulary and a chain
of elementwise ops on a 128x256x512 tensor per batch item."""

from __future__ import annotations

import torch
from torch import nn


class Softmax(nn.Module):
    def forward(self, logits):
        return torch.softmax(logits, dim=-1)


class ElementwiseChain(nn.Module):
    """Ten elementwise ops that a compiler should fuse into one loop."""

    def forward(self, x, y):
        z = torch.sigmoid(x * 1.5 + y)
        z = torch.tanh(z - 0.25) * torch.exp(-x.abs())
        z = torch.where(z > 0, z, 0.1 * z)
        return torch.sqrt(z * z + 1.0) + y


MODELS = {
    "softmax_50k": lambda b: (Softmax(), (torch.randn(b, 50257),)),
    "elementwise_chain": lambda b: (
        ElementwiseChain(),
        (torch.randn(b * 128, 256, 512), torch.randn(b * 128, 256, 512)),
    ),
}
