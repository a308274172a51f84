"""Strided convolutions A/B in one process: lowerline with and without
``split_strided_columns`` (``lowerline-split-strided-columns``; ``--before``
names another CpuOptions flag to turn off instead, e.g.
``conv_channel_vectors``), eager and ONNX Runtime, one thread, CPU time
(``time.thread_time``), interleaved.

    .venv/bin/python bench/strided_conv_ab.py [--only c3s2-64to128x56] [--batches 1,8] [--rounds 3]
    .venv/bin/python bench/strided_conv_ab.py --models resnet_basic,resnet_stem
    .venv/bin/python bench/strided_conv_ab.py --before conv_channel_vectors

Layers are ``nn.Conv2d(cin, cout, k, stride, k // 2)`` + ReLU on
``size x size`` planes. The table gives the median over rounds of each
round's median call. Lower is faster.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import lowerline
from bench.models import MODELS
from bench.peers import onnxruntime
from bench.timing import cpu_median, format_seconds

# name -> (cin, cout, kernel, stride, size)
LAYERS = {
    "c3s2-64to128x56": (64, 128, 3, 2, 56),
    "c3s2-64to128x28": (64, 128, 3, 2, 28),
    "c3s2-64to128x20": (64, 128, 3, 2, 20),
    "c3s2-128to256x28": (128, 256, 3, 2, 28),
    "c3s2-24to53x41": (24, 53, 3, 2, 41),
    "c3s2-16to64x40": (16, 64, 3, 2, 40),
    "c3s2-32to64x40": (32, 64, 3, 2, 40),
    "c7s2-3to64x112": (3, 64, 7, 2, 112),
    "c1s2-64to128x56": (64, 128, 1, 2, 56),
}


def _cases(args: argparse.Namespace):
    batches = [int(b) for b in args.batches.split(",")]
    if args.models:
        for name in args.models.split(","):
            for batch in batches:
                torch.manual_seed(0)
                model, inputs = MODELS[name](batch)
                yield f"{name}/b{batch}", model.eval(), inputs
        return
    prefixes = [p for p in args.only.split(",") if p]
    for name, (cin, cout, k, s, size) in LAYERS.items():
        if prefixes and not any(name.startswith(p) for p in prefixes):
            continue
        for batch in batches:
            torch.manual_seed(0)
            conv = nn.Conv2d(cin, cout, k, s, k // 2)
            model = nn.Sequential(conv, nn.ReLU()).eval()
            yield f"{name}/b{batch}", model, (torch.randn(batch, cin, size, size),)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="")
    parser.add_argument("--models", default="")
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--budget", type=float, default=0.2, help="CPU seconds per call series")
    parser.add_argument(
        "--before",
        default="split_strided_columns",
        help="the CpuOptions flag that the 'before' build turns off (conv_channel_vectors...)",
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    workdir = tempfile.mkdtemp()
    cases = []
    for name, model, inputs in _cases(args):
        before = lowerline.compile(model, *inputs, num_threads=1, **{args.before: False})
        after = lowerline.compile(model, *inputs, num_threads=1)
        with torch.no_grad():
            expected = model(*inputs)
            error = max((c(*inputs) - expected).abs().max().item() for c in (before, after))
        ort, _ = onnxruntime(model, inputs, 1, tempfile.mkdtemp(dir=workdir))
        cases.append((name, model, before, after, ort, inputs, error))
    times: dict[str, list[tuple[float, ...]]] = {c[0]: [] for c in cases}
    with torch.no_grad():
        for _ in range(args.rounds):
            for name, model, before, after, ort, inputs, _ in cases:
                row = (
                    cpu_median(before, inputs, args.budget),
                    cpu_median(after, inputs, args.budget),
                    cpu_median(model, inputs, args.budget),
                    cpu_median(ort, (), args.budget),
                )
                times[name].append(row)
    print("| case | before | after | eager | ORT | before / ORT | after / ORT | max error |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, *_rest, error in cases:
        b, a, e, o = (statistics.median(t[i] for t in times[name]) for i in range(4))
        per_round = ", ".join(f"{t[1] / t[3]:.2f}" for t in times[name])
        print(
            f"| {name} | {format_seconds(b)} | {format_seconds(a)} | {format_seconds(e)} | "
            f"{format_seconds(o)} | {b / o:.2f} | {a / o:.2f} ({per_round}) | {error:.1e} |"
        )


if __name__ == "__main__":
    main()
