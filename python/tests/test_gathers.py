"""Embedding and index_select check each index once and gather whole rows
with vector loads, no check per element (``frontend/gathers.py``); results
match eager and a bad index still raises IndexCheckError naming the line."""

from __future__ import annotations

import re

import pytest
import torch
from torch import nn

import lowerline
from lowerline.errors import IndexCheckError

VOCAB, WIDTH = 37, 67  # odd: a partial vector at the end of each row


class IndexSelect(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        return torch.index_select(x, self.dim, index)


class Lookup(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = nn.Embedding(VOCAB, WIDTH)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.table(ids) * 2


def _row_copies_are_vectors(compiled: lowerline.CompiledModule) -> None:
    """The rows are read as contiguous vectors (no assert in their loop body
    blocks the vectorizer, and the row index is read once per row:
    lowerline-read-gather-indices), and the bounds are still checked."""
    tiled = compiled.ir("tiled")
    contiguous = r"vector\.transfer_read [^\n]*: tensor<[0-9x]+xf32>, vector<[0-9x]+xf32>"
    assert re.search(contiguous, tiled), tiled
    assert not re.search(r"vector\.gather [^\n]* into vector<[0-9x]+xf32>", tiled), tiled
    # The check is kept: one assert of each bound, over the indices.
    assert tiled.count("cf.assert") == 2, tiled
    assert tiled.count('"index must be smaller than dim size"') == 1, tiled
    # The check yields the index itself (clamped into the table), not a read
    # of an arange table at it (lowerline-fold-iota-extracts).
    checks = tiled[tiled.index("cf.assert") :]
    assert "tensor.extract" not in checks[: checks.index("linalg.yield")], tiled


@pytest.mark.parametrize("batch", [1, 8])
@pytest.mark.parametrize("padding_idx", [None, 4])
def test_embedding_matches_eager_with_vector_rows(batch, padding_idx):
    torch.manual_seed(batch)
    model = nn.Embedding(VOCAB, WIDTH, padding_idx=padding_idx).eval()
    ids = torch.randint(0, VOCAB, (batch, 13))
    ids[0, 0] = VOCAB - 1
    if padding_idx is not None:
        ids[-1, 1] = padding_idx
    compiled = lowerline.compile(model, ids, num_threads=1)
    torch.testing.assert_close(compiled(ids), model(ids))
    _row_copies_are_vectors(compiled)


@pytest.mark.parametrize(("dim", "batch"), [(0, 1), (0, 8), (1, 1), (1, 8)])
def test_index_select_matches_eager(dim, batch):
    torch.manual_seed(dim + batch)
    x = torch.randn(batch, 11, 19)
    size = x.shape[dim]
    index = torch.randint(0, size, (7,))
    index[0] = size - 1
    compiled = lowerline.compile(IndexSelect(dim), x, index, num_threads=1)
    torch.testing.assert_close(compiled(x, index), torch.index_select(x, dim, index))
    other = torch.randint(0, size, (7,))
    torch.testing.assert_close(compiled(x, other), torch.index_select(x, dim, other))
    _row_copies_are_vectors(compiled)


def test_index_select_rows_are_vector_loads():
    x = torch.randn(VOCAB, WIDTH)
    index = torch.tensor([0, 36, 5, 5, 17])
    compiled = lowerline.compile(IndexSelect(0), x, index, num_threads=1)
    torch.testing.assert_close(compiled(x, index), torch.index_select(x, 0, index))
    _row_copies_are_vectors(compiled)


@pytest.mark.parametrize("bad", [VOCAB, VOCAB + 1000, -1])
def test_bad_id_raises_naming_the_line_and_reads_nothing_outside(bad):
    torch.manual_seed(0)
    model = Lookup().eval()
    ids = torch.randint(0, VOCAB, (8, 5))
    compiled = lowerline.compile(model, ids, num_threads=1)
    wrong = ids.clone()
    wrong[3, 2] = bad
    with pytest.raises(IndexCheckError, match="index must be") as failure:
        compiled(wrong)
    assert "sparse.py" in str(failure.value)
    assert __file__.rsplit("/", 1)[-1] in str(failure.value)
    torch.testing.assert_close(compiled(ids), model(ids))


def test_the_check_writes_no_arange_table():
    # Without lowerline-fold-iota-extracts every call wrote arange(VOCAB) to
    # read the checked ids from it.
    ids = torch.randint(0, VOCAB, (3, 7))
    compiled = lowerline.compile(Lookup().eval(), ids, num_threads=1)
    assert f"tensor<{VOCAB}xi64>" not in compiled.ir("graph")


class RowGather(nn.Module):
    def forward(self, x: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        return torch.gather(x, 0, ids[:, None].expand(-1, x.shape[1]))


@pytest.mark.parametrize("batch", [1, 8])
def test_gather_of_expanded_rows_is_a_row_gather(batch):
    """gather along dim 0 with one index per row (expanded along the row) is
    the same row gather: checked once per index, rows read as vectors."""
    torch.manual_seed(batch)
    x = torch.randn(VOCAB, WIDTH)
    ids = torch.randint(0, VOCAB, (batch,))
    compiled = lowerline.compile(RowGather(), x, ids, num_threads=1)
    torch.testing.assert_close(compiled(x, ids), RowGather()(x, ids))
    _row_copies_are_vectors(compiled)
    with pytest.raises(IndexCheckError, match="index must be"):
        compiled(x, torch.full((batch,), VOCAB))


class Gather0(nn.Module):
    def forward(self, x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        return torch.gather(x, 0, index)


def test_other_gathers_keep_their_per_element_check():
    x = torch.randn(5, 9)
    index = torch.randint(0, 5, (4, 9))
    compiled = lowerline.compile(Gather0(), x, index, num_threads=1)
    torch.testing.assert_close(compiled(x, index), torch.gather(x, 0, index))
    with pytest.raises(IndexCheckError, match="index must be"):
        compiled(x, index.clamp(max=4) + (index == 0) * 7)
