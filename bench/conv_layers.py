"""Single convolution layers (+ ReLU) on one thread: lowerline, eager and
ONNX Runtime in CPU time, for A/B comparisons of the conv kernels.

    .venv/bin/python bench/conv_layers.py [--only dw3s1,pw] [--batches 1,8] [--rounds 3]
    .venv/bin/python bench/conv_layers.py --models mobilenetv1_dwsep,resnet_basic

``--models`` times those suite models (``bench/models``) instead of the layers.
``--threads 2`` runs every system on 2 threads; the figures are then
wall-clock medians (CPU time of the calling thread would miss the other's).

Each layer is ``nn.Conv2d(cin, cout, k, stride, k // 2, groups)`` followed
by a ReLU (BatchNorm folds into the weights in the models). A call is timed
with ``time.thread_time`` (the calling thread's CPU time: on a loaded
machine it stays near the quiet figure); ONNX Runtime runs with one
intra-op thread, in the calling thread. The figures per round are the
median call; the table gives the median over rounds. Lower is faster.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile

import torch
from torch import nn
from torch.utils._pytree import tree_leaves

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import lowerline
from bench.models import MODELS
from bench.peers import onnxruntime
from bench.timing import cpu_median, format_seconds, time_calls

# name -> (cin, cout, kernel, stride, groups, size): shapes of MobileNet
# V1/V2/V3, UNet and ResNet blocks, and odd ones.
LAYERS = {
    "dw3s1-32x112": (32, 32, 3, 1, 32, 112),
    "dw3s2-64x112": (64, 64, 3, 2, 64, 112),
    "dw3s2-64x56": (64, 64, 3, 2, 64, 56),
    "dw3s1-512x14": (512, 512, 3, 1, 512, 14),
    "dw5s1-240x14": (240, 240, 5, 1, 240, 14),
    "dw3s1-37x29": (37, 37, 3, 1, 37, 29),
    "dw3s2-37x29": (37, 37, 3, 2, 37, 29),
    "pw-32to64x112": (32, 64, 1, 1, 1, 112),
    "pw-64to128x28": (64, 128, 1, 1, 1, 28),
    "pw-512to512x14": (512, 512, 1, 1, 1, 14),
    "pw-40to240x14": (40, 240, 1, 1, 1, 14),
    "pw-240to40x14": (240, 40, 1, 1, 1, 14),
    "pw-37to53x29": (37, 53, 1, 1, 1, 29),
    "c3-16to32x32": (16, 32, 3, 1, 1, 32),
    "c3-64to128x20s2": (64, 128, 3, 2, 1, 20),
    # Prime output channel counts (a peeled partial channel tile).
    "pw-64to97x14": (64, 97, 1, 1, 1, 14),
    "c3-24to53x41s2": (24, 53, 3, 2, 1, 41),
}


def layer(cin: int, cout: int, kernel: int, stride: int, groups: int) -> nn.Module:
    conv = nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups)
    return nn.Sequential(conv, nn.ReLU()).eval()


def _workloads(args: argparse.Namespace):
    """(name, batch, model, inputs) of each case: the layers named by
    ``--only`` (all by default), or the suite models of ``--models``."""
    batches = [int(b) for b in args.batches.split(",")]
    if args.models:
        for name in args.models.split(","):
            for batch in batches:
                torch.manual_seed(0)
                model, inputs = MODELS[name](batch)
                yield name, batch, model.eval(), inputs
        return
    prefixes = [p for p in args.only.split(",") if p]
    for name, (cin, cout, k, s, g, size) in LAYERS.items():
        if prefixes and not any(name.startswith(p) for p in prefixes):
            continue
        for batch in batches:
            torch.manual_seed(0)
            model = layer(cin, cout, k, s, g)
            yield name, batch, model, (torch.randn(batch, cin, size, size),)


def wall_median(run, args: tuple, budget: float) -> float:
    """Median wall-clock seconds of ``run(*args)`` (``time_calls``)."""
    return statistics.median(time_calls(lambda: run(*args), budget))


def _max_error(ours, eager) -> float:
    """Largest absolute difference over the outputs (a tensor or a tuple)."""
    pairs = zip(tree_leaves(ours), tree_leaves(eager), strict=True)
    return max((a - b).abs().max().item() for a, b in pairs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated name prefixes")
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--budget", type=float, default=0.2, help="CPU seconds per call series")
    parser.add_argument("--no-ort", action="store_true")
    parser.add_argument("--models", default="", help="comma-separated suite models instead")
    parser.add_argument("--threads", type=int, default=1, help="above 1: wall-clock figures")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    timer = cpu_median if args.threads == 1 else wall_median
    workdir = tempfile.mkdtemp()
    cases = []
    for name, batch, model, inputs in _workloads(args):
        compiled = lowerline.compile(model, *inputs, num_threads=args.threads)
        with torch.no_grad():
            error = _max_error(compiled(*inputs), model(*inputs))
        ort = None
        if not args.no_ort:
            ort, _ = onnxruntime(model, inputs, args.threads, tempfile.mkdtemp(dir=workdir))
        cases.append((f"{name}/b{batch}", model, compiled, inputs, ort, error))
    times: dict[str, list[tuple[float, float, float]]] = {c[0]: [] for c in cases}
    with torch.no_grad():
        for _ in range(args.rounds):
            for name, model, compiled, inputs, ort, _ in cases:
                eager = timer(model, inputs, args.budget)
                ours = timer(compiled, inputs, args.budget)
                peer = timer(ort, (), args.budget) if ort else float("nan")
                times[name].append((ours, eager, peer))
    print(f"lowerline from {os.path.dirname(lowerline.__file__)}")
    print("| case | lowerline | eager | ORT | lowerline / ORT | max error |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, *_rest, error in cases:
        ours, eager, peer = (statistics.median(t[i] for t in times[name]) for i in range(3))
        print(
            f"| {name} | {format_seconds(ours)} | {format_seconds(eager)} | "
            f"{format_seconds(peer)} | {ours / peer:.2f} | {error:.1e} |"
        )


if __name__ == "__main__":
    main()
