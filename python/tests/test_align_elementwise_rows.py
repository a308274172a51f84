"""An elementwise op over rows of an odd length, returned as it is, runs over
rows of whole vector tiles (``lowerline-align-elementwise-rows``): the same
contiguous buffers seen as other rows, nothing copied. Results match eager,
with one input, two inputs and a number; with 2 threads (the rows split);
and a shape with no such rows is left as it was."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import lowerline
from lowerline.passes.graph.align_elementwise_rows import aligned_row
from lowerline.targets import cpu_target


class TwoOps(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor):
        return torch.sigmoid(x), x * y + 2.0


@pytest.mark.parametrize("threads", [1, 2])
def test_odd_rows_match_eager(cache_dir, threads):
    # 8 x 1000 = 8000 elements: with 16 lanes, 5 rows of 1600 (25 tiles of 64).
    lanes = cpu_target("host").vector_bits // 32
    row = aligned_row(8000, 4 * lanes, 4096)
    gen = torch.Generator().manual_seed(threads)
    x, y = torch.randn(8, 1000, generator=gen), torch.randn(8, 1000, generator=gen)
    compiled = lowerline.compile(TwoOps(), x, y, cache_dir=cache_dir, num_threads=threads)
    assert f"tensor<{8000 // row}x{row}xf32>" in compiled.ir("graph")
    for got, want in zip(compiled(x, y), TwoOps()(x, y), strict=True):
        torch.testing.assert_close(got, want)
    # Other values through the same code: the views read the new inputs.
    x2, y2 = x.flip(0).contiguous(), y.flip(1).contiguous()
    for got, want in zip(compiled(x2, y2), TwoOps()(x2, y2), strict=True):
        torch.testing.assert_close(got, want)


def test_no_whole_rows_left_alone(cache_dir):
    # 3 x 17 = 51 elements: no row of whole 64-element tiles divides them.
    x, y = torch.randn(3, 17), torch.randn(3, 17)
    compiled = lowerline.compile(TwoOps(), x, y, cache_dir=cache_dir)
    assert "tensor.collapse_shape" not in compiled.ir("graph")
    for got, want in zip(compiled(x, y), TwoOps()(x, y), strict=True):
        torch.testing.assert_close(got, want)
