"""The logic behind ``lowerline-opt``: read, split, parse, run a mixed pass
pipeline, print, and report diagnostics exactly like mlir-opt does.

Exit status: 0 on success, 1 on any user-facing failure (bad input, unknown
pass, failed pass, unmet ``expected-*``). Errors are one line each, located
``file:line:col`` for the input and ``<pass-pipeline>:1:col`` for the pipeline.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field

from mlir import ir

from lowerline.errors import UsageError
from lowerline.pipeline import registry
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


class OptRun:
    def __init__(self, config: OptConfig):
        self.config = config
        self.context = make_context(config.allow_unregistered)
        self.collector = DiagnosticCollector(self.context)
        self.inst = Instrumentation(
            time_passes=config.timing,
            print_after_all=config.print_ir_after_all,
            print_after=frozenset(config.print_ir_after),
            debug_info=config.debug_info,
        )
        self.failed = False

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
        steps = self._plan()
        self._check_root()
        outputs = [
            self._process(chunk, source_name, steps)
            for chunk in split_input(text, self.config.split_input_file)
        ]
        if self.config.timing:
            sys.stderr.write(self.inst.report())
        text = "// -----\n".join(o for o in outputs if o is not None)
        # As in mlir-opt, stdout still gets the chunks that succeeded; a file is
        # written only when everything succeeded.
        if not self.failed or self.config.output == "-":
            _write_output(self.config.output, text)
        return 1 if self.failed else 0

    def _process(self, chunk: Chunk, source_name: str, steps: list[Step]) -> str | None:
        """The printed result of one chunk, or None if it failed."""
        output = None
        failure = None
        try:
            start = time.perf_counter()
            self.collector.source_name = source_name
            module = parse_chunk(chunk, source_name, self.context)
            self.inst.record("(parse)", time.perf_counter() - start)
            run_steps(steps, module.operation, self.inst)
            start = time.perf_counter()
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
