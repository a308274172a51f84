"""Text classifiers over token ids: an ``nn.EmbeddingBag`` (mean) model, an
embedding + mean model (fastText style), and a TextCNN (embedding, 1D
convolutions of three widths, max over time). Token ids are int64."""

from __future__ import annotations

import torch
from torch import nn

VOCAB = 20000


class BagClassifier(nn.Module):
    """EmbeddingBag(mean) over fixed-length rows, then a linear layer."""

    def __init__(self, dim: int = 64, classes: int = 4):
        super().__init__()
        self.bag = nn.EmbeddingBag(VOCAB, dim, mode="mean")
        self.fc = nn.Linear(dim, classes)

    def forward(self, ids):
        return self.fc(self.bag(ids))


class MeanClassifier(nn.Module):
    """Embedding, mean over the sequence, a hidden layer, classifier."""

    def __init__(self, dim: int = 128, classes: int = 4):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, dim)
        self.head = nn.Sequential(nn.Linear(dim, 64), nn.ReLU(), nn.Linear(64, classes))

    def forward(self, ids):
        return self.head(self.embed(ids).mean(dim=1))


class TextCNN(nn.Module):
    def __init__(self, dim: int = 128, filters: int = 100, classes: int = 2):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, dim)
        self.convs = nn.ModuleList(nn.Conv1d(dim, filters, k) for k in (3, 4, 5))
        self.fc = nn.Linear(3 * filters, classes)

    def forward(self, ids):
        x = self.embed(ids).transpose(1, 2)
        pooled = [torch.relu(conv(x)).amax(dim=-1) for conv in self.convs]
        return self.fc(torch.cat(pooled, dim=1))


def token_ids(batch: int, seq: int) -> tuple[torch.Tensor]:
    return (torch.randint(0, VOCAB, (batch, seq)),)


MODELS = {
    "embedding_bag": lambda b: (BagClassifier(), token_ids(b, 200)),
    "embedding_mean": lambda b: (MeanClassifier(), token_ids(b, 200)),
    "text_cnn": lambda b: (TextCNN(), token_ids(b, 128)),
}
