"""Winograd convolutions (lowerline-winograd-conv) through lowerline.compile:
taken for 3x3 stride-1 convolutions by default, off with winograd=False,
both within float32 tolerance of eager."""

import re

import pytest
import torch
from torch import nn

import lowerline
from lowerline.targets import cpu_target


def block() -> nn.Module:
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(32, 32, 3, padding=1, bias=False),
        nn.BatchNorm2d(32),
        nn.ReLU(),
        nn.Conv2d(32, 16, 3, padding=1),
    )
    bn = model[1]
    bn.running_mean.uniform_(-0.5, 0.5)
    bn.running_var.uniform_(0.5, 2.0)
    return model.eval()


def test_winograd_is_the_default_for_3x3_convolutions_and_can_be_turned_off(tmp_path) -> None:
    model, x = block(), torch.randn(1, 32, 24, 20)
    with torch.no_grad():
        expected = model(x)
    on = lowerline.compile(model, x, cache_dir=str(tmp_path))
    off = lowerline.compile(model, x, cache_dir=str(tmp_path), winograd=False)
    # The transformed filters are constants named after the weights.
    assert on.ir("tiled").count(".winograd>") == 2
    assert ".winograd>" not in off.ir("tiled")
    for compiled in (on, off):
        torch.testing.assert_close(compiled(x), expected, rtol=1e-4, atol=1e-5)


def test_convolutions_winograd_cannot_compute_keep_the_direct_kernels(tmp_path) -> None:
    torch.manual_seed(0)
    # 3x3 but stride 2; then 3x3 with 8 output channels (below min-channels).
    model = nn.Sequential(nn.Conv2d(16, 16, 3, stride=2), nn.Conv2d(16, 8, 3)).eval()
    x = torch.randn(1, 16, 33, 33)
    compiled = lowerline.compile(model, x, cache_dir=str(tmp_path))
    assert ".winograd>" not in compiled.ir("tiled")
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    ("batch", "channels", "size"),
    [
        (1, 64, 20),  # 40 columns of tiles: 48, a tail of zeros
        (3, 24, 15),  # 48 columns: whole vectors already
        (8, 16, 7),  # 32 columns
        (1, 16, 7),  # 4 columns: below a vector, a power of two
    ],
)
def test_batch_matmul_register_tiles_are_whole_vectors(tmp_path, batch, channels, size) -> None:
    """The 36 products' register tiles are whole vectors at every batch
    size (never 20 or 28 lanes, which LLVM splits lane by lane), and the
    result matches eager whatever columns of tiles were added."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(channels, 32, 3, padding=1), nn.ReLU()).eval()
    x = torch.randn(batch, channels, size, size)
    compiled = lowerline.compile(model, x, cache_dir=str(tmp_path))
    tiled = compiled.ir("tiled")
    assert ".winograd>" in tiled
    lanes = cpu_target("host").f32_lanes
    tiles = [int(n) for n in re.findall(r"vector<1x\d+x(\d+)xf32>", tiled)]
    assert tiles
    for columns in tiles:
        assert columns % lanes == 0 or (columns < lanes and columns & (columns - 1) == 0)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
