"""Stride-2 convolutions (the window nests, ``lowerline.passes.tiling.window_tiles``)
at the shapes that exercise their edges, within float32 tolerance of eager:
depthwise over odd widths (a row narrower than a vector, one just under two
vectors, a long odd one), 1, 3, 17 and 32 channels, padding 0 and 1,
dilation 2, batch 1 and 8; dense 3x3 stride-2 convolutions over odd planes,
prime output channel counts included."""

import re

import pytest
import torch
from test_window_row_tiles import _compile_and_compare
from torch import nn

import lowerline


def _depthwise_stride_2(
    tmp_path, batch: int, channels: int, width: int, kernel: int, padding: int, dilation: int = 1
) -> str:
    """Compile a stride-2 depthwise convolution + ReLU6 over a plane of
    ``width + 2`` rows x ``width``, compare with eager; the tiled IR."""
    torch.manual_seed(0)
    conv = nn.Conv2d(channels, channels, kernel, 2, padding, dilation, groups=channels)
    model = nn.Sequential(conv, nn.ReLU6()).eval()
    x = torch.randn(batch, channels, width + 2, width)
    return _compile_and_compare(tmp_path, model, x)


def _taps_per_row_read(tiled: str) -> list[int]:
    """Per contiguous read of strided input rows in the vectorized tiles
    (a read whose lanes are shuffled out), how many shuffles each of its
    rows feeds: the window taps that share it. SSA names repeat across
    regions: each definition is its own value, the latest one in use."""
    latest: dict[str, int] = {}  # name -> the line defining it
    reads, rows = set(), {}  # the reads; row extract -> its read
    shuffles: dict[int, int] = {}
    for number, line in enumerate(tiled.splitlines()):
        shuffle = re.search(r"= vector\.shuffle (%\d+), ", line)
        if shuffle and latest.get(shuffle.group(1)) is not None:
            source = latest[shuffle.group(1)]
            read = rows.get(source, source)
            if read in reads:
                shuffles[read] = shuffles.get(read, 0) + 1
        extract = re.search(r"= vector\.extract (%\d+)\[[\d, ]+\] : vector", line)
        if extract and extract.group(1) in latest:
            rows[number] = latest[extract.group(1)]
        defined = re.match(r"\s*(%\d+) = ", line)
        if defined:
            latest[defined.group(1)] = number
            if "vector.transfer_read" in line:
                reads.add(number)
    extracted = {read: list(rows.values()).count(read) for read in shuffles}
    return [count // max(1, extracted[read]) for read, count in shuffles.items()]


# (batch, channels, width, padding, dilation, kernel)
DEPTHWISE_STRIDE_2 = [
    (1, 1, 7, 1, 1, 3),
    (8, 3, 15, 0, 1, 3),
    (1, 17, 113, 1, 1, 3),
    (8, 32, 15, 1, 1, 3),
    (1, 32, 7, 0, 1, 3),
    (8, 17, 31, 1, 2, 3),
    (1, 3, 113, 0, 2, 3),
    (8, 3, 113, 2, 1, 5),
    (1, 17, 31, 2, 1, 5),
]


@pytest.mark.parametrize(
    "case", DEPTHWISE_STRIDE_2, ids=lambda c: "b{}-c{}-w{}-p{}-d{}-k{}".format(*c)
)
def test_depthwise_stride_2_matches_eager(tmp_path, case) -> None:
    batch, channels, width, padding, dilation, kernel = case
    # Rows and columns differ: a transposed plane would not match.
    tiled = _depthwise_stride_2(tmp_path, batch, channels, width, kernel, padding, dilation)
    assert "linalg.depthwise_conv_2d_nchw_chw" not in tiled
    # No per-tap reads: every strided row read serves the kernel's kw taps
    # (the full and the partial column tiles each have theirs), whatever the
    # kernel, padding, dilation or width. One channel is a dense
    # convolution (groups=1), whose column phases read contiguous copies
    # (lowerline-split-strided-columns): no strided read at all.
    taps = _taps_per_row_read(tiled)
    if channels == 1:
        assert taps == []
        return
    assert taps and all(t == kernel for t in taps)


# (batch, in channels, out channels, size)
DENSE_3X3_STRIDE_2 = [
    (1, 5, 13, 17),
    (8, 7, 31, 9),
    (1, 16, 53, 21),
    (8, 3, 8, 15),
]


@pytest.mark.parametrize("case", DENSE_3X3_STRIDE_2, ids=lambda c: "b{}-{}to{}-{}".format(*c))
def test_dense_3x3_stride_2_matches_eager(tmp_path, case) -> None:
    batch, cin, cout, size = case
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(cin, cout, 3, 2, 1), nn.ReLU()).eval()
    x = torch.randn(batch, cin, size, size + 4)
    tiled = _compile_and_compare(tmp_path, model, x)
    assert "linalg.conv_2d_nchw_fchw" not in tiled


# (name, module, input shape, taps per row read): strided poolings, kernel
# 2 (a 2x2 pool: the taps are the even and odd lanes) and stride 3, share a
# read per row among the kw taps. (Dense strided convolutions read no
# strided rows: test_dense_strided_columns_split below.)
STRIDED_WINDOWS = {
    "max3s2": (lambda: nn.MaxPool2d(3, 2, 1), (8, 5, 23, 21), 3),
    "avg2s2": (lambda: nn.AvgPool2d(2, 2), (1, 7, 18, 30), 2),
    "max3s3": (lambda: nn.MaxPool2d(3, 3), (1, 4, 20, 29), 3),
}


@pytest.mark.parametrize("name", sorted(STRIDED_WINDOWS))
def test_strided_windows_row_reads(tmp_path, name) -> None:
    make, shape, taps_per_read = STRIDED_WINDOWS[name]
    torch.manual_seed(0)
    model = nn.Sequential(make(), nn.ReLU()).eval()
    tiled = _compile_and_compare(tmp_path, model, torch.randn(*shape))
    taps = _taps_per_row_read(tiled)
    assert taps and all(t == taps_per_read for t in taps)


# (batch, in channels, out channels, kernel, stride, padding, dilation, width):
# lowerline-split-strided-columns' column phases over odd widths (a row
# narrower than a vector, one just over, a long odd one), kernels 3, 5 and 7
# (phases of unequal taps, the stem), strides 2 and 3, padding 0 to 3 (a
# phase whose first or last column is padding), a row dilation, batch 1
# and 8; a 2x2 stride-2 kernel is left alone (windows that do not overlap).
DENSE_STRIDED = [
    (1, 5, 13, 3, 2, 1, 1, 7),
    (8, 7, 31, 3, 2, 1, 1, 17),
    (1, 16, 24, 3, 2, 0, 1, 113),
    (8, 3, 8, 5, 2, 2, 1, 33),
    (1, 6, 9, 5, 3, 1, 1, 29),
    (8, 4, 16, 2, 2, 1, 1, 15),
    (1, 3, 13, 7, 2, 3, 1, 37),
    (1, 8, 16, 3, 2, 2, (2, 1), 21),
]


@pytest.mark.parametrize(
    "case", DENSE_STRIDED, ids=lambda c: "b{}-{}to{}-k{}s{}p{}d{}-w{}".format(*c)
)
def test_dense_strided_columns_split(tmp_path, case) -> None:
    batch, cin, cout, kernel, stride, padding, dilation, width = case
    torch.manual_seed(0)
    conv = nn.Conv2d(cin, cout, kernel, stride, padding, dilation)
    model = nn.Sequential(conv, nn.ReLU()).eval()
    # Rows and columns differ: a transposed plane would not match.
    x = torch.randn(batch, cin, width + 3, width)
    tiled = _compile_and_compare(tmp_path, model, x)
    assert "linalg.conv_2d_nchw_fchw" not in tiled
    # Every phase reads its contiguous copy: no strided row read is left.
    assert (_taps_per_row_read(tiled) == []) == (kernel > stride)


def test_dense_strided_columns_unsplit_matches_eager(tmp_path) -> None:
    """``split_strided_columns=False``: the window nests' strided reads."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(6, 10, 3, 2, 1), nn.ReLU()).eval()
    x = torch.randn(2, 6, 19, 23)
    compiled = lowerline.compile(model, x, cache_dir=str(tmp_path), split_strided_columns=False)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
    assert _taps_per_row_read(compiled.ir("tiled"))
