"""Compile time of lowerline.compile: cold, cache hit in a new process, and
torch.export alone, for a few models. Each measurement runs in a fresh
process (what a user sees when starting a script), all in one run.

    .venv/bin/python bench/compile_time.py [--rounds 3] [--out bench/compile_time.md]

Writes a markdown table (median over rounds) and prints it.
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

MODELS = {
    "mlp": "torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), "
    "torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))",
    "classifier": None,  # the README's bundled example
    "encoder": "torch.nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True)",
}
INPUTS = {"mlp": "(torch.randn(64, 784),)", "encoder": "(torch.randn(1, 128, 256),)"}

CHILD = r"""
import json, sys, time
start = time.perf_counter()
import torch
torch.manual_seed(0)
mode, name, expr, inputs = sys.argv[1:5]
if expr == "None":
    import runpy, os
    from lowerline.examples import EXAMPLES_DIR
    ns = runpy.run_path(os.path.join(EXAMPLES_DIR, "classifier.py"))
    model, args = ns["model"], ns["example_inputs"]
else:
    model, args = eval(expr).eval(), eval(inputs)
imported = time.perf_counter()
if mode == "export":
    torch.export.export(model, args)
    report = {}
else:
    import lowerline
    report = lowerline.compile(model, *args).stage_seconds
done = time.perf_counter()
print(json.dumps({"total": done - imported, "startup": imported - start, "stages": report}))
"""


def measure(mode: str, name: str, cache_dir: str) -> dict:
    env = {**os.environ, "LOWERLINE_CACHE_DIR": cache_dir}
    args = [sys.executable, "-c", CHILD, mode, name, str(MODELS[name]), INPUTS.get(name, "()")]
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "compile_time.md"))
    args = parser.parse_args()
    rows = {name: {"cold": [], "hit": [], "export": []} for name in MODELS}
    stages: dict[str, dict] = {}
    for _ in range(args.rounds):
        for name in MODELS:  # interleaved: every model in every round
            with tempfile.TemporaryDirectory() as cache_dir:
                cold = measure("compile", name, cache_dir)
                hit = measure("compile", name, cache_dir)
            export = measure("export", name, cache_dir)
            rows[name]["cold"].append(cold["total"])
            rows[name]["hit"].append(hit["total"])
            rows[name]["export"].append(export["total"])
            stages[name] = cold["stages"]
    lines = [
        f"# lowerline.compile: compile time ({time.strftime('%Y-%m-%d')}, {platform.machine()}, "
        f"{os.cpu_count()} cores, median of {args.rounds} rounds, each in a new process)",
        "",
        f"Command: `{' '.join([os.path.relpath(sys.executable), *sys.argv])}`",
        "",
        "| model | cold compile | cache hit (new process) | torch.export alone | hit - export |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, r in rows.items():
        cold, hit, export = (statistics.median(r[k]) for k in ("cold", "hit", "export"))
        lines.append(
            f"| {name} | {cold:.2f} s | {hit:.2f} s | {export:.2f} s | {hit - export:+.2f} s |"
        )
    lines += ["", "Cold compile by stage (last round):", ""]
    lines += ["| model | " + " | ".join(next(iter(stages.values()))) + " |"]
    lines += ["| --- |" + " --- |" * len(next(iter(stages.values())))]
    for name, st in stages.items():
        lines.append(f"| {name} | " + " | ".join(f"{v:.2f} s" for v in st.values()) + " |")
    text = "\n".join(lines) + "\n"
    with open(args.out, "w", encoding="utf-8") as handle:
        handle.write(text)
    print(text)


if __name__ == "__main__":
    main()
