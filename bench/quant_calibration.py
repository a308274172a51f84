"""What in-compiler calibration adds to a compile: measured.

    .venv/bin/python bench/quant_calibration.py [--models mlp_b64] [--threads 2] [--rounds 1]

For each model: the wall time of ``lowerline.compile(model, x)`` and of
``lowerline.compile(model, x, quantize=Int8(calibration=32 batches))``, both
without the cache (``cache=False``), in one process after a warm-up compile
(the first ``torch.export`` of a process pays its imports). The difference is
the calibration overhead: export, 32 observed batches, the QDQ rewrite, and
a compile of the int8 graph in place of the float one. Prints the rows;
bench/quant.md records them by hand.
"""

from __future__ import annotations

import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import speed
import torch
from timing import model_rounds_args

import lowerline


def compile_seconds(model: torch.nn.Module, inputs: tuple, **options) -> tuple[float, dict]:
    start = time.perf_counter()
    compiled = lowerline.compile(model, *inputs, cache=False, **options)
    return time.perf_counter() - start, compiled.stage_seconds


def main() -> None:
    args = model_rounds_args(__doc__, "mlp_b64")
    torch.set_num_threads(args.threads)
    warm_model, warm_inputs = speed.MODELS["mlp_b1"]()
    compile_seconds(warm_model.eval(), warm_inputs)
    for name in args.models.split(","):
        torch.manual_seed(0)
        model, inputs = speed.MODELS[name]()
        model = model.eval()
        batches = [tuple(torch.randn_like(x) for x in inputs) for _ in range(32)]
        config = lowerline.quant.Int8(calibration=batches)
        floats, quants, calibrations = [], [], []
        for _ in range(args.rounds):
            floats.append(compile_seconds(model, inputs, num_threads=args.threads)[0])
            seconds, stages = compile_seconds(
                model, inputs, quantize=config, num_threads=args.threads
            )
            quants.append(seconds)
            calibrations.append(stages["calibrate"])
        f, q = statistics.median(floats), statistics.median(quants)
        print(
            f"| {name} | {f:.1f} s | {q:.1f} s | {q - f:+.1f} s | "
            f"{statistics.median(calibrations):.1f} s |"
        )


if __name__ == "__main__":
    main()
