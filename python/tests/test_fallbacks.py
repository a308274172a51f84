"""``CompiledModule.fallbacks``: the ops left as plain loops, with their reasons,
from a compile and from the cache."""

import inspect

import torch
from torch import nn

import lowerline


class GatherThenLinear(nn.Module):
    """A gather (no vector gather yet: plain loops), then a linear layer (tiled)."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(16, 8)

    def forward(self, x, index):
        gathered = torch.gather(x, 1, index)
        return self.linear(gathered)


def _gather_line() -> int:
    lines, first = inspect.getsourcelines(GatherThenLinear.forward)
    return first + next(i for i, line in enumerate(lines) if "torch.gather" in line)


def test_an_op_left_as_loops_is_reported_with_its_source_line_and_reason(tmp_path):
    torch.manual_seed(0)
    model = GatherThenLinear().eval()
    x, index = torch.randn(2, 29), torch.randint(0, 29, (2, 16))
    compiled = lowerline.compile(model, x, index, cache_dir=str(tmp_path))
    assert not compiled.cache_hit
    (gather,) = compiled.fallbacks
    assert gather.op == "linalg.generic"
    assert gather.kind == "fallback"
    assert gather.pass_flag == "lowerline-vectorize"
    assert gather.message.startswith("left as loops: not vectorized: ")
    assert "its body has tensor.extract" in gather.message
    assert gather.source_line.startswith(f"{__file__}:{_gather_line()}:")
    # A cache hit (no worker runs) reports the same.
    torch.manual_seed(0)
    again = lowerline.compile(GatherThenLinear().eval(), x, index, cache_dir=str(tmp_path))
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
