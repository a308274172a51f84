"""The logic behind ``lowerline-opt``: read, split, parse, run a mixed pass
pipeline, print, and report diagnostics exactly like mlir-opt does.

Exit status: 0 on success, 1 on any user-facing failure (bad input, unknown
pass, failed pass, unmet ``expected-*``). Errors are one line each, located
``file:line:col`` for the input and ``<pass-pipeline>:1:col`` for the pipeline.

Crash isolation: the wheels' LLVM is built with assertions, and some upstream
passes abort (or overflow the stack) on odd IR. ``lowerline-opt`` therefore
runs ``OptRun`` in a forked child (``tools/opt.py``, ``processes.run_forked``)
that reports, through a pipe, each step before it starts (``Progress``): the
parent turns a child killed by a signal into exit status 1 and a located
error naming that pass (``crash_message``). A fork and wait measured 14 ms
(an empty child, on a loaded 2-core machine), far less than starting a worker
(importing MLIR again, ~0.3 s); it happens before any MLIR context, so no
thread pool is forked. With a report
callback every pass is its own step (``Instrumentation.fine``), so the pass
named is exact. ``LOWERLINE_OPT_IN_PROCESS=1`` runs in one process (for a
debugger).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from mlir import ir

from lowerline.errors import UsageError
from lowerline.explore.report import ExploreData, write_report
from lowerline.pipeline import registry, remarks
from lowerline.pipeline.context import make_context
from lowerline.pipeline.diagnostics import (
    Diag,
    DiagnosticCollector,
    parse_expectations,
    verify_expectations,
)
from lowerline.pipeline.options import describe_options
from lowerline.pipeline.parser import parse_pipeline
from lowerline.pipeline.scheduler import (
    Instrumentation,
    PipelineError,
    PipelineFailed,
    Step,
    pass_names,
    plan_pipeline,
    run_steps,
)
from lowerline.pipeline.source import Chunk, NestingTooDeep, parse_chunk, split_input
from lowerline.pipeline.trace import PassTrace


@dataclass
class OptConfig:
    input: str = "-"
    output: str = "-"
    pipeline: str | None = None
    split_input_file: bool = False
    verify_diagnostics: bool = False
    print_ir_after_all: bool = False
    print_ir_after: list[str] = field(default_factory=list)
    timing: bool = False
    debug_info: bool = False
    generic: bool = False
    allow_unregistered: bool = False
    explore: str | None = None  # write the pass explorer's page (HTML) here


def list_passes() -> str:
    lines = ["lowerline passes:"]
    for cls in registry.all_passes():
        lines.append(f"  {cls.flag}  (runs on: {cls.anchor or 'any op'})")
        lines.append(f"      {cls.summary}")
        lines.extend(_option_lines(cls, None))
    lines.append("")
    lines.append("lowerline pipelines (usable as pass names):")
    for pipe in registry.all_pipelines():
        lines.append(f"  {pipe.flag}  (runs on: {pipe.anchor})")
        lines.append(f"      {pipe.summary}")
        lines.extend(_option_lines(pipe.options, pipe.uses))
    return "\n".join(lines) + "\n"


def _option_lines(cls: type, only: tuple[str, ...] | None) -> list[str]:
    return [
        f"      {name}=<{kind}>  (default: {default})  {help_text}".rstrip()
        for name, kind, default, help_text in describe_options(cls, only)
    ]


def _read_input(path: str) -> tuple[str, str]:
    if path == "-":
        return sys.stdin.read(), "<stdin>"
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read(), path
    except OSError as err:
        raise UsageError(f"cannot open input file '{path}': {err.strerror}") from None
    except UnicodeDecodeError:
        raise UsageError(f"input file '{path}' is not UTF-8 text") from None


def _write_output(path: str, text: str) -> None:
    """Write all or nothing: a failed run never leaves a half-written file."""
    if path == "-":
        sys.stdout.write(text)
        return
    # Written next to the file it replaces and renamed over it, so a failure
    # never leaves half a file; through a link, the link's target is replaced
    # (as `mlir-opt -o` writes through it), with the mode a new file gets.
    target = os.path.realpath(path)
    directory = os.path.dirname(target)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".lowerline-opt-")
        os.fchmod(fd, _new_file_mode(target))
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, target)
    except OSError as err:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.remove(tmp)
        raise UsageError(f"cannot write output file '{path}': {err.strerror}") from None


def _new_file_mode(path: str) -> int:
    """The mode ``path`` has, or else what ``open`` would create (0666 less
    the umask): mkstemp's 0600 would hide the output from other users."""
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


class Progress:
    """What the run is doing, sent to the parent before each step: the input
    and its chunk's first line, and the pass (or ``(parse)``, ...)."""

    def __init__(self, report: Callable[[str], None]):
        self.report = report
        self.where = ("<input>", 1)

    def step(self, label: str) -> None:
        self.report(json.dumps([*self.where, label]))


def crash_message(signum: int, last_report: str) -> str:
    """The error for a run that a signal ended, located at the chunk whose
    step was running (the last ``Progress`` report)."""
    try:
        name = signal.Signals(signum).name
    except ValueError:
        name = f"signal {signum}"
    try:
        source, line, label = json.loads(last_report)
    except ValueError:
        return f"lowerline-opt: error: crashed ({name}) before reading the input\n"
    doing = "while parsing it" if label == "(parse)" else f"in pass '{label}'"
    return (
        f"{source}:{line}:1: error: lowerline-opt crashed ({name}) {doing}, on the input "
        "starting here: an abort inside MLIR/LLVM (a bug to report with this input); "
        "nothing was written for this run\n"
    )


def _first_code_line(chunk: Chunk) -> int:
    """The line of the chunk's first op (not a comment): where a crash is reported."""
    for offset, line in enumerate(chunk.text.split("\n")):
        if line.strip() and not line.lstrip().startswith("//"):
            return chunk.first_line + offset
    return chunk.first_line


class OptRun:
    def __init__(self, config: OptConfig, report: Callable[[str], None] | None = None):
        self.config = config
        self.progress = Progress(report) if report is not None else None
        self.context = make_context(config.allow_unregistered)
        self.collector = DiagnosticCollector(self.context)
        self.inst = Instrumentation(
            time_passes=config.timing,
            print_after_all=config.print_ir_after_all,
            print_after=frozenset(config.print_ir_after),
            debug_info=config.debug_info,
            # Reporting every pass makes each its own step: a crash names one.
            before=self.progress.step if self.progress else None,
        )
        self.trace = self._trace()
        self.failed = False

    def _trace(self) -> PassTrace | None:
        """With ``--explore``, the IR after every pass is kept for the page."""
        if self.config.explore is None:
            return None
        if self.config.split_input_file:
            raise UsageError("--explore shows one module: leave out --split-input-file")
        trace = PassTrace()
        self.inst = trace.instrument(self.inst)
        return trace

    def _step(self, label: str) -> None:
        if self.progress is not None:
            self.progress.step(label)

    def _plan(self) -> list[Step]:
        if self.config.pipeline is None:
            steps = []
        else:
            try:
                steps = plan_pipeline(self.config.pipeline, self.context, fine=self.inst.fine)
            except PipelineError as err:
                message = f"<pass-pipeline>:1:{err.pos + 1}: error: {err.message}"
                raise UsageError(message) from None
        self._check_print_after(steps)
        return steps

    def _check_print_after(self, steps: list[Step]) -> None:
        """Like mlir-opt, reject --mlir-print-ir-after names that match no pass."""
        names = pass_names(steps)
        for name in self.config.print_ir_after:
            if name not in names:
                known = ", ".join(sorted(names)) or "none"
                raise UsageError(
                    f"--mlir-print-ir-after: no pass '{name}' in the pipeline (its passes: {known})"
                )

    def _check_root(self) -> None:
        anchor = parse_pipeline(self.config.pipeline).anchor if self.config.pipeline else None
        if anchor not in (None, "builtin.module", "any"):
            raise UsageError(
                f"<pass-pipeline>:1:1: error: the pipeline is anchored on '{anchor}', "
                "but the top-level op of the input is 'builtin.module'"
            )

    def run(self) -> int:
        text, source_name = _read_input(self.config.input)
        if self.progress is not None:
            self.progress.where = (source_name, 1)
        self._step("(plan)")
        steps = self._plan()
        self._check_root()
        with remarks.collecting() as found:
            outputs = [
                self._process(chunk, source_name, steps)
                for chunk in split_input(text, self.config.split_input_file)
            ]
        if self.trace is not None:
            self._write_explorer(source_name, found)
        if self.config.timing:
            sys.stderr.write(self.inst.report())
        text = "// -----\n".join(o for o in outputs if o is not None)
        # As in mlir-opt, stdout still gets the chunks that succeeded; a file is
        # written only when everything succeeded.
        if not self.failed or self.config.output == "-":
            _write_output(self.config.output, text)
        return 1 if self.failed else 0

    def _write_explorer(self, source_name: str, found: list[remarks.Remark]) -> None:
        """The page of the passes that ran (up to a failing one, if any)."""
        assert self.trace is not None and self.config.explore is not None
        title = f"{source_name}: {self.config.pipeline or '(no pipeline)'}"
        notes = ["numerics: lowerline-opt runs no code; lowerline explore FILE.py does."]
        data = ExploreData(title, [r.to_json() for r in found], notes=notes)
        write_report(self.config.explore, self.trace.to_json(), data)

    def _process(self, chunk: Chunk, source_name: str, steps: list[Step]) -> str | None:
        """The printed result of one chunk, or None if it failed."""
        output = None
        failure = None
        try:
            start = time.perf_counter()
            self.collector.source_name = source_name
            if self.progress is not None:
                self.progress.where = (source_name, _first_code_line(chunk))
            self._step("(parse)")
            module = parse_chunk(chunk, source_name, self.context)
            self.inst.record("(parse)", time.perf_counter() - start)
            if self.trace is not None:
                self.trace.begin_stage("pipeline", module)
            run_steps(steps, module.operation, self.inst)
            start = time.perf_counter()
            self._step("(print)")
            output = module.operation.get_asm(
                enable_debug_info=self.config.debug_info,
                print_generic_op_form=self.config.generic,
            )
            self.inst.record("(print)", time.perf_counter() - start)
        except (ir.MLIRError, NestingTooDeep):
            failure = "parsing failed"
        except PipelineFailed as err:
            failure = str(err)
        diags = self.collector.take()
        if failure and not self.config.verify_diagnostics:
            self.failed = True
            if not any(d.severity == "error" for d in diags):
                # A pass may fail without a diagnostic; never fail silently.
                sys.stderr.write(f"{source_name}: error: {failure}\n")
        self._report(diags, chunk, source_name)
        return output

    def _report(self, diags: list[Diag], chunk: Chunk, source_name: str) -> None:
        if self.config.verify_diagnostics:
            expectations = parse_expectations(chunk.text, chunk.first_line)
            problems = verify_expectations(diags, expectations, source_name)
            for problem in problems:
                sys.stderr.write(problem + "\n")
            self.failed |= bool(problems)
            return
        for diag in diags:
            sys.stderr.write(diag.format() + "\n")
            self.failed |= diag.severity == "error"
