"""Winograd convolutions (lowerline-winograd-conv) through lowerline.compile:
taken for 3x3 stride-1 convolutions by default, off with winograd=False,
both within float32 tolerance of eager; the planes of the transformed
input and of the products are never a multiple of 4 KiB apart."""

import re

import pytest
import torch
from torch import nn

import lowerline
from lowerline.examples.classifier import Classifier
from lowerline.passes.tiling.winograd_conv import PLANES, PLANES_PER_SET, spread_rows
from lowerline.targets import cpu_target

LINE, SETS, WAYS = 64, 64, 8  # an x86 L1D: 64 sets of 8 64-byte lines


def planes_per_set(rows: int, row_bytes: int) -> int:
    """The most of the 36 planes' first lines that share an L1 set, counted."""
    sets = [(plane * rows * row_bytes // LINE) % SETS for plane in range(PLANES)]
    return max(sets.count(s) for s in sets)


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


@pytest.mark.parametrize("rows", [16, 17, 24, 32, 48, 64, 128, 256])
@pytest.mark.parametrize("tiles", [4, 8, 16, 24, 48, 128, 320, 1024])
def test_padded_planes_spread_over_l1_sets(rows, tiles) -> None:
    """V and M (36 x rows x tiles floats) get the fewest extra rows, at most
    an eighth more, that bring the planes' crowding of one L1 set down to
    PLANES_PER_SET where that is reachable, and never make it worse."""
    padded = spread_rows(rows, tiles * 4)
    assert rows <= padded <= rows + max(1, rows // 8)
    before, after = planes_per_set(rows, tiles * 4), planes_per_set(padded, tiles * 4)
    assert after <= before
    if before <= PLANES_PER_SET:
        assert padded == rows  # nothing to spread: no extra FLOPs
    reachable = [planes_per_set(rows + k, tiles * 4) for k in range(max(1, rows // 8) + 1)]
    enough = [k for k, crowding in enumerate(reachable) if crowding <= PLANES_PER_SET]
    if enough:
        assert padded - rows == enough[0]
    else:
        assert after == min(reachable)


@pytest.mark.parametrize("batch", [1, 3, 8])
def test_classifier_planes_are_off_4k_and_padding_is_zeroed(tmp_path, batch) -> None:
    """The CNN of bench/dynamic.py: at batch 8 its products were 36 planes
    of 32 x 128 floats, 16 KiB apart, all in one L1 set. Every 36-plane
    buffer now spreads its planes so that no set holds more than its ways
    (the batch-8 products: 33 rows, 5 planes per set), and the result is right even with the
    arena poisoned with NaN before the call: the padding rows that the
    matmuls read are zeroed, not left as whatever the arena held."""
    torch.manual_seed(0)
    model, x = Classifier().eval(), torch.randn(batch, 3, 32, 32)
    compiled = lowerline.compile(model, x, cache_dir=str(tmp_path), num_threads=1)
    planes = re.findall(r"memref<36x(\d+)x(\d+)xf32>", compiled.ir("bufferized"))
    assert planes
    for rows, tiles in {(int(r), int(t)) for r, t in planes}:
        assert planes_per_set(rows, tiles * 4) <= WAYS, (rows, tiles)
    compiled(x)  # the arena exists now: poison it
    arenas = compiled.specializations[0].function.arenas
    arena = arenas.take()
    arena.view(torch.float32).fill_(float("nan"))
    arenas.give(arena)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    ("batch", "size", "channels"),
    [(1, 16, 24), (3, 15, 24), (4, 16, 24), (8, 12, 40), (8, 16, 24), (5, 10, 16), (8, 9, 24)],
)
def test_tile_row_groups_of_narrow_planes_match_eager(tmp_path, batch, size, channels) -> None:
    """Planes narrower than a cache line of tiles (a 14 x 14 output is 4
    tiles of 4 floats per tile row) are transformed several tile rows per
    iteration where the batch leaves the cores enough iterations: batch 1
    and 3 keep one tile row per iteration, 4, 5 and 8 group 2-4 (14, 13, 10,
    8 and 7-row outputs: tile rows that hang over the bottom edge, a group
    of 3, channels not a multiple of 16). Every case within tolerance of
    eager, with a bias and a ReLU epilogue fused into the output transform."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(channels, channels + 8, 3, padding=0), nn.ReLU()).eval()
    x = torch.randn(batch, channels, size, size)
    compiled = lowerline.compile(model, x, cache_dir=str(tmp_path), num_threads=1)
    assert "memref<36x" in compiled.ir("bufferized")  # Winograd took it
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    ("batch", "size", "channels"), [(1, 10, 24), (1, 9, 40), (3, 6, 24), (2, 8, 24), (1, 7, 16)]
)
def test_few_tiles_go_tiles_first_and_match_eager(tmp_path, batch, size, channels) -> None:
    """Fewer tiles than a vector's lanes (8 x 8, 7 x 7, 6 x 6, 5 x 5 and 4 x 4
    outputs at batch 1-3: 3 to 8 tiles): the matmuls take the tiles as rows
    and vectorize along the filters (V and M stored tiles first, U
    transposed). Within tolerance of eager with the bias as the init and a
    ReLU epilogue, the outputs' ragged edges included."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(channels, channels + 8, 3, padding=0), nn.ReLU()).eval()
    x = torch.randn(batch, channels, size, size)
    compiled = lowerline.compile(model, x, cache_dir=str(tmp_path), num_threads=1)
    assert "memref<36x" in compiled.ir("bufferized")  # Winograd took it
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
