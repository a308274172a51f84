"""A linear layer on (batch, sequence, features) is a 2-D matmul between two
reshapes; the elementwise ops after it (GELU, a residual add) run over the
2-D rows (``lowerline-collapse-expanded-elementwise``), so they fuse into the
matmul's epilogue. Results match eager on odd shapes at batch 1 and 8."""

from __future__ import annotations

import re

import pytest
import torch
from torch import nn

import lowerline


class Mlp(nn.Module):
    """Pre-norm transformer MLP with a residual: LN, Linear, GELU, Linear, add."""

    def __init__(self, dim: int = 13, hidden: int = 37):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, hidden)
        self.down = nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.down(nn.functional.gelu(self.up(self.norm(x))))


@pytest.mark.parametrize("batch", [1, 8])
def test_mlp_matches_eager(batch):
    torch.manual_seed(batch)
    model = Mlp().eval()
    x = torch.randn(batch, 7, 13)
    compiled = lowerline.compile(model, x)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)
        other = torch.randn(batch, 7, 13)
        torch.testing.assert_close(compiled(other), model(other), rtol=1e-5, atol=1e-5)


def test_gelu_runs_over_the_matmul_rows():
    model = Mlp().eval()
    x = torch.randn(8, 7, 13)
    graph = lowerline.compile(model, x).ir("graph")
    # The GELU (its erf) is a generic over the 56x37 rows of the first
    # matmul, not over 8x7x37 behind an expand_shape.
    gelu = re.search(
        r"linalg\.generic [^\n]*ins\([^\n]*\) outs\([^\n]*: tensor<(\w+)xf32>\)"
        r"(?:(?!linalg\.generic).)*?math\.erf",
        graph,
        re.S,
    )
    assert gelu is not None, graph
    assert gelu.group(1) == "56x37", graph
