"""``CompiledModule.fallbacks``: the ops left as plain loops, with their reasons,
from a compile and from the cache."""

import inspect

import torch
import torch.nn.functional as F
from torch import nn

import lowerline


class PoolThenLinear(nn.Module):
    """A max pool (no tiled kernel yet: plain loops), then a linear layer (tiled)."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(16, 8)

    def forward(self, x):
        pooled = F.max_pool2d(x, 2)
        return self.linear(pooled.flatten(1))


def _pool_line() -> int:
    lines, first = inspect.getsourcelines(PoolThenLinear.forward)
    return first + next(i for i, line in enumerate(lines) if "max_pool2d" in line)


def test_an_op_left_as_loops_is_reported_with_its_source_line_and_reason(tmp_path):
    torch.manual_seed(0)
    model, x = PoolThenLinear().eval(), torch.randn(2, 4, 4, 4)
    compiled = lowerline.compile(model, x, cache_dir=str(tmp_path))
    assert not compiled.cache_hit
    (pool,) = compiled.fallbacks
    assert pool.op == "linalg.pooling_nchw_max"
    assert pool.kind == "fallback"
    assert pool.pass_flag == "lowerline-tile-and-fuse"
    assert pool.message == (
        "left as loops: not an elementwise, reduction, fill, copy or transpose op"
    )
    assert pool.source_line.startswith(f"{__file__}:{_pool_line()}:")
    # A cache hit (no worker runs) reports the same.
    torch.manual_seed(0)
    again = lowerline.compile(PoolThenLinear().eval(), x, cache_dir=str(tmp_path))
    assert again.cache_hit
    assert again.fallbacks == compiled.fallbacks


def test_a_model_that_is_all_tiled_code_has_none(tmp_path):
    model = nn.Sequential(nn.Linear(13, 29), nn.ReLU(), nn.Linear(29, 7)).eval()
    compiled = lowerline.compile(model, torch.randn(5, 13), cache_dir=str(tmp_path))
    assert compiled.fallbacks == []


def test_without_the_tiled_stage_every_op_is_a_fallback(tmp_path):
    model = nn.Sequential(nn.Linear(13, 29), nn.ReLU()).eval()
    compiled = lowerline.compile(model, torch.randn(5, 13), cache_dir=str(tmp_path), tile=False)
    ops = sorted({f.op for f in compiled.fallbacks})
    assert "linalg.matmul" in ops
    assert {f.message for f in compiled.fallbacks} == {
        "left as loops: the tiled stage is off (tile=False)"
    }
