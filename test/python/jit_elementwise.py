# RUN: %PYTHON %s | FileCheck %s

# An elementwise function with float math and a boolean (i1) result: the i1
# output buffer is stored as bytes by lowerline-widen-i1-memrefs, without
# which finalize-memref-to-llvm aborts. Compared with numpy.

import re

import numpy as np

from lowerline.cpu.stages import CPU_STAGES, CpuOptions
from lowerline.driver.jit import JitFunction, signature_of
from lowerline.pipeline.lowerer import Lowerer
from lowerline.pipeline.stage_runner import StageRunner, stages_of

SOURCE = """
#id = affine_map<(i, j) -> (i, j)>
func.func @elementwise(%a: tensor<5x11xf32>, %b: tensor<5x11xf32>)
    -> (tensor<5x11xf32>, tensor<5x11xi1>) {
  %e = tensor.empty() : tensor<5x11xf32>
  %eb = tensor.empty() : tensor<5x11xi1>
  %r:2 = linalg.generic {indexing_maps = [#id, #id, #id, #id],
                         iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : tensor<5x11xf32>, tensor<5x11xf32>) outs(%e, %eb : tensor<5x11xf32>, tensor<5x11xi1>) {
  ^bb0(%x: f32, %y: f32, %o: f32, %ob: i1):
    %t = math.tanh %x : f32
    %ex = math.exp %y : f32
    %m = arith.mulf %t, %ex : f32
    %gt = arith.cmpf ogt, %x, %y : f32
    %s = arith.select %gt, %m, %y : f32
    linalg.yield %s, %gt : f32, i1
  } -> (tensor<5x11xf32>, tensor<5x11xi1>)
  return %r#0, %r#1 : tensor<5x11xf32>, tensor<5x11xi1>
}
"""

lowerer = Lowerer()
module = lowerer.parse(SOURCE, "elementwise.mlir")
signature = signature_of(module, None)
StageRunner(lowerer).run(module, stages_of(CPU_STAGES), CpuOptions())
# The boolean result is stored one byte per element (scalars or vectors of i8).
# CHECK: i8 stores: True
print("i8 stores:", bool(re.search(r"llvm.store .*: (i8|vector<\d+xi8>), !llvm.ptr", str(module))))

function = JitFunction(module, signature)
rng = np.random.default_rng(2)
a = rng.standard_normal((5, 11)).astype(np.float32)
b = rng.standard_normal((5, 11)).astype(np.float32)
values, flags = function(a, b)
# CHECK: flags bool (5, 11)
print("flags", flags.dtype, flags.shape)
# CHECK: flags match numpy: True
print("flags match numpy:", np.array_equal(flags, a > b))
# CHECK: values match numpy: True
expected = np.where(a > b, np.tanh(a) * np.exp(b), b)
print("values match numpy:", np.allclose(values, expected, rtol=1e-5, atol=1e-6))
# CHECK: both branches taken: True
print("both branches taken:", bool(flags.any() and (~flags).any()))
