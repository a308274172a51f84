"""The benchmark suite: lowerline against eager PyTorch, inductor, ONNX
Runtime and IREE on every model of ``bench/models`` at batch 1 and 8.

    .venv/bin/pip install -e '.[bench]'        # the peers (a missing one is reported)
    .venv/bin/python bench/suite.py [--threads 1,2] [--rounds 3] [--budget 0.2]
        [--models mlp,gpt2_layer] [--batches 1,8] [--wait default|passive|spin]

Protocol. All systems and models run in one process; compiles happen first,
then ``--rounds`` rounds, each timing every system on every case in turn, so
that the shared machine's drift hits all of them alike. A system's ratio on
a case is the median over rounds of (its median in the round / the other's
median in the same round). After each system's block the suite waits until
no other thread of the process runs (``--block-settle``, at most 1 s; the
waits are in the result's header): a pool spins for a while after its last
task (ONNX Runtime's some 30 ms of CPU, torch's OpenMP pool a few), and the
next system's block would otherwise share the cores with it (issue 14: at
2 threads lowerline's first calls after eager's block ran on one thread).
Thread counts are set with each system's own
setting (``torch.set_num_threads``, ONNX Runtime ``intra_op_num_threads``,
IREE ``--task_topology_max_group_count``, lowerline ``num_threads``).

Waiting (``--wait``, read by the OpenMP runtimes when they load, hence one
setting per process):
- ``default`` (the headline): nothing set, every system as it comes out of
  the box (libgomp's and ONNX Runtime's brief spinning, lowerline's 1 ms
  block time). The values found are written into the results.
- ``passive``: ``OMP_WAIT_POLICY=PASSIVE``, ``KMP_BLOCKTIME=0``,
  ``LOWERLINE_OMP_BLOCKTIME=0``, ONNX Runtime spinning off.
- ``spin``: ``KMP_BLOCKTIME=1``, ONNX Runtime spinning on, lowerline 1 ms
  (the settings of ``speed.py --spin``).

A system that fails on a case (export, compile, run) is listed with its
error, never dropped; lowerline's errors are written out in full, and its
outputs are checked against eager (max abs error over every output).
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field

WAIT_SETTINGS = {
    "default": {},
    "passive": {"OMP_WAIT_POLICY": "PASSIVE", "KMP_BLOCKTIME": "0", "LOWERLINE_OMP_BLOCKTIME": "0"},
    "spin": {"KMP_BLOCKTIME": "1"},
}
ORT_SPIN = {"default": None, "passive": False, "spin": True}
# Recorded in the header: the waiting settings, and lowerline's team sizing
# (a run with LOWERLINE_OMP_TEAMS=fixed left over in the shell times fixed teams).
WAIT_ENV = (
    "OMP_WAIT_POLICY",
    "KMP_BLOCKTIME",
    "GOMP_SPINCOUNT",
    "LOWERLINE_OMP_BLOCKTIME",
    "LOWERLINE_OMP_TEAMS",
    "LOWERLINE_OMP_DYNAMIC",
)


def _wait_mode(argv: list[str]) -> str:
    """``--wait`` read before argparse: the environment must be set before torch loads."""
    for i, arg in enumerate(argv):
        if arg.startswith("--wait="):
            return arg.split("=", 1)[1]
        if arg == "--wait" and i + 1 < len(argv):
            return argv[i + 1]
    return "default"


WAIT = _wait_mode(sys.argv)
if WAIT not in WAIT_SETTINGS:
    sys.exit(f"--wait takes one of {', '.join(WAIT_SETTINGS)}, not {WAIT!r}")
for _key, _value in WAIT_SETTINGS[WAIT].items():
    os.environ[_key] = _value

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from models import KERNELS, MODELS, build, cases, parse_case  # noqa: E402
from peers import PEERS, SYSTEMS, add_run_arguments, outputs  # noqa: E402
from timing import (  # noqa: E402
    first_line,
    quantile,
    save_result,
    settle,
    settle_threads,
    time_calls,
)
from timing import format_seconds as _fmt  # noqa: E402

# A result off eager by more than this (relative to the output's magnitude)
# is a mismatch: float32 kernels that sum in another order stay far below.
MISMATCH = 1e-3


@dataclass
class Entry:
    """One system on one case: its runner, or why it has none."""

    run: object = None
    note: str = ""
    setup_seconds: float = 0.0
    error: float | None = None  # max abs error against eager
    failure: str = ""  # one line
    detail: str = ""  # the whole message (lowerline)
    times: list[list[float]] = field(default_factory=list)  # per round


def max_error(got, want: list[torch.Tensor]) -> float:
    got = outputs(got)
    if len(got) != len(want):
        raise ValueError(f"{len(got)} outputs, eager has {len(want)}")
    worst = 0.0
    for g, w in zip(got, want, strict=True):
        if tuple(g.shape) != tuple(w.shape):
            raise ValueError(f"output shape {tuple(g.shape)}, eager's is {tuple(w.shape)}")
        worst = max(worst, (g.double() - w.double()).abs().max().item() if w.numel() else 0.0)
    return worst


def prepare_case(case: str, systems: list[str], threads: int, workroot: str) -> dict[str, Entry]:
    name, batch = parse_case(case)
    model, inputs = build(name, batch)
    with torch.inference_mode():
        expected = [t.clone() for t in outputs(model(*inputs))]
    entries = {}
    for system in systems:
        workdir = os.path.join(workroot, f"{name}-b{batch}-{system}-{threads}")
        os.makedirs(workdir, exist_ok=True)
        entries[system] = prepare_one(system, model, inputs, expected, threads, workdir)
        print(f"  {case} {system}: {entries[system].failure or 'ok'}", file=sys.stderr, flush=True)
    return entries


def prepare_one(system, model, inputs, expected, threads, workdir) -> Entry:
    start = time.perf_counter()
    try:
        run, note = SYSTEMS[system](model, inputs, threads, workdir, ORT_SPIN[WAIT])
        error = max_error(run(), expected)
    except ImportError as err:
        return Entry(failure=f"not installed ({err.name})")
    except Exception as err:  # a system failing on a model is a result
        return Entry(failure=reason(err), detail=str(err).strip())
    return Entry(run, note, time.perf_counter() - start, error)


def reason(err: Exception) -> str:
    """One line saying why: the first ``error:`` line of a compiler's output
    (IREE's message starts with a generic "Error invoking ..."), else the
    first line."""
    for line in str(err).splitlines():
        if "error:" in line:
            return f"{first_line(err)} ({line.strip()[:300]})"
    return first_line(err)


def measure(
    table: dict[str, dict[str, Entry]], rounds: int, budget: float, block_settle: float
) -> list[float]:
    """Times every case's systems in interleaved rounds; the seconds waited
    after each block for the block's threads to stop spinning (``settle_threads``,
    at most ``block_settle``; 0: no wait)."""
    waits = []
    for _ in range(rounds):
        for entries in table.values():  # interleaved: every case, every system
            for entry in entries.values():
                if entry.run is not None:
                    entry.times.append(time_calls(entry.run, budget))
                    if block_settle > 0:
                        waits.append(settle_threads(block_settle))
    return waits


def ratio(entry: Entry, base: Entry) -> float | None:
    """Median over rounds of the per-round ratio of medians."""
    if not entry.times or not base.times:
        return None
    return statistics.median(
        statistics.median(a) / statistics.median(b)
        for a, b in zip(entry.times, base.times, strict=True)
    )


def best_peer(entries: dict[str, Entry]) -> tuple[str, Entry] | None:
    timed = [(s, entries[s]) for s in PEERS if s in entries and entries[s].times]
    if not timed:
        return None
    return min(timed, key=lambda se: statistics.median(t for ts in se[1].times for t in ts))


def mismatched(entry: Entry, scale: float) -> bool:
    return entry.error is not None and entry.error > MISMATCH * max(1.0, scale)


def geomean(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{math.exp(sum(math.log(v) for v in values) / len(values)):.2f} ({len(values)})"


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def headline(table: dict[str, dict[str, Entry]], systems: list[str]) -> list[str]:
    peers = [s for s in PEERS if s in systems]
    head = ["case", "eager", "lowerline", "ll / eager", *(f"{p} / eager" for p in peers)]
    head += ["ll / best peer", "best peer", "ll max abs err"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for case, entries in table.items():
        eager = entries.get("eager", Entry())
        ll = entries.get("lowerline", Entry())
        best = best_peer(entries)
        row = [case, _median(eager), _median(ll), _cell_or_failed(ll, eager)]
        row += [_cell_or_failed(entries[p], eager) for p in peers]
        row += [_cell(ratio(ll, best[1])) if best else "-", best[0] if best else "-"]
        row.append("-" if ll.error is None else f"{ll.error:.1e}")
        lines.append("| " + " | ".join(row) + " |")
    return lines


def _median(entry: Entry) -> str:
    if not entry.times:
        return "failed" if entry.failure else "-"
    return _fmt(statistics.median(t for ts in entry.times for t in ts))


def _cell_or_failed(entry: Entry, base: Entry) -> str:
    return "failed" if entry.failure else _cell(ratio(entry, base))


def geomeans(table: dict[str, dict[str, Entry]], systems: list[str]) -> list[str]:
    """Geometric means over the cases where both systems ran, at batch 1 and
    at the larger batches (the count of cases in brackets)."""
    groups = {"batch 1": lambda b: b == 1, "batch >= 8": lambda b: b >= 8}
    rows = [(f"{s} / eager", s, "eager") for s in ["lowerline", *PEERS] if s in systems]
    rows.append(("lowerline / best peer", "lowerline", "best"))
    lines = ["| geomean | " + " | ".join(groups) + " |", "|" + " --- |" * (len(groups) + 1)]
    for label, system, base in rows:
        cells = []
        for keep in groups.values():
            values = []
            for case, entries in table.items():
                if not keep(parse_case(case)[1]) or system not in entries:
                    continue
                other = best_peer(entries) if base == "best" else (base, entries.get(base))
                value = ratio(entries[system], other[1]) if other and other[1] else None
                if value is not None:
                    values.append(value)
            cells.append(geomean(values))
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def details(table: dict[str, dict[str, Entry]]) -> list[str]:
    lines = ["| case | system | median | p10 | p90 | max abs err | setup |"]
    lines.append("| --- | --- | --- | --- | --- | --- | --- |")
    for case, entries in table.items():
        for system, e in entries.items():
            if not e.times:
                continue
            flat = [t for ts in e.times for t in ts]
            lines.append(
                f"| {case} | {system} | {_fmt(statistics.median(flat))} | "
                f"{_fmt(quantile(flat, 0.1))} | {_fmt(quantile(flat, 0.9))} | "
                f"{e.error:.1e} | {e.setup_seconds:.1f} s |"
            )
    return lines


def failures(table: dict[str, dict[str, Entry]], scales: dict[str, float]) -> list[str]:
    """Every failure, one line each; lowerline's in full below, with its
    mismatches against eager."""
    lines = []
    for case, entries in table.items():
        for system, e in entries.items():
            if e.failure:
                lines.append(f"- {case} {system}: {e.failure}")
            elif system != "eager" and mismatched(e, scales[case]):
                lines.append(f"- {case} {system}: mismatch, max abs error {e.error:.2e}")
    full = [
        (case, entries["lowerline"])
        for case, entries in table.items()
        if "lowerline" in entries and entries["lowerline"].detail
    ]
    for case, e in full:
        lines += ["", f"#### lowerline on {case}", "", "```", e.detail[:4000], "```"]
    return lines


def output_scale(case: str) -> float:
    name, batch = parse_case(case)
    model, inputs = build(name, batch)
    with torch.inference_mode():
        return max(t.double().abs().max().item() for t in outputs(model(*inputs)) if t.numel())


def settle_note(waits: dict[int, list[float]], limit: float) -> str:
    """The header's line on the pause after each block."""
    if limit <= 0:
        return "Settle after each block: none (`--block-settle 0`)."
    parts = []
    for threads, seconds in waits.items():
        if not seconds:
            continue
        capped = sum(w >= limit for w in seconds)
        parts.append(
            f"{threads} thread(s): {len(seconds)} blocks, waited median "
            f"{_fmt(statistics.median(seconds))}, max {_fmt(max(seconds))}, {capped} at the limit"
        )
    return (
        "Settle after each block (every system alike): until no other thread of the process "
        f"runs, at most {limit:g} s (`--block-settle`); " + ("; ".join(parts) or "no blocks") + "."
    )


def report(results, systems, args, waits) -> str:
    env = ", ".join(f"{k}={os.environ.get(k, '(unset)')}" for k in WAIT_ENV)
    lines = [
        f"# Benchmark suite: lowerline and its peers (--wait {WAIT})",
        "",
        f"Measured {time.strftime('%Y-%m-%d %H:%M')} on {platform.machine()} "
        f"({platform.processor() or 'cpu'}), {os.cpu_count()} cores, torch {torch.__version__}; "
        f"{args.rounds} interleaved rounds, about {args.budget}s per system, case and round.",
        "",
        f"Command: `{' '.join([os.path.relpath(sys.executable), *sys.argv])}`",
        "",
        f"Waiting: {env}; ONNX Runtime spinning "
        f"{ {None: 'default (on)', False: 'off', True: 'on'}[ORT_SPIN[WAIT]] }.",
        "",
        settle_note(waits, args.block_settle),
        "",
        "Ratios are times relative to eager (or to the fastest peer on the case): "
        "lower is faster. `failed`: see the failures below.",
        "",
    ]
    for threads, table in results.items():
        scales = {case: output_scale(case) for case in table}
        plural = "s" if threads > 1 else ""
        lines += [f"## {threads} thread{plural}", "", *geomeans(table, systems), ""]
        lines += [*headline(table, systems), ""]
        lines += [f"### Failures and mismatches ({threads} thread{plural})", ""]
        lines += [*(failures(table, scales) or ["None."]), ""]
        lines += [f"### All times ({threads} thread{plural})", "", *details(table), ""]
    notes = {
        system: e.note
        for table in results.values()
        for entries in table.values()
        for system, e in entries.items()
        if e.note
    }
    lines += ["## Systems", ""] + [f"- {s}: {n}" for s, n in sorted(notes.items())]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_run_arguments(parser, list(MODELS), rounds=3, budget=0.2)
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--wait", choices=list(WAIT_SETTINGS), default="default")
    parser.add_argument(
        "--block-settle",
        type=float,
        default=1.0,
        help="after each system's block, wait (at most this many seconds) until no other "
        "thread of the process runs; 0: no wait",
    )
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "suite.md"))
    args = parser.parse_args()
    systems = args.systems.split(",")
    unknown = [s for s in systems if s not in SYSTEMS] + [
        m for m in args.models.split(",") if m not in MODELS and m not in KERNELS
    ]
    if unknown:
        parser.error(f"unknown system or model: {', '.join(unknown)}")
    if "eager" not in systems:
        systems.insert(0, "eager")  # every ratio and the correctness check need it
    names = cases(args.models.split(","), tuple(int(b) for b in args.batches.split(",")))
    workroot = tempfile.mkdtemp(prefix="lowerline-suite-")
    results, waits = {}, {}
    for threads in (int(t) for t in args.threads.split(",")):
        torch.set_num_threads(threads)
        print(f"{threads} thread(s): preparing {len(names)} cases", file=sys.stderr, flush=True)
        table = {case: prepare_case(case, systems, threads, workroot) for case in names}
        settle()
        waits[threads] = measure(table, args.rounds, args.budget, args.block_settle)
        results[threads] = table
    save_result(args.out, report(results, systems, args, waits))


if __name__ == "__main__":
    main()
