"""Transposed convolutions through lowerline.compile: one stride-1
sub-convolution per output phase on the un-dilated input
(``lowerline-decompose-transposed-conv``), each on the direct kernel path,
within float32 tolerance of eager at odd sizes, batch 1 and 8, strides 2
and 3, kernels 2, 3 and 4 with padding and output padding."""

import re

import pytest
import torch
from torch import nn

import lowerline

# (batch, cin, cout, size (h, w), kernel, stride, padding, output_padding)
CASES = [
    (1, 5, 7, (9, 11), 2, 2, 0, 0),
    (8, 16, 12, (7, 13), 3, 2, 1, 1),
    (8, 6, 10, (5, 9), 4, 2, 1, 0),
    (1, 4, 3, (6, 5), 3, 3, 0, 2),
    (8, 9, 5, (4, 7), 4, 3, 2, 1),
    (1, 8, 8, (3, 3), 2, 3, 0, 1),
]


def _ids(case: tuple) -> str:
    batch, cin, cout, (h, w), k, s, p, op = case
    return f"b{batch}-{cin}to{cout}-{h}x{w}-k{k}s{s}p{p}op{op}"


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_transposed_conv_matches_eager(tmp_path, case) -> None:
    batch, cin, cout, (h, w), k, s, p, op = case
    torch.manual_seed(0)
    layer = nn.ConvTranspose2d(cin, cout, k, stride=s, padding=p, output_padding=op).eval()
    x = torch.randn(batch, cin, h, w)
    compiled = lowerline.compile(layer, x, cache_dir=str(tmp_path))
    graph = compiled.ir("graph")
    # No convolution reads the zero-dilated input: its shape is gone.
    dilated = (h - 1) * s + 1 + 2 * (k - 1 - p) + op
    assert not re.search(rf"tensor<{batch}x{cin}x{dilated}x\d+xf32>", graph)
    tiled = compiled.ir("tiled")
    assert "linalg.conv_2d_nchw_fchw" not in tiled  # every phase tiled into kernels
    assert "vector.fma" in tiled  # rank-1 updates on the accumulators
    assert not [f for f in compiled.fallbacks if "conv" in f.op]
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), layer(x), rtol=1e-4, atol=1e-4)


def test_transposed_conv_in_a_decoder_step(tmp_path) -> None:
    """ConvTranspose2d 2x2/2 + ReLU + concat with a skip tensor, as in a
    UNet decoder: the epilogue and the concat read the phases' output."""
    torch.manual_seed(0)

    class Up(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.up = nn.ConvTranspose2d(12, 6, 2, stride=2)

        def forward(self, x: torch.Tensor, skip: torch.Tensor) -> torch.Tensor:
            return torch.cat([torch.relu(self.up(x)), skip], dim=1)

    model = Up().eval()
    x, skip = torch.randn(3, 12, 5, 7), torch.randn(3, 4, 10, 14)
    compiled = lowerline.compile(model, x, skip, cache_dir=str(tmp_path))
    with torch.no_grad():
        torch.testing.assert_close(compiled(x, skip), model(x, skip), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    ("layer", "shape"),
    [
        (nn.ConvTranspose1d(6, 5, 4, stride=3, padding=1, output_padding=2), (8, 6, 13)),
        (nn.ConvTranspose3d(3, 4, 3, stride=2, padding=1, output_padding=1), (1, 3, 3, 5, 4)),
    ],
    ids=["1d-k4s3", "3d-k3s2"],
)
def test_transposed_conv_1d_and_3d(tmp_path, layer, shape) -> None:
    """The phases are per spatial dim: 1-D and 3-D take the same rewrite."""
    torch.manual_seed(0)
    layer = layer.eval()
    x = torch.randn(*shape)
    compiled = lowerline.compile(layer, x, cache_dir=str(tmp_path))
    graph = compiled.ir("graph")
    assert "tensor.insert_slice %arg0" not in graph  # the input is not dilated
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), layer(x), rtol=1e-4, atol=1e-4)
