"""CPU speed of lowerline against eager PyTorch, torch.compile, ONNX Runtime and IREE.

    .venv/bin/pip install -e '.[bench]'        # the peers (optional: a missing one is reported)
    .venv/bin/python bench/speed.py [--threads 1,2] [--rounds 5] [--models mlp_b1,gemm]

All systems run in one process, interleaved: every round times every system
on every model, so that the shared machine's drift hits all of them alike.
The ratio of a system is the median over rounds of (its median in the round /
eager's median in the same round). Writes ``bench/results.md``. The
systems themselves are in ``peers.py`` (shared with ``suite.py``, the
40-model suite).

Thread and spin settings are fixed and recorded: torch threads, OpenMP
(``OMP_NUM_THREADS``, ``OMP_WAIT_POLICY=PASSIVE``, ``KMP_BLOCKTIME=0``), ONNX
Runtime intra-op threads with spinning off, IREE task topology groups.
lowerline's runtime sets its own OpenMP block time (``LOWERLINE_OMP_BLOCKTIME``,
default 1 ms: its workers spin between the parallel regions of one call and
sleep 1 ms after it). ``--spin`` gives the peers brief spinning too, as a
check that lowerline's ratios do not come from the peers' passive waiting:
libgomp's default spin (``OMP_WAIT_POLICY`` unset), ``KMP_BLOCKTIME=1`` and
ONNX Runtime's spinning on.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field

# Passive waiting before any runtime starts: one system's spinning threads
# must not slow the next one down. (--spin: brief spinning for every system.)
SPIN = "--spin" in sys.argv
if SPIN:
    os.environ.setdefault("KMP_BLOCKTIME", "1")
else:
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    os.environ.setdefault("KMP_BLOCKTIME", "0")

# bench/timing.py sits beside this file, which is also loaded by path (the
# zoo's benchmark cases), not only run as a script.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# torch reads the OpenMP settings when it loads, hence after them.
import torch  # noqa: E402
from peers import SYSTEMS, add_run_arguments, outputs  # noqa: E402
from timing import format_seconds as _fmt  # noqa: E402
from timing import quantile, save_result, settle, settle_threads, time_calls  # noqa: E402
from torch import nn  # noqa: E402


class BasicBlock(nn.Module):
    def __init__(self, channels: int = 64):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(y)) + x)


class Gemm(nn.Module):
    def __init__(self, n: int = 1024):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n, n) / n**0.5)

    def forward(self, x):
        return x @ self.weight


def _mlp() -> nn.Module:
    return nn.Sequential(
        nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)
    )


MODELS: dict[str, Callable[[], tuple[nn.Module, tuple]]] = {
    "mlp_b1": lambda: (_mlp(), (torch.randn(1, 784),)),
    "mlp_b64": lambda: (_mlp(), (torch.randn(64, 784),)),
    "convblock": lambda: (BasicBlock(64), (torch.randn(1, 64, 56, 56),)),
    "encoder": lambda: (
        nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True),
        (torch.randn(1, 128, 256),),
    ),
    "gemm": lambda: (Gemm(1024), (torch.randn(1024, 1024),)),
}


@dataclass
class Runner:
    """One system ready to run one model: ``run()`` returns the outputs."""

    system: str
    run: Callable[[], object]
    setup_seconds: float
    note: str = ""


@dataclass
class Result:
    times: dict[int, list[float]] = field(default_factory=dict)  # round -> seconds per call
    error: float = 0.0
    setup_seconds: float = 0.0
    note: str = ""


# -- measurement ------------------------------------------------------------------


def _output(value) -> torch.Tensor:
    return outputs(value)[0]


def prepare(systems, model_names, threads):
    """Build every runner (compiles happen here, outside the timed rounds)."""
    runners: dict[tuple[str, str], Runner] = {}
    missing: dict[str, str] = {}
    expected: dict[str, torch.Tensor] = {}
    workroot = tempfile.mkdtemp(prefix="lowerline-bench-")
    for name in model_names:
        torch.manual_seed(0)
        model, inputs = MODELS[name]()
        model.eval()
        with torch.inference_mode():
            expected[name] = _output(model(*inputs)).clone()
        for system in systems:
            workdir = os.path.join(workroot, f"{name}-{system}-{threads}")
            os.makedirs(workdir, exist_ok=True)
            start = time.perf_counter()
            try:
                run, note = SYSTEMS[system](model, inputs, threads, workdir, SPIN)
                run()
            except ImportError as err:
                missing[system] = f"not installed ({err.name})"
                continue
            except Exception as err:  # a peer failing on a model is a result
                first = str(err).strip().splitlines()[0][:160] if str(err).strip() else ""
                missing.setdefault(f"{system}/{name}", f"failed: {type(err).__name__}: {first}")
                continue
            runners[(name, system)] = Runner(system, run, time.perf_counter() - start, note)
    return runners, missing, expected


def measure(runners, expected, rounds, budget):
    results: dict[tuple[str, str], Result] = {}
    for key, runner in runners.items():
        name = key[0]
        error = (_output(runner.run()).float() - expected[name].float()).abs().max().item()
        results[key] = Result(error=error, setup_seconds=runner.setup_seconds, note=runner.note)
    settle()
    for r in range(rounds):
        for key, runner in runners.items():  # interleaved: every system, every model
            results[key].times[r] = time_calls(runner.run, budget)
            settle_threads()  # the block's pool may spin on into the next block
    return results


def report(all_results, missing, args) -> str:
    lines = [
        "# CPU speed: lowerline and its peers",
        "",
        f"Measured {time.strftime('%Y-%m-%d %H:%M')} on {platform.machine()}, "
        f"{os.cpu_count()} cores, torch {torch.__version__}; {args.rounds} interleaved rounds, "
        f"about {args.budget}s per system, model and round.",
        "",
        f"Command: `{' '.join([os.path.relpath(sys.executable), *sys.argv])}`",
        "",
        "Settings: OMP_WAIT_POLICY="
        + os.environ.get("OMP_WAIT_POLICY", "(unset)")
        + ", KMP_BLOCKTIME="
        + os.environ["KMP_BLOCKTIME"]
        + "; torch.set_num_threads(T); ONNX Runtime intra_op_num_threads=T with spinning "
        + ("on" if SPIN else "off")
        + "; IREE --task_topology_max_group_count=T; lowerline LOWERLINE_OMP_BLOCKTIME="
        + os.environ.get("LOWERLINE_OMP_BLOCKTIME", "1 (default)")
        + " ms. After each block: a wait until no other thread of the process runs"
        + " (timing.settle_threads, at most 1 s), for every system.",
        "",
    ]
    for threads, results in all_results.items():
        lines += [
            f"## {threads} thread{'s' if threads > 1 else ''}",
            "",
            "| model | system | median | p10 | p90 | ratio to eager | max abs error | setup |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for (name, system), result in results.items():
            all_times = [t for ts in result.times.values() for t in ts]
            base = results.get((name, "eager"))
            ratios = [
                statistics.median(result.times[r]) / statistics.median(base.times[r])
                for r in result.times
            ] if base else []  # fmt: skip
            ratio = f"{statistics.median(ratios):.2f}" if ratios else "-"
            lines.append(
                f"| {name} | {system} | {_fmt(statistics.median(all_times))} | "
                f"{_fmt(quantile(all_times, 0.1))} | {_fmt(quantile(all_times, 0.9))} | {ratio} | "
                f"{result.error:.2g} | {result.setup_seconds:.1f} s |"
            )
        lines.append("")
    if missing:
        lines += ["Not measured:", ""]
        lines += [f"- {what}: {why}" for what, why in sorted(missing.items())]
        lines.append("")
    notes = {
        f"{key[1]} ({threads} thread{'s' if threads > 1 else ''})": r.note
        for threads, res in all_results.items()
        for key, r in res.items()
    }
    lines += ["Systems:", ""] + [f"- {s}: {n}" for s, n in sorted(notes.items())]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_run_arguments(parser, list(MODELS), rounds=5, budget=0.5)
    parser.add_argument(
        "--spin", action="store_true", help="brief spinning for the peers too (see the docstring)"
    )
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results.md"))
    args = parser.parse_args()
    models = args.models.split(",")
    systems = args.systems.split(",")
    all_results = {}
    all_missing: dict[str, str] = {}
    for threads in (int(t) for t in args.threads.split(",")):
        torch.set_num_threads(threads)
        os.environ["OMP_NUM_THREADS"] = str(threads)
        runners, missing, expected = prepare(systems, models, threads)
        all_missing.update(missing)
        all_results[threads] = measure(runners, expected, args.rounds, args.budget)
    save_result(args.out, report(all_results, all_missing, args))


if __name__ == "__main__":
    main()
