"""Strided 1x1 i8 convolutions left to lowerline-tile-and-fuse (a filter
that is not a constant): window nest (A) against 4-deep matmul tiles on the
int8 dot product (B), one thread, interleaved in one process.

    .venv/bin/python bench/int8_strided_conv_ab.py [--rounds 5]

A is built with the strided planner sent to the window nest (as before the
tenth session); both builds' outputs are checked against numpy. Each round
times A then B with ``bench.timing.cpu_median`` (thread CPU time, 0.3 s per
series); printed: each build's range over the rounds and the range of B / A.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.timing import cpu_median
from lowerline.cpu.stages import CPU_STAGES, CpuOptions, module_pipeline
from lowerline.driver.jit import JitFunction, signature_of
from lowerline.passes.tiling import tile_and_fuse
from lowerline.pipeline.lowerer import Lowerer

# (name, input NCHW, filter FCHW, stride): ResNet's 1x1/2 shortcut convolutions.
CASES = [
    ("1x1/2 64->128 at 56x56", (1, 64, 56, 56), (128, 64, 1, 1), 2),
    ("1x1/2 128->256 at 28x28", (1, 128, 28, 28), (256, 128, 1, 1), 2),
    ("1x1/2 256->512 at 14x14", (1, 256, 14, 14), (512, 256, 1, 1), 2),
]


def source(x: tuple, w: tuple, stride: int) -> str:
    n, _, h, width = x
    f = w[0]
    out = f"{n}x{f}x{(h - 1) // stride + 1}x{(width - 1) // stride + 1}xi32"
    xt, wt = "x".join(map(str, x)) + "xi8", "x".join(map(str, w)) + "xi8"
    return f"""
func.func @main(%x: tensor<{xt}>, %w: tensor<{wt}>) -> tensor<{out}> {{
  %c0 = arith.constant 0 : i32
  %e = tensor.empty() : tensor<{out}>
  %f = linalg.fill ins(%c0 : i32) outs(%e : tensor<{out}>) -> tensor<{out}>
  %c = linalg.conv_2d_nchw_fchw {{dilations = dense<1> : vector<2xi64>,
      strides = dense<{stride}> : vector<2xi64>}}
      ins(%x, %w : tensor<{xt}>, tensor<{wt}>) outs(%f : tensor<{out}>) -> tensor<{out}>
  return %c : tensor<{out}>
}}
"""


def build(text: str) -> JitFunction:
    lowerer = Lowerer()
    module = lowerer.parse(text)
    signature = signature_of(module, "main")
    options = CpuOptions(target="host", num_threads=1)
    stages = ("graph", "tiled", "bufferized", "loops", "llvm")
    lowerer.run(module, module_pipeline(",".join(dict(CPU_STAGES)[s](options) for s in stages)))
    return JitFunction(module, signature)


def window_nest_build(text: str) -> JitFunction:
    planner = tile_and_fuse._strided_conv_group
    tile_and_fuse._strided_conv_group = tile_and_fuse._window_group
    try:
        return build(text)
    finally:
        tile_and_fuse._strided_conv_group = planner


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    rounds = parser.parse_args().rounds
    for name, xs, ws, stride in CASES:
        text = source(xs, ws, stride)
        a, b = window_nest_build(text), build(text)
        rng = np.random.default_rng(0)
        x = rng.integers(-128, 128, size=xs, dtype=np.int8)
        w = rng.integers(-128, 128, size=ws, dtype=np.int8)
        taps = x[:, :, ::stride, ::stride].astype(np.int64)
        expected = np.einsum("nchw,fc->nfhw", taps, w[:, :, 0, 0].astype(np.int64))
        for run in (a, b):
            np.testing.assert_array_equal(run(x, w)[0], expected.astype(np.int32))
        ta, tb = [], []
        for _ in range(rounds):
            ta.append(cpu_median(a, (x, w), 0.3))
            tb.append(cpu_median(b, (x, w), 0.3))
        ratios = [q / p for p, q in zip(ta, tb, strict=True)]
        print(
            f"{name}: window nest {min(ta) * 1e6:.0f}-{max(ta) * 1e6:.0f} us, "
            f"dot tiles {min(tb) * 1e6:.0f}-{max(tb) * 1e6:.0f} us, "
            f"B/A {min(ratios):.2f}-{max(ratios):.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
