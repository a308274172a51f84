"""Bilinear upsampling through lowerline.compile: torch's decomposition
computes the source rows and columns and their weights as small index
tables; the interpolation reads the input at those indices. It is
vectorized along the output row (each read a broadcast, a contiguous read
or a ``vector.gather``, lowerline-vectorize's ``vectorize_nd_extract``) and
split across the cores over N x C, within float32 tolerance of eager at odd
sizes, integer and non-integer scales, align_corners on and off, batch 1
and 8."""

import re

import pytest
import torch
from torch import nn
from torch.nn import functional as F

import lowerline


class Upsample(nn.Module):
    def __init__(self, scale: float, align_corners: bool) -> None:
        super().__init__()
        self.scale, self.align_corners = scale, align_corners

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.interpolate(
            x, scale_factor=self.scale, mode="bilinear", align_corners=self.align_corners
        )


# (batch, channels, h, w, scale, align_corners)
CASES = [
    (1, 3, 7, 9, 2.0, False),
    (8, 5, 11, 13, 2.0, True),
    (1, 4, 9, 7, 1.5, False),
    (8, 3, 5, 17, 2.5, True),
    (8, 2, 13, 10, 0.7, False),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(map(str, c)))
def test_bilinear_upsample_matches_eager(tmp_path, case) -> None:
    batch, channels, h, w, scale, align = case
    model = Upsample(scale, align)
    torch.manual_seed(0)
    x = torch.randn(batch, channels, h, w)
    compiled = lowerline.compile(model, x, cache_dir=str(tmp_path))
    tiled = compiled.ir("tiled")
    # The interpolation gathers whole vectors of the input row...
    assert "vector.gather" in tiled
    # ...and reads no input element one at a time.
    assert not re.search(
        rf"tensor\.extract %\S+\[[^]]*\] : tensor<{batch}x{channels}x{h}x{w}xf32>", tiled
    )
    assert not [f for f in compiled.fallbacks if "not vectorized" in f.message]
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)


def test_bilinear_upsample_is_split_over_channels_at_batch_1(tmp_path) -> None:
    """At batch 1 the channels are what the cores share."""
    model = Upsample(2.0, False)
    torch.manual_seed(0)
    x = torch.randn(1, 16, 24, 25)  # 38400 outputs: worth two threads
    compiled = lowerline.compile(model, x, cache_dir=str(tmp_path), num_threads=2)
    assert "scf.forall" in compiled.ir("tiled")
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)
