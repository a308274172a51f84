# RUN: %PYTHON %s | FileCheck %s

# Lowers matmul + bias + ReLU through every CPU stage (lowerline-cpu-pipeline
# stage by stage), runs it with MLIR's ExecutionEngine and compares with numpy.
# Sizes 7x13x29 divide no tile or vector width.

import numpy as np

from lowerline.cpu.stages import CPU_STAGES, CpuOptions
from lowerline.driver.jit import JitFunction, signature_of
from lowerline.pipeline.lowerer import Lowerer
from lowerline.pipeline.stage_runner import StageRunner, stages_of

SOURCE = """
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (j)>
func.func @matmul_bias_relu(%x: tensor<7x13xf32>, %w: tensor<13x29xf32>,
                            %b: tensor<29xf32>) -> tensor<7x29xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<7x29xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<7x29xf32>) -> tensor<7x29xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<7x13xf32>, tensor<13x29xf32>)
                      outs(%f : tensor<7x29xf32>) -> tensor<7x29xf32>
  %r = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %b : tensor<7x29xf32>, tensor<29xf32>) outs(%e : tensor<7x29xf32>) {
  ^bb0(%a: f32, %bias: f32, %o: f32):
    %s = arith.addf %a, %bias : f32
    %m = arith.maximumf %s, %zero : f32
    linalg.yield %m : f32
  } -> tensor<7x29xf32>
  return %r : tensor<7x29xf32>
}
"""

lowerer = Lowerer()
module = lowerer.parse(SOURCE, "matmul_bias_relu.mlir")
signature = signature_of(module, None)
stages = StageRunner(lowerer).run(module, stages_of(CPU_STAGES), CpuOptions()).seconds
# CHECK: stages: graph, tiled, bufferized, loops, llvm
print("stages:", ", ".join(stages))

function = JitFunction(module, signature)
rng = np.random.default_rng(1)
x = rng.standard_normal((7, 13)).astype(np.float32)
w = rng.standard_normal((13, 29)).astype(np.float32)
b = rng.standard_normal(29).astype(np.float32)
(out,) = function(x, w, b)
expected = np.maximum(x @ w + b, 0)
# CHECK: shape (7, 29) float32
print("shape", out.shape, out.dtype)
# CHECK: matches numpy: True
print("matches numpy:", np.allclose(out, expected, rtol=1e-5, atol=1e-5))
# ReLU really clipped something, so the comparison is not vacuous.
# CHECK: has zeros and positives: True
print("has zeros and positives:", bool((out == 0).any() and (out > 0).any()))
