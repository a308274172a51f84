"""How long each system's thread pool spins after its block, and what that
does to a lowerline block timed right after eager's (issue 14).

    .venv/bin/python bench/pool_spin.py [--model resnet_basic] [--batch 1]
        [--threads 2] [--rounds 5] [--in-process] [--out bench/pool-spin-ab.md]

Part 1: eager, ONNX Runtime and lowerline each run a block of 50 calls; then
the CPU time their pool threads use (``/proc/self/task/*/schedstat``) and how
long any of them stays runnable (state R, polled every 0.2 ms for 0.5 s).

Part 2: ``bench/suite.py``'s order on one case, eager's block then
lowerline's block, in interleaved rounds of two ways: the next block starts
at once (the protocol before ``--block-settle``), or after
``timing.settle_threads`` (the protocol now). For each way: how many of
lowerline's calls ran with a team shrunk below ``--threads``
(``lowerline.runtime.teams``, which counts the machine's running threads),
and their wall times.

On a loaded machine the team check finds other processes' threads and
shrinks every team, whatever runs in this process. ``--in-process`` makes
the check count only this process's running threads (as on a quiet
machine); the scheduler still shares the cores with the other processes, so
wall times then are not quiet figures.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch
from models import build
from peers import SYSTEMS
from timing import format_seconds, save_result, settle, settle_threads, time_calls

from lowerline.runtime import teams


def _tids() -> set[str]:
    return set(os.listdir("/proc/self/task"))


def _stat_state(tid: str) -> str:
    try:
        with open(f"/proc/self/task/{tid}/stat", encoding="ascii", errors="replace") as handle:
            return handle.read().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return ""


def _cpu_ns(tids: set[str]) -> int:
    total = 0
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/schedstat", encoding="ascii") as handle:
                total += int(handle.read().split()[0])
        except (OSError, IndexError, ValueError):
            continue
    return total


def _running_here(_reader: teams.ProcReader) -> int:
    """``--in-process``: the runnable count the check sees, this process only."""
    return sum(_stat_state(tid) == "R" for tid in _tids())


def prepare(model, inputs, threads: int) -> dict[str, tuple[object, set[str]]]:
    """Each system's runner and the threads its setup and first call made.
    torch's pool is made by the first eager call at ``threads``."""
    me = str(threading.get_native_id())
    runners = {}
    for system in ("eager", "onnxruntime", "lowerline"):
        before = _tids()
        run, _ = SYSTEMS[system](model, inputs, threads, tempfile.mkdtemp(), None)
        run()
        runners[system] = (run, _tids() - before - {me})
    return runners


def spin_after_block(runners, trials: int) -> list[str]:
    lines = ["| system | pool threads | CPU after the block | runnable until |"]
    lines.append("| --- | --- | --- | --- |")
    for system, (run, tids) in runners.items():
        cpu, until = [], []
        for _ in range(trials):
            for _ in range(50):
                run()
            start_cpu, start = _cpu_ns(tids), time.perf_counter()
            last = 0.0
            while time.perf_counter() - start < 0.5:
                if any(_stat_state(t) == "R" for t in tids):
                    last = time.perf_counter() - start
                time.sleep(0.0002)
            cpu.append((_cpu_ns(tids) - start_cpu) / 1e9)
            until.append(last)
            time.sleep(0.5)
        lines.append(
            f"| {system} | {len(tids)} | {format_seconds(min(cpu))}-{format_seconds(max(cpu))} "
            f"| {format_seconds(min(until))}-{format_seconds(max(until))} |"
        )
    return lines


def after_eager(runners, threads: int, rounds: int, budget: float) -> list[str]:
    eager, ll = runners["eager"][0], runners["lowerline"][0]
    ways = {"at once": False, "after settle_threads": True}
    calls: dict[str, list[tuple[float, int]]] = {way: [] for way in ways}
    waits = []
    for _ in range(rounds):
        for way, wait in ways.items():
            time_calls(eager, budget)
            if wait:
                waits.append(settle_threads())
            started = time.perf_counter()
            while time.perf_counter() - started < budget:
                start = time.perf_counter()
                ll()
                calls[way].append((time.perf_counter() - start, teams.LIMIT.value))
            settle_threads()  # the next eager block starts alike in both ways
    lines = ["| way | calls | on a shrunk team | median | min | median, full team |"]
    lines.append("| --- | --- | --- | --- | --- | --- |")
    for way, got in calls.items():
        times = [t for t, _ in got]
        shrunk = sum(0 < limit < threads for _, limit in got)
        full = [t for t, limit in got if not 0 < limit < threads] or [float("nan")]
        lines.append(
            f"| {way} | {len(got)} | {shrunk} ({100 * shrunk / len(got):.0f}%) | "
            f"{format_seconds(statistics.median(times))} | {format_seconds(min(times))} | "
            f"{format_seconds(statistics.median(full))} |"
        )
    lines += ["", f"settle_threads after eager's blocks waited {format_seconds(min(waits))}-"]
    lines[-1] += f"{format_seconds(max(waits))}."
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="resnet_basic")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--budget", type=float, default=0.1, help="seconds per block")
    parser.add_argument("--in-process", action="store_true")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "pool-spin-ab.md"))
    args = parser.parse_args()
    if args.in_process:
        teams.ProcReader.runnable = _running_here  # type: ignore[method-assign]
    torch.set_num_threads(args.threads)
    model, inputs = build(args.model, args.batch)
    runners = prepare(model, inputs, args.threads)
    settle()
    load = os.getloadavg()[0]
    spin = spin_after_block(runners, trials=3)
    order = after_eager(runners, args.threads, args.rounds, args.budget)
    check = "only this process's" if args.in_process else "the machine's"
    text = "\n".join(
        [
            f"# Pools spinning after their block: {args.model}/b{args.batch}, "
            f"{args.threads} threads",
            "",
            f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on "
            f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}; "
            f"load average (1 min) {load:.1f} before and {os.getloadavg()[0]:.1f} after; "
            f"the team check counted {check} running threads"
            + (" (`--in-process`)." if args.in_process else "."),
            "",
            f"Command: `{' '.join([os.path.relpath(sys.executable), *sys.argv])}`",
            "",
            "## After a block of 50 calls (3 trials, ranges)",
            "",
            *spin,
            "",
            f"## lowerline's block right after eager's ({args.rounds} interleaved rounds, "
            f"{args.budget}s blocks)",
            "",
            *order,
            "",
        ]
    )
    save_result(args.out, text)


if __name__ == "__main__":
    main()
