"""1x1 convolutions with their epilogues (batch norm, ReLU6, a residual add)
work on each plane as one row (lowerline-pointwise-conv-rows): odd channel
counts and non-square odd planes, batch 1 and larger, within float32
tolerance of eager, none left as loops."""

import pytest
import torch
from torch import nn

import lowerline


class ExpandProject(nn.Module):
    """A MobileNetV2-style 1x1 expand + ReLU6 and 1x1 project + residual,
    with a stride-2 1x1 (left as planes) on the side."""

    def __init__(self, channels: int, hidden: int) -> None:
        super().__init__()
        self.expand = nn.Sequential(
            nn.Conv2d(channels, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6()
        )
        self.project = nn.Sequential(nn.Conv2d(hidden, channels, 1), nn.BatchNorm2d(channels))
        self.side = nn.Conv2d(channels, channels, 1, stride=2)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x + self.project(self.expand(x)), self.side(x)


def model(channels: int, hidden: int) -> nn.Module:
    torch.manual_seed(0)
    block = ExpandProject(channels, hidden)
    for bn in (block.expand[1], block.project[1]):
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 2.0)
    return block.eval()


@pytest.mark.parametrize(
    ("batch", "channels", "hidden", "h", "w"),
    [(1, 5, 13, 7, 9), (3, 13, 40, 9, 7), (8, 16, 96, 10, 10), (8, 3, 7, 5, 1)],
)
def test_pointwise_convolutions_as_rows(tmp_path, batch, channels, hidden, h, w) -> None:
    block = model(channels, hidden)
    x = torch.randn(batch, channels, h, w)
    compiled = lowerline.compile(block, x, cache_dir=str(tmp_path))
    graph = compiled.ir("graph")
    # Both stride-1 convolutions work on 1 x (h * w) rows; the strided one does not.
    convs = [line for line in graph.splitlines() if "linalg.conv_2d_nchw_fchw" in line]
    rows = [line for line in convs if f"x1x{h * w}xf32>" in line]
    assert len(convs) == 3 and len(rows) == 2
    assert "strides = dense<2>" not in "".join(rows)
    assert "linalg.conv_2d_nchw_fchw" not in compiled.ir("tiled")
    assert not [f for f in compiled.fallbacks if "conv" in f.op]
    with torch.no_grad():
        got, want = compiled(x), block(x)
    for a, b in zip(got, want, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)


def test_pointwise_convolutions_as_rows_with_a_dynamic_batch(tmp_path) -> None:
    """One artifact for batches 1 to 8: the rows keep the batch dynamic."""
    block = model(6, 20)
    x = torch.randn(3, 6, 5, 7)
    compiled = lowerline.compile(block, x, dynamic={"x": {0: (1, 8)}}, cache_dir=str(tmp_path))
    graph = compiled.ir("graph")
    assert "tensor<?x20x1x35xf32>" in graph
    for batch in (1, 8, 5):
        y = torch.randn(batch, 6, 5, 7)
        with torch.no_grad():
            got, want = compiled(y), block(y)
        for a, b in zip(got, want, strict=True):
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)
