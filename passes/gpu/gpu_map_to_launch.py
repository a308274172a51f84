"""``lowerline-gpu-map-to-launch``: mapped foralls become ``gpu.launch`` ops.

Each block forall that ``lowerline-gpu-distribute`` left (with its threads
per block in ``lowerline.gpu_block_threads``) becomes a ``gpu.launch``:
upstream's ``transform.gpu.map_forall_to_blocks {generate_gpu_launch}`` and
``map_nested_forall_to_threads`` (which puts a ``gpu.barrier`` after every
thread forall: the shared-memory copies are complete before the compute
reads them, and the compute is done before the next copy overwrites them).

Shared-memory buffers (``memref.alloc`` in address space 3, from promotion)
become workgroup attributions of the launch: GPU kernels cannot allocate,
and upstream has no pass that hoists such allocations into
attributions (``convert-gpu-to-nvvm`` lowers attributions, not allocs).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from lowerline.passes.gpu.gpu_distribute import block_foralls
from lowerline.passes.gpu.mapping import is_workgroup
from lowerline.passes.support.transform_scripts import ANY, apply_script
from lowerline.pipeline.pass_api import Pass, PassFailed, ops_matching
from lowerline.pipeline.protocol import GPU_BLOCK_THREADS, GPU_LAUNCH


def _script(tag: str, threads: int) -> str:
    return (
        f"  %f = transform.structured.match attributes{{{GPU_LAUNCH.entry(tag)}}} in %root"
        f" : ({ANY}) -> {ANY}\n"
        f"  %l = transform.gpu.map_forall_to_blocks %f {{generate_gpu_launch}}"
        f" : ({ANY}) -> {ANY}\n"
        f"  %m = transform.gpu.map_nested_forall_to_threads %l block_dims = [{threads}, 1, 1]"
        f" : ({ANY}) -> {ANY}\n"
    )


def _empty_dimension(forall: ir.Operation) -> str | None:
    """Why ``forall`` or a forall inside it cannot be mapped, or None: a
    static dimension with no iteration. Upstream's mapping asserts on it
    (``computeProduct``: "basis must be nonnegative", an abort found by
    mutating this pass's lit input)."""
    for op in ops_matching(forall, lambda o: o.name == "scf.forall"):
        bounds = [
            ir.DenseI64ArrayAttr(op.attributes[name])
            for name in ("staticLowerBound", "staticUpperBound", "staticStep")
        ]
        for dim, (low, high, step) in enumerate(zip(*bounds, strict=True)):
            if ir.ShapedType.get_dynamic_size() in (low, high, step):
                continue
            if step <= 0 or high <= low:
                return (
                    f"{op.location}: dimension {dim} of this scf.forall has no iteration "
                    f"({low} to {high} step {step}); a GPU mapping needs at least one"
                )
    return None


def _is_workgroup_alloc(op: ir.Operation) -> bool:
    if op.name != "memref.alloc":
        return False
    return is_shared(ir.MemRefType(op.results[0].type))


def is_shared(t: ir.MemRefType) -> bool:
    """Workgroup memory: NVVM's address space 3, or the GPU dialect's name for it."""
    return is_workgroup(t.memory_space)


def hoist_workgroup_allocs(launch: ir.Operation) -> int:
    """Shared allocations of ``launch`` -> its workgroup attributions."""
    allocs = ops_matching(launch, _is_workgroup_alloc)
    body = launch.regions[0].blocks[0]
    for alloc in allocs:
        buffer = alloc.results[0]
        if not ir.MemRefType(buffer.type).has_static_shape:
            alloc.location.emit_error("a shared-memory buffer of dynamic size")
            raise PassFailed()
        for use in list(buffer.uses):
            if use.owner.operation.name == "memref.dealloc":
                use.owner.erase()
        buffer.replace_all_uses_with(body.add_argument(buffer.type, alloc.location))
        alloc.erase()
    count = len(allocs) + (
        ir.IntegerAttr(launch.attributes["workgroup_attributions"]).value
        if "workgroup_attributions" in launch.attributes
        else 0
    )
    launch.attributes["workgroup_attributions"] = ir.IntegerAttr.get(
        ir.IntegerType.get_signless(64), count
    )
    return len(allocs)


@dataclass(frozen=True)
class GpuMapToLaunch(Pass):
    flag = "lowerline-gpu-map-to-launch"
    summary = "Block and thread foralls -> gpu.launch with shared memory as attributions"
    anchor = "builtin.module"

    def run(self, op: ir.Operation) -> None:
        failures = []
        for index, forall in enumerate(block_foralls(op)):
            threads = GPU_BLOCK_THREADS.get(forall)
            if threads is None:
                continue
            if empty := _empty_dimension(forall):
                failures.append(empty)
                continue
            tag = f"l{index}"
            GPU_LAUNCH.set(forall, tag)
            location = forall.location
            if failure := apply_script(op, _script(tag, threads)):
                failures.append(f"{location}: {failure}")
        if failures:
            op.location.emit_error("mapping to gpu.launch failed:\n  " + "\n  ".join(failures))
            raise PassFailed()
        for launch in ops_matching(op, lambda o: o.name == "gpu.launch"):
            hoist_workgroup_allocs(launch)
