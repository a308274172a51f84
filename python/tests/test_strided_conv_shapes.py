"""Stride-2 convolutions (the window nests, ``lowerline.passes.tiling.window_tiles``)
at the shapes that exercise their edges, within float32 tolerance of eager:
depthwise over odd widths (a row narrower than a vector, one just under two
vectors, a long odd one), 1, 3, 17 and 32 channels, padding 0 and 1,
dilation 2, batch 1 and 8; dense 3x3 stride-2 convolutions over odd planes,
prime output channel counts included."""

import pytest
import torch
from test_window_row_tiles import _compile_and_compare
from torch import nn

# (batch, channels, width, padding, dilation)
DEPTHWISE_STRIDE_2 = [
    (1, 1, 7, 1, 1),
    (8, 3, 15, 0, 1),
    (1, 17, 113, 1, 1),
    (8, 32, 15, 1, 1),
    (1, 32, 7, 0, 1),
    (8, 17, 31, 1, 2),
    (1, 3, 113, 0, 2),
]


@pytest.mark.parametrize("case", DEPTHWISE_STRIDE_2, ids=lambda c: "b{}-c{}-w{}-p{}-d{}".format(*c))
def test_depthwise_stride_2_matches_eager(tmp_path, case) -> None:
    batch, channels, width, padding, dilation = case
    torch.manual_seed(0)
    conv = nn.Conv2d(channels, channels, 3, 2, padding, dilation, groups=channels)
    model = nn.Sequential(conv, nn.ReLU6()).eval()
    # Rows and columns differ: a transposed plane would not match.
    x = torch.randn(batch, channels, width + 2, width)
    tiled = _compile_and_compare(tmp_path, model, x)
    assert "linalg.depthwise_conv_2d_nchw_chw" not in tiled


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
