"""torch's eager quantized modules, compiled by lowerline as they are,
against the same modules run eagerly: one thread, CPU time, interleaved.

    .venv/bin/python bench/quant_eager_ab.py [--models mlp_b64,convblock] [--rounds 5]

Each model is quantized by torch's eager mode for the x86 engine
(``quant_eager.eager_int8``: its eager-quantizable twin, calibrated on the
8 batches ``quant.calibration`` draws), then ``lowerline.compile`` takes
the converted model itself (``lowerline.frontend.eager_quantized_modules``
rewrites its quantized modules into QDQ code that folds into integer
kernels). In each round the compiled and the eager call alternate, each
timed with ``timing.cpu_median`` (the calling thread's CPU time, so the
figures hold on a loaded machine); a round's ratio is lowerline over
eager. Also prints the largest difference in output quantization steps.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch
from quant import MODELS, calibration
from quant_eager import eager_int8
from timing import cpu_median

import lowerline


def last_step(model: torch.nn.Module) -> float:
    scales = [float(m.scale) for m in model.modules() if hasattr(m, "scale")]
    return scales[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="mlp_b1,mlp_b64,convblock,mobilenet_b1,mobilenet_b8")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--budget", type=float, default=0.3, help="CPU seconds per call series")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print("| model | lowerline / eager int8 (CPU time, per round) | median | max error (steps) |")
    print("| --- | --- | --- | --- |")
    for name in args.models.split(","):
        torch.manual_seed(0)
        model, inputs = MODELS[name]()
        eager = eager_int8(model.eval(), calibration(inputs))
        compiled = lowerline.compile(eager, *inputs, num_threads=1)
        with torch.inference_mode():
            error = (compiled(*inputs) - eager(*inputs)).abs().max().item() / last_step(eager)
            ratios = []
            for _ in range(args.rounds):
                ours = cpu_median(compiled, inputs, args.budget)
                theirs = cpu_median(eager, inputs, args.budget)
                ratios.append(ours / theirs)
        spread = ", ".join(f"{r:.2f}" for r in ratios)
        print(f"| {name} | {spread} | {statistics.median(ratios):.2f} | {error:.2f} |", flush=True)


if __name__ == "__main__":
    main()
