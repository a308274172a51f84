"""Depthwise convolutions and poolings with register tiles of several output
rows (``window_tiles``' ``rows``): odd channel counts and plane sizes, batch
1 and 8, strides 1 and 2 (the strided input rows read as one contiguous,
deinterleaved read each), padding and dilation, within float32 tolerance of
eager. A dense strided convolution keeps tiles of one row."""

import re

import pytest
import torch
from torch import nn

import lowerline
from lowerline.cpu.tile_plan import window_tiles
from lowerline.targets import cpu_target

# (batch, channels, size, kernel, stride, padding, dilation)
DEPTHWISE = [
    (1, 37, 29, 3, 1, 1, 1),
    (8, 37, 29, 3, 2, 1, 1),
    (1, 19, 24, 3, 2, 1, 1),
    (8, 12, 16, 3, 1, 0, 1),
    (1, 21, 40, 5, 1, 2, 1),
    (8, 13, 20, 3, 1, 2, 2),
]


def _carried_shapes(tiled: str) -> list[list[int]]:
    """Shapes of the vectors the window loops carry (the accumulators)."""
    found = re.findall(r"-> \(vector<((?:\d+x)+)f32>\)", tiled)
    return [[int(d) for d in shape.strip("x").split("x")] for shape in found]


def _compile_and_compare(tmp_path, model: nn.Module, x: torch.Tensor) -> str:
    compiled = lowerline.compile(model, x, cache_dir=str(tmp_path))
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
    return compiled.ir("tiled")


@pytest.mark.parametrize("case", DEPTHWISE, ids=lambda c: "b{}-c{}-{}-k{}s{}p{}d{}".format(*c))
def test_depthwise_row_tiles_match_eager(tmp_path, case) -> None:
    batch, channels, size, kernel, stride, padding, dilation = case
    torch.manual_seed(0)
    conv = nn.Conv2d(channels, channels, kernel, stride, padding, dilation, groups=channels)
    model = nn.Sequential(conv, nn.ReLU6()).eval()
    x = torch.randn(batch, channels, size, size)
    tiled = _compile_and_compare(tmp_path, model, x)
    assert "linalg.depthwise_conv_2d_nchw_chw" not in tiled
    out = (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1
    # A strided row's kw taps are one step reading the row's span once.
    taps = (kernel, stride) if stride > 1 else (1, 1)
    plan = window_tiles(cpu_target("host"), channels, out, out, row_taps=taps)
    assert plan.row_taps == taps[0]
    # Where the parallel tile has more than one row (its rows: a divisor of
    # the output rows up to 8), a register tile covers several of them...
    if any(out % d == 0 for d in range(2, 9)):
        assert plan.rows > 1
    # ...and the window loops carry them (the dims of extent 1 dropped).
    full = [d for d in (plan.mr, plan.rows) if d > 1] + [plan.nr]
    assert full in _carried_shapes(tiled)


@pytest.mark.parametrize("batch", [1, 8])
def test_max_pool_row_tiles_match_eager(tmp_path, batch) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.MaxPool2d(3, 2, 1), nn.ReLU()).eval()
    x = torch.randn(batch, 11, 27, 27)
    tiled = _compile_and_compare(tmp_path, model, x)
    assert "linalg.pooling_nchw_max" not in tiled
    # 14 output rows: tiles of 7 rows x 16 columns per channel.
    assert [7, 16] in [shape[-2:] for shape in _carried_shapes(tiled)]


def test_dense_strided_conv_keeps_one_row_tiles(tmp_path) -> None:
    """Not firing: a dense strided convolution reads one input row for all
    the channels of its tile; its tiles stay one output row of channels."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(8, 24, 3, 2, 1), nn.ReLU()).eval()
    x = torch.randn(1, 8, 17, 17)
    tiled = _compile_and_compare(tmp_path, model, x)
    shapes = _carried_shapes(tiled)
    assert shapes and all(len(shape) == 2 for shape in shapes)
