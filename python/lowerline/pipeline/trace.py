"""The IR after every pass, as the explorer shows it: ``PassTrace``.

MLIR's ``--mlir-print-ir-after-all`` writes text to stderr with no timing and
no stage; ``PassTrace`` keeps, for every pass a pipeline runs, the stage it
belongs to, its label (``func.func(canonicalize)``), its wall seconds and the
whole module printed after it (with locations, so the explorer can jump from
an op to the model's line; constants and resource blobs above
``elide_above`` elements printed as ``__elided__``: no megabytes of
weights). A pass that left the module as it was keeps ``ir=None``.

It costs nothing when unused: only a runner given a trace asks the
scheduler for the per-pass hook (``Instrumentation.on_pass``), and the
printing happens in that hook::

    trace = PassTrace()
    StageRunner(lowerer, trace=trace).run(module, stages, options)
    trace.to_json()  # {"passes": [{"stage", "label", "seconds", "ir"}, ...]}
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

from mlir import ir

from lowerline.pipeline.scheduler import Instrumentation

# The stage of the record made before any pass: the pipeline's input.
INPUT = "input"


@dataclass
class PassRecord:
    stage: str
    label: str
    seconds: float
    ir: str | None  # None: the same text as the record before


@dataclass
class PassTrace:
    """Records the module after every pass of the stages it is handed to."""

    elide_above: int = 16
    records: list[PassRecord] = field(default_factory=list)
    stage: str = INPUT
    _last: str | None = None

    def begin_stage(self, stage: str, module: ir.Module) -> None:
        """Passes from now on belong to ``stage``; the first stage's input
        becomes the first record."""
        if not self.records:
            self._add(INPUT, "(input)", 0.0, module.operation)
        self.stage = stage

    def instrument(self, inst: Instrumentation | None) -> Instrumentation:
        """``inst`` (or a new one) that also records here after each pass."""
        base = inst or Instrumentation()
        chained = base.on_pass

        def on_pass(label: str, op: ir.Operation, seconds: float) -> None:
            if chained is not None:
                chained(label, op, seconds)
            self._add(self.stage, label, seconds, op)

        return dataclasses.replace(base, on_pass=on_pass, times=base.times)

    def _add(self, stage: str, label: str, seconds: float, op: ir.Operation) -> None:
        text = _root(op).get_asm(
            enable_debug_info=True,
            large_elements_limit=self.elide_above,
            large_resource_limit=self.elide_above,
        )
        same = text == self._last
        self._last = text
        self.records.append(PassRecord(stage, label, seconds, None if same else text))

    def to_json(self) -> dict[str, Any]:
        return {"passes": [dataclasses.asdict(r) for r in self.records]}

    def write(self, path: str, **extra: Any) -> None:
        """Write the records (and ``extra`` entries) as one JSON file."""
        with open(path, "w", encoding="utf-8") as handle:
            json.dump({**self.to_json(), **extra}, handle)


def _root(op: ir.Operation) -> ir.Operation:
    """The top-level op holding ``op``: a nested pass ran on one function,
    the explorer shows the whole module."""
    while op.parent is not None:
        op = op.parent
    return op
