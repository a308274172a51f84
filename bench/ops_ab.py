"""Single ops of ``bench/ops.py``: A/B of two lowerline builds and eager, 1 thread, CPU time.

    # with each build's lowerline (the base exported with ``git archive``,
    # passes/dialects/tools linked into python/lowerline, run through PYTHONPATH):
    .venv/bin/python bench/ops_ab.py save /tmp/ab/base --ops sum,softmax --shapes 64x50257
    .venv/bin/python bench/ops_ab.py save /tmp/ab/after --ops sum,softmax --shapes 64x50257
    # then one process times eager, base and after interleaved:
    .venv/bin/python bench/ops_ab.py time /tmp/ab/base /tmp/ab/after --ops sum,softmax \\
        --shapes 64x50257 --rounds 5

The cells (op, shape, axis, inputs) are ``bench/ops.py``'s. Each build is
saved at 1 thread (``compiled.save``) and the two are loaded side by side in
one process, so that a loaded machine's drift hits both alike. Every round
times eager, base and after in turn, each the median thread CPU time of a
series of calls (``timing.cpu_median``); a ratio is the median over rounds
(min-max).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

import torch
from ops import SHAPES, select_cells
from timing import cpu_median, settle


def _file(folder: str, label: str) -> str:
    return os.path.join(folder, f"{label.replace(' ', '_')}.llm")


def _cells(args: argparse.Namespace):
    return select_cells(args.ops.split(","), args.shapes.split(","))


def save(folder: str, args: argparse.Namespace) -> None:
    import lowerline

    os.makedirs(folder, exist_ok=True)
    print(f"lowerline from {os.path.dirname(lowerline.__file__)}", file=sys.stderr)
    for cell in _cells(args):
        module, inputs = cell.build()
        compiled = lowerline.compile(module, *inputs, num_threads=1, cache=False)
        compiled.save(_file(folder, cell.label))
        print(f"saved {cell.label}", file=sys.stderr)


def _ratio(a: list[float], b: list[float]) -> str:
    ratios = [x / y for x, y in zip(a, b, strict=True)]
    return f"{statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f})"


def _us(values: list[float]) -> str:
    return f"{min(values) * 1e6:.1f}-{max(values) * 1e6:.1f}"


def time_builds(base: str, after: str, args: argparse.Namespace) -> None:
    import lowerline.saved

    torch.set_num_threads(1)
    lines = [
        "| cell | eager us | base us | after us | base / eager | after / eager | after / base |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for cell in _cells(args):
        module, inputs = cell.build()
        builds = [lowerline.saved.load(_file(d, cell.label)) for d in (base, after)]
        with torch.no_grad():
            want = module(*inputs)
            for build in builds:
                torch.testing.assert_close(build(*inputs), want, rtol=1e-3, atol=1e-4)
        settle()
        times: dict[str, list[float]] = {"eager": [], "base": [], "after": []}
        with torch.inference_mode():
            for _ in range(args.rounds):
                times["eager"].append(cpu_median(module, inputs, args.budget))
                for key, build in zip(("base", "after"), builds, strict=True):
                    times[key].append(cpu_median(build, inputs, args.budget))
        row = [
            cell.label,
            _us(times["eager"]),
            _us(times["base"]),
            _us(times["after"]),
            _ratio(times["base"], times["eager"]),
            _ratio(times["after"], times["eager"]),
            _ratio(times["after"], times["base"]),
        ]
        lines.append("| " + " | ".join(row) + " |")
        print(lines[-1], file=sys.stderr)
    print("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["save", "time"])
    parser.add_argument("folders", nargs="+")
    parser.add_argument("--ops", required=True, help="op names or families of bench/ops.py")
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--budget", type=float, default=0.1, help="CPU seconds per series")
    args = parser.parse_args()
    if args.mode == "save":
        save(args.folders[0], args)
    else:
        time_builds(args.folders[0], args.folders[1], args)


if __name__ == "__main__":
    main()
