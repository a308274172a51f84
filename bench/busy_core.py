"""lowerline at 1 and 2 threads with and without a busy core: measured.

    .venv/bin/python bench/busy_core.py [--models mlp_b1,mlp_b32,convblock,encoder]
        [--rounds 3] [--budget 0.3] [--busy-core 1]

Compiles each model at 1 and 2 threads, then times three ways of running it
in one process, interleaved, in phases without and with a spinner (a Python
busy loop pinned to ``--busy-core`` with taskset):

- ``1 thread``: the 1-thread build;
- ``2 threads, fixed team``: the 2-thread build with lowerline's load check
  off (``LOWERLINE_OMP_TEAMS=fixed``) and ``omp_set_dynamic(0)`` on the
  calling thread: every region runs on 2 threads;
- ``2 threads, OpenMP dynamic team``: the check off, ``LOWERLINE_OMP_DYNAMIC=1``'s
  setting (``omp_set_dynamic(1)``: Intel's OpenMP runtime makes a team
  smaller while other threads keep the machine's cores busy);
- ``2 threads, load-sized team``: the default (``lowerline.runtime.teams``:
  each call's teams use the cores no other thread runs on).

The OpenMP runtime counts the machine's running threads at most once a
second, so each phase first calls every build for ``SETTLE_SECONDS``.
Writes bench/busy-core.md, with the load average: on a machine shared with
other work the phase without a spinner is loaded too.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import contextmanager

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import speed
import torch
from timing import format_seconds, quantile, save_result, settle, time_calls

import lowerline
from lowerline.runtime import teams

# Longer than the OpenMP runtime's interval between two counts of running
# threads (KMP_LOAD_BALANCE_INTERVAL, 1 s by default).
SETTLE_SECONDS = 1.2
WAYS = (
    "1 thread",
    "2 threads, fixed team",
    "2 threads, OpenMP dynamic team",
    "2 threads, load-sized team",
)
MODELS = {
    **speed.MODELS,
    "mlp_b32": lambda: (speed._mlp(), (torch.randn(32, 784),)),
}


@contextmanager
def spinner(core: int | None):
    """A process keeping ``core`` busy while the block runs (None: none)."""
    if core is None:
        yield
        return
    busy = "while True: pass"
    process = subprocess.Popen(["taskset", "-c", str(core), sys.executable, "-c", busy])
    try:
        time.sleep(0.2)  # started and spinning
        yield
    finally:
        process.kill()
        process.wait()


def _dynamic_teams(compiled: lowerline.CompiledModule) -> Callable[[bool], None]:
    """``omp_set_dynamic`` of the OpenMP runtime ``compiled`` runs on, for
    the calling thread (the runtime set it at the first call)."""
    lib = compiled.specializations[0].function._lib
    return lambda on: lib.omp_set_dynamic(ctypes.c_int(int(on)))


def prepare(name: str) -> dict[str, tuple[Callable[[], object], Callable[[], object]]]:
    """The three ways of running model ``name``: each a setup and a call."""
    torch.manual_seed(0)
    model, inputs = MODELS[name]()
    model = model.eval()
    one = lowerline.compile(model, *inputs, num_threads=1)
    two = lowerline.compile(model, *inputs, num_threads=2)
    expected = model(*inputs)
    for compiled in (one, two):
        torch.testing.assert_close(compiled(*inputs), expected, rtol=1e-4, atol=1e-4)
    set_dynamic = _dynamic_teams(two)

    def setup(dynamic: bool, load: bool) -> Callable[[], None]:
        def run() -> None:
            set_dynamic(dynamic)
            teams.LIMIT.set_enabled(load)

        return run

    return {
        WAYS[0]: (lambda: None, lambda: one(*inputs)),
        WAYS[1]: (setup(False, False), lambda: two(*inputs)),
        WAYS[2]: (setup(True, False), lambda: two(*inputs)),
        WAYS[3]: (setup(False, True), lambda: two(*inputs)),
    }


def measure(ways, rounds: int, budget: float, core: int | None) -> dict[str, list[float]]:
    """Seconds per call of each way: ``rounds`` interleaved medians."""
    samples: dict[str, list[float]] = {way: [] for way in ways}
    with spinner(core):
        for setup, run in ways.values():
            setup()
            time_calls(run, SETTLE_SECONDS / len(ways), max_calls=10**6)
        for _ in range(rounds):
            for way, (setup, run) in ways.items():
                setup()
                samples[way].append(statistics.median(time_calls(run, budget, max_calls=10**6)))
    return samples


def report(rows, args, loads) -> str:
    lines = [
        "# A 2-thread call with a busy core (loaded machine)",
        "",
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on "
        f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}; "
        f"{args.rounds} interleaved rounds of {args.budget}s per way; load average "
        f"(1 min) {loads[0]:.1f} before and {loads[1]:.1f} after.",
        "",
        "**Loaded**: the machine was shared with other work while this ran, so "
        "the columns without a spinner are not quiet figures.",
        "",
        "Command: `.venv/bin/python bench/busy_core.py "
        f"--models {args.models} --rounds {args.rounds} --budget {args.budget} "
        f"--busy-core {args.busy_core}`",
        "",
        "Medians of the rounds' median call times (range of the rounds' medians in brackets).",
        "",
        "| model | way | no spinner | spinner | spinner / 1 thread with spinner |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, free, busy in rows:
        one_busy = statistics.median(busy[WAYS[0]])
        for way in WAYS:
            cells = [_cell(free[way]), _cell(busy[way])]
            ratio = statistics.median(busy[way]) / one_busy
            lines.append(f"| {name} | {way} | {' | '.join(cells)} | {ratio:.2f} |")
    return "\n".join(lines) + "\n"


def _cell(values: list[float]) -> str:
    low, high = quantile(values, 0.0), quantile(values, 1.0)
    middle = statistics.median(values)
    return f"{format_seconds(middle)} ({format_seconds(low)}-{format_seconds(high)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="mlp_b1,mlp_b32,convblock,encoder")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--budget", type=float, default=0.3)
    parser.add_argument("--busy-core", type=int, default=(os.cpu_count() or 1) - 1)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "busy-core.md"))
    args = parser.parse_args()
    torch.set_num_threads(1)  # eager runs only to check the outputs
    loads = [os.getloadavg()[0]]
    rows = []
    with torch.inference_mode():
        for name in args.models.split(","):
            ways = prepare(name)
            settle()
            free = measure(ways, args.rounds, args.budget, None)
            busy = measure(ways, args.rounds, args.budget, args.busy_core)
            rows.append((name, free, busy))
    loads.append(os.getloadavg()[0])
    save_result(args.out, report(rows, args, loads))


if __name__ == "__main__":
    main()
