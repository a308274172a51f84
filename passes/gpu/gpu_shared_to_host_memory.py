"""``lowerline-gpu-shared-to-host-memory``: run GPU-mapped IR on the CPU.

The mapped IR (``lowerline-gpu-distribute``: block foralls holding thread
foralls and copies into shared memory) is still structured loops; on the CPU
the foralls run one iteration after another (``scf-forall-to-for``), which
respects the GPU's barriers: a thread forall completes before the next one
starts. What the CPU cannot lower is memory in another address space:
this pass drops the memory space (shared memory: 3, or
``#gpu.address_space<...>``) from every memref type, so the shared
tiles become ordinary buffers. It is the only numeric check of GPU code on
machines without a GPU.

Upstream has no pass that erases memory spaces (the GPU lowering maps them
to NVVM address spaces; the CPU lowering rejects them).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from lowerline.pipeline.pass_api import Pass, ops_matching


def _host_type(t: ir.Type) -> ir.Type | None:
    """``t`` without a GPU memory space; None when ``t`` has none."""
    if not isinstance(t, ir.MemRefType):
        return None
    memref = ir.MemRefType(t)
    if memref.memory_space is None:
        return None
    return ir.MemRefType.get(memref.shape, memref.element_type, memref.layout)


def _retype(values) -> None:
    for value in values:
        new = _host_type(value.type)
        if new is not None:
            value.set_type(new)


@dataclass(frozen=True)
class GpuSharedToHostMemory(Pass):
    flag = "lowerline-gpu-shared-to-host-memory"
    summary = "Drop GPU memory spaces from memref types (to run mapped GPU IR on the CPU)"
    anchor = None

    def run(self, op: ir.Operation) -> None:
        def visit(inner: ir.Operation) -> ir.WalkResult:
            _retype(inner.results)
            for region in inner.regions:
                for block in region.blocks:
                    _retype(block.arguments)
            return ir.WalkResult.ADVANCE

        op.walk(visit)
        for inner in ops_matching(op, lambda o: o.name in ("func.func", "memref.global")):
            _retype_symbol(inner)


def _retype_symbol(op: ir.Operation) -> None:
    """Signatures and globals carry types too: keep them in step with the values."""
    if op.name == "memref.global":
        new = _host_type(ir.TypeAttr(op.attributes["type"]).value)
        if new is not None:
            op.attributes["type"] = ir.TypeAttr.get(new)
        return
    ftype = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
    inputs = [_host_type(t) or t for t in ftype.inputs]
    results = [_host_type(t) or t for t in ftype.results]
    op.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, results))
