"""int8 (PT2E, folded into integer matmuls) against lowerline's f32: measured.

    .venv/bin/python bench/quant.py [--models mlp_b64] [--threads 2] [--rounds 5]

Models: speed.MODELS and ``mobilenet_b1``/``mobilenet_b8``, a MobileNetV2
inverted residual block (1x1 expand 32 -> 192, depthwise 3x3, 1x1 project
192 -> 32, each with batch norm, ReLU6 after the first two, the residual
added) on 28 x 28 at batch 1 and 8.

Quantizes each model with torchao's ``X86InductorQuantizer`` (calibrated on
8 random batches), compiles the float model and the converted one for the
host, and the converted one for ``cpu:haswell`` too (no VNNI: i32 outer
products, which the host also runs), then times them and eager float in
interleaved rounds in this one process (a shared machine: compare ratios).
Writes bench/quant.md.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import speed
import torch
from timing import model_rounds_args, save_result, settle, time_calls
from torch import nn
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
from torchao.quantization.pt2e.quantizer import x86_inductor_quantizer as xiq

import lowerline


class InvertedResidual(nn.Module):
    """MobileNetV2's block with stride 1 (so the residual is added)."""

    def __init__(self, channels: int = 32, expansion: int = 6):
        super().__init__()
        hidden = channels * expansion
        self.expand = nn.Conv2d(channels, hidden, 1, bias=False)
        self.expand_norm = nn.BatchNorm2d(hidden)
        self.depthwise = nn.Conv2d(hidden, hidden, 3, padding=1, groups=hidden, bias=False)
        self.depthwise_norm = nn.BatchNorm2d(hidden)
        self.project = nn.Conv2d(hidden, channels, 1, bias=False)
        self.project_norm = nn.BatchNorm2d(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = nn.functional.relu6(self.expand_norm(self.expand(x)))
        y = nn.functional.relu6(self.depthwise_norm(self.depthwise(y)))
        return x + self.project_norm(self.project(y))


MODELS = {
    **speed.MODELS,
    "mobilenet_b1": lambda: (InvertedResidual(), (torch.randn(1, 32, 28, 28),)),
    "mobilenet_b8": lambda: (InvertedResidual(), (torch.randn(8, 32, 28, 28),)),
}


def quantized(model: torch.nn.Module, inputs: tuple) -> torch.fx.GraphModule:
    quantizer = xiq.X86InductorQuantizer()
    quantizer.set_global(xiq.get_default_x86_inductor_quantization_config())
    prepared = prepare_pt2e(torch.export.export(model, inputs).module(), quantizer)
    for _ in range(8):
        prepared(*(torch.randn_like(x) for x in inputs))
    return convert_pt2e(prepared)


def builds(name: str, cache: str, threads: int) -> dict:
    """Build name -> a callable running that build of model ``name`` on its inputs."""
    torch.manual_seed(0)
    model, inputs = MODELS[name]()
    model = model.eval()
    converted = quantized(model, inputs)
    options = {"cache_dir": cache, "num_threads": threads}
    compiled = {
        "f32": lowerline.compile(model, *inputs, **options),
        "int8": lowerline.compile(converted, *inputs, **options),
        "int8 haswell": lowerline.compile(converted, *inputs, target="cpu:haswell", **options),
    }
    runs = {"eager": lambda: model(*inputs)}
    runs.update({build: lambda c=c: c(*inputs) for build, c in compiled.items()})
    return runs


def medians(runs: dict, rounds: int) -> dict[str, float]:
    """Median seconds per call of each run, over ``rounds`` interleaved rounds."""
    samples: dict[str, list[float]] = {key: [] for key in runs}
    settle()
    for _ in range(rounds):
        for key, run in runs.items():
            samples[key].append(statistics.median(time_calls(run, 0.2, min_calls=5)))
    return {key: statistics.median(values) for key, values in samples.items()}


def main() -> None:
    args = model_rounds_args(__doc__, "mlp_b64")
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as cache, torch.inference_mode():
        rows = [
            (name, medians(builds(name, cache, args.threads), args.rounds))
            for name in args.models.split(",")
        ]
    for name, row in rows:
        print(name, {key: f"{value * 1e3:.3f} ms" for key, value in row.items()})
    keys = list(rows[0][1])
    lines = [
        "# int8 (PT2E) against lowerline f32",
        "",
        f"`{' '.join(['.venv/bin/python', 'bench/quant.py', *sys.argv[1:]])}`, "
        f"{args.threads} threads, {args.rounds} interleaved rounds, host "
        f"`{lowerline.targets.cpu_target('host').cpu}` (VNNI: "
        f"{lowerline.targets.cpu_target('host').vnni}). Indicative: measured on a "
        "shared 2-core machine under load; compare ratios within a row.",
        "",
        "| model | " + " | ".join(keys) + " | f32 / int8 |",
        "| --- | " + " | ".join("---" for _ in keys) + " | --- |",
    ]
    for name, row in rows:
        cells = " | ".join(f"{row[k] * 1e3:.3f} ms" for k in keys)
        lines.append(f"| {name} | {cells} | {row['f32'] / row['int8']:.2f}x |")
    save_result(
        os.path.join(os.path.dirname(os.path.abspath(__file__)), "quant.md"),
        "\n".join(lines) + "\n",
    )


if __name__ == "__main__":
    main()
