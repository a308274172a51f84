"""nn.EmbeddingBag in every mode, with padding ids, per-sample weights, empty
bags and a last offset, against eager (``frontend/embedding_bag.py``; a plain
sum is torch-mlir's lowering)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import lowerline

VOCAB, DIM = 53, 13


def _check(model: nn.Module, *args: torch.Tensor) -> None:
    compiled = lowerline.compile(model, *args)
    torch.testing.assert_close(compiled(*args), model(*args), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 3])
@pytest.mark.parametrize("batch", [1, 8])
def test_fixed_length_bags(mode, padding_idx, batch):
    torch.manual_seed(batch)
    model = nn.EmbeddingBag(VOCAB, DIM, mode=mode, padding_idx=padding_idx).eval()
    ids = torch.randint(0, VOCAB, (batch, 7))
    ids[0, :2] = 3  # padding ids inside a bag
    if batch > 1:
        ids[1] = 3  # a bag of padding only: zeros
    _check(model, ids)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_offsets_with_empty_bags(mode):
    torch.manual_seed(1)
    model = nn.EmbeddingBag(VOCAB, DIM, mode=mode, padding_idx=5).eval()
    ids = torch.randint(0, VOCAB, (19,))
    ids[4] = 5
    offsets = torch.tensor([0, 0, 4, 9, 9, 18])  # empty bags 0 and 3, a last bag of one
    _check(model, ids, offsets)


@pytest.mark.parametrize("include_last_offset", [False, True])
def test_per_sample_weights(include_last_offset):
    torch.manual_seed(2)
    model = nn.EmbeddingBag(VOCAB, DIM, mode="sum", include_last_offset=include_last_offset)
    ids = torch.randint(0, VOCAB, (11,))
    offsets = torch.tensor([0, 0, 4, 9, 11] if include_last_offset else [0, 0, 4, 9])
    _check(model.eval(), ids, offsets, torch.rand(11))


def test_a_bad_id_is_an_index_error():
    model = nn.EmbeddingBag(VOCAB, DIM, mode="mean").eval()
    ids = torch.randint(0, VOCAB, (2, 5))
    compiled = lowerline.compile(model, ids)
    with pytest.raises(IndexError):
        compiled(torch.full((2, 5), VOCAB))
    torch.testing.assert_close(compiled(ids), model(ids), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_many_bags_with_empty_ones_at_both_ends(mode):
    torch.manual_seed(3)
    model = nn.EmbeddingBag(VOCAB, DIM, mode=mode).eval()
    ids = torch.randint(0, VOCAB, (61,))
    # Bags of 0 to 5 ids, an empty first bag, and two empty bags at the end
    # (offsets equal to the number of ids).
    sizes = [0] + [i % 6 for i in range(1, 22)]
    sizes += [61 - sum(sizes), 0, 0]
    offsets = torch.cumsum(torch.tensor([0, *sizes[:-1]]), 0)
    _check(model, ids, offsets)


def test_bags_are_counted_without_an_ids_by_bags_comparison():
    # Each id's bag is a running count of the bag starts, not a comparison of
    # every position with every offset (bucketize's lowering): no 21x7 i1
    # tensor in the graph.
    model = nn.EmbeddingBag(VOCAB, DIM, mode="mean").eval()
    ids = torch.randint(0, VOCAB, (7, 3))
    compiled = lowerline.compile(model, ids)
    graph = compiled.ir("graph")
    assert "tensor<21x7xi1>" not in graph and "tensor<7x21xi1>" not in graph
    assert "tensor<21xi64>" in graph  # the ids' bags
    torch.testing.assert_close(compiled(ids), model(ids), rtol=1e-5, atol=1e-6)
