"""One artifact in many fresh processes: is its call time the same in each?

    .venv/bin/python bench/process_spread.py [--processes 6] [--batch 8] [--threads 1]
        [--rounds 20] [--calls 10] [--no-winograd] [--arena-offsets 0,64,4096]

The model is the CNN of ``bench/dynamic.py`` (``lowerline.examples.classifier``,
32 x 32 images). It is compiled once into a cache, then each of
``--processes`` fresh Python processes loads it from there and times
``--rounds`` rounds of ``--calls`` calls, in wall time and in the calling
thread's CPU time (``time.thread_time``: on a shared machine it leaves out
the time the thread waits for a core, which wall time does not; with one
thread all the work is on the calling thread). A process that is slow in CPU
time too runs slower code or misses caches (placement, contents of memory); one
slow only in wall time waited for a core.

``--arena-offsets`` makes each process also time the call with its arena
moved to each of those byte offsets from a 64 KiB boundary (the placement
that 4 KiB-aliasing or cache-set conflicts between the arena's buffers and
the weights or inputs would depend on). Prints a table; nothing is saved.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

CHILD = "--child"


def _model_and_input(batch: int):
    import torch

    from lowerline.examples.classifier import Classifier

    torch.manual_seed(0)
    return Classifier().eval(), torch.randn(batch, 3, 32, 32)


def _compile(args: argparse.Namespace):
    import lowerline

    model, x = _model_and_input(args.batch)
    options = {"num_threads": args.threads, "cache_dir": args.cache, "winograd": args.winograd}
    return lowerline.compile(model, x, **options), x


def _rounds(compiled, x, rounds: int, calls: int) -> dict[str, float]:
    """Min and median per-call wall and CPU microseconds over the rounds."""
    wall, cpu = [], []
    for _ in range(rounds):
        start, start_cpu = time.perf_counter(), time.thread_time()
        for _ in range(calls):
            compiled(x)
        wall.append((time.perf_counter() - start) / calls * 1e6)
        cpu.append((time.thread_time() - start_cpu) / calls * 1e6)
    return {
        "wall_min": min(wall),
        "wall_median": statistics.median(wall),
        "cpu_min": min(cpu),
        "cpu_median": statistics.median(cpu),
    }


def _place_arena(compiled, offset: int, keep: list) -> None:
    """The next call's arena at ``offset`` bytes past a 64 KiB boundary."""
    import torch

    pool = compiled.specializations[0].function.arenas
    raw = torch.empty(pool.size + offset + (1 << 16), dtype=torch.uint8)
    start = -raw.data_ptr() % (1 << 16) + offset
    keep.append(raw)
    pool._free[:] = [raw[start : start + pool.size]]  # after a call: one free arena


def child(args: argparse.Namespace) -> None:
    import torch

    compiled, x = _compile(args)
    rows, keep = [], []
    with torch.no_grad():
        for _ in range(args.calls):
            compiled(x)  # warm: the arena, the call frame
        rows.append({"arena": "default", **_rounds(compiled, x, args.rounds, args.calls)})
        for offset in args.arena_offsets:
            _place_arena(compiled, offset, keep)
            compiled(x)
            rows.append({"arena": offset, **_rounds(compiled, x, args.rounds, args.calls)})
    print(json.dumps(rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=6)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--no-winograd", dest="winograd", action="store_false")
    parser.add_argument(
        "--arena-offsets",
        type=lambda text: [int(v) for v in text.split(",") if v],
        default=[],
        help="comma-separated byte offsets from a 64 KiB boundary",
    )
    parser.add_argument("--cache", default="", help="compile cache (default: a new one)")
    parser.add_argument(CHILD, action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    args.cache = args.cache or tempfile.mkdtemp(prefix="lowerline-process-spread-")
    _compile(args)  # once, here: the processes load it from the cache
    command = [sys.executable, os.path.abspath(__file__), CHILD, *sys.argv[1:]]
    command += ["--cache", args.cache]
    print("| process | arena | wall min us | wall median us | CPU min us | CPU median us |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for process in range(args.processes):
        out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        for row in json.loads(out.strip().splitlines()[-1]):
            figures = " | ".join(
                f"{row[k]:.0f}" for k in ("wall_min", "wall_median", "cpu_min", "cpu_median")
            )
            print(f"| {process} | {row['arena']} | {figures} |", flush=True)


if __name__ == "__main__":
    main()
