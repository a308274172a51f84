"""Dynamic rows (``lowerline.compile(..., dynamic=...)`` over a batch):
the code a dynamic M gets is the code a static one gets.

A matmul over dynamic rows keeps its fill and epilogue fused, its remainder
rows run as static register tiles (no masks), the attention batch matmuls
over a dynamic batch x heads are tiled, and everything matches eager at
every size of the range: odd sizes, batch 1 and the range's ends, on one
thread and on two (the parallel row tiles).
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

import lowerline

SIZES = [1, 3, 8, 31, 32, 64]


# The models, each seeded: an MLP whose widths are whole register tiles on
# any target (a masked column tile would hide a masked row tile), and an
# encoder layer (its attention batch matmuls run over batch x heads).
MODELS = {
    "mlp": lambda: nn.Sequential(
        nn.Linear(37, 96), nn.ReLU(), nn.Linear(96, 64), nn.LogSoftmax(dim=-1)
    ),
    "encoder": lambda: nn.TransformerEncoderLayer(
        d_model=32, nhead=4, dim_feedforward=64, dropout=0.0, batch_first=True
    ),
}


def _model(name: str) -> nn.Module:
    torch.manual_seed(len(name))
    return MODELS[name]().eval()


def _matches_eager(compiled, model, make, sizes) -> None:
    for size in sizes:
        x = make(size)
        with torch.no_grad():
            expected = model(x)
        torch.testing.assert_close(compiled(x), expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("threads", [1, 2])
def test_mlp_over_dynamic_rows_is_static_vector_code(cache_dir, threads):
    model = _model("mlp")
    compiled = lowerline.compile(
        model,
        torch.randn(8, 37),
        dynamic={"input": {0: (1, 64)}},
        num_threads=threads,
        cache_dir=cache_dir,
    )
    assert "tensor<?x37xf32>" in compiled.ir("linalg")
    assert compiled.fallbacks == []
    tiled = compiled.ir("tiled")
    # Every tile static, no lane masks: N = 96 and 64 are whole register
    # tiles on any target, and the remainder rows run in one piece of their
    # count, vectorized at that count (31 rows: a 7-row piece on AVX-512,
    # 7 whole rows, no masked 8th). A masked remainder tile (the batch-1 cost: 3.5x the static time)
    # is vectorized with its masks lowered to index compares and selects.
    assert "arith.cmpi" not in tiled
    _matches_eager(compiled, model, lambda b: torch.randn(b, 37), SIZES)


def test_encoder_over_a_dynamic_batch_has_no_scalar_loops(cache_dir):
    model = _model("encoder")
    compiled = lowerline.compile(
        model, torch.randn(5, 7, 32), dynamic={"src": {0: (2, 64)}}, cache_dir=cache_dir
    )
    # The attention batch matmuls (a dynamic batch x heads) are tiled too.
    assert compiled.fallbacks == []
    # The QKV projection of the sequence-first input is one matmul over all
    # rows, not a batch matmul by a weight copied per position on each call:
    # only attention's two batch matmuls are left.
    assert compiled.ir("graph").count("= linalg.batch_matmul") == 2
    _matches_eager(compiled, model, lambda b: torch.randn(b, 7, 32), [2, 3, 8, 31, 32, 64])
