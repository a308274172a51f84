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
Two more int8 builds, secondary rows of the same table: lowerline's own
``quantize=lowerline.quant.Int8(...)`` on the same 8 batches (attention's
projections and batch matmuls quantized too), and PT2E with torchao's
``XNNPACKQuantizer`` (symmetric, per channel: it quantizes attention's
projections, which X86InductorQuantizer leaves float). Each int8 build's
largest error against the float model is printed under the table.
``--peers`` adds torch's own int8 path, the issue's peer: the same
X86InductorQuantizer model through ``torch.compile`` (inductor with
freezing, oneDNN int8 kernels), as torchao's PT2E x86 tutorial runs it,
and torch's eager quantized modules (``torch.ao.nn.quantized``, eager-mode
``prepare``/``convert`` with the x86 qconfig and engine, calibrated on the
same 8 batches; ``quant_eager.py``): a model it cannot express is listed as
failed under the table. ``--bf16`` adds lowerline's ``precision="bf16"``
build of the float model (the issue's mixed-precision figure: bf16 against
lowerline's f32, same rounds, same process). Writes bench/quant.md
(``--output`` elsewhere).
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import speed
import torch
from quant_eager import eager_int8
from timing import model_rounds_parser, save_result, settle, time_calls
from torch import nn
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
from torchao.quantization.pt2e.quantizer import x86_inductor_quantizer as xiq
from torchao.testing.pt2e import _xnnpack_quantizer as xnnpack

import lowerline

INT8_BUILDS = ("int8", "int8 lowerline", "int8 xnnpack")
PEERS = ("torch int8", "torch eager int8")


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


def calibration(inputs: tuple) -> list[tuple]:
    """8 random batches like ``inputs`` (seeded: every build sees the same)."""
    generator = torch.Generator().manual_seed(1)
    return [
        tuple(torch.randn(x.shape, generator=generator, dtype=x.dtype) for x in inputs)
        for _ in range(8)
    ]


def x86_quantizer() -> xiq.X86InductorQuantizer:
    quantizer = xiq.X86InductorQuantizer()
    return quantizer.set_global(xiq.get_default_x86_inductor_quantization_config())


def xnnpack_quantizer() -> xnnpack.XNNPACKQuantizer:
    config = xnnpack.get_symmetric_quantization_config(is_per_channel=True)
    return xnnpack.XNNPACKQuantizer().set_global(config)


def quantized(model: torch.nn.Module, inputs: tuple, quantizer) -> torch.fx.GraphModule:
    prepared = prepare_pt2e(torch.export.export(model, inputs).module(), quantizer)
    for batch in calibration(inputs):
        prepared(*batch)
    return convert_pt2e(prepared)


def inductor_int8(converted: torch.fx.GraphModule, inputs: tuple):
    """``converted`` compiled by inductor with freezing (torchao's PT2E x86
    recipe), warmed up once so that its compile is not timed."""
    torch._inductor.config.freezing = True
    compiled = torch.compile(converted)
    compiled(*inputs)
    return compiled


def eager_peer(model: torch.nn.Module, inputs: tuple, runs: dict, failed: dict) -> None:
    """Adds torch's eager quantized modules to ``runs``, or why not to ``failed``."""
    try:
        peer = eager_int8(model, calibration(inputs))
    except Exception as error:  # a peer that cannot run is a result, not a crash
        failed["torch eager int8"] = f"{type(error).__name__}: {str(error).splitlines()[0]}"
        return
    runs["torch eager int8"] = lambda: peer(*inputs)


def builds(
    name: str, cache: str, threads: int, peers: bool, bf16: bool = False
) -> tuple[dict, dict]:
    """Build name -> a callable running that build of model ``name`` on its
    inputs, and peer name -> why it failed."""
    torch.manual_seed(0)
    model, inputs = MODELS[name]()
    model = model.eval()
    converted = quantized(model, inputs, x86_quantizer())
    options = {"cache_dir": cache, "num_threads": threads}
    own = lowerline.quant.Int8(calibration=calibration(inputs))
    compiled = {
        "f32": lowerline.compile(model, *inputs, **options),
        "int8": lowerline.compile(converted, *inputs, **options),
        "int8 haswell": lowerline.compile(converted, *inputs, target="cpu:haswell", **options),
        "int8 lowerline": lowerline.compile(model, *inputs, quantize=own, **options),
        "int8 xnnpack": lowerline.compile(
            quantized(model, inputs, xnnpack_quantizer()), *inputs, **options
        ),
    }
    if bf16:
        compiled["bf16"] = lowerline.compile(model, *inputs, precision="bf16", **options)
    runs = {"eager": lambda: model(*inputs)}
    failed: dict[str, str] = {}
    if peers:
        peer = inductor_int8(converted, inputs)
        runs["torch int8"] = lambda: peer(*inputs)
        eager_peer(model, inputs, runs, failed)
    runs.update({build: lambda c=c: c(*inputs) for build, c in compiled.items()})
    return runs, failed


def errors(runs: dict) -> dict[str, float]:
    """Each int8 build's (and peer's) largest |output - float output| on the
    model's inputs."""
    expected = runs["eager"]()
    return {
        build: float((runs[build]() - expected).abs().max())
        for build in (*INT8_BUILDS, "bf16", *PEERS)
        if build in runs
    }


def medians(runs: dict, rounds: int) -> dict[str, float]:
    """Median seconds per call of each run, over ``rounds`` interleaved rounds."""
    samples: dict[str, list[float]] = {key: [] for key in runs}
    settle()
    for _ in range(rounds):
        for key, run in runs.items():
            samples[key].append(statistics.median(time_calls(run, 0.2, min_calls=5)))
    return {key: statistics.median(values) for key, values in samples.items()}


def cell(row: dict, key: str) -> str:
    return f"{row[key] * 1e3:.3f} ms" if key in row else "failed"


def peer_ratio(row: dict, peer: str) -> str:
    return f"{row['int8'] / row[peer]:.2f}" if peer in row else "failed"


def table(rows: list, failures: list, args) -> list[str]:
    """The markdown timing table, its peer ratios and the failed peers."""
    keys = list(dict.fromkeys(key for _, row in rows for key in row))
    for _, failed in failures:  # a peer that failed on every model still gets its column
        keys += [peer for peer in PEERS if peer in failed and peer not in keys]
    low = [build for build in (*INT8_BUILDS, "bf16") if build in keys]
    ratios = [f"f32 / {build}" for build in low]
    peers = [peer for peer in PEERS if peer in keys]
    header = [*keys, *ratios, *(f"int8 / {peer}" for peer in peers)]
    lines = [
        "# int8 (PT2E) against lowerline f32",
        "",
        f"`{' '.join(['.venv/bin/python', 'bench/quant.py', *sys.argv[1:]])}`, "
        f"{args.threads} threads, {args.rounds} interleaved rounds, host "
        f"`{lowerline.targets.cpu_target('host').cpu}` (VNNI: "
        f"{lowerline.targets.cpu_target('host').vnni}). Indicative: measured on a "
        "shared 2-core machine under load; compare ratios within a row.",
        "",
        "| model | " + " | ".join(header) + " |",
        "| --- | " + " | ".join("---" for _ in header) + " |",
    ]
    for name, row in rows:
        cells = [cell(row, key) for key in keys]
        cells += [f"{row['f32'] / row[build]:.2f}x" for build in low]
        cells += [peer_ratio(row, peer) for peer in peers]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    failed = [(name, peer, why) for name, found in failures for peer, why in found.items()]
    if failed:
        lines += ["", "Failed peers (no timing):", ""]
        lines += [f"- {name}, {peer}: {why}" for name, peer, why in failed]
    return lines


def error_table(error_rows: list) -> list[str]:
    """Each build's largest |output - float output|, per model."""
    builds = list(dict.fromkeys(build for _, found in error_rows for build in found))
    lines = [
        "",
        "Largest |int8 or bf16 output - float output| on the timed inputs:",
        "",
        "| model | " + " | ".join(builds) + " |",
        "| --- | " + " | ".join("---" for _ in builds) + " |",
    ]
    for name, found in error_rows:
        cells = (f"{found[b]:.4f}" if b in found else "failed" for b in builds)
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    parser = model_rounds_parser(__doc__, "mlp_b64")
    parser.add_argument(
        "--peers", action="store_true", help="also torch's int8 (inductor, eager modules)"
    )
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument(
        "--bf16", action="store_true", help='also lowerline\'s precision="bf16" build'
    )
    parser.add_argument("--output", default=os.path.join(here, "quant.md"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as cache, torch.inference_mode():
        rows, error_rows, failures = [], [], []
        for name in args.models.split(","):
            runs, failed = builds(name, cache, args.threads, args.peers, args.bf16)
            rows.append((name, medians(runs, args.rounds)))
            error_rows.append((name, errors(runs)))
            failures.append((name, failed))
    for name, row in rows:
        print(name, {key: f"{value * 1e3:.3f} ms" for key, value in row.items()})
    lines = table(rows, failures, args) + error_table(error_rows)
    save_result(args.output, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
