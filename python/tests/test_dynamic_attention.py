"""Attention over a dynamic sequence length: batch matmuls with dynamic M,
N and K, softmax and layer norm over a dynamic innermost dim and the head
split/merge transposes are tiled vector code (nothing in
``compiled.fallbacks``), serving every length of the range."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn
from torch.export import Dim

import lowerline
from lowerline.driver import workers

SEQUENCES = [1, 17, 31, 64, 127, 128]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("dynamic-attention-cache"))


class Attention(nn.Module):
    """softmax(Q K^T / sqrt(d)) V on (batch x heads, sequence, head dim)."""

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        scores = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(q.shape[-1])
        return torch.bmm(torch.softmax(scores, dim=-1), v)


class RowNorm(nn.Module):
    """Layer norm over a dynamic innermost dim (no affine: its size varies)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.layer_norm(x, x.shape[-1:]) * 2.0


def _no_fallbacks(compiled) -> None:
    assert [(f.op, f.message) for f in compiled.fallbacks] == []


def _check(compiled, model, make, sizes) -> None:
    """Each size matches eager with no new compile."""
    compiles = workers.jobs["compile"]
    for size in sizes:
        args = make(size)
        with torch.no_grad():
            expected = model(*args)
        got = compiled(*args)
        assert got.shape == expected.shape
        torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5)
    assert workers.jobs["compile"] == compiles


@pytest.mark.parametrize("heads", [1, 6])
def test_attention_over_a_dynamic_sequence(cache_dir, heads):
    def make(s: int) -> tuple[torch.Tensor, ...]:
        return tuple(torch.randn(heads, s, 24) for _ in range(3))

    # One sequence length for Q, K and V (torch.bmm requires K's and V's to agree).
    seq = {1: Dim("seq", min=1, max=128)}
    compiled = lowerline.compile(
        Attention(), *make(17), dynamic_shapes={"q": seq, "k": seq, "v": seq}, cache_dir=cache_dir
    )
    _no_fallbacks(compiled)
    tiled = compiled.ir("tiled")
    # Both batch matmuls: parallel tiles over (batch, rows, columns), FMAs on vectors.
    assert tiled.count("scf.forall") >= 2
    assert "vector.fma" in tiled or "vector.outerproduct" in tiled or "math.fma" in tiled
    _check(compiled, Attention(), make, SEQUENCES)


@pytest.mark.parametrize("rows", [1, 5])
def test_layer_norm_over_a_dynamic_innermost_dim(cache_dir, rows):
    compiled = lowerline.compile(
        RowNorm(), torch.randn(rows, 33), dynamic={"x": {1: (1, 300)}}, cache_dir=cache_dir
    )
    _no_fallbacks(compiled)
    _check(compiled, RowNorm(), lambda n: (torch.randn(rows, n),), [1, 17, 64, 127, 300])


def test_encoder_over_a_dynamic_sequence_is_vector_code(cache_dir):
    torch.manual_seed(3)
    model = nn.TransformerEncoderLayer(
        d_model=32, nhead=4, dim_feedforward=48, dropout=0.0, batch_first=True
    ).eval()
    # torch's attention specializes a sequence of 1: the range starts at 2.
    compiled = lowerline.compile(
        model, torch.randn(3, 17, 32), dynamic={"src": {1: (2, 128)}}, cache_dir=cache_dir
    )
    _no_fallbacks(compiled)
    # The head split/merge copies read contiguous rows: torch-mlir's check of
    # a sequence of 1 (a broadcast) is folded (lowerline-bound-dynamic-dims),
    # else each copy is a gather.
    # After the check, each copy reads its source unchanged: it is dropped
    # (lowerline-fold-identity-extracts).
    assert "tensor.extract " not in compiled.ir("graph")
    tiled = compiled.ir("tiled")
    assert "vector.gather" not in tiled
    assert "vector.transfer_read" in tiled
    _check(compiled, model, lambda s: (torch.randn(3, s, 32),), [2, 17, 31, 64, 127, 128])


def test_attention_matches_eager_at_every_length(cache_dir):
    """Every length of the range, 1 to 130: each remainder of the register
    tiles (rows and columns of ``Q K^T``, rows of ``P V``, the softmax's
    masked tail) is met at least once."""
    torch.manual_seed(5)

    def make(s: int) -> tuple[torch.Tensor, ...]:
        return tuple(torch.randn(8, s, 16) for _ in range(3))

    seq = {1: Dim("seq", min=1, max=130)}
    compiled = lowerline.compile(
        Attention(), *make(17), dynamic_shapes={"q": seq, "k": seq, "v": seq}, cache_dir=cache_dir
    )
    _no_fallbacks(compiled)
    _check(compiled, Attention(), make, list(range(1, 131)))


def test_encoder_over_a_dynamic_sequence_allocates_nothing(cache_dir):
    """The views of the scores around the softmax, ``(batch * heads, s, s)
    <-> (batch, heads, s, s)``, reach linalg as ``tensor.reshape`` with a
    shape built at run time; as expand/collapse shapes
    (lowerline-expand-dynamic-reshapes) the arena plans their buffers, so a
    call at any length allocates nothing."""
    torch.manual_seed(4)
    model = nn.TransformerEncoderLayer(
        d_model=64, nhead=4, dim_feedforward=128, dropout=0.0, batch_first=True
    ).eval()
    compiled = lowerline.compile(
        model, torch.randn(2, 17, 64), dynamic={"src": {1: (2, 130)}}, cache_dir=cache_dir
    )
    assert "tensor.reshape" not in compiled.ir("graph")
    for s in range(2, 131):
        x = torch.randn(2, s, 64)
        with torch.no_grad():
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
        assert compiled.memory().allocations == 0, s
