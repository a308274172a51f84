"""Depthwise convolutions whose output rows are not whole vectors: 7x7 on
14- and 7-wide planes, 3x3 stride 2 on odd planes, batch 1 and 8. Each is
a window nest whose accumulators stay in registers through the window
loops (vector-carried loops), at register tiles no wider than the power of
two that holds the row, within float32 tolerance of eager."""

import re

import pytest
import torch
from torch import nn

import lowerline
from lowerline.cpu.tile_plan import lanes
from lowerline.targets import cpu_target

# (batch, channels, size, kernel, stride)
CASES = [(8, 24, 7, 7, 1), (1, 24, 14, 7, 1), (8, 13, 11, 3, 2), (1, 16, 5, 3, 1)]


def _row_width(size: int, kernel: int, stride: int) -> int:
    return (size + 2 * (kernel // 2) - kernel) // stride + 1


@pytest.mark.parametrize("case", CASES, ids=lambda c: "b{}-c{}-{}x{}-k{}s{}".format(*c[:3], *c[2:]))
def test_depthwise_on_narrow_planes(tmp_path, case) -> None:
    batch, channels, size, kernel, stride = case
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(channels, channels, kernel, stride, kernel // 2, groups=channels), nn.ReLU()
    ).eval()
    x = torch.randn(batch, channels, size, size)
    compiled = lowerline.compile(model, x, cache_dir=str(tmp_path))
    tiled = compiled.ir("tiled")
    assert "linalg.depthwise_conv_2d_nchw_chw" not in tiled
    # The window loops carry the accumulators as vectors ([channels x] [rows
    # x] columns)...
    carried = [int(w) for w in re.findall(r"-> \(vector<(?:\d+x)+(\d+)xf32>\)", tiled)]
    assert carried
    # ...no wider than the power of two that holds the row, or two vectors.
    width = _row_width(size, kernel, stride)
    vl = lanes(cpu_target("host"), 4)
    limit = 1 << (width - 1).bit_length() if width < vl else 2 * vl
    assert max(carried) <= limit
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
