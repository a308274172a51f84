"""Compile time of lowerline.compile, for every model of the suite
(``bench/models``), two single-op workloads (a 50257-wide softmax, an
elementwise chain on 128x256x512) and the README's bundled classifier:

* cold: a new process, an empty cache, no worker running: the first
  ``lowerline.compile`` of the script;
* warm: a new process and an empty cache, after a first compile of another
  model (a small Linear) in the same process: the import worker is running;
* cache hit: a new process compiling what the cold run put in the cache;
* torch.export alone.

Each is timed from the call to its return, after ``import torch, lowerline``
and building the model (what a user sees when starting a script); each
measurement runs in a fresh process, all in one run. Per stage: the
``stage_seconds`` of the compile; "other" is the rest of the call (starting
the compile worker's interpreter, loading the library).

    .venv/bin/python bench/compile_time.py [--rounds 3] [--models mlp,vit_block]
        [--batch 1] [--out bench/compile_time.md]

Writes a markdown table (median over rounds) and prints it. A model that
fails to compile is a row with its error, not a stopped run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH)

from models import KERNELS, MODELS  # noqa: E402
from timing import first_line, save_result  # noqa: E402

EXAMPLE = "classifier"  # the README's bundled example
NAMES = [*MODELS, *KERNELS, EXAMPLE]

CHILD = r"""
import json, sys, time
start = time.perf_counter()
import torch
import lowerline
mode, name, batch, bench = sys.argv[1:5]
if name == "classifier":
    import runpy, os
    from lowerline.examples import EXAMPLES_DIR
    torch.manual_seed(0)
    ns = runpy.run_path(os.path.join(EXAMPLES_DIR, "classifier.py"))
    model, args = ns["model"], ns["example_inputs"]
else:
    sys.path.insert(0, bench)
    from models import build
    model, args = build(name, int(batch))
if mode == "warm":  # another model first: this process's workers are warm
    first = torch.nn.Linear(16, 8).eval()
    lowerline.compile(first, torch.randn(3, 16))
imported = time.perf_counter()
if mode == "export":
    torch.export.export(model, args)
    report = {}
else:
    report = lowerline.compile(model, *args).stage_seconds
done = time.perf_counter()
print(json.dumps({"total": done - imported, "startup": imported - start, "stages": report}))
"""


class ChildFailed(RuntimeError):
    pass


def measure(mode: str, name: str, batch: int, cache_dir: str) -> dict:
    env = {**os.environ, "LOWERLINE_CACHE_DIR": cache_dir}
    args = [sys.executable, "-c", CHILD, mode, name, str(batch), BENCH]
    done = subprocess.run(args, env=env, capture_output=True, text=True)
    if done.returncode:
        lines = done.stderr.strip().splitlines()
        # The last lines of a traceback name the error.
        raise ChildFailed(" ".join(lines[-1:]) or f"exit status {done.returncode}")
    return json.loads(done.stdout.strip().splitlines()[-1])


KINDS = ("cold", "warm", "hit", "export")


def measure_model(name: str, batch: int) -> tuple[dict[str, float], dict[str, dict]]:
    """Cold, warm, cache hit and export alone of one model, in new processes;
    the times, and the cold and warm compiles' stages (with "other")."""
    with tempfile.TemporaryDirectory() as cache_dir:
        cold = measure("compile", name, batch, cache_dir)
        hit = measure("compile", name, batch, cache_dir)
    with tempfile.TemporaryDirectory() as cache_dir:
        warm = measure("warm", name, batch, cache_dir)
    export = measure("export", name, batch, cache_dir)
    runs = {"cold": cold, "warm": warm, "hit": hit, "export": export}
    stages = {kind: _with_other(runs[kind]) for kind in ("cold", "warm")}
    return {kind: run["total"] for kind, run in runs.items()}, stages


def _with_other(run: dict) -> dict[str, float]:
    return {**run["stages"], "other": run["total"] - sum(run["stages"].values())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--models", default=",".join(NAMES))
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--out", default=os.path.join(BENCH, "compile_time.md"))
    args = parser.parse_args()
    names = args.models.split(",")
    unknown = [n for n in names if n not in NAMES]
    if unknown:
        parser.error(f"unknown model: {', '.join(unknown)}; known: {', '.join(NAMES)}")
    rows: dict[str, dict[str, list[float]]] = {n: {k: [] for k in KINDS} for n in names}
    stages: dict[str, dict[str, dict]] = {}
    failed: dict[str, str] = {}
    for _ in range(args.rounds):
        for name in names:  # interleaved: every model in every round
            if name in failed:
                continue
            print(f"compile time: {name}", file=sys.stderr, flush=True)
            try:
                times, stages[name] = measure_model(name, args.batch)
            except (ChildFailed, ValueError) as err:
                failed[name] = first_line(err, 400)
                continue
            for key, value in times.items():
                rows[name][key].append(value)
    save_result(args.out, "\n".join(table(rows, stages, failed, args)) + "\n")


def table(rows, stages, failed, args) -> list[str]:
    lines = [
        f"# lowerline.compile: compile time ({time.strftime('%Y-%m-%d')}, {platform.machine()}, "
        f"{os.cpu_count()} cores, median of {args.rounds} rounds, each in a new process)",
        "",
        f"Command: `{' '.join([os.path.relpath(sys.executable), *sys.argv])}`",
        "",
        f"Batch {args.batch} (the classifier: its own example inputs). Cold: the first "
        "compile of a new process, empty cache, no worker running. Warm: an empty cache, "
        "after another model's compile in the same process. Each from the call to its "
        "return, after `import torch, lowerline`.",
        "",
        "| model | cold compile | warm compile | cache hit (new process) "
        "| torch.export alone | hit - export |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name, r in rows.items():
        if name in failed:
            lines.append(f"| {name} | failed: {failed[name]} | - | - | - | - |")
            continue
        cold, warm, hit, export = (statistics.median(r[k]) for k in KINDS)
        lines.append(
            f"| {name} | {cold:.2f} s | {warm:.2f} s | {hit:.2f} s | {export:.2f} s "
            f"| {hit - export:+.2f} s |"
        )
    for kind in ("cold", "warm"):
        lines += _stage_table(kind, {name: st[kind] for name, st in stages.items()})
    return lines


def _stage_table(kind: str, stages: dict[str, dict]) -> list[str]:
    if not stages:
        return []
    columns = list(next(iter(stages.values())))
    lines = ["", f"{kind.capitalize()} compile by stage (last round):", ""]
    lines += ["| model | " + " | ".join(columns) + " |", "| --- |" + " --- |" * len(columns)]
    for name, st in stages.items():
        lines.append(f"| {name} | " + " | ".join(f"{st.get(c, 0.0):.2f} s" for c in columns) + " |")
    return lines


if __name__ == "__main__":
    main()
