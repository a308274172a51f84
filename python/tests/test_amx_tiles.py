"""The code of lowerline-amx-matmul and lowerline-amx-tiles computes the
matmul: int8 matmuls with a constant B of odd sizes, lowered for
``cpu:sapphirerapids`` through the loops stage, their AMX tile ops then
emulated by scalar loops (amx_emulation) so that they run on any host, and
the results compared with numpy exactly. Covers the padding of M, N and K
to whole tiles, the packed B's layout, the 2x2 blocks and their edges, the
loops over blocks and over k, and an accumulator that starts from a bias.
test_quant_amx runs the real instructions where the host has AMX.
"""

import numpy as np
import pytest
from amx_emulation import emulate_tiles

from lowerline.cpu.stages import CPU_STAGES, CpuOptions, module_pipeline
from lowerline.driver.jit import JitFunction, signature_of
from lowerline.pipeline.lowerer import Lowerer


def _dense(array: np.ndarray) -> str:
    return "[" + ", ".join(_dense(row) if row.ndim else str(int(row)) for row in array) + "]"


def matmul_source(b: np.ndarray, m: int, bias: bool) -> str:
    """``a @ b`` (+ ``bias`` when set) on i8 -> i32 tensors, B a constant."""
    k, n = b.shape
    init = "%bias" if bias else "%f"
    extra = f", %bias: tensor<{m}x{n}xi32>" if bias else ""
    return f"""
func.func @main(%a: tensor<{m}x{k}xi8>{extra}) -> tensor<{m}x{n}xi32> {{
  %b = arith.constant dense<{_dense(b)}> : tensor<{k}x{n}xi8>
  %z = arith.constant 0 : i32
  %e = tensor.empty() : tensor<{m}x{n}xi32>
  %f = linalg.fill ins(%z : i32) outs(%e : tensor<{m}x{n}xi32>) -> tensor<{m}x{n}xi32>
  %r = linalg.matmul ins(%a, %b : tensor<{m}x{k}xi8>, tensor<{k}x{n}xi8>)
                     outs({init} : tensor<{m}x{n}xi32>) -> tensor<{m}x{n}xi32>
  return %r : tensor<{m}x{n}xi32>
}}
"""


def bf16_matmul_source(b_bits: np.ndarray, m: int) -> str:
    """``bf16(a) @ b`` into f32, B a bf16 constant (a resource: its bits)."""
    k, n = b_bits.shape
    blob = "0x02000000" + b_bits.astype("<u2").tobytes().hex().upper()
    return f"""
func.func @main(%x: tensor<{m}x{k}xf32>) -> tensor<{m}x{n}xf32> {{
  %a = arith.truncf %x : tensor<{m}x{k}xf32> to tensor<{m}x{k}xbf16>
  %b = arith.constant dense_resource<b_bf16> : tensor<{k}x{n}xbf16>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<{m}x{n}xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  %r = linalg.matmul ins(%a, %b : tensor<{m}x{k}xbf16>, tensor<{k}x{n}xbf16>)
                     outs(%f : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  return %r : tensor<{m}x{n}xf32>
}}
{{-#
  dialect_resources: {{ builtin: {{ b_bf16: "{blob}" }} }}
#-}}
"""


def emulated(source: str) -> JitFunction:
    """``source`` lowered for sapphirerapids, its tiles emulated, JIT-compiled."""
    lowerer = Lowerer()
    module = lowerer.parse(source)
    signature = signature_of(module, "main")
    # Two threads: the blocks run in OpenMP regions, as on a two-core target.
    options = CpuOptions(target="sapphirerapids", num_threads=2)
    stages = dict(CPU_STAGES)
    before = ",".join(stages[s](options) for s in ("graph", "tiled", "bufferized", "loops"))
    lowerer.run(module, module_pipeline(before))
    assert emulate_tiles(module.operation) > 0  # the matmul is on tiles
    lowerer.run(module, module_pipeline(stages["llvm"](options)))
    return JitFunction(module, signature)


# (M, K, N): odd sizes in one partial tile each; rows and columns past a
# 2x2 block, k in three 64-byte steps; a loop of row blocks; batch 1.
SHAPES = [(13, 37, 29), (1, 37, 29), (8, 130, 70), (70, 64, 48), (33, 5, 17)]


@pytest.mark.parametrize(("m", "k", "n"), SHAPES, ids=[f"{m}x{k}x{n}" for m, k, n in SHAPES])
@pytest.mark.parametrize("bias", [False, True], ids=["fill", "bias"])
def test_emulated_tiles_match_numpy(m, k, n, bias):
    rng = np.random.default_rng(m * 10000 + k * 100 + n)
    b = rng.integers(-128, 128, size=(k, n), dtype=np.int8)
    a = rng.integers(-128, 128, size=(m, k), dtype=np.int8)
    expected = a.astype(np.int32) @ b.astype(np.int32)
    inputs = [a]
    if bias:
        inputs.append(rng.integers(-(1 << 20), 1 << 20, size=(m, n), dtype=np.int32))
        expected = expected + inputs[1]
    (got,) = emulated(matmul_source(b, m, bias))(*inputs)
    np.testing.assert_array_equal(got, expected)


def _bf16_bits(values: np.ndarray) -> np.ndarray:
    """f32 values that bf16 holds exactly, as bf16 bit patterns."""
    return (values.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)


@pytest.mark.parametrize(("m", "k", "n"), [(13, 37, 29), (8, 70, 40)], ids=["13x37x29", "8x70x40"])
def test_emulated_bf16_tiles_match_numpy(m, k, n):
    """bf16 pairs (``tdpbf16ps``): B packed 2 deep, k in steps of 32."""
    rng = np.random.default_rng(k)
    # Small integers: exact in bf16, their products and sums exact in f32.
    b = rng.integers(-8, 9, size=(k, n)).astype(np.float32)
    a = rng.integers(-8, 9, size=(m, k)).astype(np.float32)
    (got,) = emulated(bf16_matmul_source(_bf16_bits(b), m))(a)
    np.testing.assert_array_equal(got, a @ b)
