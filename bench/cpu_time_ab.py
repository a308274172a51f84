"""Suite models on one thread: lowerline / eager in CPU time, for A/B
comparisons on a loaded machine.

    .venv/bin/python bench/cpu_time_ab.py resnet_basic,vgg_block 1,8 [--rounds 5]

Each case's lowerline and eager calls alternate within every round; a call
is timed with ``time.thread_time`` (the calling thread's CPU time, which
does not count the time the thread waits for a core), and a round's ratio is
the median lowerline call over the median eager call. Only one thread, so
that all the work is in the calling thread. The figures are not wall-clock
latencies: use ``bench/suite.py`` on a quiet machine for those.

To compare with another commit, export it (``git archive REV | tar -x -C
DIR``), link ``DIR/passes``, ``DIR/dialects`` and ``DIR/tools`` into
``DIR/python/lowerline/`` and run this script with ``PYTHONPATH=DIR/python``
(the compile workers inherit it).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import lowerline
from bench.models import MODELS
from bench.timing import cpu_median


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models")
    parser.add_argument("batches")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--budget", type=float, default=0.2, help="CPU seconds per call series")
    args = parser.parse_args()
    torch.set_num_threads(1)
    cases = []
    for name in args.models.split(","):
        for batch in (int(b) for b in args.batches.split(",")):
            torch.manual_seed(0)
            model, inputs = MODELS[name](batch)
            model.eval()
            compiled = lowerline.compile(model, *inputs, num_threads=1)
            cases.append((f"{name}/b{batch}", model, compiled, inputs))
    ratios: dict[str, list[float]] = {case[0]: [] for case in cases}
    with torch.no_grad():
        for _ in range(args.rounds):
            for name, model, compiled, inputs in cases:
                eager = cpu_median(model, inputs, args.budget)
                ratios[name].append(cpu_median(compiled, inputs, args.budget) / eager)
    print(f"lowerline from {os.path.dirname(lowerline.__file__)}")
    print("| case | lowerline / eager, median | min |\n| --- | --- | --- |")
    for name, values in ratios.items():
        print(f"| {name} | {statistics.median(values):.2f} | {min(values):.2f} |")


if __name__ == "__main__":
    main()
