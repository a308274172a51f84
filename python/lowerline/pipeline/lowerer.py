"""Lower MLIR text through textual pipelines from Python.

This is the library form of what ``lowerline-opt`` does on files: parse,
run a pipeline that may mix upstream and lowerline passes, and turn every
failure into a ``LoweringError`` carrying MLIR's diagnostics and the exact
``lowerline-opt`` command that reproduces it. Running named stages one after
the other (dumps, timing, progress) is ``stage_runner``'s job.
"""

from __future__ import annotations

import shlex

from mlir import ir

from lowerline.errors import LowerlineError
from lowerline.pipeline.context import make_context
from lowerline.pipeline.diagnostics import Diag, DiagnosticCollector
from lowerline.pipeline.scheduler import (
    Instrumentation,
    PipelineError,
    PipelineFailed,
    plan_pipeline,
    run_steps,
)
from lowerline.pipeline.source import Chunk, NestingTooDeep, parse_chunk


class LoweringError(LowerlineError):
    """Parsing or a pass failed. ``diagnostics`` holds MLIR's messages."""

    def __init__(self, summary: str, diagnostics: list[Diag], reproducer: str | None = None):
        lines = [summary, *(d.format() for d in diagnostics)]
        if reproducer:
            lines.append(f"reproduce with: {reproducer}")
        super().__init__("\n".join(lines))
        self.summary = summary
        self.diagnostics = diagnostics
        self.reproducer = reproducer


def reproducer_command(input_path: str, pipeline: str) -> str:
    """The shell command that runs ``pipeline`` on the file ``input_path``."""
    return f"lowerline-opt {shlex.quote(input_path)} --pass-pipeline={shlex.quote(pipeline)}"


class Lowerer:
    """Owns a context and its diagnostics; parses and runs pipelines in it."""

    def __init__(self, context: ir.Context | None = None):
        self.context = context or make_context()
        self.collector = DiagnosticCollector(self.context)

    def parse(self, text: str, source_name: str = "<string>") -> ir.Module:
        self.collector.take()
        self.collector.source_name = source_name
        try:
            return parse_chunk(Chunk(text, 1), source_name, self.context)
        except (ir.MLIRError, NestingTooDeep):
            raise LoweringError(f"cannot parse {source_name}", self.collector.take()) from None

    def run(
        self,
        module: ir.Module,
        pipeline: str,
        input_path: str | None = None,
        inst: Instrumentation | None = None,
    ) -> None:
        """Run ``pipeline`` (``builtin.module(...)``) on ``module`` in place."""
        self.collector.take()
        try:
            steps = plan_pipeline(pipeline, self.context, fine=inst is not None and inst.fine)
        except PipelineError as err:
            raise LoweringError(
                f"bad pipeline at column {err.pos + 1}: {err.message}", []
            ) from None
        try:
            run_steps(steps, module.operation, inst)
        except PipelineFailed as err:
            reproducer = reproducer_command(input_path, pipeline) if input_path else None
            raise LoweringError(str(err), self.collector.take(), reproducer) from None
