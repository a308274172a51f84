"""Convolutions whose output channel count has no divisor filling half a
register tile (prime: 7, 13, 31, 53, 97): tiles of ``channel_tile``
channels, the channels left over peeled and computed one at a time
(``lowerline-tile-and-fuse``), within float32 tolerance of eager at odd
plane sizes, batch 1 and 8."""

import re

import pytest
import torch
from test_window_row_tiles import _compile_and_compare
from torch import nn

from lowerline.cpu.tile_plan import (
    channel_tile,
    conv_tiles,
    largest_divisor,
    vector_registers,
    window_tiles,
)
from lowerline.targets import CPU_TARGETS, cpu_target


@pytest.mark.parametrize(
    ("f", "limit", "mr"),
    [
        (53, 14, 13),  # 4 x 13 + 1 (the divisor would be 1)
        (97, 14, 12),  # 8 x 12 + 1
        (31, 14, 10),  # 3 x 10 + 1
        (46, 14, 9),  # 5 x 9 + 1 (the divisor would be 2)
        (64, 14, 8),  # a divisor filling half the limit stays
        (13, 14, 13),  # fewer channels than the limit: all of them
        (7, 14, 7),
        (53, 6, 4),  # AVX2's limit: 13 x 4 + 1
    ],
)
def test_channel_tile_leaves_the_fewest_channels_over(f, limit, mr):
    assert channel_tile(f, limit) == mr


@pytest.mark.parametrize("f", range(1, 130))
@pytest.mark.parametrize("target", ["sapphirerapids", "haswell"])
def test_channel_tiles_fit_the_registers(target, f):
    t = CPU_TARGETS[target]
    tiles = conv_tiles(t, f, 29, 29)
    vectors = tiles.nr // 16 if target == "sapphirerapids" else tiles.nr // 8
    assert tiles.mr * vectors + vectors + 2 <= vector_registers(t)
    assert tiles.channels_left == f % tiles.mr
    # Never fewer channels per tile than the largest divisor gave.
    limit = (vector_registers(t) - vectors - 2) // vectors
    assert tiles.mr >= largest_divisor(f, limit)


def _weight_tile_rows(tiled: str) -> set[int]:
    """Output channels of the register tiles: the rows of the accumulators
    the (c, kh, kw) loops carry."""
    return {int(m) for m in re.findall(r"-> \(vector<(\d+)x\d+xf32>\)", tiled)}


# (batch, in channels, out channels, size)
POINTWISE = [
    (1, 37, 53, 29),
    (8, 37, 53, 29),
    (1, 16, 97, 7),
    (8, 5, 31, 13),
    (1, 8, 13, 15),
    (8, 3, 7, 9),
]


@pytest.mark.parametrize("case", POINTWISE, ids=lambda c: "b{}-{}to{}-{}".format(*c))
def test_pointwise_prime_channels_match_eager(tmp_path, case) -> None:
    batch, cin, cout, size = case
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(cin, cout, 1), nn.ReLU()).eval()
    x = torch.randn(batch, cin, size, size)
    tiled = _compile_and_compare(tmp_path, model, x)
    plan = conv_tiles(cpu_target("host"), cout, 1, size * size)
    rows = _weight_tile_rows(tiled)
    assert plan.mr in rows
    # The channels left are one-channel tiles; none where mr divides.
    assert (1 in rows) == bool(plan.channels_left), rows


@pytest.mark.parametrize("batch", [1, 8])
def test_dense_3x3_prime_channels_match_eager(tmp_path, batch) -> None:
    """A stride-1 3x3 convolution with fewer than 16 input channels (the
    direct kernels, not Winograd) to 31 channels over 11 x 11 planes."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(5, 31, 3, 1, 1), nn.Hardswish()).eval()
    x = torch.randn(batch, 5, 11, 11)
    tiled = _compile_and_compare(tmp_path, model, x)
    plan = conv_tiles(cpu_target("host"), 31, 11, 11)
    assert {plan.mr, 1} <= _weight_tile_rows(tiled)


# (nn.Conv2d arguments, output channels per group) of window nests whose
# input row serves all the tile's channels: grouped and dilated, to prime
# channel counts; the planes keep their size (13 x 19).
WINDOW_NESTS = {
    "grouped": (dict(in_channels=6, out_channels=62, kernel_size=3, padding=1, groups=2), 31),
    "dilated": (dict(in_channels=5, out_channels=37, kernel_size=3, padding=2, dilation=2), 37),
}


@pytest.mark.parametrize("batch", [1, 8])
@pytest.mark.parametrize("kind", sorted(WINDOW_NESTS))
def test_window_nest_prime_channels_match_eager(tmp_path, kind, batch) -> None:
    arguments, channels = WINDOW_NESTS[kind]
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(**arguments), nn.ReLU()).eval()
    x = torch.randn(batch, arguments["in_channels"], 13, 19)
    tiled = _compile_and_compare(tmp_path, model, x)
    plan = window_tiles(cpu_target("host"), channels, 13, 19, shared_input=True)
    assert plan.channels_left
    # Tiles of mr channels, and one-channel tiles (whose accumulators are
    # one row: the channel dim dropped) for the channels left.
    assert plan.mr in _weight_tile_rows(tiled)
    assert re.search(r"-> \(vector<\d+xf32>\)", tiled)
