"""lowerline's 2-thread calls beside another thread pool of the same process.

    .venv/bin/python bench/busy_pool.py [--models mlp_b1,mlp_b32,encoder]
        [--rounds 5] [--budget 0.3] [--out bench/busy-pool-ab.md]

Issue 14's setting (bench/suite.py times lowerline between peers in one
process) made small: each model is compiled at 1 and 2 threads and timed,
in interleaved rounds, in three scenes:

- ``quiet``: nothing else runs in this process;
- ``torch thread``: a Python thread runs torch ops back to back (torch at one
  thread; the GIL is released inside each op), so one core is taken all along;
- ``torch pool``: before each timed call the calling thread runs one torch
  matmul on torch's 2-thread OpenMP pool, which then spins (as ONNX Runtime's
  and inductor's pools do between suite.py's calls); only lowerline's call
  is timed.

and three ways: the 1-thread build, the 2-thread build with teams fixed at
2 (``LOWERLINE_OMP_TEAMS=fixed``'s behaviour) and with teams sized by the
free cores (the default, ``lowerline.runtime.teams``). Each cell is p10 /
median / p90 of all the calls of all rounds (wall time per call).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import speed
import torch
from timing import format_seconds, quantile, save_result, settle

import lowerline
from lowerline.runtime import teams

WAYS = ("1 thread", "2 threads, fixed team", "2 threads, load-sized team")
SCENES = ("quiet", "torch thread", "torch pool")
MODELS = {
    **speed.MODELS,
    "mlp_b32": lambda: (speed._mlp(), (torch.randn(32, 784),)),
}


@contextmanager
def torch_thread(on: bool):
    """A thread running 1-thread torch ops back to back while the block runs."""
    if not on:
        yield
        return
    stop = threading.Event()

    def spin() -> None:
        torch.set_num_threads(1)  # this thread's OpenMP setting: one core
        a = torch.randn(96, 96) / 96
        while not stop.is_set():
            a = torch.tanh(a @ a)

    worker = threading.Thread(target=spin)
    worker.start()
    try:
        time.sleep(0.05)
        yield
    finally:
        stop.set()
        worker.join()


POOL_OPERAND = torch.randn(128, 128)


def torch_pool_op() -> None:
    """One torch op on its 2-thread pool: the pool spins after it."""
    torch.mm(POOL_OPERAND, POOL_OPERAND)


def prepare(name: str) -> dict[str, tuple[Callable[[], None], Callable[[], object]]]:
    """The ways of running model ``name``: each a setup and a call."""
    torch.manual_seed(0)
    model, inputs = MODELS[name]()
    model = model.eval()
    one = lowerline.compile(model, *inputs, num_threads=1)
    two = lowerline.compile(model, *inputs, num_threads=2)
    expected = model(*inputs)
    for compiled in (one, two):
        torch.testing.assert_close(compiled(*inputs), expected, rtol=1e-4, atol=1e-4)
    return {
        WAYS[0]: (lambda: None, lambda: one(*inputs)),
        WAYS[1]: (lambda: teams.LIMIT.set_enabled(False), lambda: two(*inputs)),
        WAYS[2]: (lambda: teams.LIMIT.set_enabled(True), lambda: two(*inputs)),
    }


def time_scene(run: Callable[[], object], scene: str, budget: float) -> list[float]:
    """Seconds per call of ``run`` for ``budget`` seconds in ``scene``."""
    before = torch_pool_op if scene == "torch pool" else None
    times: list[float] = []
    started = time.perf_counter()
    while len(times) < 5 or time.perf_counter() - started < budget:
        if before is not None:
            before()
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return times


def measure(ways, scene: str, rounds: int, budget: float) -> dict[str, list[list[float]]]:
    """Per way, the call times of each round (rounds interleaved over ways)."""
    samples: dict[str, list[list[float]]] = {way: [] for way in ways}
    torch.set_num_threads(2)  # the torch pool scene's pool
    with torch_thread(scene == "torch thread"):
        for setup, run in ways.values():  # warm: arenas, frames, workers
            setup()
            time_scene(run, scene, 0.1)
        for _ in range(rounds):
            for way, (setup, run) in ways.items():
                setup()
                samples[way].append(time_scene(run, scene, budget))
    teams.LIMIT.set_enabled(True)
    return samples


def cell(rounds: list[list[float]]) -> str:
    calls = [t for times in rounds for t in times]
    low, middle, high = quantile(calls, 0.1), statistics.median(calls), quantile(calls, 0.9)
    return " / ".join(format_seconds(v) for v in (low, middle, high))


def report(results, args, loads) -> str:
    lines = [
        "# lowerline's 2-thread calls beside another pool of the same process (loaded machine)",
        "",
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on "
        f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}; "
        f"{args.rounds} interleaved rounds of {args.budget}s per way and scene; load "
        f"average (1 min) {loads[0]:.1f} before and {loads[1]:.1f} after: the machine was "
        "shared with other work, so no column is a quiet figure.",
        "",
        f"Command: `.venv/bin/python bench/busy_pool.py --models {args.models} "
        f"--rounds {args.rounds} --budget {args.budget}`",
        "",
        "p10 / median / p90 of every call's wall time over all rounds.",
        "",
        f"| model | way | {' | '.join(SCENES)} |",
        "| --- | --- | " + " | ".join("---" for _ in SCENES) + " |",
    ]
    for name, by_scene in results:
        for way in WAYS:
            cells = [cell(by_scene[scene][way]) for scene in SCENES]
            lines.append(f"| {name} | {way} | {' | '.join(cells)} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="mlp_b1,mlp_b32,encoder")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--budget", type=float, default=0.3)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "busy-pool-ab.md"))
    args = parser.parse_args()
    loads = [os.getloadavg()[0]]
    results = []
    with torch.inference_mode():
        for name in args.models.split(","):
            ways = prepare(name)
            settle()
            results.append(
                (name, {scene: measure(ways, scene, args.rounds, args.budget) for scene in SCENES})
            )
    loads.append(os.getloadavg()[0])
    save_result(args.out, report(results, args, loads))


if __name__ == "__main__":
    main()
