"""Per-kernel timing and the roofline of the explorer's page.

What is measured, and how:

* **kernels**: an explorer build (``CpuOptions.time_kernels``) brackets each
  top-level kernel of the entry function with timer calls
  (``lowerline-time-kernels``); ``time_kernels`` calls the library ``calls``
  times after a warm-up call and reads the nanoseconds each kernel took
  (``NativeFunction.kernel_times``), and the wall time of each whole call.
  A kernel's flop and bytes are counted by the pass from the IR (its remark,
  ``KERNEL_TEXT``): bytes are the buffers it touches, once each.
* **peaks** (``peaks``): FLOP/s of a 1024x1024 f32 matmul in torch (its
  BLAS, on as many threads as the library uses: a stand-in for the
  machine's FMA peak, not a lowerline kernel) and copy bandwidth of a 64 MiB
  f32 ``copy_`` (read plus write bytes), the best of a few runs each.
  Measured once per machine (CPU model and thread count) and kept in
  ``peaks.json`` in the user's cache folder.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

# lowerline-time-kernels' remark (its KERNEL_FORMAT), one per kernel.
KERNEL_TEXT = re.compile(r"^kernel (\d+): (\d+|\?) flop, (\d+) bytes$")
TIMER_PASS = "lowerline-time-kernels"
PEAKS_FILE = "peaks.json"
_MATMUL_SIZE = 1024
_COPY_BYTES = 64 << 20


def kernels(remarks: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The kernels the timer pass numbered, from its remarks, in order."""
    found = []
    for remark in remarks:
        match = KERNEL_TEXT.match(remark["message"]) if remark["pass_flag"] == TIMER_PASS else None
        if match:
            frames = remark.get("frames") or []
            found.append(
                {
                    "index": int(match[1]),
                    "op": remark["op"],
                    "flop": None if match[2] == "?" else int(match[2]),
                    "bytes": int(match[3]),
                    "source": frames[-1] if frames else "",
                }
            )
    return sorted(found, key=lambda k: k["index"])


def time_kernels(
    call: Callable[[], Any], read: Callable[[int], list[tuple[int, int]]], count: int, calls: int
) -> dict[str, Any]:
    """Per kernel, the mean nanoseconds of a call over ``calls`` calls (after
    one warm-up call, not counted), and the whole calls' fastest and slowest
    wall nanoseconds: the kernels of one call sum to less than its wall time
    (the time between kernels, the call's own overhead)."""
    call()
    read(count)  # clears the warm-up call's times
    walls = []
    for _ in range(calls):
        start = time.perf_counter_ns()
        call()
        walls.append(time.perf_counter_ns() - start)
    times = read(count)
    return {
        "calls": calls,
        "kernel_ns": [ns / max(n, 1) for ns, n in times],
        "kernel_calls": [n for _, n in times],
        "wall_ns": [min(walls), max(walls)],
    }


def rows(
    found: list[dict[str, Any]], timing: dict[str, Any], peak: dict[str, Any]
) -> list[dict[str, Any]]:
    """The page's table: per kernel, its time, FLOP/s, bytes/s, arithmetic
    intensity and the fraction of the roof over it (the smaller of the
    peak FLOP/s and intensity times the peak bandwidth)."""
    table = []
    for kernel in found:
        ns = timing["kernel_ns"][kernel["index"]]
        seconds = ns / 1e9
        flops = kernel["flop"] / seconds if kernel["flop"] is not None and seconds else None
        bandwidth = kernel["bytes"] / seconds if seconds else None
        intensity = kernel["flop"] / kernel["bytes"] if kernel["flop"] and kernel["bytes"] else None
        roof = (
            min(peak["flops"], intensity * peak["bytes_per_s"]) if intensity is not None else None
        )
        fraction = flops / roof if flops is not None and roof else None
        table.append(
            {
                **kernel,
                "ns": ns,
                "runs": timing["kernel_calls"][kernel["index"]],  # over the timed calls
                "flops": flops,
                "bytes_per_s": bandwidth,
                "intensity": intensity,
                "fraction": fraction,
            }
        )
    return table


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Model", "CPU part"):
                    return value.strip()
    except OSError:
        pass
    return "unknown CPU"


def _best_seconds(work: Callable[[], Any], runs: int = 5) -> float:
    work()
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return best


def measure_peaks(threads: int) -> dict[str, Any]:
    """The machine's peak FLOP/s (torch matmul) and copy bytes/s on ``threads``."""
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        n = _MATMUL_SIZE
        a, b = torch.rand(n, n), torch.rand(n, n)
        out = torch.empty(n, n)
        flops = 2 * n**3 / _best_seconds(lambda: torch.mm(a, b, out=out))
        source = torch.rand(_COPY_BYTES // 4)
        target = torch.empty_like(source)
        bandwidth = 2 * _COPY_BYTES / _best_seconds(lambda: target.copy_(source))
    finally:
        torch.set_num_threads(before)
    return {
        "flops": flops,
        "bytes_per_s": bandwidth,
        "how": f"torch {n}x{n} f32 matmul; {_COPY_BYTES >> 20} MiB f32 copy (read + write)",
    }


def peaks(folder: str, threads: int, measure: Callable[[int], dict] = measure_peaks) -> dict:
    """The peaks of this machine on ``threads`` threads, measured on the first
    request and kept in ``folder/peaks.json`` under the CPU model and thread
    count (``cached`` says whether they came from there). An unreadable file
    is measured again; an unwritable folder keeps them for this call only."""
    key = f"{_cpu_model()}|{threads} threads"
    path = os.path.join(folder, PEAKS_FILE)
    known: dict[str, Any] = {}
    try:
        with open(path, encoding="utf-8") as handle:
            known = json.load(handle)
    except (OSError, ValueError):
        known = {}
    if key in known:
        return {**known[key], "key": key, "cached": True}
    known[key] = measure(threads)
    try:
        os.makedirs(folder, exist_ok=True)
        temporary = f"{path}.{os.getpid()}"
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump(known, handle, indent=1)
        os.replace(temporary, path)
    except OSError:
        pass
    return {**known[key], "key": key, "cached": False}
