"""Dynamic dims against static specializations: measured.

    .venv/bin/python bench/dynamic.py [--threads 1] [--rounds 15] [--calls 20]
        [--models MLP,CNN] [--out bench/dynamic.md]

For the MLP and the CNN (dynamic batch) and the encoder layer (dynamic
batch, then dynamic sequence length), one artifact compiled with
``dynamic=`` serves every size of the table; each size also gets a static
artifact of its own (``lowerline.compile`` on that size). Both run in
interleaved rounds in this process: a round times ``--calls`` back-to-back
calls of each, in an order that alternates between rounds; the table shows
the minimum over the rounds (the steadier figure on a shared machine) and
dynamic / static. Writes bench/dynamic.md, or ``--out``; ``--models`` keeps
only the cases whose name starts with one of its comma-separated words.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch
from timing import save_result, settle
from torch import nn

import lowerline
from lowerline.examples.classifier import Classifier


def _mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10)).eval()


def _encoder() -> nn.Module:
    return nn.TransformerEncoderLayer(
        d_model=64, nhead=4, dim_feedforward=128, dropout=0.0, batch_first=True
    ).eval()


# name, model, input of a size, the dynamic spec, the sizes measured
CASES: list[tuple[str, Callable[[], nn.Module], Callable[[int], torch.Tensor], dict, list[int]]] = [
    ("MLP, batch", _mlp, lambda b: torch.randn(b, 256), {"input": {0: (1, 64)}}, [1, 8, 32]),
    (
        "CNN, batch",
        Classifier,
        lambda b: torch.randn(b, 3, 32, 32),
        {"images": {0: (1, 64)}},
        [1, 8, 32],
    ),
    (
        # torch's attention branches on a batch of 1: the range starts at 2.
        "encoder, batch (seq 32)",
        _encoder,
        lambda b: torch.randn(b, 32, 64),
        {"src": {0: (2, 64)}},
        [8, 2, 32],
    ),
    (
        "encoder, sequence (batch 2)",
        _encoder,
        lambda s: torch.randn(2, s, 64),
        {"src": {1: (2, 128)}},
        [17, 64, 128],
    ),
]


def _per_call(function: Callable, x: torch.Tensor, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        function(x)
    return (time.perf_counter() - start) / calls


def _measure(pair: list[Callable], x: torch.Tensor, rounds: int, calls: int) -> list[float]:
    best = [float("inf")] * len(pair)
    for function in pair:
        function(x)  # warm: the fast path's plan, the arena
    for round_index in range(rounds):
        order = range(len(pair)) if round_index % 2 == 0 else reversed(range(len(pair)))
        for index in order:
            best[index] = min(best[index], _per_call(pair[index], x, calls))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--models", default="", help="comma-separated name prefixes, e.g. MLP")
    parser.add_argument(
        "--out",
        default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "dynamic.md"),
    )
    args = parser.parse_args()
    prefixes = tuple(word.strip() for word in args.models.split(",") if word.strip())
    cases = [case for case in CASES if not prefixes or case[0].startswith(prefixes)]
    cache = tempfile.mkdtemp(prefix="lowerline-bench-dynamic-")
    rows = []
    with torch.no_grad():
        for name, make, example, dynamic, sizes in cases:
            torch.manual_seed(0)
            model = make().eval()
            options = {"num_threads": args.threads, "cache_dir": cache}
            compiled = lowerline.compile(model, example(sizes[0]), dynamic=dynamic, **options)
            for size in sorted(sizes):
                x = example(size)
                static = lowerline.compile(model, x, **options)
                settle()
                dyn, stat = _measure([compiled, static], x, args.rounds, args.calls)
                rows.append(
                    f"| {name} | {size} | {stat * 1e6:.0f} | {dyn * 1e6:.0f} | {dyn / stat:.2f} |"
                )
    text = (
        "# Dynamic dims against static specializations\n\n"
        f"`.venv/bin/python bench/dynamic.py --threads {args.threads} --rounds {args.rounds} "
        f"--calls {args.calls}`: microseconds per call, the minimum over interleaved rounds.\n\n"
        "| model | size | static us | dynamic us | dynamic / static |\n"
        "| --- | --- | --- | --- | --- |\n" + "\n".join(rows) + "\n"
    )
    save_result(args.out, text)


if __name__ == "__main__":
    main()
