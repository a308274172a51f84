"""Recommendation models: a DLRM-like model (bottom MLP on dense features,
embedding tables for sparse ones, pairwise dot interactions, top MLP) and a
wide & deep model. Sparse features are one int64 id per table."""

from __future__ import annotations

import itertools

import torch
from torch import nn


def mlp(sizes: list[int], last_act: bool = True) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(itertools.pairwise(sizes)):
        layers.append(nn.Linear(a, b))
        if last_act or i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class DLRM(nn.Module):
    def __init__(self, dense: int = 13, tables: int = 8, rows: int = 10000, dim: int = 64):
        super().__init__()
        self.bottom = mlp([dense, 256, 128, dim])
        self.tables = nn.ModuleList(nn.Embedding(rows, dim) for _ in range(tables))
        pairs = (tables + 1) * tables // 2
        self.top = mlp([dim + pairs, 256, 128, 1], last_act=False)
        rows_, cols_ = torch.tril_indices(tables + 1, tables + 1, offset=-1)
        self.register_buffer("rows", rows_)
        self.register_buffer("cols", cols_)

    def forward(self, dense, sparse):
        x = self.bottom(dense)
        features = torch.stack([x] + [t(sparse[:, i]) for i, t in enumerate(self.tables)], dim=1)
        dots = features @ features.transpose(1, 2)
        pairs = dots[:, self.rows, self.cols]
        return torch.sigmoid(self.top(torch.cat([x, pairs], dim=1)))


class WideAndDeep(nn.Module):
    """A linear (wide) part on dense features plus an MLP (deep) part on
    concatenated embeddings, summed into one logit."""

    def __init__(self, dense: int = 13, tables: int = 8, rows: int = 10000, dim: int = 32):
        super().__init__()
        self.wide = nn.Linear(dense, 1)
        self.tables = nn.ModuleList(nn.Embedding(rows, dim) for _ in range(tables))
        self.deep = mlp([tables * dim + dense, 512, 256, 1], last_act=False)

    def forward(self, dense, sparse):
        embedded = [t(sparse[:, i]) for i, t in enumerate(self.tables)]
        deep = self.deep(torch.cat([*embedded, dense], dim=1))
        return torch.sigmoid(self.wide(dense) + deep)


def features(batch: int, tables: int = 8, rows: int = 10000):
    return torch.randn(batch, 13), torch.randint(0, rows, (batch, tables))


MODELS = {
    "dlrm": lambda b: (DLRM(), features(b)),
    "wide_and_deep": lambda b: (WideAndDeep(), features(b)),
}
