"""Plain MLPs and recurrent models: the issue's 784-512-512-10 MLP, a
LayerNorm/GELU MLP, a dense autoencoder, and GRU / LSTM sequence
classifiers (recurrences that an exporter may or may not support)."""

from __future__ import annotations

import torch
from torch import nn


class RecurrentClassifier(nn.Module):
    """One-layer GRU or LSTM over (batch, time, features); classifier on the last step."""

    def __init__(self, cell: str, features: int = 64, hidden: int = 128, classes: int = 10):
        super().__init__()
        rnn = {"gru": nn.GRU, "lstm": nn.LSTM}[cell]
        self.rnn = rnn(features, hidden, batch_first=True)
        self.fc = nn.Linear(hidden, classes)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.fc(out[:, -1])


def mlp() -> nn.Module:
    return nn.Sequential(
        nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)
    )


def norm_mlp() -> nn.Module:
    return nn.Sequential(
        nn.Linear(512, 1024), nn.LayerNorm(1024), nn.GELU(),
        nn.Linear(1024, 1024), nn.LayerNorm(1024), nn.GELU(), nn.Linear(1024, 256),
    )  # fmt: skip


def autoencoder() -> nn.Module:
    return nn.Sequential(
        nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 32), nn.Tanh(),
        nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, 784), nn.Sigmoid(),
    )  # fmt: skip


MODELS = {
    "mlp": lambda b: (mlp(), (torch.randn(b, 784),)),
    "norm_mlp": lambda b: (norm_mlp(), (torch.randn(b, 512),)),
    "autoencoder": lambda b: (autoencoder(), (torch.rand(b, 784),)),
    "gru": lambda b: (RecurrentClassifier("gru"), (torch.randn(b, 32, 64),)),
    "lstm": lambda b: (RecurrentClassifier("lstm"), (torch.randn(b, 32, 64),)),
}
