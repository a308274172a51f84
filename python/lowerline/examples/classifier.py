"""A small image classifier: the model `lowerline compile` builds in the README.

`lowerline compile FILE.py` reads two names from such a file:

* ``model``: an ``nn.Module`` (put it in eval mode: compiled modules are for
  inference);
* ``example_inputs``: a tuple of the inputs to compile for (tensors or
  Python numbers), as they would be passed to ``model(*example_inputs)``.
"""

import torch
from torch import nn

torch.manual_seed(0)


class Classifier(nn.Module):
    """conv -> BN -> ReLU -> max-pool -> conv -> ReLU -> global average -> linear."""

    def __init__(self, classes: int = 10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, kernel_size=3, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Linear(32, classes)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.head(self.features(images).flatten(1)), dim=-1)


model = Classifier().eval()
example_inputs = (torch.randn(2, 3, 29, 29),)
