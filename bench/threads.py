"""OpenMP or MLIR's async runtime for lowerline's parallel tiles: measured.

    .venv/bin/python bench/threads.py [--models mlp_b1,mlp_b64,encoder,gemm] [--threads 2]

Compiles each model twice (``parallel="openmp"`` and ``parallel="async"``),
then times eager PyTorch and both builds in interleaved rounds in this one
process (the machine is shared: compare ratios, not absolute times), with
the spin settings of bench/speed.py. Writes bench/threads.md.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import speed
import torch
from timing import model_rounds_args

import lowerline


def _median_call(run, calls: int) -> float:
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    args = model_rounds_args(__doc__, "mlp_b1,mlp_b64,encoder,gemm")
    torch.set_num_threads(args.threads)
    rows = []
    with tempfile.TemporaryDirectory() as cache, torch.inference_mode():
        for name in args.models.split(","):
            torch.manual_seed(0)
            model, inputs = speed.MODELS[name]()
            model = model.eval()
            runs = {"eager": lambda m=model, i=inputs: m(*i)}
            for runtime in ("openmp", "async"):
                compiled = lowerline.compile(
                    model, *inputs, cache_dir=cache, num_threads=args.threads, parallel=runtime
                )
                runs[runtime] = lambda c=compiled, i=inputs: c(*i)
            for run in runs.values():
                run()
            calls = max(5, int(0.2 / max(1e-6, _median_call(runs["eager"], 5))))
            samples = {key: [] for key in runs}
            for _ in range(args.rounds):
                for key, run in runs.items():
                    samples[key].append(_median_call(run, calls))
            eager = statistics.median(samples["eager"])
            rows.append(
                (name, eager, *(statistics.median(samples[k]) / eager for k in ("openmp", "async")))
            )
            _, _, openmp, asynchronous = rows[-1]
            print(
                f"{name}: eager {eager * 1e3:.3f} ms, openmp {openmp:.2f}, async {asynchronous:.2f}"
            )
    lines = [
        "# Parallel runtime: OpenMP vs MLIR async",
        "",
        f"`{' '.join(['.venv/bin/python', 'bench/threads.py', *sys.argv[1:]])}`, "
        f"{args.threads} threads, {args.rounds} interleaved rounds, "
        f"OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']}, "
        f"KMP_BLOCKTIME={os.environ['KMP_BLOCKTIME']}.",
        "Ratio = lowerline median / eager median of the same run (lower is faster).",
        "",
        "| model | eager | openmp | async |",
        "| --- | --- | --- | --- |",
    ]
    lines += [f"| {n} | {e * 1e3:.3f} ms | {o:.2f} | {a:.2f} |" for n, e, o, a in rows]
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "threads.md")
    with open(out, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
