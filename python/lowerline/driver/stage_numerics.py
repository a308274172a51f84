"""Every stage's output on the caller's inputs: the explorer's numerics.

After each stage, the compile worker (with a job's ``probe`` inputs) copies
the module, lowers the copy through the remaining stages, JIT-compiles it
(``driver.jit``, as ``lowerline run`` does) and saves what ``@main``
returns on the inputs: ``probe/<stage>-<n>.npy``. The caller compares each
stage's outputs with eager. The IR of a stage is run as it is, with the
weights it holds (the dumps elide them, so they cannot be run).

The rest of the way is the plain path (``reference``): no tiling (every op
as naive loops) and no arena, so that the rows tell the decisions apart: a
tiling or vectorization error shows from the ``tiled`` row on (``graph``
is right), an arena error from ``bufferized`` on. The later stages are the
same for every row: an error there shows in all of them.

A stage whose copy does not lower or run is recorded with its error, not
raised: the compile itself goes on. The copies' remarks are muted: the
trace and ``fallbacks`` show the real compile's. Not for a ``@main`` that
takes a seed (random ops draw per call) or buffers it writes: the job has no
probe then (``explore.numerics.write_probe_inputs``).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
from mlir import ir

from lowerline.cpu.stages import CpuOptions
from lowerline.driver.jit import JitFunction, signature_of
from lowerline.pipeline import remarks
from lowerline.pipeline.lowerer import Lowerer, LoweringError
from lowerline.pipeline.stage_runner import Stage, StageRunner


def clone_module(module: ir.Module) -> ir.Module:
    """A copy of ``module``: each top-level op cloned into a new module.
    (Moving the ops out of a detached ``Operation.clone()`` corrupted the heap
    in the next pass, and bytecode does not parse back with the weights'
    resource blobs.)"""
    copy = ir.Module.create(module.operation.location)
    with ir.InsertionPoint(copy.body):
        for op in module.body.operations:
            op.operation.clone()
    for attr in module.operation.attributes:
        copy.operation.attributes[attr.name] = attr.attr
    return copy


def reference(options: CpuOptions) -> CpuOptions:
    """The plain path's options: ``options`` without tiling or arena."""
    return dataclasses.replace(options, tile=False, arena=False)


class StageProbe:
    """Runs each stage's IR on the inputs in ``paths`` (``.npy`` files)."""

    def __init__(
        self,
        lowerer: Lowerer,
        module: ir.Module,
        stages: Sequence[Stage],
        options: CpuOptions,
        folder: str,
    ):
        self.lowerer = lowerer
        self.stages = list(stages)
        self.reference = reference(options)
        self.folder = folder
        with lowerer.context:
            self.signature = signature_of(module, "main")
        self.results: dict[str, dict[str, Any]] = {}

    def inputs(self) -> list[np.ndarray]:
        count = len(self.signature.inputs)
        return [np.load(os.path.join(self.folder, f"input-{i}.npy")) for i in range(count)]

    def after_stage(self, stage: str, module: ir.Module) -> None:
        names = [s.name for s in self.stages]
        rest = self.stages[names.index(stage) + 1 :]
        try:
            with remarks.muted():
                outputs = self._run(clone_module(module), rest)
        except (LoweringError, RuntimeError, ValueError) as err:
            self.results[stage] = {"error": str(err).split("\n", 1)[0]}
            return
        paths = []
        for index, array in enumerate(outputs):
            paths.append(os.path.join(self.folder, f"{stage}-{index}.npy"))
            np.save(paths[-1], array)
        self.results[stage] = {"outputs": paths}

    def _run(self, copy: ir.Module, rest: Sequence[Stage]) -> list[np.ndarray]:
        StageRunner(self.lowerer).run(copy, rest, self.reference)
        with self.lowerer.context:
            return JitFunction(copy, self.signature)(*self.inputs())
