"""Scatters against eager: index_add, scatter_add, scatter_reduce (every
reduction, with and without the original), index_put with accumulation.
Rows of 1, 7, 33 and 257 columns (257 is split among threads by columns),
duplicate and negative indices, 1 and 8 updates per output row group.

index_add and index_put of rows become vector row scatters
(``lowerline-lower-tm-tensor{vector-bits}``); scatter_add and
scatter_reduce address single elements and stay scalar loops. Either way
the updates are applied in order, so the sums match eager to rounding.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

import lowerline

ROWS = 5
REDUCTIONS = ("sum", "prod", "amax", "amin", "mean")


class Scatters(nn.Module):
    """Every scatter of ``src`` into ``base`` at ``rows`` (row indices) and
    ``where`` (one index per element)."""

    def forward(self, base, src, rows, where):
        outs = [
            base.index_add(0, rows, src),
            base.index_add(0, rows, src, alpha=2.0),
            base.index_put((rows - ROWS,), src, accumulate=True),  # negative: from the end
            base.scatter_add(0, where, src),
        ]
        for reduce in REDUCTIONS:
            for include_self in (True, False):
                outs.append(base.scatter_reduce(0, where, src, reduce, include_self=include_self))
        return outs


def _inputs(width: int, updates: int) -> tuple[torch.Tensor, ...]:
    torch.manual_seed(width * 100 + updates)
    base = torch.rand(ROWS, width) * 0.4 + 0.8  # products stay in range
    src = torch.rand(updates, width) * 0.4 + 0.8
    rows = torch.randint(0, ROWS, (updates,))
    rows[-1] = rows[0]  # at least one duplicate (or the same update twice)
    where = torch.randint(0, ROWS, (updates, width))
    return base, src, rows, where


@pytest.mark.parametrize("width", [1, 7, 33, 257])
@pytest.mark.parametrize("updates", [1, 8])
def test_scatters_match_eager(width, updates):
    model = Scatters().eval()
    args = _inputs(width, updates)
    compiled = lowerline.compile(model, *args)
    for got, want in zip(compiled(*args), model(*args), strict=True):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    # Other values through the same code: the rows are not baked in.
    other = _inputs(width, updates)
    other[2][:] = torch.arange(updates) % ROWS
    for got, want in zip(compiled(*other), model(*other), strict=True):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


def test_row_scatter_is_vectorized_and_element_scatter_is_not():
    model = Scatters().eval()
    compiled = lowerline.compile(model, *_inputs(33, 8), num_threads=1)
    graph = compiled.ir("graph")
    # index_add twice and index_put: 32 columns in vectors of the target's
    # width, one shorter vector for the rest, in each of the three.
    assert graph.count("vector.transfer_write") >= 6
    # scatter_add and scatter_reduce address elements: scalar inserts.
    assert "tensor.insert" in graph


@pytest.mark.parametrize("parallel", ["openmp", "async"])
def test_wide_rows_are_split_among_threads(parallel):
    model = Scatters().eval()
    compiled = lowerline.compile(model, *_inputs(257, 8), num_threads=2, parallel=parallel)
    assert "scf.forall" in compiled.ir("graph")
    single = lowerline.compile(model, *_inputs(257, 8), num_threads=1)
    assert "scf.forall" not in single.ir("graph")
    args = _inputs(257, 8)
    for got, want in zip(single(*args), compiled(*args), strict=True):
        torch.testing.assert_close(got, want, rtol=0, atol=0)  # same order per element


def test_int_rows_and_out_of_range_rows():
    class Counts(nn.Module):
        def forward(self, rows, values):
            return torch.zeros(ROWS, 3, dtype=torch.int64).index_add(0, rows, values)

    model = Counts().eval()
    rows = torch.tensor([0, 4, 4, 2, 0, 1, 3])
    values = torch.arange(21).reshape(7, 3)
    compiled = lowerline.compile(model, rows, values)
    torch.testing.assert_close(compiled(rows, values), model(rows, values))
    # torch raises on a row outside the tensor; the compiled code cannot and
    # drops that update (as the scalar lowering always did), applying the rest.
    bad = torch.tensor([0, 5, 4, -6, 0, 1, 3])
    keep = torch.tensor([True, False, True, False, True, True, True])
    torch.testing.assert_close(compiled(bad, values), model(bad[keep], values[keep]))
