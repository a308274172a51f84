"""The compile worker: linalg on tensors -> shared library, in its own process.

Run as ``python -m lowerline.driver.compile_worker JOB``, or with ``-`` to
read JOB from stdin once imports are done (a worker started ahead of its
job). It reads what the import worker wrote (``linalg.mlir``,
``weights/``) and the parent's ``job.json``, and writes:

* ``ir/<n>-<stage>.mlir``: the IR after every stage (weights elided);
* ``progress.log``: one line before every stage and every pass, so that an
  abort inside LLVM (the wheels have assertions on) can be blamed on the pass
  that was running;
* ``trace.json`` when the job asks for a ``trace`` (the explorer): the IR
  after every pass with its stage and wall time, and every remark the passes
  published (``pipeline.trace``, ``pipeline.remarks``);
* ``bisect.json`` when the job asks to ``bisect`` (``lowerline bisect``):
  the first pass whose output leaves the tolerance of ``probe/expected-<n>.npy``
  on ``probe/input-<n>.npy`` (``driver.bisect``), before the compile itself;
* ``lib.so`` and ``result.json`` on success (with the ops left as plain
  loops: ``fallbacks``, ``lowerline.cpu.fallbacks``; ``seed``: whether
  @main takes a trailing seed argument, ``bind_seed``; ``arena``: the size
  and lower bound of its trailing arena argument, ``protocol.arena_plan``;
  ``gpu_buffers``: a GPU entry's device buffers, ``protocol.gpu_buffers_plan``),
  or, for ``lowerline.export`` (``"export": true`` in the job), the objects
  ``export.o`` and ``export.o.weights.o`` instead of ``lib.so`` and in
  ``result.json`` what keeps the code from running without malloc
  (``standalone_problems``, ``lowerline.driver.standalone``); ``error.json`` when
  a pass fails with diagnostics.

Weights arrive as raw bytes and become ``arith.constant dense_resource<...>``
built zero-copy from memory-mapped files, so passes can fold and pack them
(bool weights as bytes, truncated to ``i1``: see ``_weight``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import sys
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
from mlir import ir
from mlir.dialects import arith, linalg, tensor
from mlir.dialects import complex as complex_dialect

from lowerline import weights
from lowerline.cpu.fallbacks import Watch
from lowerline.cpu.stages import CPU_STAGES, CpuOptions
from lowerline.driver import bisect, standalone
from lowerline.driver.memory import parse_size
from lowerline.driver.objects import ObjectError, emit_object, link_shared_library
from lowerline.driver.seed import bind_seed
from lowerline.driver.stage_numerics import StageProbe, clone_module
from lowerline.errors import LowerlineError
from lowerline.gpu import artifacts as gpu_artifacts
from lowerline.gpu import ptx
from lowerline.gpu.stages import GPU_STAGES, GpuOptions, cpu_emulation
from lowerline.pipeline import protocol, remarks
from lowerline.pipeline.lowerer import Lowerer, LoweringError
from lowerline.pipeline.scheduler import Instrumentation
from lowerline.pipeline.stage_runner import (
    DumpPolicy,
    Stage,
    StageRunner,
    StagesResult,
    StageStart,
    stages_of,
)
from lowerline.pipeline.trace import PassTrace
from lowerline.processes import die_with_parent
from lowerline.targets import cpu_target, gpu_target, host_cpu


class Progress:
    def __init__(self, path: str):
        self._file = open(path, "a", encoding="utf-8", buffering=1)  # noqa: SIM115

    def log(self, kind: str, what: str) -> None:
        self._file.write(f"{kind} {what}\n")
        self._file.flush()


def _main_func(module: ir.Module) -> ir.Operation:
    for op in module.body.operations:
        op = op.operation
        if op.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == "main":
            return op
    raise LoweringError("the imported module has no @main", [])


def _zero(element_type: ir.Type) -> ir.Attribute:
    if isinstance(element_type, ir.IntegerType):
        return ir.IntegerAttr.get(element_type, 0)
    return ir.FloatAttr.get(element_type, 0.0)


# Unsigned integers of each element size: a scalar's raw bits.
_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _weight_attr(arg: dict[str, Any], index: int, tensor_type: ir.Type) -> ir.Attribute:
    if not os.path.getsize(arg["file"]):  # no elements: nothing to map
        return ir.DenseElementsAttr.get_splat(tensor_type, _zero(tensor_type.element_type))
    data = np.memmap(arg["file"], dtype=np.uint8, mode="r")
    if tensor_type.rank == 0 and len(data) in _BITS:
        # finalize-memref-to-llvm reads a rank-0 global's value as a splat,
        # which a dense_resource cannot give (LLVM aborts): inline the scalar.
        scalar = np.array(data).view(_BITS[len(data)]).reshape(())
        return ir.DenseElementsAttr.get(scalar, type=tensor_type)
    name = f"w{index}_" + "".join(c if c.isalnum() else "_" for c in arg["name"])
    weights.remember(name, data)  # for the passes that rewrite weights
    return ir.DenseResourceElementsAttr.get_from_buffer(data, name, tensor_type, alignment=64)


def _weight(arg: dict[str, Any], index: int, tensor_type: ir.Type) -> ir.Value:
    """The constant for one weight, at the current insertion point.

    A bool tensor is one byte per element in torch, and a ``dense_resource``
    blob of ``i1`` is not: bool weights are mapped as ``i8`` and truncated to
    ``i1`` by an elementwise ``arith.trunci`` on the tensor, which the graph
    stage turns into a ``linalg.generic`` and fuses into the consumers.
    A complex weight is mapped as its (re, im) pairs (see ``_complex_weight``).
    """
    element = tensor_type.element_type
    if isinstance(element, ir.ComplexType):
        return _complex_weight(arg, index, tensor_type)
    if element != ir.IntegerType.get_signless(1):
        return arith.ConstantOp(tensor_type, _weight_attr(arg, index, tensor_type)).result
    i8 = ir.IntegerType.get_signless(8)
    bytes_type = ir.RankedTensorType.get(tensor_type.shape, i8)
    constant = arith.ConstantOp(bytes_type, _weight_attr(arg, index, bytes_type))
    return arith.TruncIOp(tensor_type, constant.result).result


def _complex_weight(arg: dict[str, Any], index: int, tensor_type: ir.Type) -> ir.Value:
    """A complex weight as a float constant of its (re, im) pairs (the same
    bytes, one more dim of 2) and an elementwise ``complex.create`` that the
    graph stage fuses into the consumers: ``mlir-translate`` has no
    conversion for a global of complex elements ("no known conversion for
    innermost element type")."""
    shape = list(tensor_type.shape)
    part = ir.ComplexType(tensor_type.element_type).element_type
    pairs_type = ir.RankedTensorType.get([*shape, 2], part)
    pairs = arith.ConstantOp(pairs_type, _weight_attr(arg, index, pairs_type)).result
    rank = len(shape)
    dims = [ir.AffineExpr.get_dim(d) for d in range(rank)]
    maps = [
        ir.AffineMap.get(rank, 0, [*dims, ir.AffineConstantExpr.get(which)]) for which in (0, 1)
    ]
    maps.append(ir.AffineMap.get_identity(rank))
    op = linalg.GenericOp(
        [tensor_type],
        [pairs, pairs],
        [tensor.EmptyOp(shape, tensor_type.element_type).result],
        ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps]),
        ir.ArrayAttr.get([ir.Attribute.parse("#linalg.iterator_type<parallel>")] * rank),
    )
    block = op.regions[0].blocks.append(part, part, tensor_type.element_type)
    with ir.InsertionPoint(block):
        created = complex_dialect.CreateOp(
            tensor_type.element_type, block.arguments[0], block.arguments[1]
        )
        linalg.YieldOp([created.result])
    return op.result


def bind_weights(module: ir.Module, args: list[dict[str, Any]]) -> None:
    """Turn @main's weight arguments into constants; keep the input arguments."""
    func = _main_func(module)
    entry = func.regions[0].blocks[0]
    with ir.InsertionPoint.at_block_begin(entry), func.location:
        for index, arg in enumerate(args):
            if arg["kind"] != "weight":
                continue
            value = entry.arguments[index]
            value.replace_all_uses_with(_weight(arg, index, value.type))
    for index in reversed(range(len(args))):
        if args[index]["kind"] == "weight":
            entry.erase_argument(index)
    ftype = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    new_type = ir.FunctionType.get([a.type for a in entry.arguments], ftype.results)
    func.attributes["function_type"] = ir.TypeAttr.get(new_type)
    _renumber_dynamic_ranges(func, args)


def _renumber_dynamic_ranges(func: ir.Operation, args: list[dict[str, Any]]) -> None:
    """``lowerline.dynamic_ranges`` names the import's arguments, weights
    included: renumber them as the arguments left after ``bind_weights``."""
    flat = protocol.DYNAMIC_RANGES.get(func)
    if flat is None:
        return
    kept = [index for index, arg in enumerate(args) if arg["kind"] != "weight"]
    new_index = {old: new for new, old in enumerate(kept)}
    renumbered: list[int] = []
    for at in range(0, len(flat) - 3, 4):
        if flat[at] in new_index:  # a weight has no dynamic dims: none dropped
            renumbered += [new_index[flat[at]], *flat[at + 1 : at + 4]]
    protocol.DYNAMIC_RANGES.set(func, renumbered)


def mark_inputs_read_only(func: ir.Operation) -> None:
    """The compiled code never writes its inputs: one-shot-bufferize copies an
    input that is updated in place (a scatter into it) instead of writing it.
    Run after every change to @main's arguments (weights bound, seed added)."""
    read_only = ir.DictAttr.get({"bufferization.writable": ir.BoolAttr.get(False)})
    count = len(func.regions[0].blocks[0].arguments)
    func.attributes["arg_attrs"] = ir.ArrayAttr.get([read_only] * count)


def _record_step(
    job: str, stage: str, stage_input: str, pipeline: str | None, target: str | None = None
) -> None:
    """Name the step about to run and its input (a file: the parent's
    reproducer if the step dies); object steps name their CPU target.
    ``earlier`` lists the steps before it (stage, input, pipeline): where
    this step's input is too large to keep, the parent replays from an
    earlier, smaller one (``workers._reproducer_step``)."""
    path = os.path.join(job, "current-stage.json")
    earlier: list[dict[str, Any]] = []
    if os.path.exists(path):
        with open(path, encoding="utf-8") as handle:
            last = json.load(handle)
        earlier = [*last.pop("earlier", []), last]
    step = {"stage": stage, "input": stage_input, "pipeline": pipeline, "target": target}
    with open(path, "w", encoding="utf-8") as handle:
        json.dump({**step, "earlier": earlier}, handle)


def _dumps(job: str) -> DumpPolicy:
    """``ir/<n>-<stage>.mlir``, with locations: readable, and never megabytes
    of weights."""
    return DumpPolicy(os.path.join(job, "ir"), debug_info=True, elide_above=64)


HOG_ENV = "LOWERLINE_TEST_HOG_MEMORY"


def _hog_memory(stage: str, spec: str) -> list[bytes]:
    """The test hook ``$LOWERLINE_TEST_HOG_MEMORY=STAGE:BYTES``: in the first
    pass of ``STAGE``, take BYTES of memory (touched, so resident), 16 MiB at
    a time with pauses the parent's memory watch sees: a pass that blows up,
    for the tests of the memory bound (python/tests/test_compile_memory.py).
    Elsewhere, nothing."""
    wanted_stage, _, size = spec.partition(":")
    if stage != wanted_stage:
        return []
    chunk, held = 16 << 20, []
    for _ in range(parse_size(size, HOG_ENV) // chunk + 1):
        held.append(b"\1" * chunk)
        time.sleep(0.005)
    return held


@contextlib.contextmanager
def _tracing(
    job: str, request: dict, probe: StageProbe | None = None
) -> Iterator[PassTrace | None]:
    """With the job's ``trace`` flag (the explorer), a trace for the stage
    runner and every remark published meanwhile, written to ``trace.json``
    once the stages ran, with the ``probe``'s outputs of each stage; without
    it, None and nothing recorded."""
    if not request.get("trace"):
        yield None
        return
    trace = PassTrace()
    with remarks.collecting() as found:
        yield trace
    probed = probe.results if probe is not None else None
    trace.write(os.path.join(job, "trace.json"), remarks=[r.to_json() for r in found], probe=probed)


def _probe(job: str, request: dict, lowerer: Lowerer, module, seeded: bool) -> StageProbe | None:
    """With the job's ``probe`` inputs (``probe/input-<n>.npy``, the
    explorer's numerics), a probe that runs every CPU stage's IR on them;
    not for a ``@main`` that takes a seed (random ops draw per call)."""
    if not request.get("probe") or seeded:
        return None
    options = CpuOptions(**request["options"])
    folder = os.path.join(job, "probe")
    return StageProbe(lowerer, module, stages_of(CPU_STAGES), options, folder)


def _bisect(job: str, request: dict, lowerer: Lowerer, module, seeded: bool) -> None:
    """With the job's ``bisect`` flag, bisect a copy of ``module`` on the
    probe's inputs against its expected outputs into ``bisect.json``
    (``{"divergence": ...}``, null when every pass is right, or ``{"error": ...}``)."""
    if not request.get("bisect"):
        return
    Progress(os.path.join(job, "progress.log")).log("stage", "bisect")
    result: dict[str, Any]
    if seeded:
        result = {"error": "the model draws random numbers at every call: nothing to compare"}
    else:
        folder = os.path.join(job, "probe")
        inputs, expected = (_arrays(folder, kind) for kind in ("input", "expected"))
        options = CpuOptions(**request["options"])
        stages = stages_of(CPU_STAGES)
        try:
            found = bisect.bisect(
                lowerer,
                clone_module(module),
                stages,
                options,
                inputs,
                expected,
                os.path.join(job, "bisect"),
                entry="main",
            )
            result = {"divergence": dataclasses.asdict(found) if found else None}
        except LowerlineError as err:  # a stage or the JIT failed on a copy
            result = {"error": str(err)}
    with open(os.path.join(job, "bisect.json"), "w", encoding="utf-8") as handle:
        json.dump(result, handle)


def _arrays(folder: str, kind: str) -> list[np.ndarray]:
    """``folder/<kind>-0.npy``, ``-1``, ... in order."""
    arrays: list[np.ndarray] = []
    while os.path.exists(path := os.path.join(folder, f"{kind}-{len(arrays)}.npy")):
        arrays.append(np.load(path))
    return arrays


def _after_both(*hooks):
    """One ``after_stage`` hook calling each of ``hooks`` that is not None."""

    def after(stage: str, module: ir.Module) -> None:
        for hook in hooks:
            if hook is not None:
                hook(stage, module)

    return after


def _stage_runner(
    job: str, lowerer: Lowerer, after=None, trace: PassTrace | None = None
) -> StageRunner:
    """A runner that dumps every stage to ``ir/`` and, before each stage and
    each pass, says what runs on what (``progress.log``,
    ``current-stage.json``): the parent's account of a worker that died."""
    progress = Progress(os.path.join(job, "progress.log"))
    hog = os.environ.get(HOG_ENV)
    first_pass: list[str] = []  # the stage whose first pass is next, if any

    def on_stage(start: StageStart) -> None:
        progress.log("stage", start.stage)
        _record_step(job, start.stage, start.input_path, start.pipeline)
        first_pass[:] = [start.stage]

    def before(label: str) -> None:
        progress.log("pass", label)
        if hog and first_pass:
            _hog_memory(first_pass.pop(), hog)

    inst = Instrumentation(before=before)
    return StageRunner(
        lowerer, _dumps(job), inst=inst, on_stage=on_stage, after_stage=after, trace=trace
    )


def _lower(runner: StageRunner, module: ir.Module, stages, options, seconds: dict) -> StagesResult:
    """Run ``stages`` (``(name, build)`` pairs) on ``module``, whose dump
    ``ir/0-linalg.mlir`` is the first stage's input."""
    assert runner.dumps is not None  # the worker's runner always dumps (_stage_runner)
    first_input = runner.dumps.path(0, "linalg")
    result = runner.run(module, stages_of(stages), options, first_input)
    seconds.update(result.seconds)
    return result


def _link(
    module: ir.Module,
    job: str,
    name: str,
    target,
    seconds: dict,
    stage_input: str,
    shared: bool = True,
    **link,
) -> None:
    """Object and shared library ``name.so`` from ``module`` (LLVM dialect),
    whose dump ``stage_input`` replays the step with ``lowerline object``.
    Without ``shared`` (an export): the objects ``name.o`` and, for the
    weights, ``name.o.weights.o``, kept for the caller, and no library."""
    start = time.perf_counter()
    Progress(os.path.join(job, "progress.log")).log("stage", "object")
    _record_step(job, "object", stage_input, None, target.name)
    obj = os.path.join(job, f"{name}.o")
    try:
        emit_object(module, obj, target, split_weights=None if shared else True)
        if shared:
            link_shared_library(obj, os.path.join(job, f"{name}.so"), target, **link)
    except (ObjectError, ptx.PtxasError, ptx.CudaToolError) as err:
        raise LoweringError(str(err), []) from None
    finally:
        for leftover in (obj, obj + ".weights.o"):
            if shared and os.path.exists(leftover):
                os.remove(leftover)
    seconds["object" if name == "lib" else f"{name}-object"] = time.perf_counter() - start


def _parse_input(
    job: str, request: dict, lowerer: Lowerer, seconds: dict
) -> tuple[ir.Module, bool]:
    """The job's module with its weights as constants, and whether @main
    takes a seed argument (``bind_seed``)."""
    start = time.perf_counter()
    Progress(os.path.join(job, "progress.log")).log("stage", "linalg")
    with open(os.path.join(job, "linalg.mlir"), encoding="utf-8") as handle:
        module = lowerer.parse(handle.read(), "linalg.mlir")
    with lowerer.context:
        bind_weights(module, request["args"])
        seeded = bind_seed(module, _main_func(module))
        mark_inputs_read_only(_main_func(module))
    _dumps(job).write(module, 0, "linalg")
    seconds["linalg"] = time.perf_counter() - start
    return module, seeded


def _compile_cpu(job: str, request: dict) -> dict[str, Any]:
    options = CpuOptions(**request["options"])
    seconds: dict[str, float] = {}
    lowerer = Lowerer()
    module, seeded = _parse_input(job, request, lowerer, seconds)
    _bisect(job, request, lowerer, module, seeded)
    probe = _probe(job, request, lowerer, module, seeded)
    with Watch(tiled=options.tile) as watch, _tracing(job, request, probe) as trace:
        after = _after_both(watch.after_stage, probe and probe.after_stage)
        runner = _stage_runner(job, lowerer, after, trace)
        lowered = _lower(runner, module, CPU_STAGES, options, seconds)
    with lowerer.context:
        arena = protocol.arena_plan(module.operation, "main")
    result = {
        "entry": "main",
        "stage_seconds": seconds,
        "fallbacks": watch.json(),
        "seed": seeded,
        "arena": arena,
    }
    target = cpu_target(options.target)
    if not request.get("export"):
        _link(module, job, "lib", target, seconds, lowered.require_last_dump())
        return result
    # lowerline.export: objects for a standalone library, or why there are none.
    with lowerer.context:
        result["standalone_problems"] = standalone.problems(module)
    if not result["standalone_problems"]:
        _link(module, job, "export", target, seconds, lowered.require_last_dump(), shared=False)
    return result


def _compile_gpu(job: str, request: dict) -> dict[str, Any]:
    """GPU stages; the kernel plan after ``loops``; PTX, cubins and the fatbin
    after ``llvm``; the host library; and the mapped IR (``bufferized``)
    lowered for the CPU as well (``cpu.so``: the numeric check)."""
    options = GpuOptions(**request["options"])
    target = gpu_target(options.target)
    seconds: dict[str, float] = {}
    lowerer = Lowerer()
    module, seeded = _parse_input(job, request, lowerer, seconds)
    kept: dict[str, Any] = {}

    def after(stage: str, current: ir.Module) -> None:
        if stage == "bufferized" and options.cpu_emulation:
            kept["mapped"] = clone_module(current)
        elif stage == "loops":
            kept["kernels"] = gpu_artifacts.kernel_plan(current)

    with Watch(tiled=None) as watch, _tracing(job, request) as trace:
        runner = _stage_runner(job, lowerer, after, trace)
        lowered = _lower(runner, module, GPU_STAGES, options, seconds)
    start = time.perf_counter()
    try:
        with lowerer.context:
            gpu_artifacts.finish_binaries(module, target, job, options.binary, kept["kernels"])
    except (ptx.PtxasError, ptx.CudaToolError) as err:
        raise LoweringError(str(err), []) from None
    gpu_artifacts.write_plan(kept["kernels"], os.path.join(job, "kernels.json"))
    seconds["ptxas"] = time.perf_counter() - start
    _link(module, job, "lib", host_cpu(), seconds, lowered.require_last_dump(), cuda=True)
    if "mapped" in kept:
        emulated = _emulate_on_cpu(runner, kept["mapped"], lowered, options, seconds)
        _link(kept["mapped"], job, "cpu", host_cpu(), seconds, emulated)
    with lowerer.context:
        buffers = protocol.gpu_buffers_plan(module.operation, "main")
    return {
        "entry": "main",
        "stage_seconds": seconds,
        "fallbacks": watch.json(),
        "seed": seeded,
        "gpu_buffers": buffers,
    }


def _emulate_on_cpu(
    runner: StageRunner, mapped: ir.Module, lowered: StagesResult, options, seconds: dict
) -> str:
    """Lower ``mapped`` (a copy of the bufferized GPU IR) for the CPU as one
    more stage, ``cpu-emulation``, numbered after the GPU stages; its input
    is the bufferized stage's dump. Returns its dump."""
    stage = Stage("cpu-emulation", cpu_emulation)
    assert runner.dumps is not None  # the worker's runner always dumps (_stage_runner)
    after_gpu = dataclasses.replace(runner.dumps, first=len(GPU_STAGES) + 1)
    emulation = dataclasses.replace(runner, dumps=after_gpu, after_stage=None, trace=None)
    result = emulation.run(mapped, (stage,), options, lowered.dumps["bufferized"])
    seconds.update(result.seconds)
    return result.require_last_dump()


def compile_job(job: str) -> dict[str, Any]:
    with open(os.path.join(job, "job.json"), encoding="utf-8") as handle:
        request = json.load(handle)
    if request.get("kind") == "gpu":
        return _compile_gpu(job, request)
    return _compile_cpu(job, request)


def main() -> int:
    die_with_parent()
    job = sys.argv[1]
    if job == "-":  # started ahead of its job (workers.CompileWorkerSpare): it comes on stdin
        job = sys.stdin.readline().strip()
        if not job:  # not needed after all (stdin closed): nothing to do
            return 0
    try:
        result = compile_job(job)
    except LoweringError as err:
        stage = {}
        path = os.path.join(job, "current-stage.json")
        if os.path.exists(path):
            with open(path, encoding="utf-8") as handle:
                stage = json.load(handle)
        error = {
            "summary": err.summary,
            "diagnostics": [d.format() for d in err.diagnostics],
            **stage,
        }
        with open(os.path.join(job, "error.json"), "w", encoding="utf-8") as handle:
            json.dump(error, handle)
        return 1
    with open(os.path.join(job, "result.json"), "w", encoding="utf-8") as handle:
        json.dump(result, handle)
    return 0


if __name__ == "__main__":
    sys.exit(main())
