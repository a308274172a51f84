"""Timing helpers shared by the benchmarks (``speed.py``, ``ops.py``).

No torch import here: a benchmark sets its OpenMP environment before torch
loads, and importing this module must not load torch first.
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time
from collections.abc import Callable


def _children_cpu_ticks() -> int | None:
    """CPU ticks used so far by this process's child processes (Linux's
    /proc), or None where there is no /proc."""
    me, total = str(os.getpid()), 0
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if fields[1] == me:  # ppid; utime and stime follow at 11 and 12
            total += int(fields[11]) + int(fields[12])
    return total


def settle(quiet: float = 0.5, limit: float = 30.0) -> float:
    """Wait until this process's children have used no CPU for ``quiet``
    seconds (at most ``limit``); the seconds waited.

    ``lowerline.compile`` starts its workers ahead of the next compile, and
    a worker warming up (importing torch and torch_mlir, about 2 s of CPU)
    outlives a compile served from the cache. Timed meanwhile, a 2-thread
    call on a 2-core machine measured 233 us instead of 46 us: every
    benchmark settles after its compiles, before its first timed call."""
    started = time.monotonic()
    last = _children_cpu_ticks()
    quiet_since = started
    while last is not None and time.monotonic() - started < limit:
        time.sleep(0.1)
        now = _children_cpu_ticks()
        if now != last:
            last, quiet_since = now, time.monotonic()
        elif time.monotonic() - quiet_since >= quiet:
            break
    return time.monotonic() - started


def _other_running_threads() -> int | None:
    """This process's threads that are running or waiting for a core
    (state R in /proc), the calling thread left out; None where there is
    no /proc."""
    me, count = str(threading.get_native_id()), 0
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return None
    for tid in tids:
        if tid == me:
            continue
        try:
            with open(f"/proc/self/task/{tid}/stat", encoding="ascii", errors="replace") as handle:
                state = handle.read().rpartition(")")[2].split()[0]
        except (OSError, IndexError):
            continue  # gone meanwhile
        count += state == "R"
    return count


def settle_threads(limit: float = 1.0, poll: float = 0.002) -> float:
    """Wait until no other thread of this process is running (at most
    ``limit`` seconds); the seconds waited.

    A thread pool spins for a while after its last task before it sleeps
    (measured after a block of 50 calls of resnet_basic at batch 1, 2
    threads: ONNX Runtime's pool 24-33 ms of CPU, torch's OpenMP pool 3-9
    ms). A system timed right after another one's block shares the cores
    with that spinning for its first calls: on the 2-core machine, 2-thread
    calls then run at one thread's speed. Benchmarks that interleave systems
    call this after each system's block, the same for every system."""
    started = time.monotonic()
    while time.monotonic() - started < limit:
        running = _other_running_threads()
        if not running:  # 0, or None: no /proc to read
            break
        time.sleep(poll)
    return time.monotonic() - started


def time_calls(
    run: Callable[[], object], budget: float, min_calls: int = 3, max_calls: int = 200
) -> list[float]:
    """Seconds per call of ``run``: at least ``min_calls`` calls, then calls
    until ``budget`` seconds have passed or ``max_calls`` calls were made."""
    times = []
    started = time.perf_counter()
    while len(times) < min_calls or time.perf_counter() - started < budget:
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
        if len(times) >= max_calls:
            break
    return times


def cpu_median(run: Callable[..., object], args: tuple, budget: float) -> float:
    """Median CPU seconds of ``run(*args)`` in the calling thread: at least 5
    calls, then calls until ``budget`` CPU seconds have passed.

    ``time.thread_time`` does not count the time the thread waits for a core,
    so on a loaded machine this stays close to the quiet figure where wall
    time does not; it misses work done on other threads, so only for runs on
    one thread."""
    times: list[float] = []
    started = time.thread_time()
    while len(times) < 5 or time.thread_time() - started < budget:
        start = time.thread_time()
        run(*args)
        times.append(time.thread_time() - start)
    return statistics.median(times)


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def format_seconds(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.1f} us"


def first_line(err: BaseException, limit: int = 160) -> str:
    """``Type: first line of the message``, for a one-line failure reason."""
    text = str(err).strip()
    line = text.splitlines()[0][:limit] if text else ""
    return f"{type(err).__name__}: {line}" if line else type(err).__name__


def save_result(path: str, text: str) -> None:
    """Writes a benchmark's markdown result and prints it."""
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    print(text)


def model_rounds_parser(doc: str, models: str) -> argparse.ArgumentParser:
    """``--models`` (comma-separated names of speed.MODELS), ``--threads`` and
    ``--rounds`` (interleaved timing rounds) of a benchmark described by ``doc``."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--models", default=models)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    return parser


def model_rounds_args(doc: str, models: str) -> argparse.Namespace:
    """The parsed ``model_rounds_parser`` flags."""
    return model_rounds_parser(doc, models).parse_args()
