"""Grouped i8 convolutions with a constant filter: the window nest (A,
before the tenth session) against one im2col matmul per group on the int8
dot product (B, lowerline.passes.tiling.int8_grouped), one thread,
interleaved in one process.

    .venv/bin/python bench/int8_grouped_conv_ab.py [--rounds 5]

A is built with lowerline-int8-conv-matmul's group split turned off (B
with its profitability checks off for ``--all``'s extra cases); both
builds' outputs are checked against numpy. Each round times A then B with
``bench.timing.cpu_median`` (thread CPU time, 0.3 s per series); printed:
each build's range over the rounds and the range of B / A.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.int8_strided_conv_ab import build
from bench.timing import cpu_median
from lowerline.passes.tiling import int8_conv_matmul, int8_grouped

# (name, input N x C x H x W, groups, output channels, kernel): 3x3 grouped
# convolutions the split takes (16 or more output channels per group).
# ``--all`` adds those it leaves alone, timed with the split forced.
CASES = [
    ("3x3 g4 64->64 (16/group) at 28x28", (1, 64, 28, 28), 4, 64, 3),
    ("3x3 g2 64->64 (32/group) at 28x28", (1, 64, 28, 28), 2, 64, 3),
    ("3x3 g2 24->32 (12 in, 16 out) at 56x56", (1, 24, 56, 56), 2, 32, 3),
    ("3x3 g8 32->128 (4 in, 16 out) at 28x28", (1, 32, 28, 28), 8, 128, 3),
    ("3x3 g4 24->64 (6 in, 16 out) at 28x28", (1, 24, 28, 28), 4, 64, 3),
]
LEFT_ALONE = [
    ("3x3 g32 128->128 (4/group) at 28x28", (1, 128, 28, 28), 32, 128, 3),
    ("3x3 g8 64->64 (8/group) at 28x28", (1, 64, 28, 28), 8, 64, 3),
    ("3x3 g2 12->12 (6/group) at 56x56", (1, 12, 56, 56), 2, 12, 3),
    ("1x1 g4 64->64 (16/group) at 28x28", (1, 64, 28, 28), 4, 64, 1),
    ("1x1 g2 128->128 (64/group) at 28x28", (1, 128, 28, 28), 2, 128, 1),
]


def source(x: tuple, groups: int, f: int, k: int, w: np.ndarray) -> str:
    n, c, h, width = x
    oh, ow = h - k + 1, width - k + 1
    xt = f"{n}x{groups}x{c // groups}x{h}x{width}xi8"
    wt = "x".join(map(str, w.shape)) + "xi8"
    out = f"{n}x{groups}x{f // groups}x{oh}x{ow}xi32"
    data = "0x" + w.tobytes().hex().upper()
    return f"""
func.func @main(%x: tensor<{xt}>) -> tensor<{out}> {{
  %w = arith.constant dense<"{data}"> : tensor<{wt}>
  %c0 = arith.constant 0 : i32
  %e = tensor.empty() : tensor<{out}>
  %f = linalg.fill ins(%c0 : i32) outs(%e : tensor<{out}>) -> tensor<{out}>
  %c = linalg.conv_2d_ngchw_gfchw {{dilations = dense<1> : vector<2xi64>,
      strides = dense<1> : vector<2xi64>}}
      ins(%x, %w : tensor<{xt}>, tensor<{wt}>) outs(%f : tensor<{out}>) -> tensor<{out}>
  return %c : tensor<{out}>
}}
"""


def forced_build(text: str):
    """B with the split's profitability checks off (narrow groups and 1x1
    filters split too)."""
    checked = int8_conv_matmul.split_groups

    def unchecked(op, lanes):
        array = int8_grouped.int8_filter(op)
        return array if isinstance(array, str) else int8_grouped.split(op, array)

    int8_conv_matmul.split_groups = unchecked
    try:
        return build(text)
    finally:
        int8_conv_matmul.split_groups = checked


def window_nest_build(text: str):
    split = int8_conv_matmul._split_grouped
    int8_conv_matmul._split_grouped = lambda op, lanes: []
    try:
        return build(text)
    finally:
        int8_conv_matmul._split_grouped = split


def expected(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """N x G x F x OH x OW by numpy, one tap at a time."""
    _, _, _, kh_size, kw_size = w.shape
    oh, ow = x.shape[3] - kh_size + 1, x.shape[4] - kw_size + 1
    out = 0
    for kh in range(kh_size):
        for kw in range(kw_size):
            taps = x[:, :, :, kh : kh + oh, kw : kw + ow].astype(np.int64)
            out = out + np.einsum("ngchw,gfc->ngfhw", taps, w[:, :, :, kh, kw].astype(np.int64))
    return np.asarray(out, dtype=np.int32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--all", action="store_true", help="also the cases left alone")
    args = parser.parse_args()
    rounds = args.rounds
    cases = [(case, build) for case in CASES]
    cases += [(case, forced_build) for case in LEFT_ALONE] if args.all else []
    for (name, xs, groups, f, k), build_b in cases:
        rng = np.random.default_rng(0)
        n, c, h, width = xs
        x = rng.integers(-128, 128, size=(n, groups, c // groups, h, width), dtype=np.int8)
        w = rng.integers(-128, 128, size=(groups, f // groups, c // groups, k, k), dtype=np.int8)
        text = source(xs, groups, f, k, w)
        a, b = window_nest_build(text), build_b(text)
        for run in (a, b):
            np.testing.assert_array_equal(run(x)[0], expected(x, w))
        ta, tb = [], []
        for _ in range(rounds):
            ta.append(cpu_median(a, (x,), 0.3))
            tb.append(cpu_median(b, (x,), 0.3))
        ratios = [q / p for p, q in zip(ta, tb, strict=True)]
        print(
            f"{name}: window nest {min(ta) * 1e6:.0f}-{max(ta) * 1e6:.0f} us, "
            f"per-group matmuls {min(tb) * 1e6:.0f}-{max(tb) * 1e6:.0f} us, "
            f"B/A {min(ratios):.2f}-{max(ratios):.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
