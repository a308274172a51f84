"""Run named stages on a module, one after the other: the one loop behind
``lowerline run``, the compile worker (CPU and GPU stages, and the GPU IR's
CPU emulation) and the explorer.

For each stage the runner tells a hook what is about to run, runs the stage's
pipeline, times it, writes the IR after it where a ``DumpPolicy`` asks, keeps
the IR after every pass where a ``PassTrace`` is given (the explorer), and
on failure raises a ``StageError`` naming the input of the stage that failed
and the exact ``lowerline-opt`` command that replays it there::

    runner = StageRunner(Lowerer(), DumpPolicy("out"))
    result = runner.run(module, stages_of(CPU_STAGES), CpuOptions(), "in.mlir")
    result.seconds["llvm"], result.dumps["llvm"]  # 'out/5-llvm.mlir'

Every stage's input is in a file before the stage starts: the caller's
``input_path`` for the first stage, the previous stage's dump, or else a file
written for the purpose (kept if the stage fails, removed if it succeeds). A
file rather than text kept in memory, because an abort inside LLVM (the
wheels have assertions on) ends the process: the compile worker's parent
replays the step from the file the progress hook named.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from mlir import ir

from lowerline.pipeline.lowerer import Lowerer, LoweringError, reproducer_command
from lowerline.pipeline.scheduler import Instrumentation
from lowerline.pipeline.trace import PassTrace


@dataclass(frozen=True)
class Stage:
    """A named stage: ``build(options)`` is the pass list that takes the IR
    from the previous stage to this one (``cpu.stages.loops``, for example)."""

    name: str
    build: Callable[[Any], str]

    def pipeline(self, options: Any) -> str:
        """The stage's pipeline on the module, as ``lowerline-opt`` takes it."""
        return f"builtin.module({self.build(options)})"


def stages_of(pairs: Iterable[tuple[str, Callable[[Any], str]]]) -> tuple[Stage, ...]:
    """Stages from ``(name, build)`` pairs such as ``CPU_STAGES``."""
    return tuple(Stage(name, build) for name, build in pairs)


@dataclass(frozen=True)
class DumpPolicy:
    """Write the IR after each stage to ``<folder>/<n>-<stage>.mlir``.

    ``first`` is the number of the first stage's dump (0 is left for the
    stages' input); ``elide_above`` prints constants and resource blobs
    larger than that as ``__elided__`` (weights: readable dumps, not
    megabytes of hex).
    """

    folder: str
    first: int = 1
    debug_info: bool = False
    elide_above: int | None = None

    def path(self, index: int, stage: str) -> str:
        return os.path.join(self.folder, f"{index}-{stage}.mlir")

    def write(self, module: ir.Module, index: int, stage: str) -> str:
        """Write ``module`` as dump number ``index`` of ``stage``; returns its path."""
        os.makedirs(self.folder, exist_ok=True)
        path = self.path(index, stage)
        text = module.operation.get_asm(
            enable_debug_info=self.debug_info,
            large_elements_limit=self.elide_above,
            large_resource_limit=self.elide_above,
        )
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        return path


@dataclass(frozen=True)
class StageStart:
    """What a progress hook learns before a stage runs."""

    stage: str
    pipeline: str
    input_path: str  # a file holding the IR the stage starts from


@dataclass
class StagesResult:
    """Wall seconds of each stage's pipeline and the file of each stage's
    dump (none without a dump policy), both in stage order."""

    seconds: dict[str, float] = field(default_factory=dict)
    dumps: dict[str, str] = field(default_factory=dict)

    @property
    def last_dump(self) -> str | None:
        return next(reversed(self.dumps.values()), None)

    def require_last_dump(self) -> str:
        """The last stage's dump, for runners that always dump."""
        if self.last_dump is None:
            raise ValueError("the stages ran without a dump policy: no dump to name")
        return self.last_dump


class StageError(LoweringError):
    """Stage ``stage`` failed with ``failure``'s summary and diagnostics (the
    message reads as ``LoweringError``'s); ``reproducer`` is the
    ``lowerline-opt`` command that runs the stage's pipeline on the stage's
    input, ``input_path``."""

    def __init__(self, stage: str, failure: LoweringError, input_path: str, pipeline: str):
        command = reproducer_command(input_path, pipeline)
        super().__init__(failure.summary, failure.diagnostics, command)
        self.stage = stage
        self.input_path = input_path
        self.pipeline = pipeline


@dataclass(frozen=True)
class StageRunner:
    """Runs stages with ``lowerer`` (its context owns the module).

    ``dumps``: where the IR after each stage goes (None: nowhere);
    ``scratch_dir``: where a stage's input is written when no dump holds it
    (None: the system's temporary folder); ``inst``: per-pass hooks, handed to
    every pipeline; ``on_stage``: called before each stage (progress);
    ``after_stage``: called with the stage's name and the module after each
    stage and its dump (to keep or inspect the IR of one stage); ``trace``:
    where the IR after every pass goes (None: nowhere, and no pass is printed).
    """

    lowerer: Lowerer
    dumps: DumpPolicy | None = None
    scratch_dir: str | None = None
    inst: Instrumentation | None = None
    on_stage: Callable[[StageStart], None] | None = None
    after_stage: Callable[[str, ir.Module], None] | None = None
    trace: PassTrace | None = None

    def run(
        self,
        module: ir.Module,
        stages: Sequence[Stage],
        options: Any,
        input_path: str | None = None,
    ) -> StagesResult:
        """Lower ``module`` in place through ``stages`` built with ``options``.

        ``input_path``: a file holding ``module`` as it is now (the first
        stage's reproducer), if there is one. Raises ``StageError``.
        """
        result = StagesResult()
        first = self.dumps.first if self.dumps else 1
        for index, stage in enumerate(stages, start=first):
            input_path = self._run_stage(module, stage, options, index, input_path, result)
        return result

    def _run_stage(
        self,
        module: ir.Module,
        stage: Stage,
        options: Any,
        index: int,
        input_path: str | None,
        result: StagesResult,
    ) -> str | None:
        """Run one stage; returns the file holding its output, if any."""
        pipeline = stage.pipeline(options)
        scratch = input_path is None
        source = self._write_input(module, stage.name) if input_path is None else input_path
        if self.on_stage is not None:
            self.on_stage(StageStart(stage.name, pipeline, source))
        inst = self.inst
        if self.trace is not None:
            self.trace.begin_stage(stage.name, module)
            inst = self.trace.instrument(inst)
        start = time.perf_counter()
        try:
            self.lowerer.run(module, pipeline, source, inst)
        except LoweringError as err:
            # The scratch input stays: it is the reproducer.
            raise StageError(stage.name, err, source, pipeline) from None
        result.seconds[stage.name] = time.perf_counter() - start
        if scratch:
            os.remove(source)
        output = None
        if self.dumps is not None:
            output = self.dumps.write(module, index, stage.name)
            result.dumps[stage.name] = output
        if self.after_stage is not None:
            self.after_stage(stage.name, module)
        return output

    def _write_input(self, module: ir.Module, stage: str) -> str:
        """Write ``module`` (the input of ``stage``) to a new file, in full:
        a reproducer must parse to the same IR."""
        if self.scratch_dir is not None:
            os.makedirs(self.scratch_dir, exist_ok=True)
        fd, path = tempfile.mkstemp(
            prefix=f"lowerline-{stage}-input-", suffix=".mlir", dir=self.scratch_dir
        )
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(module.operation.get_asm())
        return path
