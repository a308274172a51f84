"""``lowerline bisect``: the first pass whose output differs from eager.

The stages run as in a compile, with a copy of the module kept after every
pass. A copy is judged by finishing its lowering on a fixed reference path
(``reference_pipeline``: bufferize, out-parameters, naive loops, then the
llvm stage with libm instead of lowerline's math approximations),
JIT-compiling it (``driver.jit``) and comparing what ``@main`` returns on the
inputs with the expected outputs (eager's, within ``driver.tolerance``). The
reference path holds none of the tiling, vectorization or buffer-planning
decisions, so the pass being judged is never in it. Its only lowerline passes
stand in for what upstream lacks or gets wrong, not for speed:
``lowerline-widen-i1-memrefs`` (``finalize-memref-to-llvm`` aborts on i1
loads and stores), the bf16 truncation expansion (no libgcc helper), and the
run-time checks (``lowerline-check-integer-division``,
``lowerline-report-failed-asserts``: a failed check would otherwise kill the
worker with SIGFPE or abort()), and ``lowerline-allocate-reshaped-results``,
so that a returned reshape reaches its out-parameter as in a compile (the
bufferized stage runs it): written in place, not copied after the kernel.
With the input right and the last pass wrong,
a binary search finds two neighbouring passes, right then wrong: the second
is the one named, with the IR before and after it (files) and the
``lowerline-opt`` command that replays it. Its op: the first op line the pass
added.

Runs where MLIR may run (the compile worker, or a test); needs torch for the
tolerance check.
"""

from __future__ import annotations

import difflib
import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from mlir import ir

from lowerline.cpu.stages import CpuOptions, llvm
from lowerline.driver.jit import JitFunction, signature_of
from lowerline.driver.stage_numerics import clone_module
from lowerline.driver.tolerance import worst_mismatch
from lowerline.pipeline import remarks
from lowerline.pipeline.lowerer import Lowerer, LoweringError
from lowerline.pipeline.scheduler import Instrumentation
from lowerline.pipeline.stage_runner import Stage, StageRunner, StageStart


def reference_pipeline(options: CpuOptions) -> str:
    """Any stage's IR (tensors, memrefs, loops, part-converted LLVM) to the
    LLVM dialect without lowerline's tiling or planning decisions."""
    return (
        "builtin.module(one-shot-bufferize{bufferize-function-boundaries "
        "function-boundary-type-conversion=identity-layout-map},"
        # As the bufferized stage: a returned reshape is allocated in its
        # returned shape, so the out-param replaces it instead of a copy.
        "func.func(lowerline-allocate-reshaped-results),"
        "buffer-results-to-out-params{hoist-static-allocs modify-public-functions},"
        "convert-bufferization-to-memref,"
        "func.func(scf-forall-to-for,convert-linalg-to-loops,"
        "convert-vector-to-scf{full-unroll target-rank=1}),"
        f"{llvm(replace(options, approximate_math=False))})"
    )


@dataclass
class Snapshot:
    stage: str
    label: str  # the pass, nested as the pipeline has it: func.func(cse)
    module: ir.Module


@dataclass
class Divergence:
    """The first pass whose output is outside the tolerance."""

    stage: str
    label: str
    op: str  # the first op line it added, with its source line if known
    mismatch: str
    before: str  # files: the IR before and after the pass
    after: str
    command: str  # replays the pass on ``before``


class Bisector:
    """Finds the first divergent pass of ``stages`` on ``module``."""

    def __init__(
        self,
        lowerer: Lowerer,
        module: ir.Module,
        inputs: Sequence[np.ndarray],
        entry: str | None = None,
    ):
        self.lowerer = lowerer
        self.inputs = list(inputs)
        with lowerer.context:
            self.signature = signature_of(module, entry)
        self.probes = 0  # lowerings judged: the search's cost

    def snapshots(self, module: ir.Module, stages: Sequence[Stage], options: Any) -> list[Snapshot]:
        """The module before any pass, then after each pass of ``stages``."""
        taken = [Snapshot("input", "(input)", clone_module(module))]
        current = ["input"]

        def on_stage(start: StageStart) -> None:
            current[0] = start.stage

        def on_pass(label: str, op: ir.Operation, seconds: float) -> None:
            taken.append(Snapshot(current[0], label, clone_module(module)))

        inst = Instrumentation(on_pass=on_pass)
        StageRunner(self.lowerer, inst=inst, on_stage=on_stage).run(module, stages, options)
        return taken

    def mismatch(self, snapshot: Snapshot, expected: Sequence[Any], options: CpuOptions) -> str:
        """Why the snapshot's outputs are wrong; "" when they are right."""
        import torch

        self.probes += 1
        copy = clone_module(snapshot.module)
        with remarks.muted():
            self.lowerer.run(copy, reference_pipeline(options))
        with self.lowerer.context:
            outputs = JitFunction(copy, self.signature)(*self.inputs)
        actual = [torch.from_numpy(o) for o in outputs]
        found = worst_mismatch([torch.as_tensor(e) for e in expected], actual)
        return "" if found is None else found.describe()

    def search(
        self, taken: Sequence[Snapshot], expected: Sequence[Any], options: CpuOptions
    ) -> tuple[int, str] | None:
        """The index of the first wrong snapshot and why; None if the last is
        right. Raises ``LoweringError`` if the input is already wrong."""
        last = self.mismatch(taken[-1], expected, options)
        if not last:
            return None
        first = self.mismatch(taken[0], expected, options)
        if first:
            raise LoweringError(f"the input is already outside the tolerance: {first}", [])
        good, bad, why = 0, len(taken) - 1, last
        while bad - good > 1:
            middle = (good + bad) // 2
            found = self.mismatch(taken[middle], expected, options)
            if found:
                bad, why = middle, found
            else:
                good = middle
        return bad, why


def bisect(
    lowerer: Lowerer,
    module: ir.Module,
    stages: Sequence[Stage],
    options: CpuOptions,
    inputs: Sequence[np.ndarray],
    expected: Sequence[Any],
    folder: str,
    entry: str | None = None,
) -> Divergence | None:
    """Lower ``module`` through ``stages`` and name the first pass whose
    output differs from ``expected`` on ``inputs`` (the arguments of
    ``entry``, default the only public function); its IR goes to ``folder``.
    None when every pass is within the tolerance."""
    bisector = Bisector(lowerer, module, inputs, entry)
    taken = bisector.snapshots(module, stages, options)
    found = bisector.search(taken, expected, options)
    if found is None:
        return None
    index, why = found
    before, after = taken[index - 1], taken[index]
    os.makedirs(folder, exist_ok=True)
    paths = [os.path.join(folder, f"{name}.mlir") for name in ("before", "after")]
    for path, snapshot in zip(paths, (before, after), strict=True):
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(snapshot.module.operation.get_asm(enable_debug_info=True))
    pipeline = shlex.quote(f"builtin.module({after.label})")
    command = f"lowerline-opt {shlex.quote(paths[0])} --pass-pipeline={pipeline}"
    op = _first_added_op(before.module, after.module)
    return Divergence(after.stage, after.label, op, why, paths[0], paths[1], command)


def _first_added_op(before: ir.Module, after: ir.Module) -> str:
    """The first op line ``after`` has that ``before`` has not (locations cut,
    the op's source line kept)."""
    from lowerline.explore.report import clean_ir

    old = clean_ir(before.operation.get_asm(enable_debug_info=True, large_elements_limit=16))
    new = clean_ir(after.operation.get_asm(enable_debug_info=True, large_elements_limit=16))
    matcher = difflib.SequenceMatcher(None, old.lines, new.lines)
    for tag, _, _, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "insert"):
            for j in range(j1, j2):
                if " = " in new.lines[j] or "." in new.lines[j].split("(")[0]:
                    where = new.sources.get(j)
                    return new.lines[j].strip() + (f"  (at {where})" if where else "")
    return "(no op added: the pass changed or removed ops only)"
