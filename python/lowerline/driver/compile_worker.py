"""The compile worker: linalg on tensors -> shared library, in its own process.

Run as ``python -m lowerline.driver.compile_worker JOB``. It reads what the import
worker wrote (``linalg.mlir``, ``weights/``) and the parent's ``job.json``,
and writes:

* ``ir/<n>-<stage>.mlir``: the IR after every stage (weights elided);
* ``progress.log``: one line before every stage and every pass, so that an
  abort inside LLVM (the wheels have assertions on) can be blamed on the pass
  that was running;
* ``lib.so`` and ``result.json`` on success (with the ops left as plain
  loops: ``fallbacks``, ``lowerline.cpu.fallbacks``), ``error.json`` when a
  pass fails with diagnostics.

Weights arrive as raw bytes and become ``arith.constant dense_resource<...>``
built zero-copy from memory-mapped files, so passes can fold and pack them
(bool weights as bytes, truncated to ``i1``: see ``_weight``).
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import numpy as np
from mlir import ir
from mlir.dialects import arith

from lowerline import weights
from lowerline.cpu.fallbacks import Watch
from lowerline.cpu.stages import CPU_STAGES, CpuOptions, module_pipeline
from lowerline.driver.lowering import Lowerer, LoweringError
from lowerline.driver.objects import ObjectError, emit_object, link_shared_library
from lowerline.gpu import artifacts as gpu_artifacts
from lowerline.gpu import ptx
from lowerline.gpu.stages import GPU_STAGES, GpuOptions, cpu_emulation
from lowerline.pipeline.scheduler import Instrumentation
from lowerline.targets import cpu_target, gpu_target, host_cpu

# Printing options for stage dumps: readable, and never megabytes of weights.
DUMP_LIMITS = {"large_elements_limit": 64, "large_resource_limit": 64}


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


def _weight_attr(arg: dict[str, Any], index: int, tensor_type: ir.Type) -> ir.Attribute:
    if not os.path.getsize(arg["file"]):  # no elements: nothing to map
        return ir.DenseElementsAttr.get_splat(tensor_type, _zero(tensor_type.element_type))
    data = np.memmap(arg["file"], dtype=np.uint8, mode="r")
    name = f"w{index}_" + "".join(c if c.isalnum() else "_" for c in arg["name"])
    weights.remember(name, data)  # for the passes that rewrite weights
    return ir.DenseResourceElementsAttr.get_from_buffer(data, name, tensor_type, alignment=64)


def _weight(arg: dict[str, Any], index: int, tensor_type: ir.Type) -> ir.Value:
    """The constant for one weight, at the current insertion point.

    A bool tensor is one byte per element in torch, and a ``dense_resource``
    blob of ``i1`` is not: bool weights are mapped as ``i8`` and truncated to
    ``i1`` by an elementwise ``arith.trunci`` on the tensor, which the graph
    stage turns into a ``linalg.generic`` and fuses into the consumers.
    """
    if tensor_type.element_type != ir.IntegerType.get_signless(1):
        return arith.ConstantOp(tensor_type, _weight_attr(arg, index, tensor_type)).result
    i8 = ir.IntegerType.get_signless(8)
    bytes_type = ir.RankedTensorType.get(tensor_type.shape, i8)
    constant = arith.ConstantOp(bytes_type, _weight_attr(arg, index, bytes_type))
    return arith.TruncIOp(tensor_type, constant.result).result


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


def _record_step(
    job: str, stage: str, stage_input: str, pipeline: str | None, target: str | None = None
) -> None:
    """Name the step about to run and its input (a file: the parent's
    reproducer if the step dies); object steps name their CPU target."""
    step = {"stage": stage, "input": stage_input, "pipeline": pipeline, "target": target}
    with open(os.path.join(job, "current-stage.json"), "w", encoding="utf-8") as handle:
        json.dump(step, handle)


def _dump(job: str, index: int, stage: str, module: ir.Module) -> str:
    os.makedirs(os.path.join(job, "ir"), exist_ok=True)
    path = os.path.join(job, "ir", f"{index}-{stage}.mlir")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(module.operation.get_asm(enable_debug_info=True, **DUMP_LIMITS))
    return path


def _clone(module: ir.Module) -> ir.Module:
    """A copy of ``module`` (the mapped GPU IR, lowered again for the CPU):
    each top-level op cloned into a new module. (Moving the ops out of a
    detached ``Operation.clone()`` corrupted the heap in the next pass, and
    bytecode does not parse back with the weights' resource blobs.)"""
    copy = ir.Module.create(module.operation.location)
    with ir.InsertionPoint(copy.body):
        for op in module.body.operations:
            op.operation.clone()
    for attr in module.operation.attributes:
        copy.operation.attributes[attr.name] = attr.attr
    return copy


def _lower(
    job: str, lowerer: Lowerer, module: ir.Module, stages, options, seconds: dict, after=None
) -> str:
    """Run ``stages`` on ``module``, dumping each; returns the last dump."""
    progress = Progress(os.path.join(job, "progress.log"))
    inst = Instrumentation(before=lambda label: progress.log("pass", label))
    previous = os.path.join(job, "ir", "0-linalg.mlir")
    for index, (stage, build) in enumerate(stages, start=1):
        start = time.perf_counter()
        progress.log("stage", stage)
        pipeline = module_pipeline(build(options))
        _record_step(job, stage, previous, pipeline)
        lowerer.run(module, pipeline, previous, inst)
        seconds[stage] = time.perf_counter() - start
        previous = _dump(job, index, stage, module)
        if after is not None:
            after(stage, module)
    return previous


def _link(
    module: ir.Module, job: str, name: str, target, seconds: dict, stage_input: str, **link
) -> None:
    """Object and shared library ``name.so`` from ``module`` (LLVM dialect),
    whose dump ``stage_input`` replays the step with ``lowerline object``."""
    start = time.perf_counter()
    Progress(os.path.join(job, "progress.log")).log("stage", "object")
    _record_step(job, "object", stage_input, None, target.name)
    obj = os.path.join(job, f"{name}.o")
    try:
        emit_object(module, obj, target)
        link_shared_library(obj, os.path.join(job, f"{name}.so"), target, **link)
    except (ObjectError, ptx.PtxasError, ptx.CudaToolError) as err:
        raise LoweringError(str(err), []) from None
    finally:
        for leftover in (obj, obj + ".weights.o"):
            if os.path.exists(leftover):
                os.remove(leftover)
    seconds["object" if name == "lib" else f"{name}-object"] = time.perf_counter() - start


def _parse_input(job: str, request: dict, lowerer: Lowerer, seconds: dict) -> ir.Module:
    start = time.perf_counter()
    Progress(os.path.join(job, "progress.log")).log("stage", "linalg")
    with open(os.path.join(job, "linalg.mlir"), encoding="utf-8") as handle:
        module = lowerer.parse(handle.read(), "linalg.mlir")
    with lowerer.context:
        bind_weights(module, request["args"])
    _dump(job, 0, "linalg", module)
    seconds["linalg"] = time.perf_counter() - start
    return module


def _compile_cpu(job: str, request: dict) -> dict[str, Any]:
    options = CpuOptions(**request["options"])
    seconds: dict[str, float] = {}
    lowerer = Lowerer()
    module = _parse_input(job, request, lowerer, seconds)
    with Watch(tiled=options.tile) as watch:
        last = _lower(job, lowerer, module, CPU_STAGES, options, seconds, watch.after_stage)
    _link(module, job, "lib", cpu_target(options.target), seconds, last)
    return {"entry": "main", "stage_seconds": seconds, "fallbacks": watch.json()}


def _compile_gpu(job: str, request: dict) -> dict[str, Any]:
    """GPU stages; the kernel plan after ``loops``; PTX, cubins and the fatbin
    after ``llvm``; the host library; and the mapped IR (``bufferized``)
    lowered for the CPU as well (``cpu.so``: the numeric check)."""
    options = GpuOptions(**request["options"])
    target = gpu_target(options.target)
    seconds: dict[str, float] = {}
    lowerer = Lowerer()
    module = _parse_input(job, request, lowerer, seconds)
    kept: dict[str, Any] = {}

    def after(stage: str, current: ir.Module) -> None:
        if stage == "bufferized" and options.cpu_emulation:
            kept["mapped"] = _clone(current)
        elif stage == "loops":
            kept["kernels"] = gpu_artifacts.kernel_plan(current)

    with Watch(tiled=None) as watch:
        last = _lower(job, lowerer, module, GPU_STAGES, options, seconds, after)
    start = time.perf_counter()
    try:
        with lowerer.context:
            gpu_artifacts.finish_binaries(module, target, job, options.binary, kept["kernels"])
    except (ptx.PtxasError, ptx.CudaToolError) as err:
        raise LoweringError(str(err), []) from None
    gpu_artifacts.write_plan(kept["kernels"], os.path.join(job, "kernels.json"))
    seconds["ptxas"] = time.perf_counter() - start
    _link(module, job, "lib", host_cpu(), seconds, last, cuda=True)
    if "mapped" in kept:
        start = time.perf_counter()
        mapped = os.path.join(job, "ir", "3-bufferized.mlir")
        emulation = module_pipeline(cpu_emulation(options))
        Progress(os.path.join(job, "progress.log")).log("stage", "cpu-emulation")
        _record_step(job, "cpu-emulation", mapped, emulation)
        lowerer.run(kept["mapped"], emulation, mapped)
        seconds["cpu-emulation"] = time.perf_counter() - start
        emulated = _dump(job, len(GPU_STAGES) + 1, "cpu-emulation", kept["mapped"])
        _link(kept["mapped"], job, "cpu", host_cpu(), seconds, emulated)
    return {"entry": "main", "stage_seconds": seconds, "fallbacks": watch.json()}


def compile_job(job: str) -> dict[str, Any]:
    with open(os.path.join(job, "job.json"), encoding="utf-8") as handle:
        request = json.load(handle)
    if request.get("kind") == "gpu":
        return _compile_gpu(job, request)
    return _compile_cpu(job, request)


def main() -> int:
    job = sys.argv[1]
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
