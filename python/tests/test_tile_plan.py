"""Tile-size decisions of lowerline.cpu.tile_plan that no lit test pins down."""

from dataclasses import replace

import pytest

from lowerline.cpu.tile_plan import (
    conv_tiles,
    lanes,
    matmul_tiles,
    reduction_chunk,
    vector_registers,
    vector_tile,
    window_tiles,
)
from lowerline.targets import CPU_TARGETS


@pytest.mark.parametrize(
    ("cores", "n", "nc", "mc"),
    [
        (2, 768, 192, 128),  # 256 would give 3 tiles on 2 cores: one core idle a third of the time
        (2, 1024, 256, 128),  # 4 tiles: already balanced, the largest tile stays
        (3, 768, 256, 128),  # 3 tiles on 3 cores
        # No divisor of 96 in whole register tiles balances the columns: the
        # rows are split instead, 4 tiles of 32 rows for 4 cores.
        (4, 96, 96, 32),
    ],
)
def test_parallel_tiles_are_shared_evenly_by_the_cores(cores, n, nc, mc):
    target = replace(CPU_TARGETS["sapphirerapids"], cores=cores)
    tiles = matmul_tiles(target, 128, n, 256)
    assert tiles.mc == mc and tiles.nr == 32
    assert tiles.nc == nc


@pytest.mark.parametrize(
    ("width", "tail"),
    [
        (56, (16, 8)),  # 32 + 24: the partial tile as 16 + 8
        (48, ()),  # 32 + 16: a power of two already, no mask
        (64, ()),  # no partial tile
        (60, (16, 8, 4)),  # 32 + 28
        (58, (16, 8, 2)),  # 32 + 26: even 2 columns get a piece (no mask)
        (42, (8, 2)),  # 32 + 10
    ],
)
def test_conv_partial_tiles_split_into_power_of_two_pieces(width, tail):
    tiles = conv_tiles(CPU_TARGETS["sapphirerapids"], 64, 8, width)
    assert tiles.nr == 32
    assert tiles.tail == tail


@pytest.mark.parametrize(("width", "tail"), [(10, (8, 2)), (7, (4, 2, 1)), (14, (8, 4, 2))])
def test_small_planes_are_split_too(width, tail):
    """Rows narrower than a vector (late CNN stages: 14, 10, 7 columns) are
    pieces, not one masked tile."""
    tiles = conv_tiles(CPU_TARGETS["sapphirerapids"], 64, width, width)
    assert (tiles.nr, tiles.masked, tiles.tail) == (16, True, tail)


@pytest.mark.parametrize(
    ("n", "tile"),
    [
        (4096, 128),  # a divisor in whole vectors
        (196, 98),  # no such divisor, but a large one: no partial tile
        (50257, 128),  # 50257 = 29 x 1733: whole vectors and a masked last tile, not 29 lanes
        (100, 100),  # the row fits
    ],
)
def test_vector_tiles_are_whole_vectors_unless_a_large_divisor_exists(n, tile):
    assert vector_tile(n, CPU_TARGETS["sapphirerapids"]) == tile


@pytest.mark.parametrize(
    ("n", "nr", "masked"),
    [
        (320, 32, False),  # two vectors divide it
        (48, 32, True),  # 32 and a partial 16 (peeled by tile-and-fuse), not 3 x 16
        (40, 32, True),  # no whole-vector divisor: 32 and a masked 8, not 20 lanes
        (196, 32, True),  # not 28 lanes
        (20, 16, True),  # one vector and a masked 4, not 20 lanes
        (12, 12, False),  # below a vector: the row itself
    ],
)
def test_matmul_register_columns_are_whole_vectors(n, nr, masked):
    tiles = matmul_tiles(CPU_TARGETS["sapphirerapids"], 64, n, 64)
    assert (tiles.nr, tiles.masked) == (nr, masked)


def test_reduction_chunks_follow_the_vector_width():
    assert reduction_chunk(CPU_TARGETS["sapphirerapids"]) == 64
    assert reduction_chunk(CPU_TARGETS["haswell"]) == 32
    assert reduction_chunk(CPU_TARGETS["haswell"], element_bytes=8) == 16


@pytest.mark.parametrize("target", ["sapphirerapids", "haswell"])
@pytest.mark.parametrize(("channels", "rows", "width"), [(32, 56, 56), (960, 7, 7), (5, 13, 4093)])
def test_window_register_tiles_are_bounded_by_the_registers_not_the_shape(
    target, channels, rows, width
):
    t = CPU_TARGETS[target]
    tiles = window_tiles(t, channels, rows, width)
    vl = lanes(t, 4)
    # Whole vectors along the row, at most two (a row narrower than a
    # vector: the power of two that holds it); a partial tile is flagged.
    if width >= vl:
        assert tiles.nr % vl == 0 and vl <= tiles.nr <= 2 * vl
    else:
        assert tiles.nr & (tiles.nr - 1) == 0 and width <= tiles.nr < 2 * width
    assert tiles.masked == (width % tiles.nr != 0)
    # Accumulators and as many input vectors fit in the registers.
    assert 2 * tiles.mr * tiles.rows * max(1, tiles.nr // vl) <= vector_registers(t)
    assert channels % tiles.mr == 0 and rows % tiles.ohc == 0 and tiles.ohc % tiles.rows == 0


@pytest.mark.parametrize(
    ("width", "nr"), [(7, 8), (5, 8), (3, 4), (1, 1), (14, 16), (16, 16), (17, 32), (56, 32)]
)
def test_window_rows_narrower_than_a_vector_take_the_power_of_two_that_holds_them(width, nr):
    tiles = window_tiles(CPU_TARGETS["sapphirerapids"], 96, width, width)
    assert tiles.nr == nr
    assert tiles.masked == (width % nr != 0)


def test_window_tiles_differ_per_target():
    spr = window_tiles(CPU_TARGETS["sapphirerapids"], 32, 56, 56)
    hsw = window_tiles(CPU_TARGETS["haswell"], 32, 56, 56)
    # 32 zmm registers of 16 lanes: 1 channel x 4 rows x 2 vectors of accumulators.
    assert (spr.mr, spr.rows, spr.nr) == (1, 4, 32)
    # 16 ymm registers of 8 lanes: 1 channel x 2 rows x 2 vectors.
    assert (hsw.mr, hsw.rows, hsw.nr) == (1, 2, 16)


@pytest.mark.parametrize(("channels", "rows", "width"), [(512, 14, 14), (37, 29, 29), (24, 7, 7)])
def test_depthwise_register_tiles_take_rows_before_channels(channels, rows, width):
    """A register tile of a pooling or depthwise convolution is as many output
    rows of one channel as the accumulators allow (one weight per step for
    the whole tile); channels only fill what rows leave."""
    t = CPU_TARGETS["sapphirerapids"]
    tiles = window_tiles(t, channels, rows, width)
    assert tiles.rows == tiles.ohc  # 7 or fewer rows of one vector
    assert tiles.mr * tiles.rows <= (vector_registers(t) - 2) // 2
    dense = window_tiles(t, channels, rows, width, shared_input=True)
    assert dense.rows == 1  # a dense strided convolution: one row, more channels


@pytest.mark.parametrize("n", [24, 40, 100, 196, 197, 200, 208])
@pytest.mark.parametrize("target", ["sapphirerapids", "haswell"])
def test_matmul_register_tiles_are_whole_vectors(target, n):
    """nr is a multiple of the lanes whatever n is (196 gave its divisor 28,
    which LLVM splits lane by lane); a partial tile is masked (and peeled)."""
    cpu = CPU_TARGETS[target]
    for m in (1, 7, 128):
        tiles = matmul_tiles(cpu, m, n, 64)
        assert tiles.nr % lanes(cpu, 4) == 0, tiles
        assert tiles.masked == (n % tiles.nr != 0 or m % tiles.mr != 0), tiles


def test_batch_matmul_batch_entries_count_as_parallel_tiles():
    """With 24 batch entries there is work for every core: the 65 columns stay
    one parallel tile instead of being halved into a partial one."""
    cpu = CPU_TARGETS["sapphirerapids"]
    assert matmul_tiles(cpu, 65, 65, 64, batch=24).nc == 65
    assert 65 % matmul_tiles(cpu, 65, 65, 64).nc == 0


@pytest.mark.parametrize(
    ("cores", "m", "n", "mc"),
    [
        # 1568 rows (batch 8 x 14 x 14) by 96 columns: one column tile, 7
        # row tiles of 224 on 2 cores; 14 of 112 share evenly.
        (2, 1568, 96, 112),
        (2, 1024, 96, 256),  # 4 row tiles: already balanced, the largest tile stays
        # 7 row tiles on 7 cores: balanced as they are.
        (7, 1568, 96, 224),
        # 9 rows: no divisor down to half a tile balances them; left as they are.
        (2, 9, 96, 9),
    ],
)
def test_parallel_row_tiles_are_shared_evenly_by_the_cores(cores, m, n, mc):
    cpu = replace(CPU_TARGETS["sapphirerapids"], cores=cores)
    tiles = matmul_tiles(cpu, m, n, 384)
    assert tiles.mc == mc, tiles
    assert m % tiles.mc == 0, tiles


@pytest.mark.parametrize(
    ("n", "nr", "masked"),
    [
        (384, 128, False),  # not 192: 12 registers, which LLVM splits lane by lane
        (512, 256, False),  # 16 vectors: half of the registers
        (96, 64, True),  # 6 vectors: 4 and a masked tile, not 2 (latency-bound chains)
        (48, 16, False),  # fewer than 4 vectors in all: any power-of-two divisor
        (200, 128, True),  # no whole vectors: the widest power of two, masked
        (10, 10, False),  # less than a vector
    ],
)
def test_row_vector_tiles_are_powers_of_two_vectors(n, nr, masked):
    target = CPU_TARGETS["sapphirerapids"]
    tiles = matmul_tiles(target, 1, n, 128)
    assert (tiles.mr, tiles.nr, tiles.masked) == (1, nr, masked)
