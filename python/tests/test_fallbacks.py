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


# A contraction marked for AMX tiles that lowerline-amx-tiles (a loops-stage
# pass, after the tiled stage's check) cannot tile: 13 rows, not whole tiles.
_PARTIAL_TILES = """
#a = affine_map<(m, n, g, k) -> (m, g, k)>
#b = affine_map<(m, n, g, k) -> (g, n, k)>
#c = affine_map<(m, n, g, k) -> (m, n)>
func.func @partial_tiles(%a: memref<13x16x4xi8>, %b: memref<16x16x4xi8>, %c: memref<13x16xi32>) {
  linalg.generic {indexing_maps = [#a, #b, #c],
      iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%a, %b : memref<13x16x4xi8>, memref<16x16x4xi8>) outs(%c : memref<13x16xi32>)
      attrs = {lowerline.amx_tiles} {
  ^bb0(%x: i8, %y: i8, %acc: i32):
    %xe = arith.extsi %x : i8 to i32
    %ye = arith.extsi %y : i8 to i32
    %p = arith.muli %xe, %ye : i32
    %s = arith.addi %acc, %p : i32
    linalg.yield %s : i32
  }
  return
}
"""


def test_a_later_stage_that_leaves_an_op_as_loops_is_a_fallback_too():
    from lowerline.cpu.fallbacks import Watch
    from lowerline.pipeline.lowerer import Lowerer

    lowerer = Lowerer()
    module = lowerer.parse(_PARTIAL_TILES)
    with Watch(tiled=True) as watch:
        # The tiled stage's check: an AMX-marked contraction is no fallback yet.
        watch.after_stage("tiled", module)
        assert watch.fallbacks == []
        lowerer.run(module, "builtin.module(lowerline-amx-tiles)")
    (refused,) = watch.fallbacks
    assert refused.pass_flag == "lowerline-amx-tiles"
    assert refused.kind == "fallback"
    assert "13x16 (64 bytes of k) is not in whole 16x16 tiles" in refused.message


def test_a_later_stage_that_tiles_everything_adds_no_fallback():
    from lowerline.cpu.fallbacks import Watch
    from lowerline.pipeline.lowerer import Lowerer

    lowerer = Lowerer()
    module = lowerer.parse(_PARTIAL_TILES.replace("13x", "16x"))
    with Watch(tiled=True) as watch:
        watch.after_stage("tiled", module)
        lowerer.run(module, "builtin.module(lowerline-amx-tiles)")
    assert watch.fallbacks == []
