import numpy as np
import pytest

from lowerline.cpu.stages import CPU_STAGES, CpuOptions, cpu, module_pipeline
from lowerline.driver.jit import JitFunction, RunError, signature_of
from lowerline.driver.runner import run_file
from lowerline.examples import EXAMPLES_DIR
from lowerline.pipeline.lowerer import Lowerer, LoweringError
from lowerline.pipeline.stage_runner import StageRunner, stages_of

ADD = """
func.func @add(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  %e = tensor.empty() : tensor<3xf32>
  %r = linalg.add ins(%a, %b : tensor<3xf32>, tensor<3xf32>) outs(%e : tensor<3xf32>) -> tensor<3xf32>
  return %r : tensor<3xf32>
}
"""


def test_parse_error_names_the_file_line_and_column():
    with pytest.raises(LoweringError) as info:
        Lowerer().parse("func.func @f() {\n  return %x : i32\n}\n", "bad.mlir")
    (diag,) = info.value.diagnostics
    assert diag.format() == "bad.mlir:2:10: error: use of undeclared SSA value name"


def test_failed_pass_gives_diagnostics_and_a_reproducer():
    lowerer = Lowerer()
    # tosa ops have no bufferization: one-shot-bufferize fails on them.
    module = lowerer.parse(
        "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %0 = tosa.abs %a : (tensor<4xf32>) -> tensor<4xf32>\n"
        "  return %0 : tensor<4xf32>\n}\n",
        "tosa.mlir",
    )
    with pytest.raises(LoweringError) as info:
        lowerer.run(module, "builtin.module(one-shot-bufferize)", "in.mlir")
    diag = info.value.diagnostics[0]
    assert diag.format() == "tosa.mlir:2:8: error: op was not bufferized"
    assert info.value.reproducer == (
        "lowerline-opt in.mlir --pass-pipeline='builtin.module(one-shot-bufferize)'"
    )


def test_whole_pipeline_text_equals_the_stages():
    lowerer = Lowerer()
    module = lowerer.parse(ADD, "add.mlir")
    signature = signature_of(module, None)
    lowerer.run(module, module_pipeline(cpu(CpuOptions())))
    (out,) = JitFunction(module, signature)(np.ones(3, np.float32), np.arange(3, dtype=np.float32))
    np.testing.assert_array_equal(out, [1, 2, 3])


def _jit_through_the_stages(source: str, filename: str) -> JitFunction:
    lowerer = Lowerer()
    module = lowerer.parse(source, filename)
    signature = signature_of(module, None)
    StageRunner(lowerer).run(module, stages_of(CPU_STAGES), CpuOptions())
    return JitFunction(module, signature)


def test_call_checks_count_shape_and_dtype():
    function = _jit_through_the_stages(ADD, "add.mlir")
    ones = np.ones(3, np.float32)
    with pytest.raises(RunError, match="takes 2 arrays, got 1"):
        function(ones)
    with pytest.raises(RunError, match="argument #1 of @add: expected 3 float32, got 4 float32"):
        function(ones, np.ones(4, np.float32))
    with pytest.raises(RunError, match="expected 3 float32, got 3 float64"):
        function(ones, np.ones(3, np.float64))


def test_bundled_example_is_a_softmax_classifier():
    result = run_file(f"{EXAMPLES_DIR}/mlp.mlir", seed=0)
    (probs,) = result.outputs
    assert probs.shape == (3, 4)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)
    assert list(result.stage_seconds) == ["graph", "tiled", "bufferized", "loops", "llvm", "jit"]
    again = run_file(f"{EXAMPLES_DIR}/mlp.mlir", seed=0)
    np.testing.assert_array_equal(again.outputs[0], probs)


CHECKED_GATHER = """
func.func @pick(%table: tensor<5xf32>, %index: tensor<3xi64>) -> tensor<3xf32> {
  %c5 = arith.constant 5 : index
  %e = tensor.empty() : tensor<3xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]}
      ins(%index : tensor<3xi64>) outs(%e : tensor<3xf32>) {
  ^bb0(%i: i64, %out: f32):
    %j = arith.index_cast %i : i64 to index
    %ok = arith.cmpi ult, %j, %c5 : index
    cf.assert %ok, "index must be smaller than dim size"
    %v = tensor.extract %table[%j] : tensor<5xf32>
    linalg.yield %v : f32
  } -> tensor<3xf32>
  return %r : tensor<3xf32>
}
"""


def test_failed_check_in_jit_code_raises_and_the_function_stays_usable():
    function = _jit_through_the_stages(CHECKED_GATHER, "pick.mlir")
    table = np.arange(5, dtype=np.float32) * 10
    with pytest.raises(IndexError, match="index must be smaller than dim size"):
        function(table, np.array([1, 7, 2], np.int64))
    (out,) = function(table, np.array([4, 0, 2], np.int64))
    np.testing.assert_array_equal(out, [40, 0, 20])
