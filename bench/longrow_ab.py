"""One long row's norms and variance: A/B of two lowerline builds and eager.

    # with each build's lowerline (the base exported with ``git archive``,
    # passes/dialects/tools linked into python/lowerline, run through PYTHONPATH):
    .venv/bin/python bench/longrow_ab.py save /tmp/ab/base
    .venv/bin/python bench/longrow_ab.py save /tmp/ab/after
    # then one process times eager, base and after interleaved:
    .venv/bin/python bench/longrow_ab.py time /tmp/ab/base /tmp/ab/after --rounds 5

Cases: rows fewer than the cores with a variance over a long row (group
norm with one group, channels first as ``bench/ops.py``'s ``Rowwise``;
layer norm and ``var`` of a batch of one). Each build is saved at 1 and 2
threads (``compiled.save``). 1 thread: median thread CPU time
(``timing.cpu_median``), a loaded machine's usable figure. 2 threads: the
median wall time of each series (``timing.time_calls``), with teams of the
compiled size (``LOWERLINE_OMP_TEAMS=fixed``, set here), so that the
2-thread code runs its 2-thread path; on a loaded machine only the ratio
of the two builds means much. A ratio is the median over rounds (min-max).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

os.environ.setdefault("LOWERLINE_OMP_TEAMS", "fixed")

import torch
import torch.nn.functional as F
from timing import cpu_median, settle, time_calls


class ChannelsFirst(torch.nn.Module):
    """``norm`` of the input seen as (1, rows, cols), as bench/ops.py does."""

    def __init__(self, norm: torch.nn.Module):
        super().__init__()
        self.norm = norm

    def forward(self, x):
        return self.norm(x.unsqueeze(0)).squeeze(0)


class LayerNorm(torch.nn.Module):
    def forward(self, x):
        return F.layer_norm(x, x.shape[-1:])


class Var(torch.nn.Module):
    def forward(self, x):
        return torch.var(x, -1)


def _group_norm(channels: int) -> torch.nn.Module:
    norm = torch.nn.GroupNorm(1, channels)
    with torch.no_grad():
        for param in norm.parameters():
            param.uniform_(0.5, 1.5)
    return ChannelsFirst(norm)


CASES = {
    "group_norm 1 group 2x65536": (lambda: _group_norm(2), (2, 65536)),
    "group_norm 1 group 64x50257": (lambda: _group_norm(64), (64, 50257)),
    "layer_norm 1x393216": (LayerNorm, (1, 393216)),
    "var 1x393216": (Var, (1, 393216)),
}


def _case(name: str) -> tuple[torch.nn.Module, torch.Tensor]:
    make, shape = CASES[name]
    torch.manual_seed(0)
    return make().eval(), torch.randn(*shape) * 2 + 0.5


def _file(folder: str, name: str, threads: int) -> str:
    return os.path.join(folder, f"{name.replace(' ', '_')}-t{threads}.llm")


def save(folder: str) -> None:
    import lowerline

    os.makedirs(folder, exist_ok=True)
    print(f"lowerline from {os.path.dirname(lowerline.__file__)}")
    for name in CASES:
        module, x = _case(name)
        for threads in (1, 2):
            compiled = lowerline.compile(module, x, num_threads=threads)
            compiled.save(_file(folder, name, threads))


def _wall(run, x, budget: float) -> float:
    return statistics.median(time_calls(lambda: run(x), budget))


def time_builds(base: str, after: str, rounds: int, budget: float) -> None:
    import lowerline.saved

    lines = [
        "| case | threads | eager | base | after | base / eager | after / eager | after / base |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name in CASES:
        module, x = _case(name)
        for threads in (1, 2):
            torch.set_num_threads(threads)
            builds = [lowerline.saved.load(_file(d, name, threads)) for d in (base, after)]
            with torch.no_grad():
                want = module(x)
                for build in builds:
                    torch.testing.assert_close(build(x), want, rtol=1e-4, atol=1e-4)
            settle()
            timer = cpu_median if threads == 1 else _wall
            times: dict[str, list[float]] = {"eager": [], "base": [], "after": []}
            with torch.no_grad():
                for _ in range(rounds):
                    times["eager"].append(timer(module, (x,) if threads == 1 else x, budget))
                    for key, build in zip(("base", "after"), builds, strict=True):
                        times[key].append(timer(build, (x,) if threads == 1 else x, budget))
            lines.append(_row(name, threads, times))
            print(lines[-1], file=sys.stderr)
    print("\n".join(lines))


def _ms(values: list[float]) -> str:
    return f"{min(values) * 1e3:.2f}-{max(values) * 1e3:.2f}"


def _ratio(a: list[float], b: list[float]) -> str:
    ratios = [x / y for x, y in zip(a, b, strict=True)]
    return f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})"


def _row(name: str, threads: int, t: dict[str, list[float]]) -> str:
    cells = [
        name,
        str(threads),
        _ms(t["eager"]),
        _ms(t["base"]),
        _ms(t["after"]),
        _ratio(t["base"], t["eager"]),
        _ratio(t["after"], t["eager"]),
        _ratio(t["after"], t["base"]),
    ]
    return "| " + " | ".join(cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["save", "time"])
    parser.add_argument("folders", nargs="+")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--budget", type=float, default=0.2, help="seconds per series")
    args = parser.parse_args()
    if args.mode == "save":
        save(args.folders[0])
    else:
        time_builds(args.folders[0], args.folders[1], args.rounds, args.budget)


if __name__ == "__main__":
    main()
