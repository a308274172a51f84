"""TMTensor-level ops (issue 15): lowerline against eager, on one thread in
CPU time and on two threads in wall time.

    .venv/bin/python bench/tmtensor_ops.py --label after --out bench/tmtensor-ops.md

Cases: cumsum and cumprod of 512x4096 along each dimension, a stable sort
of 256x1000 along the last dimension and dimension 0, topk (k=5) of
64x50257, scatter_add of 16384x64 updates into 4096x64. Each case is
checked against eager, then timed in ``--rounds`` rounds in which eager and
lowerline alternate:

* ``1 thread, CPU``: ``time.thread_time`` of a call (``bench/timing.py``
  ``cpu_median``), eager at ``torch.set_num_threads(1)``, lowerline built
  with ``num_threads=1``: the time the thread computed, which a loaded
  machine leaves close to its quiet figure (waits for a core not counted);
* ``2 threads, wall``: wall-clock median with two threads each. On a
  loaded machine this mostly measures waits: a trend, not a figure.

A ratio is lowerline / eager (below 1: lowerline is faster), the median of
the rounds' ratios. Compiles bypass the cache (``cache=False``), so that a
run of another commit (see ``bench/cpu_time_ab.py`` for running one with
``PYTHONPATH``) measures its own code. ``--label`` names the column set
(``before``/``after``); the output is appended to ``--out``.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.utils._pytree as pytree
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import lowerline
from bench.timing import cpu_median, time_calls


class Fn(nn.Module):
    def __init__(self, fn: Callable[..., object]):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


@dataclass(frozen=True)
class Case:
    name: str
    fn: Callable[..., object]
    inputs: Callable[[], tuple[torch.Tensor, ...]]
    rtol: float = 1e-5
    atol: float = 1e-5


def _near_one(*shape: int) -> torch.Tensor:
    return torch.rand(*shape) * 0.02 + 0.99


CASES = [
    Case(
        "cumsum 512x4096 dim 0",
        lambda x: x.cumsum(0),
        lambda: (torch.randn(512, 4096),),
        1e-4,
        1e-4,
    ),
    Case(
        "cumsum 512x4096 dim 1",
        lambda x: x.cumsum(1),
        lambda: (torch.randn(512, 4096),),
        1e-4,
        1e-4,
    ),
    Case("cumprod 512x4096 dim 0", lambda x: x.cumprod(0), lambda: (_near_one(512, 4096),), 1e-4),
    Case("cumprod 512x4096 dim 1", lambda x: x.cumprod(1), lambda: (_near_one(512, 4096),), 1e-4),
    Case(
        "sort 256x1000 last dim",
        lambda x: torch.sort(x, dim=-1, stable=True),
        lambda: (torch.randn(256, 1000),),
    ),
    Case(
        "sort 256x1000 dim 0",
        lambda x: torch.sort(x, dim=0, stable=True),
        lambda: (torch.randn(256, 1000),),
    ),
    Case(
        "topk k=5 64x50257",
        lambda x: torch.topk(x, 5, dim=-1)[0],
        lambda: (torch.randn(64, 50257),),
    ),
    Case(
        "scatter_add 16384x64 into 4096x64",
        lambda x, i, s: x.scatter_add(0, i, s),
        lambda: (
            torch.randn(4096, 64),
            torch.randint(0, 4096, (16384, 64)),
            torch.randn(16384, 64),
        ),
        1e-4,
        1e-4,
    ),
]


def _check(case: Case, run: Callable[..., object], args: tuple) -> None:
    got, want = pytree.tree_leaves(run(*args)), pytree.tree_leaves(case.fn(*args))
    for a, b in zip(got, want, strict=True):
        torch.testing.assert_close(a, b, rtol=case.rtol, atol=case.atol)


def _wall(run: Callable[..., object], args: tuple, budget: float) -> float:
    return statistics.median(time_calls(lambda: run(*args), budget))


def _ratios(
    eager: Callable, mine: Callable, args: tuple, rounds: int, timer: Callable
) -> tuple[float, float, float]:
    """Medians over rounds of eager's time, lowerline's and their ratio."""
    pairs = []
    for _ in range(rounds):
        e, m = timer(eager, args), timer(mine, args)
        pairs.append((e, m, m / e))
    return tuple(statistics.median(p[k] for p in pairs) for k in range(3))  # type: ignore[return-value]


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f}"


def measure(case: Case, rounds: int, budget: float) -> str:
    torch.manual_seed(0)
    args = case.inputs()
    module = Fn(case.fn).eval()
    cells = []
    for threads, clock in ((1, "cpu"), (2, "wall")):
        torch.set_num_threads(threads)
        started = time.perf_counter()
        compiled = lowerline.compile(module, *args, num_threads=threads, cache=False)
        built = time.perf_counter() - started
        _check(case, compiled, args)
        timer = (
            (lambda r, a: cpu_median(r, a, budget))
            if clock == "cpu"
            else (lambda r, a: _wall(r, a, budget))
        )
        e, m, ratio = _ratios(case.fn, compiled, args, rounds, timer)
        cells += [_ms(e), _ms(m), f"{ratio:.2f}"]
        print(f"{case.name}: {threads} thread(s) built in {built:.1f} s", file=sys.stderr)
    return f"| {case.name} | " + " | ".join(cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="after")
    parser.add_argument("--out", default=None)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--budget", type=float, default=0.3, help="seconds per timing series")
    parser.add_argument("--cases", default="", help="comma-separated name prefixes (default: all)")
    args = parser.parse_args()
    wanted = [c for c in args.cases.split(",") if c]
    cases = [c for c in CASES if not wanted or any(c.name.startswith(w) for w in wanted)]
    lines = [
        f"## {args.label}: lowerline {os.path.dirname(lowerline.__file__)}",
        "",
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.1f} at the start; {args.rounds} rounds; ms per call.",
        "",
        "| case | eager 1t CPU | lowerline 1t CPU | ratio "
        "| eager 2t wall | lowerline 2t wall | ratio |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for case in cases:
        try:
            lines.append(measure(case, args.rounds, args.budget))
        except Exception as err:  # a failed case is reported, never dropped
            lines.append(f"| {case.name} | failed: {type(err).__name__}: {str(err)[:120]} |")
        print(lines[-1], file=sys.stderr)
    text = "\n".join(lines) + "\n\n"
    if args.out:
        with open(args.out, "a", encoding="utf-8") as handle:
            handle.write(text)
    print(text)


if __name__ == "__main__":
    main()
