"""Attention in the forms models write it: accuracy on odd shapes, and the
nests it becomes.

One module computes four forms, so that each shape compiles once:
``nn.MultiheadAttention`` (batch-first: torch feeds its projections a
transposed, non-contiguous input, which it turns into a weight broadcast
over the batch and ``bmm``), attention written out with ``matmul``,
transposes, a scale, an additive mask and softmax, and
``F.scaled_dot_product_attention`` with a causal mask and with a boolean
mask. Shapes: sequences of 1, 7, 77 and 197, 1, 3 and 12 heads, batch 1
and 8.

The IR checks: no weight broadcast over the batch survives the graph stage
(``lowerline-collapse-broadcast-batch-matmul``), every projection and every
attention batch matmul is a tiled contraction, nothing is left as loops
(``compiled.fallbacks``), and every FMA is whole vectors wide or one row
narrower than a vector (a 28-wide tile of a 196-wide row was split lane by
lane by LLVM).
"""

import math
import re

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import lowerline
from lowerline.cpu.tile_plan import lanes
from lowerline.driver.tolerance import DEFAULT
from lowerline.targets import cpu_target


class AttentionForms(nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        torch.manual_seed(0)
        self.heads = heads
        self.mha = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def split(self, t: torch.Tensor) -> torch.Tensor:
        b, s, d = t.shape
        return t.view(b, s, self.heads, d // self.heads).transpose(1, 2)

    def forward(self, x, bias):
        seq = x.shape[1]
        causal = torch.triu(torch.full((seq, seq), float("-inf")), diagonal=1)
        mha, _ = self.mha(x, x, x, attn_mask=causal, need_weights=False)
        q, k, v = (self.split(t) for t in self.qkv(x).chunk(3, dim=-1))
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]) + bias[:, None, None, :]
        hand = scores.softmax(-1) @ v
        sdpa_causal = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        keep = bias[:, None, None, :] > -1.0
        sdpa_masked = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
        merged = [t.transpose(1, 2).reshape(x.shape) for t in (hand, sdpa_causal, sdpa_masked)]
        return (mha, *(self.proj(t) for t in merged))


NAMES = ["multihead_attention", "hand_written", "sdpa_causal", "sdpa_masked"]
# (batch, sequence, heads, head width): odd sequences, 1/3/12 heads, batch 1
# and 8; 3 heads of 28 make 84 and 252 columns, which have no divisor in
# whole vectors (the tile plan once picked 28).
SHAPES = [(1, 1, 1, 8), (8, 7, 3, 8), (1, 77, 12, 8), (8, 197, 3, 28)]
_compiled: dict = {}


def example(shape, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Tokens and an additive key mask (-1e4 on a padded tail of each row)."""
    batch, seq, heads, width = shape
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, seq, heads * width, generator=generator)
    bias = torch.zeros(batch, seq)
    for row in range(batch):
        bias[row, seq - row % max(seq // 2, 1) :] = -1e4 if seq > 1 else 0.0
    return x, bias


def compiled_for(shape, cache_dir):
    if shape not in _compiled:
        heads, width = shape[2:]
        module = AttentionForms(heads * width, heads).eval()
        _compiled[shape] = (
            module,
            lowerline.compile(module, *example(shape, 1), cache_dir=cache_dir),
        )
    return _compiled[shape]


def _shape_id(shape) -> str:
    return "b{}_s{}_h{}_d{}".format(*shape)


@pytest.mark.parametrize("shape", SHAPES, ids=_shape_id)
def test_matches_eager(shape, cache_dir):
    module, compiled = compiled_for(shape, cache_dir)
    assert not compiled.fallbacks, [str(f) for f in compiled.fallbacks]
    x, bias = example(shape, 2)
    with torch.no_grad():
        expected = module(x, bias)
    for name, got, want in zip(NAMES, compiled(x, bias), expected, strict=True):
        torch.testing.assert_close(
            got, want, rtol=DEFAULT.rtol, atol=DEFAULT.atol, msg=lambda m, n=name: f"{n}: {m}"
        )


@pytest.mark.parametrize("shape", [SHAPES[1], SHAPES[3]], ids=_shape_id)
def test_no_weight_broadcast_over_the_batch(shape, cache_dir):
    """The multi-head attention's projections read a transposed input: torch
    broadcasts their weights over the batch; the graph stage makes each one
    matmul over all rows again, so every batch matmul left is attention's."""
    _, compiled = compiled_for(shape, cache_dir)
    batch, seq, heads, width = shape
    graph = compiled.ir("graph")
    batch_matmuls = re.findall(
        r"linalg\.batch_matmul ins\(.*?: (tensor<[^>]*>), (tensor<[^>]*>)\)", graph
    )
    assert batch_matmuls
    for lhs, rhs in batch_matmuls:
        assert lhs.startswith(f"tensor<{batch * heads}x"), (lhs, rhs)
    dim = heads * width
    assert f"tensor<{seq}x{dim}x{3 * dim}xf32>" not in graph  # the broadcast QKV weight


@pytest.mark.parametrize("shape", [SHAPES[1], SHAPES[3]], ids=_shape_id)
def test_attention_nests_are_vectorized(shape, cache_dir):
    """Every matmul and batch matmul is a tiled, vectorized contraction (no
    linalg contraction survives the tiled stage) whose FMAs are whole vectors
    of the target's lanes (a partial tile peeled, never an odd width such as
    the 28 lanes a 196-wide row had), or one row narrower than a vector."""
    _, compiled = compiled_for(shape, cache_dir)
    tiled = compiled.ir("tiled")
    assert "linalg.batch_matmul" not in tiled and "linalg.matmul" not in tiled
    fma_widths = {int(w) for w in re.findall(r"vector\.fma .*: vector<(\d+)xf32>", tiled)}
    assert fma_widths, "no FMA: the contractions were not vectorized"
    vl = lanes(cpu_target("host"), 4)
    # A row narrower than one vector (7 keys, 8-wide heads) is one tile.
    odd = sorted(w for w in fma_widths if w > vl and w % vl)
    assert not odd, f"register tiles of {odd} lanes (not whole vectors of {vl})"
    assert any(w % vl == 0 for w in fma_widths), fma_widths
