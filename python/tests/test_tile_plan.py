"""Tile-size decisions of lowerline.cpu.tile_plan that no lit test pins down."""

from dataclasses import replace

import pytest

from lowerline.cpu.tile_plan import conv_tiles, matmul_tiles, reduction_chunk, vector_tile
from lowerline.targets import CPU_TARGETS


@pytest.mark.parametrize(
    ("cores", "n", "nc"),
    [
        (2, 768, 192),  # 256 would give 3 tiles on 2 cores: one core idle a third of the time
        (2, 1024, 256),  # 4 tiles: already balanced, the largest tile stays
        (3, 768, 256),  # 3 tiles on 3 cores
        (4, 96, 96),  # no divisor in whole register tiles balances: keep the tile
    ],
)
def test_parallel_tiles_are_shared_evenly_by_the_cores(cores, n, nc):
    target = replace(CPU_TARGETS["sapphirerapids"], cores=cores)
    tiles = matmul_tiles(target, 128, n, 256)
    assert tiles.mc == 128 and tiles.nr == 32
    assert tiles.nc == nc


@pytest.mark.parametrize(
    ("width", "tail"),
    [
        (56, (16, 8)),  # 32 + 24: the partial tile as 16 + 8
        (48, ()),  # 32 + 16: a power of two already, no mask
        (64, ()),  # no partial tile
        (60, (16, 8, 4)),  # 32 + 28
        (58, ()),  # 32 + 26: 2 is less than a quarter vector, stays masked
    ],
)
def test_conv_partial_tiles_split_into_power_of_two_pieces(width, tail):
    tiles = conv_tiles(CPU_TARGETS["sapphirerapids"], 64, 8, width)
    assert tiles.nr == 32
    assert tiles.tail == tail


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


def test_reduction_chunks_follow_the_vector_width():
    assert reduction_chunk(CPU_TARGETS["sapphirerapids"]) == 64
    assert reduction_chunk(CPU_TARGETS["haswell"]) == 32
    assert reduction_chunk(CPU_TARGETS["haswell"], element_bytes=8) == 16
