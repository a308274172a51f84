"""Strided i8 x i8 -> i32 convolutions whose filter is not a constant
(so lowerline-int8-conv-matmul leaves them to lowerline-tile-and-fuse):
a 1x1 one on a target with an int8 dot product, input channels a multiple
of 4 and output rows of at least the dot product's lanes has 4-deep matmul
register tiles reading a strided input row
(lowerline.passes.tiling.conv_tiles), lowered to ``vpdpbusd``; larger
windows, narrower rows and other channel counts stay window nests
(measured faster). The
sums match numpy exactly either way."""

import numpy as np
import pytest

from lowerline.cpu.stages import CPU_STAGES, CpuOptions, module_pipeline
from lowerline.driver.jit import JitFunction, signature_of
from lowerline.pipeline.lowerer import Lowerer
from lowerline.targets import cpu_target

vnni_host = pytest.mark.skipif(not cpu_target("host").vnni, reason="the host has no VNNI")


def conv_source(x: tuple, w: tuple, strides: tuple[int, int]) -> str:
    """``main(x, w)``: the convolution of i8 ``x`` (NCHW) by i8 ``w``
    (FCHW) into a zero-filled i32 accumulator."""
    n, _, h, width = x
    f, _, kh, kw = w
    oh, ow = (h - kh) // strides[0] + 1, (width - kw) // strides[1] + 1
    xt, wt = "x".join(map(str, x)) + "xi8", "x".join(map(str, w)) + "xi8"
    out = f"{n}x{f}x{oh}x{ow}xi32"
    return f"""
func.func @main(%x: tensor<{xt}>, %w: tensor<{wt}>) -> tensor<{out}> {{
  %c0 = arith.constant 0 : i32
  %e = tensor.empty() : tensor<{out}>
  %f = linalg.fill ins(%c0 : i32) outs(%e : tensor<{out}>) -> tensor<{out}>
  %c = linalg.conv_2d_nchw_fchw {{dilations = dense<1> : vector<2xi64>,
      strides = dense<[{strides[0]}, {strides[1]}]> : vector<2xi64>}}
      ins(%x, %w : tensor<{xt}>, tensor<{wt}>) outs(%f : tensor<{out}>) -> tensor<{out}>
  return %c : tensor<{out}>
}}
"""


def lowered(source: str, target: str) -> tuple[Lowerer, object, object]:
    """``source`` lowered to the loops stage, with its signature."""
    lowerer = Lowerer()
    module = lowerer.parse(source)
    signature = signature_of(module, "main")
    options = CpuOptions(target=target, num_threads=1)
    stages = dict(CPU_STAGES)
    before = ",".join(stages[s](options) for s in ("graph", "tiled", "bufferized", "loops"))
    lowerer.run(module, module_pipeline(before))
    return lowerer, module, signature


def reference(x: np.ndarray, w: np.ndarray, strides: tuple[int, int]) -> np.ndarray:
    n, _, h, width = x.shape
    f, _, kh, kw = w.shape
    oh, ow = (h - kh) // strides[0] + 1, (width - kw) // strides[1] + 1
    out = np.zeros((n, f, oh, ow), np.int64)
    for i in range(kh):
        for j in range(kw):
            rows = x[:, :, i : i + strides[0] * (oh - 1) + 1 : strides[0]]
            taps = rows[..., j : j + strides[1] * (ow - 1) + 1 : strides[1]].astype(np.int64)
            out += np.einsum("nchw,fc->nfhw", taps, w[:, :, i, j].astype(np.int64))
    return out.astype(np.int32)


# (input channels, output channels, kernel, strides, odd planes, 4-deep tiles)
CASES = {
    "1x1_s2": (16, 9, 1, (2, 2), (9, 35), True),
    "1x1_s2_wide": (8, 16, 1, (2, 2), (7, 71), True),
    "1x1_s3": (4, 5, 1, (3, 3), (11, 61), True),
    "1x1_s2_narrow": (16, 9, 1, (2, 2), (9, 15), False),
    "3x3_s2": (8, 12, 3, (2, 2), (13, 11), False),
    "3x3_s2_six_channels": (6, 4, 3, (2, 2), (9, 9), False),
}


@vnni_host
@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("case", sorted(CASES))
def test_strided_int8_conv_matches_numpy(case, batch):
    c, f, k, strides, (h, w), dot = CASES[case]
    rng = np.random.default_rng(c * 100 + f + batch)
    x = rng.integers(-128, 128, size=(batch, c, h, w), dtype=np.int8)
    weights = rng.integers(-128, 128, size=(f, c, k, k), dtype=np.int8)
    source = conv_source(x.shape, weights.shape, strides)
    lowerer, module, signature = lowered(source, "host")
    # The 4-deep matmul tiles' intrinsic, or none (the window nest).
    assert ("vpdpbusd" in str(module)) == dot
    lowerer.run(module, module_pipeline(dict(CPU_STAGES)["llvm"](CpuOptions(num_threads=1))))
    (got,) = JitFunction(module, signature)(x, weights)
    np.testing.assert_array_equal(got, reference(x, weights, strides))


@pytest.mark.parametrize("target", ["znver4", "haswell"])
def test_strided_pointwise_dot_tiles_only_with_vnni(target):
    """Cross-lowered (not run): the dot product where the target has VNNI."""
    _, module, _ = lowered(conv_source((1, 8, 9, 41), (4, 8, 1, 1), (2, 2)), target)
    assert ("vpdpbusd" in str(module)) == (target == "znver4")
