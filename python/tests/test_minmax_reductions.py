"""Max/min reductions with NaN, infinities and signed zeros (the
accumulators of ``lowerline-minmax-accumulators``).

The pass replaces IEEE ``maximum`` in a reduction's loop-carried step with
``x > acc ? x : acc`` plus a NaN or-ed in; these check that every result
still equals eager torch's exactly: a NaN anywhere in a reduced line wins
(and its index is the arg-extreme's), infinities are ordinary extremes,
and -0/+0 compare equal. Odd shapes, one row, and rows long enough to be
reduced in register chunks, along both axes.
"""

import pytest
import torch

import lowerline


class MinMax(torch.nn.Module):
    def forward(self, x):
        out = []
        for dim in (0, -1):
            out += [x.amax(dim), x.amin(dim), x.argmax(dim), x.argmin(dim)]
        return tuple(out)


def _special_values(shape: tuple[int, int]) -> torch.Tensor:
    """Random values with NaNs in some rows and columns, +-inf elsewhere,
    a row of -inf, a row of +inf and a row of signed zeros."""
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(shape, generator=generator) * 100
    flat = x.view(-1)
    for value, count in ((float("nan"), 3), (float("inf"), 4), (float("-inf"), 4)):
        index = torch.randint(0, flat.numel(), (count,), generator=generator)
        flat[index] = value
    rows = shape[0]
    if rows >= 4:
        x[1] = float("-inf")
        x[2] = float("inf")
        x[3] = torch.where(torch.rand(shape[1], generator=generator) < 0.5, -0.0, 0.0)
    return x


SHAPES = [(1, 64), (1, 4099), (5, 333), (16, 4096), (64, 2051), (700, 9)]


@pytest.mark.parametrize("shape", SHAPES, ids=["x".join(map(str, s)) for s in SHAPES])
def test_minmax_reductions_match_eager_with_special_values(shape, cache_dir):
    x = _special_values(shape)
    module = MinMax().eval()
    compiled = lowerline.compile(module, x, cache_dir=cache_dir)
    with torch.no_grad():
        expected = module(x)
    for index, (got, want) in enumerate(zip(compiled(x), expected, strict=True)):
        if want.is_floating_point():
            # Equal up to the sign of zero and the NaN payload.
            same = (got == want) | (got.isnan() & want.isnan())
            assert bool(same.all()), f"output {index}: {got[~same]} vs {want[~same]}"
        else:
            assert torch.equal(got, want), f"output {index}"


def test_nan_in_every_position_of_a_chunk(cache_dir):
    """A NaN in any lane of any step reaches the row's result, whatever comes
    after it (the accumulator must keep it), and a NaN first in the row too."""
    cols = 300  # several chunks of a vector accumulator, a partial last one
    x = torch.randn(cols, cols)
    x[torch.arange(cols), torch.arange(cols)] = float("nan")  # row i: a NaN at column i
    compiled = lowerline.compile(MinMax().eval(), x, cache_dir=cache_dir)
    got = compiled(x)
    for dim_outputs in (got[0:2], got[4:6]):  # amax, amin along both axes
        for values in dim_outputs:
            assert bool(values.isnan().all())
    assert torch.equal(got[6], torch.arange(cols))  # argmax along the rows: the NaN
    assert torch.equal(got[7], torch.arange(cols))
