"""Per-call overhead of ``lowerline.compile``'s modules: measured.

    .venv/bin/python bench/call_overhead.py [--threads 2] [--rounds 400] [--calls 50]

The overhead of a call is lowerline's call time minus the time of calling
the library's entry point directly, with descriptors and outputs built once
beforehand (``NativeFunction.prepared``): what lowerline's Python adds
(input checks, finding the specialization, allocating the outputs,
pointing the descriptors). Measured on one-op models (``x + 1`` on 1x16, a
1x64 ``Linear(64, 64)``), where the code itself takes well under a
microsecond. Then the README's classifier (``lowerline/examples/classifier.py``)
against eager PyTorch and, when installed, ONNX Runtime.

The systems of a table run in interleaved rounds in this one process: each
round times ``--calls`` back-to-back calls of every system, in an order that
alternates between rounds. A round gives each system its time per call; the
tables show the median and the minimum over the rounds. On a shared machine
the minimum is the steadier figure. Writes bench/call_overhead.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import peers
import torch
from timing import first_line, save_result

import lowerline
from lowerline.examples import classifier
from lowerline.runtime.native import NativeFunction

HERE = os.path.dirname(os.path.abspath(__file__))


class AddOne(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + 1


def one_op_models() -> dict[str, tuple[torch.nn.Module, tuple[torch.Tensor, ...]]]:
    torch.manual_seed(0)
    return {
        "x + 1, 1x16": (AddOne(), (torch.randn(1, 16),)),
        "Linear(64, 64), 1x64": (torch.nn.Linear(64, 64).eval(), (torch.randn(1, 64),)),
    }


def interleaved(systems: dict[str, Callable[[], object]], rounds: int, calls: int) -> dict:
    """Seconds per call of each system in each round, rounds interleaved."""
    times: dict[str, list[float]] = {name: [] for name in systems}
    order = list(systems)
    for round_index in range(rounds):
        for name in order if round_index % 2 == 0 else reversed(order):
            run = systems[name]
            start = time.perf_counter()
            for _ in range(calls):
                run()
            times[name].append((time.perf_counter() - start) / calls)
    return times


def us(seconds: float) -> str:
    return f"{seconds * 1e6:.2f}"


def overhead_row(name: str, compiled, inputs: tuple, rounds: int, calls: int) -> str:
    function = compiled.primary.function
    if not isinstance(function, NativeFunction):
        raise TypeError(f"{name}: expected a CPU library, got {type(function).__name__}")
    entry, arguments, outputs = function.prepared(list(inputs))
    entry(*arguments)
    torch.testing.assert_close(compiled(*inputs), outputs[0])
    times = interleaved(
        {"entry": lambda: entry(*arguments), "lowerline": lambda: compiled(*inputs)},
        rounds,
        calls,
    )
    entry_med, call_med = (statistics.median(times[k]) for k in ("entry", "lowerline"))
    entry_min, call_min = (min(times[k]) for k in ("entry", "lowerline"))
    return (
        f"| {name} | {us(entry_med)} / {us(entry_min)} | {us(call_med)} / {us(call_min)} "
        f"| **{us(call_med - entry_med)}** / **{us(call_min - entry_min)}** |"
    )


def overhead_table(threads: int, cache_dir: str, rounds: int, calls: int) -> str:
    lines = [
        "| model | entry point, median / min (us) | lowerline call, median / min (us) "
        "| overhead, median / min (us) |",
        "| --- | --- | --- | --- |",
    ]
    for name, (model, inputs) in one_op_models().items():
        compiled = lowerline.compile(model, *inputs, cache_dir=cache_dir, num_threads=threads)
        lines.append(overhead_row(name, compiled, inputs, rounds, calls))
    return "\n".join(lines)


def classifier_systems(threads: int, workdir: str) -> tuple[dict, list[str]]:
    """The classifier under lowerline, eager and ONNX Runtime (when installed)."""
    model, inputs = classifier.model, classifier.example_inputs
    systems, notes = {}, []
    for name in ("lowerline", "eager", "onnxruntime"):
        try:
            run, note = peers.SYSTEMS[name](model, inputs, threads, workdir)
        except ImportError as err:
            notes.append(f"{name}: not installed ({first_line(err)})")
            continue
        systems[name] = run
        notes.append(f"{name}: {note}")
    return systems, notes


def classifier_table(threads: int, workdir: str, rounds: int, calls: int) -> str:
    systems, notes = classifier_systems(threads, workdir)
    times = interleaved(systems, rounds, calls)
    eager = statistics.median(times["eager"])
    lines = [
        "| system | median (us) | min (us) | median / eager |",
        "| --- | --- | --- | --- |",
    ]
    for name, values in times.items():
        median = statistics.median(values)
        lines.append(f"| {name} | {us(median)} | {us(min(values))} | {median / eager:.2f} |")
    shape = "x".join(map(str, classifier.example_inputs[0].shape))
    return "\n".join([f"Classifier on {shape}:", "", *lines, "", *(f"- {note}" for note in notes)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=400)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--out", default=os.path.join(HERE, "call_overhead.md"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    command = "bench/call_overhead.py " + " ".join(sys.argv[1:])
    with tempfile.TemporaryDirectory(prefix="lowerline-overhead-") as workdir:
        cache_dir = os.environ.get("LOWERLINE_CACHE_DIR") or os.path.join(workdir, "cache")
        overhead = overhead_table(args.threads, cache_dir, args.rounds, args.calls)
        # The classifier's calls take ~100x longer: fewer calls per round.
        calls = max(1, args.calls // 10)
        models = classifier_table(args.threads, workdir, args.rounds // 4, calls)
    text = "\n".join(
        [
            "# Per-call overhead",
            "",
            f"`.venv/bin/python {command.strip()}` ({args.threads} threads, "
            f"{args.rounds} interleaved rounds of {args.calls} calls)",
            "",
            "Overhead: lowerline's call minus the library's entry point called with "
            "descriptors and outputs built beforehand, on one-op models.",
            "",
            overhead,
            "",
            models,
            "",
        ]
    )
    save_result(args.out, text)


if __name__ == "__main__":
    main()
