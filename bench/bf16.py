"""precision="bf16" against lowerline's f32 on one thread, in CPU time.

    .venv/bin/python bench/bf16.py [--models mlp_b64,encoder] [--rounds 5]

Compiles each model of ``bench/speed.py`` for the host in f32 and in bf16
(``vdpbf16ps`` where the host has AVX512-BF16), and both for
``cpu:haswell`` (AVX2, no AVX512-BF16: bf16 widened to f32 and FMA'd; it
runs on an AVX-512 host too), all with ``num_threads=1``; each bf16 build's
speed-up is against the f32 build of its own target. The builds alternate
within every round; a call is timed with ``time.thread_time`` (the calling
thread's CPU time, which does not count waiting for a core: bench/cpu_time_ab.py's
method for a loaded machine). The error column is each bf16 build's
``precision_report()``: its largest error against eager f32 on the example
input, relative to the largest output. Writes bench/bf16.md.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import speed
import torch
from cpu_time_ab import cpu_median
from timing import model_rounds_args, save_result

import lowerline
from lowerline.targets import cpu_target

BUILDS = {
    "f32": {},
    "bf16": {"precision": "bf16"},
    "f32 haswell": {"target": "cpu:haswell"},
    "bf16 haswell": {"precision": "bf16", "target": "cpu:haswell"},
}
NOTES = [
    "The error is `precision_report().relative_error`: the largest |bf16 - eager f32| "
    "over the output on the example input, over the largest |f32| output.",
    "Where the bf16 gain comes from: weights and activations take half the bytes, and "
    "`vdpbf16ps` does two multiply-adds per f32 lane, reading the weights in its pair "
    "layout, packed at compile time. Not yet: AMX bf16 tiles (`tdpbf16ps`) on "
    "sapphirerapids; the attention's batch matmuls (activations on both sides) widen "
    "to f32 and FMA.",
    "haswell's bf16 is slower than its f32: each step of k widens B's bf16 row "
    "(`vpmovzxwd` + `vpslld`) before the FMAs; it is there to run bf16 models correctly "
    "on CPUs without AVX512-BF16.",
]
# Each bf16 build against the f32 build for the same target.
AGAINST = {"bf16": "f32", "bf16 haswell": "f32 haswell"}


def compiled_builds(name: str, cache: str) -> tuple[tuple, dict]:
    torch.manual_seed(0)
    model, inputs = speed.MODELS[name]()
    model = model.eval()
    options = {"cache_dir": cache, "num_threads": 1}
    return inputs, {
        build: lowerline.compile(model, *inputs, **options, **extra)
        for build, extra in BUILDS.items()
    }


def main() -> None:
    args = model_rounds_args(__doc__, "mlp_b64,encoder")
    torch.set_num_threads(1)
    rows = []
    with tempfile.TemporaryDirectory() as cache, torch.inference_mode():
        for name in args.models.split(","):
            inputs, builds = compiled_builds(name, cache)
            samples: dict[str, list[float]] = {build: [] for build in builds}
            for _ in range(args.rounds):
                for build, compiled in builds.items():
                    samples[build].append(cpu_median(compiled, inputs, 0.3))
            rows.append((name, builds, {b: statistics.median(v) for b, v in samples.items()}))
    lines = [
        "# bf16 against lowerline f32 (one thread, CPU time)",
        "",
        f"`{' '.join(['.venv/bin/python', 'bench/bf16.py', *sys.argv[1:]])}`, "
        f"host: {cpu_target('host').cpu} (AVX512-BF16: {cpu_target('host').bf16}), "
        f"{args.rounds} interleaved rounds, median of the rounds' medians. A loaded "
        "machine (other engineers' jobs on its 2 cores): CPU time, not wall-clock latency.",
        "",
        "| model | f32 | bf16 | speed-up | bf16 error vs f32 | f32 haswell | bf16 haswell "
        "(widened) | its speed-up | its error |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, builds, times in rows:
        cells = [name]
        for build, base in AGAINST.items():
            error = builds[build].precision_report().relative_error
            cells += [f"{times[base] * 1e3:.3f} ms", f"{times[build] * 1e3:.3f} ms"]
            cells += [f"{times[base] / times[build]:.2f}x", f"{error:.2%}"]
        lines.append("| " + " | ".join(cells) + " |")
        print(lines[-1])
    for note in NOTES:
        lines += ["", note]
    save_result(
        os.path.join(os.path.dirname(os.path.abspath(__file__)), "bf16.md"), "\n".join(lines)
    )


if __name__ == "__main__":
    main()
