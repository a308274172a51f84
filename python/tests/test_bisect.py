"""``driver.bisect``: the first pass whose output differs from the expected
outputs, found with passes broken on purpose and registered only here: one
on tensors (after the graph stage), one after tiling and vectorization, one
after bufferization."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
import torch
from mlir import ir
from test_explore import ADD_RELU

from lowerline.cpu.stages import CPU_STAGES, CpuOptions, llvm
from lowerline.driver import bisect
from lowerline.pipeline.lowerer import Lowerer, LoweringError
from lowerline.pipeline.pass_api import Pass
from lowerline.pipeline.registry import register_pass
from lowerline.pipeline.stage_runner import Stage, stages_of


def _zero_to_one(attr: ir.Attribute) -> ir.Attribute | None:
    """1.0 for an f32 zero (a scalar or a splat), else None."""
    f32 = ir.F32Type.get()
    if isinstance(attr, ir.FloatAttr) and attr.type == f32 and attr.value == 0.0:
        return ir.FloatAttr.get(f32, 1.0)
    if isinstance(attr, ir.DenseFPElementsAttr) and attr.is_splat:
        splat = attr.get_splat_value()
        if splat.type == f32 and ir.FloatAttr(splat).value == 0.0:
            return ir.DenseElementsAttr.get_splat(attr.type, ir.FloatAttr.get(f32, 1.0))
    return None


@register_pass
@dataclass(frozen=True)
class BreakZeros(Pass):
    """Broken on purpose: every f32 0.0 constant becomes 1.0 (ReLU's zero)."""

    flag = "test-bisect-break-zeros"
    summary = "test only: f32 zero constants become one"
    anchor = "builtin.module"

    def run(self, op: ir.Operation) -> None:
        def visit(inner: ir.Operation) -> ir.WalkResult:
            if inner.name == "arith.constant":
                changed = _zero_to_one(inner.attributes["value"])
                if changed is not None:
                    inner.attributes["value"] = changed
            return ir.WalkResult.ADVANCE

        op.walk(visit)


def _stages(broken_after: str | None) -> tuple[Stage, ...]:
    """The CPU stages, the broken pass last in ``broken_after``."""
    stages = []
    for stage in stages_of(CPU_STAGES):
        if stage.name == broken_after:
            build = stage.build
            stage = Stage(stage.name, lambda o, b=build: f"{b(o)},{BreakZeros.flag}")
        stages.append(stage)
    return tuple(stages)


def _case(batch: int) -> tuple[Lowerer, ir.Module, list[np.ndarray], list[np.ndarray]]:
    source = ADD_RELU.replace("3x5", f"{batch}x5")
    lowerer = Lowerer()
    module = lowerer.parse(source, "add_relu.mlir")
    rng = np.random.default_rng(batch)
    inputs = [rng.standard_normal((batch, 5)).astype(np.float32) for _ in range(2)]
    return lowerer, module, inputs, [np.maximum(inputs[0] + inputs[1], 0)]


@pytest.mark.parametrize(("stage", "batch"), [("graph", 1), ("tiled", 3), ("bufferized", 7)])
def test_names_the_broken_pass_and_replays_it(stage, batch, tmp_path):
    lowerer, module, inputs, expected = _case(batch)
    found = bisect.bisect(
        lowerer, module, _stages(stage), CpuOptions(), inputs, expected, str(tmp_path)
    )
    assert found is not None
    assert (found.stage, found.label) == (stage, BreakZeros.flag)
    assert "1.000000e+00" in found.op
    assert "where eager torch gives" in found.mismatch
    with open(found.after, encoding="utf-8") as handle:
        assert "1.000000e+00" in handle.read()
    # The command replays the pass on the IR before it (the pass is registered
    # in this process only: run the driver here).
    from lowerline.tools import opt

    command = found.command.split()
    assert command[0] == "lowerline-opt" and command[1] == found.before
    replay = tmp_path / "replayed.mlir"
    pipeline = command[2].removeprefix("--pass-pipeline=").strip("'")
    assert opt.main([found.before, f"--pass-pipeline={pipeline}", "-o", str(replay)]) == 0
    assert "1.000000e+00" in replay.read_text()


def test_nothing_named_when_every_pass_is_right(tmp_path):
    lowerer, module, inputs, expected = _case(4)
    stages = _stages(None)
    assert (
        bisect.bisect(lowerer, module, stages, CpuOptions(), inputs, expected, str(tmp_path))
        is None
    )


def test_a_wrong_input_is_reported_as_such(tmp_path):
    lowerer, module, inputs, expected = _case(2)
    with pytest.raises(LoweringError, match="the input is already outside the tolerance"):
        bisect.bisect(
            lowerer,
            module,
            _stages("graph"),
            CpuOptions(),
            inputs,
            [expected[0] + 1],
            str(tmp_path),
        )


def test_bisect_command_on_a_model_whose_passes_are_all_right(tmp_path, capsys, monkeypatch):
    from test_progress import TINY_MODEL

    from lowerline.tools import cli

    monkeypatch.setenv("LOWERLINE_CACHE_DIR", str(tmp_path / "cache"))
    model = tmp_path / "tiny.py"
    model.write_text(TINY_MODEL)
    assert cli.main(["bisect", str(model), "-o", str(tmp_path / "out")]) == 0
    assert "every pass's output is within the tolerance of eager" in capsys.readouterr().out
    assert cli.main(["bisect", str(tmp_path / "in.mlir")]) == 1
    assert "lowerline bisect takes a model's .py file" in capsys.readouterr().err


class _Counter(torch.nn.Module):
    """Writes its buffer: the outputs depend on the module's state."""

    def __init__(self):
        super().__init__()
        self.register_buffer("count", torch.zeros(3))

    def forward(self, x):
        self.count += 1
        return x * self.count


def test_a_model_that_writes_its_buffers_is_refused_by_name(tmp_path):
    import lowerline
    from lowerline.driver.workers import CompileError

    x = torch.randn(2, 3)
    compiled = lowerline.compile(_Counter(), x, cache_dir=str(tmp_path / "cache"))
    with pytest.raises(CompileError, match="the model writes its buffers"):
        compiled.bisect(str(tmp_path / "out"), x)


def test_the_reference_path_calls_libm_instead_of_lowerline_s_approximations():
    reference = bisect.reference_pipeline(CpuOptions())
    assert "lowerline-approximate" not in reference and "convert-math-to-libm" in reference
    assert "lowerline-approximate-math" in llvm(CpuOptions())  # compiles keep them


RETURNED_RESHAPE = """
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @main(%x: tensor<1x2x4x5xf32>) -> tensor<8x5xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x4x5xf32>
  %r = linalg.generic {indexing_maps = [#id, #id],
      iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<1x2x4x5xf32>) outs(%e : tensor<1x2x4x5xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x2x4x5xf32>
  %c = tensor.collapse_shape %r [[0, 1, 2], [3]] : tensor<1x2x4x5xf32> into tensor<8x5xf32>
  return %c : tensor<8x5xf32>
}
"""


def test_the_reference_path_writes_a_returned_reshape_in_place(tmp_path):
    # As the bufferized stage does (lowerline-allocate-reshaped-results): the
    # out-parameter is the computed buffer, not a copy of it after the kernel.
    lowerer = Lowerer()
    module = lowerer.parse(RETURNED_RESHAPE, "reshape.mlir")
    lowerer.run(module, bisect.reference_pipeline(CpuOptions()))
    lowered = str(module)
    assert "memcpy" not in lowered and "memrefCopy" not in lowered
    x = np.random.default_rng(0).standard_normal((1, 2, 4, 5)).astype(np.float32)
    module = lowerer.parse(RETURNED_RESHAPE, "reshape.mlir")
    expected = [np.maximum(x, 0).reshape(8, 5)]
    found = bisect.bisect(
        lowerer, module, _stages(None), CpuOptions(), [x], expected, str(tmp_path)
    )
    assert found is None
