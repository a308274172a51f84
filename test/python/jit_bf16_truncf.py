# RUN: %PYTHON %s | FileCheck %s

# f64 -> bf16 and f32 -> bf16 truncations through every CPU stage
# (lowerline-expand-bf16-truncf in the llvm stage), JIT-compiled and compared
# bit for bit with correctly rounded results computed here: ties between
# bf16 values and values just off them, subnormals, overflow, NaN.

import numpy as np

from lowerline.cpu.stages import CPU_STAGES, CpuOptions
from lowerline.driver.jit import JitFunction, signature_of
from lowerline.pipeline.lowerer import Lowerer
from lowerline.pipeline.stage_runner import StageRunner, stages_of

N = 4096
SOURCE = """
#id = affine_map<(i) -> (i)>
func.func @to_bf16_bits(%d: tensor<4096xf64>, %s: tensor<4096xf32>)
    -> (tensor<4096xi16>, tensor<4096xi16>) {
  %e = tensor.empty() : tensor<4096xi16>
  %r:2 = linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel"]}
      ins(%d, %s : tensor<4096xf64>, tensor<4096xf32>) outs(%e, %e : tensor<4096xi16>, tensor<4096xi16>) {
  ^bb0(%x: f64, %y: f32, %o: i16, %p: i16):
    %a = arith.truncf %x : f64 to bf16
    %b = arith.truncf %y : f32 to bf16
    %ai = arith.bitcast %a : bf16 to i16
    %bi = arith.bitcast %b : bf16 to i16
    linalg.yield %ai, %bi : i16, i16
  } -> (tensor<4096xi16>, tensor<4096xi16>)
  return %r#0, %r#1 : tensor<4096xi16>, tensor<4096xi16>
}
"""


def reference(x: np.ndarray) -> np.ndarray:
    """Correctly rounded bf16 bits of f64 values: the two bf16 neighbours and
    their midpoint (exact in f64), ties to even, NaN as 0x7FC0."""
    with np.errstate(over="ignore", invalid="ignore"):
        near = np.abs(x).astype(np.float32)
        above = near.astype(np.float64) > np.abs(x)
        low_bits = near.view(np.uint32) - above.astype(np.uint32)  # toward zero, in f32
        low_bits &= np.uint32(0xFFFF0000)
        low = low_bits.view(np.float32).astype(np.float64)
        high = (low_bits + np.uint32(0x10000)).view(np.float32).astype(np.float64)
        high = np.where(np.isinf(high), 2.0**128, high)
        mid = (low + high) / 2
        up = (np.abs(x) > mid) | ((np.abs(x) == mid) & ((low_bits >> 16) & 1 == 1))
    bits = (low_bits >> 16) + up.astype(np.uint32)
    bits |= np.signbit(x).astype(np.uint32) << 15
    bits = np.where(np.isinf(x), (np.signbit(x).astype(np.uint32) << 15) | 0x7F80, bits)
    return np.where(np.isnan(x), 0x7FC0, bits).astype(np.uint16)


rng = np.random.default_rng(7)
grid = rng.standard_normal(N).astype(np.float32)
grid = (grid.view(np.uint32) & 0xFFFF0000).view(np.float32).astype(np.float64)  # bf16 values
ulp = np.exp2(np.floor(np.log2(np.abs(grid))) - 7)
quarter = N // 4
doubles = np.concatenate(
    [
        grid[:quarter] + ulp[:quarter] / 2,  # exact ties
        grid[quarter : 2 * quarter] + ulp[quarter : 2 * quarter] * (0.5 - 2.0**-40),  # just below
        grid[2 * quarter : 3 * quarter] + ulp[2 * quarter : 3 * quarter] * (0.5 + 2.0**-40),
        rng.standard_normal(quarter) * np.exp2(rng.integers(-140, 129, quarter)),
    ]
)
doubles[:8] = [1e-41, -3e-40, 9.2e-41, 1e39, 3.3961e38, np.nan, -np.inf, -0.0]
with np.errstate(over="ignore"):
    singles = doubles.astype(np.float32)
singles[3] = 3.4e38

lowerer = Lowerer()
module = lowerer.parse(SOURCE, "to_bf16_bits.mlir")
signature = signature_of(module, None)
StageRunner(lowerer).run(module, stages_of(CPU_STAGES), CpuOptions())
# No truncation to bf16 is left for LLVM (it would call __truncdfbf2).
# CHECK: fptrunc to bf16 left: False
print("fptrunc to bf16 left:", "llvm.fptrunc" in str(module) and "to bf16" in str(module))

from_f64, from_f32 = JitFunction(module, signature)(doubles, singles)
# CHECK: f64 -> bf16 correctly rounded: 4096 of 4096
print(
    "f64 -> bf16 correctly rounded:",
    int((from_f64.view(np.uint16) == reference(doubles)).sum()),
    "of",
    N,
)
# CHECK: f32 -> bf16 correctly rounded: 4096 of 4096
expected = reference(singles.astype(np.float64))
print("f32 -> bf16 correctly rounded:", int((from_f32.view(np.uint16) == expected).sum()), "of", N)
# The f64 inputs include values that f64 -> f32 -> bf16 with two
# round-to-nearest steps gets wrong (the ones just off a tie).
# CHECK: double rounding differs: True
with np.errstate(over="ignore"):
    twice = reference(doubles.astype(np.float32).astype(np.float64))
print("double rounding differs:", bool((twice != reference(doubles)).any()))
