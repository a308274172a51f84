"""Run torch-mlir's upstream e2e tests through ``lowerline.compile``.

``python -m lowerline.tools.upstream_e2e DIR [--filter RE] [--sample N --seed S]
[--jobs J] [--timeout SECONDS] [--report FILE.md] [--json FILE.json]``

``DIR`` holds a torch-mlir checkout's ``torch_mlir_e2e_test`` package
(``projects/pt1/python/torch_mlir_e2e_test``), the package folder itself, or
just a folder of test-suite files. The suite is not part of this repository.
Every ``test_suite/*.py`` file is imported; each registered test
(``@register_test_case``) runs its module on eager PyTorch with the suite's
seeded ``TestUtils`` inputs (the golden trace), then compiles the module with
``lowerline.compile`` and calls it on the same inputs; the results are
compared as the suite's own reporting does (``reporting.py``: tensors by shape,
dtype and ``allclose(rtol=1e-3, atol=1e-7, equal_nan=True)``, floats to 1e-4
relative, ints and strings exactly, containers element by element).

When the package's ``framework``, ``annotations`` or ``registry`` module is
absent (or does not import: the real ``framework`` needs ``multiprocess``),
the runner supplies its own minimal stand-in with the same names.

Tests run in worker processes (``--jobs`` of them), one test at a time each; a
test that runs past ``--timeout`` or kills its worker is reported as such and
the worker is replaced, so one hang or abort cannot stop the run. Each
failure gets a class: ``export``, ``unsupported-op``, ``compile:<stage>``,
``internal-error``, ``runtime-error``, ``wrong-result``, ``crash``,
``timeout``, or ``eager-error`` (the test fails on eager PyTorch itself, so it
says nothing about lowerline).
"""

from __future__ import annotations

import argparse
import collections
import importlib
import importlib.util
import json
import os
import random
import re
import select
import signal
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any, NamedTuple

import torch

PACKAGE = "torch_mlir_e2e_test"
SHIMMED = ("framework", "annotations", "registry")
# reporting.py's tolerances.
RTOL, ATOL, FLOAT_RTOL = 1e-3, 1e-7, 1e-4
DEFAULT_TIMEOUT = 300.0


# --- stand-ins for the suite's framework, annotations and registry modules ---


class TraceItem(NamedTuple):
    symbol: str
    inputs: list[Any]
    output: Any


class SuiteTest(NamedTuple):
    """``framework.Test``: a name, a module factory and the function that calls it."""

    unique_name: str
    program_factory: Callable[[], torch.nn.Module]
    program_invoker: Callable[[Any, Any], None]
    timeout: int = 600


class SeededInputs:
    """``framework.TestUtils``: seeds torch's generator when made, so each
    test draws the same inputs on every run."""

    def __init__(self) -> None:
        torch.manual_seed(0)

    def rand(self, *sizes: int, low: float = 0.0, high: float = 1.0, dtype: Any = None) -> Any:
        values = torch.empty(sizes).uniform_(low, high)
        return values if dtype is None else values.to(dtype)

    def randint(self, *sizes: int, low: int = 0, high: int = 10, dtype: Any = torch.int64) -> Any:
        return torch.randint(low, high, sizes, dtype=dtype)

    def nans(self, *sizes: int) -> Any:
        return torch.full(sizes, float("nan"))


def _module(name: str, **members: Any) -> types.ModuleType:
    module = types.ModuleType(f"{PACKAGE}.{name}")
    module.__dict__.update(members)
    return module


def _shim_framework() -> types.ModuleType:
    return _module("framework", TestUtils=SeededInputs, Test=SuiteTest, TraceItem=TraceItem)


def _shim_annotations() -> types.ModuleType:
    def export(fn: Any) -> Any:
        fn._torch_mlir_export = True
        return fn

    def annotate_args(annotations: list[Any]) -> Callable[[Any], Any]:
        def decorate(fn: Any) -> Any:
            fn._torch_mlir_arg_annotations = annotations
            return fn

        return decorate

    return _module("annotations", export=export, annotate_args=annotate_args)


def _shim_registry() -> types.ModuleType:
    registry: list[SuiteTest] = []

    def register_test_case(module_factory: Any, timeout_seconds: int = 600) -> Any:
        def decorate(fn: Any) -> Any:
            if any(test.unique_name == fn.__name__ for test in registry):
                raise ValueError(f"duplicate test name '{fn.__name__}'")
            registry.append(SuiteTest(fn.__name__, module_factory, fn, timeout_seconds))
            return fn

        return decorate

    return _module("registry", GLOBAL_TEST_REGISTRY=registry, register_test_case=register_test_case)


SHIMS: dict[str, Callable[[], types.ModuleType]] = {
    "framework": _shim_framework,
    "annotations": _shim_annotations,
    "registry": _shim_registry,
}


# --- loading the suite ---


@dataclass
class Suite:
    tests: dict[str, Any]
    shimmed: list[str]  # the framework modules the runner supplied
    load_errors: dict[str, str]  # test file -> why it did not import


def _folders(root: str) -> tuple[str | None, str]:
    """(the ``torch_mlir_e2e_test`` package folder or None, the test-suite folder)."""
    for package in (os.path.join(root, PACKAGE), root):
        if os.path.isdir(os.path.join(package, "test_suite")):
            return package, os.path.join(package, "test_suite")
    return None, root


def _new_package(name: str, path: str | None) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__path__ = [path] if path else []
    sys.modules[name] = module
    return module


def _framework_module(package: str | None, name: str) -> types.ModuleType | None:
    """The package's own module ``name``, or None where it is absent or fails to import."""
    if package is None or not os.path.isfile(os.path.join(package, f"{name}.py")):
        return None
    try:
        return importlib.import_module(f"{PACKAGE}.{name}")
    except Exception:
        sys.modules.pop(f"{PACKAGE}.{name}", None)
        return None


def _import_file(name: str, path: str) -> None:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)


def load_suite(root: str) -> Suite:
    """Import every test file under ``root``; the registered tests by name.
    The suite's ``__init__`` files are not run (the package's lists its own
    expected failures and imports every file at once)."""
    if not os.path.isdir(root):
        raise SystemExit(f"upstream_e2e: no folder '{root}'")
    package, suite_folder = _folders(root)
    top = _new_package(PACKAGE, package)
    _new_package(f"{PACKAGE}.test_suite", suite_folder)
    shimmed = []
    for name in SHIMMED:  # framework first: the others import it
        module = _framework_module(package, name)
        if module is None:
            module = SHIMS[name]()
            shimmed.append(name)
            sys.modules[f"{PACKAGE}.{name}"] = module
        setattr(top, name, module)
    errors = {}
    for file in sorted(os.listdir(suite_folder)):
        if not file.endswith(".py") or file == "__init__.py":
            continue
        try:
            _import_file(f"{PACKAGE}.test_suite.{file[:-3]}", os.path.join(suite_folder, file))
        except Exception as err:
            errors[file] = _first_line(err)
    registry = sys.modules[f"{PACKAGE}.registry"].GLOBAL_TEST_REGISTRY
    return Suite({test.unique_name: test for test in registry}, shimmed, errors)


# --- one test ---


@dataclass
class Outcome:
    name: str
    passed: bool
    kind: str  # "pass" or the failure class
    detail: str = ""
    seconds: float = 0.0


class _Failure(Exception):
    def __init__(self, kind: str, detail: str):
        super().__init__(detail)
        self.kind = kind
        self.detail = detail


def _first_line(err: BaseException) -> str:
    """The error's first line; with the next one where the first only
    introduces it ("the import worker died:")."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    if not lines:
        return type(err).__name__
    first = lines[0]
    if first.endswith(":") and len(lines) > 1:
        first = f"{first} {lines[1]}"
    return first[:300]


def _clone(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, tuple | list):
        return type(value)(_clone(item) for item in value)
    if isinstance(value, dict):
        return {key: _clone(item) for key, item in value.items()}
    return value


class _Recorder:
    """Stands for the module in a test's invoker: each call of a method
    (``module.forward(...)``, ``module.sub.forward(...)``) is run eagerly and
    recorded with copies of its inputs taken before the call."""

    def __init__(self, target: Any, path: list[str], trace: list[TraceItem]):
        self._target, self._path, self._trace = target, path, trace

    def __call__(self, *args: Any) -> Any:
        inputs = [_clone(arg) for arg in args]
        output = self._target(*args)
        self._trace.append(TraceItem(".".join(self._path), inputs, output))
        return output

    def __getattr__(self, name: str) -> Any:
        return _Recorder(getattr(self._target, name), [*self._path, name], self._trace)


def _fresh_module(test: Any) -> torch.nn.Module:
    # Seeded so that the eager and the compiled instance get the same weights
    # even where the module's constructor draws them without a seed.
    torch.manual_seed(0)
    return test.program_factory()


def golden_trace(test: Any, utils: type) -> list[TraceItem]:
    trace: list[TraceItem] = []
    test.program_invoker(_Recorder(_fresh_module(test), [], trace), utils())
    return trace


class _Method(torch.nn.Module):
    """A module whose ``forward`` is another method of ``inner`` (a test may
    call ``module.sub.method(...)``), for ``lowerline.compile``."""

    def __init__(self, inner: torch.nn.Module, symbol: str):
        super().__init__()
        self.inner = inner
        self.symbol = symbol

    def forward(self, *args: Any) -> Any:
        target: Any = self.inner
        for part in self.symbol.split("."):
            target = getattr(target, part)
        return target(*args)


def _compile_failure(err: Exception) -> _Failure:
    """The failure class of an exception from ``lowerline.compile``."""
    from lowerline.driver.workers import CompileError, UnsupportedOpsError
    from lowerline.errors import LowerlineError
    from lowerline.frontend.export import ExportError

    if isinstance(err, ExportError):
        return _Failure("export", _first_line(err))
    if isinstance(err, UnsupportedOpsError):
        ops = sorted({op["op"] for op in err.ops}) if getattr(err, "ops", None) else []
        return _Failure("unsupported-op", ", ".join(ops) or _first_line(err))
    if isinstance(err, CompileError):
        return _Failure(f"compile:{err.stage}", _first_line(err))
    if isinstance(err, LowerlineError):
        return _Failure("compile:refused", _first_line(err))
    return _Failure("internal-error", f"{type(err).__name__}: {_first_line(err)}")


def lowerline_trace(test: Any, golden: list[TraceItem], options: dict[str, Any]) -> list:
    """The golden trace's calls made on ``lowerline.compile``'d modules."""
    import lowerline

    module = _fresh_module(test)
    compiled: dict[str, Any] = {}
    trace = []
    for item in golden:
        inputs = _clone(item.inputs)
        function = compiled.get(item.symbol)
        if function is None:
            target = module if item.symbol == "forward" else _Method(module, item.symbol)
            try:
                function = compiled[item.symbol] = lowerline.compile(target, *inputs, **options)
            except Exception as err:
                raise _compile_failure(err) from err
        try:
            output = function(*inputs)
        except Exception as err:
            raise _Failure("runtime-error", f"{type(err).__name__}: {_first_line(err)}") from err
        trace.append(TraceItem(item.symbol, item.inputs, output))
    return trace


def _typed_mismatch(value: Any, golden: Any) -> str | None:
    if type(value) is not type(golden) and not (
        isinstance(value, torch.Tensor) and isinstance(golden, torch.Tensor)
    ):
        return f"got a {type(value).__name__}, expected a {type(golden).__name__}"
    return None


def _tensor_mismatch(value: torch.Tensor, golden: torch.Tensor) -> str | None:
    if value.shape != golden.shape:
        return f"shape {list(value.shape)}, expected {list(golden.shape)}"
    if value.dtype != golden.dtype:
        return f"dtype {value.dtype}, expected {golden.dtype}"
    if not torch.allclose(value, golden, rtol=RTOL, atol=ATOL, equal_nan=True):
        worst = (value.double() - golden.double()).abs().nan_to_num(float("inf")).max().item()
        return f"values differ (largest difference {worst:.3g})"
    return None


def mismatch(value: Any, golden: Any, where: str = "output") -> str | None:
    """Why ``value`` does not match ``golden`` (reporting.py's rules), or None."""
    wrong_type = _typed_mismatch(value, golden)
    if wrong_type:
        return f"{where}: {wrong_type}"
    if isinstance(golden, torch.Tensor):
        reason = _tensor_mismatch(value, golden)
    elif isinstance(golden, float):
        scale = abs(golden) or 1.0  # reporting.py divides by golden; 0.0 would raise there
        reason = None if abs(value - golden) / scale <= FLOAT_RTOL else f"{value!r} != {golden!r}"
    elif isinstance(golden, tuple | list):
        if len(value) != len(golden):
            return f"{where}: {len(value)} elements, expected {len(golden)}"
        reasons = (
            mismatch(v, g, f"{where}[{i}]")
            for i, (v, g) in enumerate(zip(value, golden, strict=True))
        )
        return next((r for r in reasons if r), None)
    elif isinstance(golden, dict):
        if sorted(value) != sorted(golden):
            return f"{where}: keys {sorted(value)}, expected {sorted(golden)}"
        reasons = (mismatch(value[k], golden[k], f"{where}[{k!r}]") for k in sorted(golden))
        return next((r for r in reasons if r), None)
    else:
        reason = None if value == golden else f"{value!r} != {golden!r}"
    return f"{where}: {reason}" if reason else None


def run_test(test: Any, utils: type, options: dict[str, Any]) -> Outcome:
    start = time.monotonic()
    try:
        golden = golden_trace(test, utils)
    except Exception as err:
        return Outcome(test.unique_name, False, "eager-error", _first_line(err))
    try:
        trace = lowerline_trace(test, golden, options)
    except _Failure as failure:
        return Outcome(
            test.unique_name, False, failure.kind, failure.detail, time.monotonic() - start
        )
    reasons = (
        mismatch(item.output, want.output, f"call {i} ({item.symbol}) output")
        for i, (item, want) in enumerate(zip(trace, golden, strict=True))
    )
    reason = next((r for r in reasons if r), None)
    seconds = time.monotonic() - start
    if reason:
        return Outcome(test.unique_name, False, "wrong-result", reason, seconds)
    return Outcome(test.unique_name, True, "pass", "", seconds)


# --- worker processes ---


def _serve(root: str, options: dict[str, Any]) -> int:
    """A worker: reads test names on stdin, writes one JSON outcome per line.
    Results go to the original stdout; everything the tests or lowerline print
    goes to stderr, so it cannot be mistaken for a result."""
    results = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    suite = load_suite(root)
    utils = sys.modules[f"{PACKAGE}.framework"].TestUtils
    for line in sys.stdin:
        test = suite.tests[line.strip()]
        results.write(json.dumps(asdict(run_test(test, utils, options))) + "\n")
    return 0


class _Worker:
    def __init__(self, command: list[str], log_path: str):
        self.log = open(log_path, "ab")  # noqa: SIM115 (lives as long as the worker)
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            start_new_session=True,  # its compile workers can be stopped with it
        )
        self.buffer = b""
        self.test: str | None = None
        self.started = 0.0
        self.log_offset = 0

    def send(self, name: str) -> None:
        assert self.process.stdin is not None
        self.test, self.started = name, time.monotonic()
        self.log.flush()
        self.log_offset = os.path.getsize(self.log.name)
        self.process.stdin.write(f"{name}\n".encode())
        self.process.stdin.flush()

    def fileno(self) -> int:
        assert self.process.stdout is not None  # started with a pipe
        return self.process.stdout.fileno()

    def read_outcome(self) -> Outcome | None:
        """The outcome once a whole line has arrived; raises EOFError when the worker died."""
        chunk = os.read(self.fileno(), 65536)
        if not chunk:
            raise EOFError
        self.buffer += chunk
        if b"\n" not in self.buffer:
            return None
        line, self.buffer = self.buffer.split(b"\n", 1)
        self.test = None
        return Outcome(**json.loads(line))

    def last_log_line(self) -> str:
        with open(self.log.name, "rb") as handle:
            handle.seek(self.log_offset)
            lines = [x for x in handle.read().decode(errors="replace").splitlines() if x.strip()]
        return lines[-1][:300] if lines else ""

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        self.log.close()


def _worker_command(root: str, options: dict[str, Any]) -> list[str]:
    # This file, not the installed module: the runner also works from a
    # checkout against another installation of lowerline (its main branch).
    return [
        sys.executable,
        os.path.abspath(__file__),
        root,
        "--serve",
        "--options",
        json.dumps(options),
    ]


def _lost(worker: _Worker, kind: str, timeout: float) -> Outcome:
    """The outcome of the test a worker was running when it died or ran out of time."""
    seconds = time.monotonic() - worker.started
    if kind == "timeout":
        detail = f"no result after {timeout:.0f} s"
    else:
        code = worker.process.poll()
        detail = f"worker exited with {code}; last output: {worker.last_log_line()}"
    return Outcome(worker.test or "?", False, kind, detail, seconds)


def _collect(worker: _Worker, readable: bool, timeout: float) -> tuple[Outcome | None, bool]:
    """The outcome of a busy worker's test if there is one yet, and whether
    the worker is lost (it died, or ran past ``timeout``)."""
    if readable:
        try:
            return worker.read_outcome(), False
        except EOFError:
            worker.process.wait()
            return _lost(worker, "crash", timeout), True
    if time.monotonic() - worker.started > timeout:
        return _lost(worker, "timeout", timeout), True
    return None, False


def run_tests(
    root: str,
    names: list[str],
    jobs: int,
    timeout: float,
    options: dict[str, Any],
    log_dir: str,
    report: Callable[[Outcome], None],
) -> list[Outcome]:
    """Run ``names`` on ``jobs`` workers; a worker that hangs or dies is replaced."""
    if not names:
        return []
    os.makedirs(log_dir, exist_ok=True)
    pending = collections.deque(names)
    outcomes: list[Outcome] = []
    spawned = 0

    def spawn() -> _Worker:
        nonlocal spawned
        spawned += 1
        log = os.path.join(log_dir, f"worker-{spawned}.log")
        return _Worker(_worker_command(root, options), log)

    workers = [spawn() for _ in range(max(1, min(jobs, len(names))))]

    def finish(outcome: Outcome) -> None:
        outcomes.append(outcome)
        report(outcome)

    try:
        while pending or any(w.test for w in workers):
            for worker in workers:
                if worker.test is None and pending:
                    worker.send(pending.popleft())
            busy = [w for w in workers if w.test]
            wait = max(0.0, min(w.started + timeout for w in busy) - time.monotonic())
            ready, _, _ = select.select([w.fileno() for w in busy], [], [], wait)
            for index, worker in enumerate(workers):
                if worker.test is None:
                    continue
                outcome, lost = _collect(worker, worker.fileno() in ready, timeout)
                if lost:
                    worker.stop()
                    workers[index] = spawn()
                if outcome:
                    finish(outcome)
    finally:
        for worker in workers:
            worker.stop()
    return outcomes


# --- choosing tests and writing the report ---


def select_tests(names: Iterable[str], pattern: str | None, sample: int | None, seed: int) -> list:
    chosen = sorted(n for n in names if pattern is None or re.search(pattern, n))
    if sample is not None and sample < len(chosen):
        chosen = sorted(random.Random(seed).sample(chosen, sample))
    return chosen


def summary(outcomes: list[Outcome]) -> list[tuple[str, int, str]]:
    """(class, count, one example test) per outcome class, passes first, then by count."""
    by_kind: dict[str, list[str]] = collections.defaultdict(list)
    for outcome in outcomes:
        by_kind[outcome.kind].append(outcome.name)
    rows = [(kind, len(names), sorted(names)[0]) for kind, names in by_kind.items()]
    return sorted(rows, key=lambda row: (row[0] != "pass", -row[1], row[0]))


def markdown(outcomes: list[Outcome], suite: Suite, command: str, total: int) -> str:
    passed = sum(o.passed for o in outcomes)
    lines = [
        "# Upstream e2e tests through lowerline.compile",
        "",
        f"Command: `{command}`",
        "",
        f"{len(outcomes)} tests run (of {total} collected), **{passed} passed**.",
    ]
    if suite.shimmed:
        lines.append(f"Runner stand-ins used for: {', '.join(suite.shimmed)}.")
    for file, error in sorted(suite.load_errors.items()):
        lines.append(f"Not imported: `{file}`: {error}")
    lines += ["", "| class | tests | example |", "| --- | --- | --- |"]
    lines += [f"| {kind} | {count} | `{example}` |" for kind, count, example in summary(outcomes)]
    lines += ["", "## Failures", "", "| test | class | first line |", "| --- | --- | --- |"]
    for o in sorted(outcomes, key=lambda o: (o.kind, o.name)):
        if not o.passed:
            detail = o.detail.replace("|", "\\|").replace("`", "'")
            lines.append(f"| `{o.name}` | {o.kind} | {detail} |")
    return "\n".join(lines) + "\n"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m lowerline.tools.upstream_e2e",
        description="Run torch-mlir's e2e test suite through lowerline.compile.",
    )
    parser.add_argument("root", help="folder holding torch_mlir_e2e_test (or its test files)")
    parser.add_argument("--filter", help="run the tests whose name matches this regex")
    parser.add_argument("--sample", type=int, help="a random sample of this many tests")
    parser.add_argument("--seed", type=int, default=0, help="the sample's seed (default 0)")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds a test")
    parser.add_argument("--threads", type=int, default=1, help="num_threads of each compile")
    parser.add_argument(
        "--compile-memory",
        default="4G",
        help="compile_memory of each compile (default 4G): a runaway compile stops there",
    )
    parser.add_argument("--report", help="write a Markdown report here")
    parser.add_argument("--json", help="write every outcome as JSON here")
    parser.add_argument(
        "--log-dir",
        default=os.path.join(tempfile.gettempdir(), "lowerline-upstream-e2e"),
        help="where the workers' output goes",
    )
    parser.add_argument("--list", action="store_true", help="list the selected tests and stop")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--options", default="{}", help=argparse.SUPPRESS)
    return parser


def _print_outcome(outcome: Outcome) -> None:
    if outcome.passed:
        print(f"PASS {outcome.name} ({outcome.seconds:.1f} s)", flush=True)
    else:
        print(f"FAIL {outcome.name} [{outcome.kind}] {outcome.detail}", flush=True)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    root = os.path.abspath(args.root)
    if args.serve:
        return _serve(root, json.loads(args.options))
    suite = load_suite(root)
    for file, error in sorted(suite.load_errors.items()):
        print(f"not imported: {file}: {error}", file=sys.stderr)
    names = select_tests(suite.tests, args.filter, args.sample, args.seed)
    if args.list:
        print("\n".join(names))
        return 0
    options = {"num_threads": args.threads, "compile_memory": args.compile_memory}
    outcomes = run_tests(
        root, names, args.jobs, args.timeout, options, args.log_dir, _print_outcome
    )
    outcomes.sort(key=lambda o: o.name)
    for kind, count, example in summary(outcomes):
        print(f"{kind}: {count} (e.g. {example})")
    command = " ".join(["python -m lowerline.tools.upstream_e2e", *(argv or sys.argv[1:])])
    if args.report:
        with open(args.report, "w", encoding="utf-8") as handle:
            handle.write(markdown(outcomes, suite, command, len(suite.tests)))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump([asdict(o) for o in outcomes], handle, indent=1)
    return 0 if all(o.passed for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
