"""Single-op CPU speed: lowerline against eager PyTorch and inductor (issue 22, part 4).

    .venv/bin/python bench/ops.py                        # every op and shape, 1 and 2 threads
    .venv/bin/python bench/ops.py --quick --threads 2 --rounds 1 --out bench/ops-results-smoke.md
    .venv/bin/python bench/ops.py --ops reduction,softmax --shapes 64x50257 --threads 2
    .venv/bin/python bench/ops.py --cpu-time --shapes 16x4096,64x50257 --out bench/ops-cpu-time.md

Every op of issue 22 (elementwise functions, reductions along the first and
the last axis, row-wise normalizations) as a tiny ``nn.Module``, on the
shapes 1x64, 16x4096, 2x65536, 256x256 and 64x50257, with seeded inputs in a
range that suits the op. For each op, shape and axis (a "cell") the three
systems are built, checked against eager, then timed in interleaved rounds:
every round times eager, inductor and lowerline in turn, and a ratio is the
median over rounds of (median time in the round / eager's median in the same
round). A system that fails to build or run a cell is reported as failed with
the first line of its error, never dropped.

Each system runs with its out-of-the-box settings: this script sets no
OpenMP variable (unlike ``speed.py``, which makes the peers wait passively);
the values it finds are recorded in the output. Threads: ``torch.set_num_threads(T)``
for eager and inductor, ``num_threads=T`` for lowerline.

GB/s of an op is (bytes of its inputs and parameters + bytes of its output) /
lowerline's median time; it is compared with the copy bandwidth measured
once per thread count (``dst.copy_(src)`` of a 64 MiB float32 tensor,
2 x 64 MiB / median time).

``--cpu-time`` is for a loaded machine, where wall-clock times mostly measure
waits for a core: one thread, eager and lowerline only (inductor's compiles
would double the run), each call timed with ``time.thread_time`` (the calling
thread's CPU time) as ``cpu_time_ab.py`` does for models, the two systems
alternating within every round. GB/s are then per CPU second, not wall-clock
bandwidth.

Runtime on a 2-core machine: compiles dominate. lowerline and inductor cache
their artifacts under ``build/opbench-cache``, so a rerun mostly loads; a
lowerline compile step longer than ``--compile-timeout`` (120 s) is reported
as failed (failures are not cached: a rerun tries them again). The smoke run
``--quick --threads 2 --rounds 1`` (16 cells) took 17 min cold on a busy
machine, 15 of them in three LLVM compiles stopped at the 300 s used then;
the others took 3 to 30 s per cell. The full matrix (285 cells per thread
count, 570 for ``--threads 1,2``) should take about 1.5 h cold plus
``--compile-timeout`` for each runaway compile, and well under an hour with
warm caches.
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.path.join(ROOT, "build", "opbench-cache")
# Inductor's on-disk caches live next to lowerline's (a cache location, not a
# tuning knob); set before torch loads.
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(CACHE, "inductor"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from timing import cpu_median, first_line, format_seconds, settle, time_calls  # noqa: E402
from torch import nn  # noqa: E402

SHAPES = ["1x64", "16x4096", "2x65536", "256x256", "64x50257"]
QUICK_OPS = ["exp", "gelu_tanh", "sum", "argmax", "softmax", "layer_norm"]
QUICK_SHAPES = ["16x4096", "64x50257"]
BIG = 1_000_000  # elements: the bandwidth goal applies from here
RTOL, ATOL = 1e-3, 1e-4  # a result outside these is flagged as off eager


# -- the ops ----------------------------------------------------------------------


class Elementwise(nn.Module):
    def __init__(self, fn: Callable[..., torch.Tensor]):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


class Reduction(nn.Module):
    def __init__(self, fn: Callable[..., torch.Tensor], axis):
        super().__init__()
        self.fn = fn
        self.axis = axis

    def forward(self, x):
        return self.fn(x, self.axis)


class Rowwise(nn.Module):
    """``norm`` over the last axis; a (rows, cols) input is seen as
    (1, rows, cols) when ``channels_first`` (group and instance norm: rows are
    channels, cols the spatial axis)."""

    def __init__(self, norm: Callable[..., torch.Tensor], channels_first: bool = False):
        super().__init__()
        self.norm = norm
        self.channels_first = channels_first

    def forward(self, x):
        if self.channels_first:
            return self.norm(x.unsqueeze(0)).squeeze(0)
        return self.norm(x)


@dataclass(frozen=True)
class Op:
    name: str
    family: str  # elementwise, reduction, rowwise
    low: float  # inputs are uniform in [low, high)
    high: float
    make: Callable[[tuple[int, int], object], nn.Module]  # (shape, axis) -> module
    axes: tuple = (None,)
    arity: int = 1
    signed: bool = False  # a random sign on each input value (reciprocal)


def unary(name, fn, low, high, **kw) -> Op:
    return Op(name, "elementwise", low, high, lambda shape, axis: Elementwise(fn), **kw)


def reduction(name, fn, low=-1.0, high=1.0, axes=(0, 1)) -> Op:
    return Op(name, "reduction", low, high, lambda shape, axis: Reduction(fn, axis), axes)


def rowwise(name, make, low=-3.0, high=3.0) -> Op:
    return Op(name, "rowwise", low, high, make, (-1,))


def _affine(norm: nn.Module) -> nn.Module:
    """Random (seeded) scale and shift, so they are not folded away as 1 and 0."""
    with torch.no_grad():
        for param in norm.parameters():
            param.uniform_(0.5, 1.5)
    return norm


def _groups(rows: int) -> int:
    return max(1, rows // 4)


OPS = [
    unary("exp", torch.exp, -10, 10),
    unary("tanh", torch.tanh, -5, 5),
    unary("erf", torch.erf, -4, 4),
    unary("erfc", torch.erfc, -4, 4),
    unary("log", torch.log, 0.01, 100),
    unary("log1p", torch.log1p, -0.5, 10),
    unary("log2", torch.log2, 0.01, 100),
    unary("exp2", torch.exp2, -20, 20),
    unary("expm1", torch.expm1, -5, 5),
    unary("sigmoid", torch.sigmoid, -10, 10),
    unary("sin", torch.sin, -10, 10),
    unary("cos", torch.cos, -10, 10),
    unary("pow", lambda x: torch.pow(x, 1.7), 0.01, 10),
    unary("sqrt", torch.sqrt, 0, 100),
    unary("rsqrt", torch.rsqrt, 0.01, 100),
    unary("reciprocal", torch.reciprocal, 0.1, 10, signed=True),
    unary("atan", torch.atan, -10, 10),
    unary("atan2", torch.atan2, -5, 5, arity=2),
    unary("gelu_erf", F.gelu, -5, 5),
    unary("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), -5, 5),
    unary("silu", F.silu, -10, 10),
    unary("mish", F.mish, -10, 10),
    unary("softplus", F.softplus, -10, 10),
    unary("hardswish", F.hardswish, -5, 5),
    unary("elu", F.elu, -5, 5),
    unary("selu", F.selu, -5, 5),
    reduction("sum", torch.sum),
    reduction("mean", torch.mean),
    reduction("max", torch.amax),
    reduction("min", torch.amin),
    reduction("prod", torch.prod, 0.999, 1.001),
    reduction("var", torch.var),
    reduction("std", torch.std),
    reduction("argmax", torch.argmax),
    reduction("argmin", torch.argmin),
    reduction("logsumexp", torch.logsumexp, -10, 10),
    reduction("norm_l1", lambda x, dim: torch.linalg.vector_norm(x, 1, dim)),
    reduction("norm_l2", lambda x, dim: torch.linalg.vector_norm(x, 2, dim)),
    # Frobenius along one axis is the L2 norm: over both axes instead.
    reduction("norm_fro", lambda x, dim: torch.linalg.matrix_norm(x, "fro", dim), axes=((0, 1),)),
    rowwise("softmax", lambda shape, axis: Rowwise(nn.Softmax(dim=-1)), -10, 10),
    rowwise("log_softmax", lambda shape, axis: Rowwise(nn.LogSoftmax(dim=-1)), -10, 10),
    rowwise("layer_norm", lambda shape, axis: Rowwise(_affine(nn.LayerNorm(shape[1])))),
    rowwise("rms_norm", lambda shape, axis: Rowwise(_affine(nn.RMSNorm(shape[1])))),
    rowwise(
        "group_norm",
        lambda shape, axis: Rowwise(_affine(nn.GroupNorm(_groups(shape[0]), shape[0])), True),
    ),
    rowwise("instance_norm", lambda shape, axis: Rowwise(nn.InstanceNorm1d(shape[0]), True)),
]
FAMILIES = sorted({op.family for op in OPS})
AXIS_NAMES = {None: "-", 0: "first", 1: "last", -1: "last", (0, 1): "both"}


@dataclass(frozen=True)
class Cell:
    op: Op
    shape: tuple[int, int]
    axis: object

    @property
    def label(self) -> str:
        return f"{self.op.name} {'x'.join(map(str, self.shape))} {AXIS_NAMES[self.axis]}"

    def build(self) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
        """The module and its inputs, the same for every system and thread count."""
        torch.manual_seed(0)
        module = self.op.make(self.shape, self.axis).eval()
        generator = torch.Generator().manual_seed(0)
        inputs = tuple(self._input(generator) for _ in range(self.op.arity))
        return module, inputs

    def _input(self, generator: torch.Generator) -> torch.Tensor:
        op = self.op
        x = torch.rand(self.shape, generator=generator) * (op.high - op.low) + op.low
        if op.signed:
            x = torch.where(torch.rand(self.shape, generator=generator) < 0.5, -x, x)
        return x

    @property
    def elements(self) -> int:
        return self.shape[0] * self.shape[1]


def select_cells(op_filter: list[str], shapes: list[str]) -> list[Cell]:
    unknown = [w for w in op_filter if w not in FAMILIES and w not in {op.name for op in OPS}]
    if unknown:
        raise SystemExit(f"unknown ops or families: {', '.join(unknown)}")
    ops = [op for op in OPS if op.name in op_filter or op.family in op_filter]
    parsed = [tuple(int(n) for n in s.split("x")) for s in shapes]
    return [Cell(op, shape, axis) for op in ops for shape in parsed for axis in op.axes]


# -- the systems --------------------------------------------------------------------


def eager(module, inputs, threads):
    def run():
        with torch.inference_mode():
            return module(*inputs)

    return run


def inductor(module, inputs, threads):
    # Each cell compiles as in a fresh process: the ops share forward methods,
    # and dynamo would otherwise recompile them with dynamic shapes.
    torch._dynamo.reset()
    compiled = torch.compile(module)

    def run():
        with torch.inference_mode():
            return compiled(*inputs)

    return run


def lowerline(module, inputs, threads):
    import lowerline as ll

    cache_dir = os.path.join(CACHE, "lowerline")
    compiled = ll.compile(module, *inputs, cache_dir=cache_dir, num_threads=threads)
    return lambda: compiled(*inputs)


SYSTEMS: dict[str, Callable] = {"eager": eager, "inductor": inductor, "lowerline": lowerline}
SYSTEM_NOTES = {
    "eager": "`module(*inputs)` under `torch.inference_mode()`",
    "inductor": "`torch.compile(module)`, default settings (no freezing; the ops have "
    "no weights but the norms' scale and shift), `torch._dynamo.reset()` before each cell",
    "lowerline": "`lowerline.compile(module, *inputs, num_threads=T)`, cache under "
    "`build/opbench-cache/lowerline`",
}


# -- measurement ----------------------------------------------------------------------


@dataclass
class CellResult:
    cell: Cell
    bytes_moved: int = 0
    round_medians: dict[str, list[float]] = field(default_factory=dict)
    errors: dict[str, tuple[float, float, bool]] = field(default_factory=dict)  # abs, rel, ok
    failed: dict[str, str] = field(default_factory=dict)
    build_seconds: dict[str, float] = field(default_factory=dict)  # compile and first call
    seconds: float = 0.0

    def time(self, system: str) -> float | None:
        medians = self.round_medians.get(system)
        return statistics.median(medians) if medians else None

    def ratio(self, system: str, base: str) -> float | None:
        a, b = self.round_medians.get(system), self.round_medians.get(base)
        if not a or not b:
            return None
        return statistics.median(x / y for x, y in zip(a, b, strict=True))


def compare(actual, expected: torch.Tensor) -> tuple[float, float, bool]:
    """Max abs error, max rel error (against |expected| floored at 1e-6) and
    whether every element is within RTOL/ATOL. Equal infinities and NaNs in
    the same places count as equal."""
    if not isinstance(actual, torch.Tensor) or actual.shape != expected.shape:
        got = tuple(actual.shape) if isinstance(actual, torch.Tensor) else type(actual).__name__
        raise ValueError(f"output {got}, eager {tuple(expected.shape)}")
    a, e = actual.detach().double(), expected.double()
    same = (a == e) | (a.isnan() & e.isnan())
    diff = torch.where(same, torch.zeros_like(a), (a - e).abs())
    rel = diff / e.abs().clamp_min(1e-6)
    ok = torch.allclose(a, e, rtol=RTOL, atol=ATOL, equal_nan=True)
    return diff.max().item(), rel.max().item(), ok


def bytes_moved(module: nn.Module, inputs, output: torch.Tensor) -> int:
    tensors = [*inputs, *module.parameters(), *module.buffers(), output]
    return sum(t.numel() * t.element_size() for t in tensors)


def wall_median(run: Callable[[], object], budget: float) -> float:
    return statistics.median(time_calls(run, budget, max_calls=1_000_000))


def thread_cpu_median(run: Callable[[], object], budget: float) -> float:
    return cpu_median(run, (), budget)


def measure_cell(
    cell: Cell,
    threads: int,
    rounds: int,
    budget: float,
    systems: dict[str, Callable] = SYSTEMS,
    timer: Callable[[Callable[[], object], float], float] = wall_median,
) -> CellResult:
    """Builds and checks ``cell`` on every one of ``systems``, then ``rounds``
    interleaved rounds of ``timer`` (a median seconds per call of a runner)."""
    started = time.perf_counter()
    module, inputs = cell.build()
    with torch.inference_mode():
        expected = module(*inputs).clone()
    result = CellResult(cell, bytes_moved(module, inputs, expected))
    runners = {}
    for system, build in systems.items():
        start = time.perf_counter()
        try:
            run = build(module, inputs, threads)
            result.errors[system] = compare(run(), expected)
        except Exception as err:  # a failure is a result
            result.failed[system] = first_line(err)
            continue
        finally:
            result.build_seconds[system] = time.perf_counter() - start
        runners[system] = run
    settle()
    for _ in range(rounds):  # interleaved: every system in every round
        for system, run in runners.items():
            result.round_medians.setdefault(system, []).append(timer(run, budget))
    result.seconds = time.perf_counter() - started
    return result


def copy_bandwidth(budget: float, timer=wall_median) -> float:
    """GB/s of ``dst.copy_(src)`` on 64 MiB of float32: (read + written) / median time."""
    src = torch.rand(16 * 2**20)
    dst = torch.empty_like(src)
    dst.copy_(src)
    return 2 * src.nbytes / timer(lambda: dst.copy_(src), max(budget, 0.5)) / 1e9


# -- the report -------------------------------------------------------------------------


def _time_cell(result: CellResult, system: str) -> str:
    if system in result.failed:
        return "failed"
    t = result.time(system)
    return format_seconds(t) if t is not None else "-"


def _ratio_cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _error_cell(result: CellResult, system: str) -> str:
    if system in result.failed:
        return f"{system} failed: {result.failed[system].replace('|', '/')}"
    if system not in result.errors:
        return "-"
    abs_err, rel_err, ok = result.errors[system]
    return f"{abs_err:.1e} / {rel_err:.1e}" + ("" if ok else " (off)")


def _build_cell(result: CellResult) -> str:
    seconds = [result.build_seconds.get(s) for s in ("lowerline", "inductor")]
    return " / ".join("-" if t is None else f"{t:.1f} s" for t in seconds)


def table(results: list[CellResult], bandwidth: float) -> list[str]:
    lines = [
        "| op | shape | axis | eager | inductor | lowerline | ll/eager | ll/inductor "
        "| ll GB/s | % copy | ll error (abs / rel) | inductor error (abs / rel) "
        "| ll / inductor build |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | ---: |",
    ]
    for r in results:
        t = r.time("lowerline")
        gbs = r.bytes_moved / t / 1e9 if t else None
        lines.append(
            f"| {r.cell.op.name} | {'x'.join(map(str, r.cell.shape))} | "
            f"{AXIS_NAMES[r.cell.axis]} | {_time_cell(r, 'eager')} | "
            f"{_time_cell(r, 'inductor')} | {_time_cell(r, 'lowerline')} | "
            f"{_ratio_cell(r.ratio('lowerline', 'eager'))} | "
            f"{_ratio_cell(r.ratio('lowerline', 'inductor'))} | "
            f"{'-' if gbs is None else f'{gbs:.1f}'} | "
            f"{'-' if gbs is None else f'{100 * gbs / bandwidth:.0f}%'} | "
            f"{_error_cell(r, 'lowerline')} | {_error_cell(r, 'inductor')} | "
            f"{_build_cell(r)} |"
        )
    return lines


def summary(results: list[CellResult], bandwidth: float, threads: int) -> list[str]:
    def names(rs, key=None):
        shown = [f"{r.cell.label}" + (f" ({key(r):.2f})" if key else "") for r in rs]
        return "; ".join(shown) if shown else "none"

    failed = [r for r in results if "lowerline" in r.failed]
    timed = [r for r in results if r.time("lowerline") is not None]
    over_eager = [r for r in timed if (r.ratio("lowerline", "eager") or 0) > 1.0]
    over_inductor = [r for r in timed if (r.ratio("lowerline", "inductor") or 0) > 1.0]
    big = [r for r in timed if r.cell.elements >= BIG]
    slow_big = [r for r in big if r.bytes_moved / r.time("lowerline") / 1e9 < 0.7 * bandwidth]
    off = [r for r in timed if not r.errors["lowerline"][2]]
    worst = sorted(timed, key=lambda r: -(r.ratio("lowerline", "eager") or 0))[:10]
    reasons: dict[str, list[str]] = {}
    for r in failed:
        reasons.setdefault(r.failed["lowerline"], []).append(r.cell.label)
    plural = "s" if threads > 1 else ""
    with_inductor = [r for r in timed if r.time("inductor") is not None]
    against_inductor = (
        f"slower than inductor: {len(over_inductor)} of {len(with_inductor)}; "
        if with_inductor
        else "inductor not run; "
    )
    lines = [
        f"**Summary, {threads} thread{plural}:** {len(results)} cells; lowerline failed on "
        f"{len(failed)}; over 1.0 of eager's time: {len(over_eager)} of {len(timed)}; "
        f"{against_inductor}ops on >= 1M elements "
        f"under 70% of copy bandwidth: {len(slow_big)} of {len(big)}; results off eager "
        f"(rtol {RTOL}, atol {ATOL}): {len(off)}.",
        "",
        f"- Slowest against eager: {names(worst, lambda r: r.ratio('lowerline', 'eager'))}",
        f"- Off eager: {names(off)}",
    ]
    lines += [f"- lowerline failed ({', '.join(c)}): {why}" for why, c in reasons.items()]
    others = [(r, s) for r in results for s in r.failed if s != "lowerline"]
    lines += [f"- {s} failed on {r.cell.label}: {r.failed[s]}" for r, s in others]
    return lines


def _git_commit() -> str:
    try:
        out = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, check=True)  # fmt: skip
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def report(
    runs: dict[int, tuple[float, list[CellResult]]], args, systems: list[str], seconds: float
) -> str:
    env = ", ".join(
        f"{name}={os.environ.get(name, '(unset)')}"
        for name in (
            "OMP_WAIT_POLICY",
            "KMP_BLOCKTIME",
            "GOMP_SPINCOUNT",
            "LOWERLINE_OMP_BLOCKTIME",
            "LOWERLINE_COMPILE_TIMEOUT",
        )
    )
    clock = "of CPU time (time.thread_time)" if args.cpu_time else "of wall time"
    lines = [
        "# Single-op CPU speed: lowerline, eager and inductor",
        "",
        *([f"**{args.note}**", ""] if args.note else []),
        f"Measured {time.strftime('%Y-%m-%d %H:%M')} on {_cpu_model()}, {os.cpu_count()} "
        f"cores; torch {torch.__version__}, lowerline {_git_commit()}; {args.rounds} "
        f"interleaved round(s), about {args.budget} s {clock} per system, cell and round; the run "
        f"took {seconds / 60:.1f} min, compiles included.",
        "",
        f"Command: `{shlex.join([os.path.relpath(sys.executable), *sys.argv])}`",
        "",
        f"Settings: out of the box, no OpenMP variable set by the script ({env}); "
        "`torch.set_num_threads(T)`; lowerline `num_threads=T`.",
        "",
        "Systems:",
        "",
        *[f"- {name}: {SYSTEM_NOTES[name]}" for name in systems],
        "",
        "Times are medians over rounds of each round's median; ratios are medians of "
        "per-round ratios (lower is faster for lowerline). GB/s = (input, parameter and "
        "output bytes) / lowerline's time. Build: seconds to compile (or load from the "
        "cache) and make the first call. Errors against eager: max abs / max rel (rel "
        "against |eager| floored at 1e-6); `(off)`: some element outside "
        f"rtol {RTOL}, atol {ATOL}.",
        "",
    ]
    for threads, (bandwidth, results) in runs.items():
        lines += [
            f"## {threads} thread{'s' if threads > 1 else ''}",
            "",
            f"Copy bandwidth: {bandwidth:.1f} GB/s (`dst.copy_(src)`, 64 MiB float32, "
            "2 x 64 MiB / median time).",
            "",
            *summary(results, bandwidth, threads),
            "",
            *table(results, bandwidth),
            "",
        ]
    return "\n".join(lines)


# -- main -----------------------------------------------------------------------------


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--budget", type=float, default=0.1, help="seconds per system, cell, round")
    parser.add_argument("--ops", help=f"op names or families ({', '.join(FAMILIES)}); default all")
    parser.add_argument("--shapes", help=f"default {','.join(SHAPES)}")
    parser.add_argument("--quick", action="store_true",
                        help=f"ops {','.join(QUICK_OPS)} on {','.join(QUICK_SHAPES)}")  # fmt: skip
    parser.add_argument(
        "--compile-timeout",
        type=float,
        default=120,
        help="seconds per lowerline worker step (LOWERLINE_COMPILE_TIMEOUT, unless already set)",
    )
    parser.add_argument(
        "--cpu-time",
        action="store_true",
        help="1 thread, eager and lowerline only, calls timed in CPU time (a loaded machine)",
    )
    parser.add_argument("--note", default="", help="a line for the top of the report")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "ops-results.md"))
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    # A compile that runs away is reported as failed instead of stalling the run.
    os.environ.setdefault("LOWERLINE_COMPILE_TIMEOUT", str(args.compile_timeout))
    default_ops = QUICK_OPS if args.quick else [op.name for op in OPS]
    default_shapes = QUICK_SHAPES if args.quick else SHAPES
    cells = select_cells(
        args.ops.split(",") if args.ops else default_ops,
        args.shapes.split(",") if args.shapes else default_shapes,
    )
    systems = {s: SYSTEMS[s] for s in ("eager", "lowerline")} if args.cpu_time else SYSTEMS
    timer = thread_cpu_median if args.cpu_time else wall_median
    thread_counts = [1] if args.cpu_time else [int(t) for t in args.threads.split(",")]
    started = time.perf_counter()
    runs: dict[int, tuple[float, list[CellResult]]] = {}
    for threads in thread_counts:
        torch.set_num_threads(threads)
        bandwidth = copy_bandwidth(args.budget, timer)
        print(f"{threads} thread(s): copy bandwidth {bandwidth:.1f} GB/s", file=sys.stderr)
        results = []
        for i, cell in enumerate(cells, 1):
            result = measure_cell(cell, threads, args.rounds, args.budget, systems, timer)
            results.append(result)
            times = ", ".join(
                f"{s} {_time_cell(result, s)} (built in {result.build_seconds[s]:.1f} s)"
                for s in systems
            )
            print(f"[{threads}T {i}/{len(cells)}] {cell.label}: {times}; "
                  f"{result.seconds:.1f} s in all", file=sys.stderr)  # fmt: skip
        runs[threads] = (bandwidth, results)
    text = report(runs, args, list(systems), time.perf_counter() - started)
    with open(args.out, "w", encoding="utf-8") as handle:
        handle.write(text)
    print(text)


if __name__ == "__main__":
    main()
