"""What a GPU compile leaves behind: the kernel plan, PTX, cubins, the fatbin.

Called by the compile worker between and after the GPU stages:

- ``kernel_plan`` reads the ``loops`` stage (host code launching outlined
  kernels): each launch's kernel, grid, block, static shared memory and the
  byte size of every kernel parameter as the host passes them (a memref is
  its descriptor, flattened: two pointers, the offset, sizes and strides);
  the stub-driver tests compare the launches the host really makes with it;
- ``finish_binaries`` takes the PTX out of every ``gpu.binary`` the ``llvm``
  stage made, assembles it with ``ptxas -v`` for the target (cubin and
  per-kernel registers, spills, shared memory), builds a fatbin (cubin +
  PTX) and puts the image the library should embed back into the binary.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field

from mlir import ir
from mlir.dialects import gpu

from lowerline.gpu import ptx
from lowerline.passes.support.ir_constants import int_constant
from lowerline.pipeline.pass_api import ops_matching
from lowerline.targets import GpuTarget

# gpu::CompilationTarget
FORMAT_ASSEMBLY, FORMAT_FATBIN = 2, 4
_SCALAR_BYTES = {"index": 8, "i64": 8, "f64": 8, "i32": 4, "f32": 4, "i16": 2, "f16": 2,
                 "bf16": 2, "i8": 1, "i1": 1}  # fmt: skip


@dataclass
class Kernel:
    name: str  # "module::function"
    grid: list[int]
    block: list[int]
    shared_bytes: int  # static workgroup attributions
    dynamic_shared_bytes: int  # requested at launch (cuLaunchKernel's sharedMemBytes)
    param_bytes: list[int]  # each kernel parameter as launched
    resources: dict = field(default_factory=dict)  # from ptxas -v, per arch


def param_bytes(t: ir.Type) -> list[int]:
    """Bytes of each parameter a value of type ``t`` becomes in a kernel's
    signature (the default, non-bare-pointer memref calling convention)."""
    if isinstance(t, ir.MemRefType):
        rank = ir.MemRefType(t).rank
        return [8, 8, 8] + [8] * (2 * rank)
    return [_SCALAR_BYTES.get(str(t), 8)]


def _element_bytes(t: ir.MemRefType) -> int:
    return max(1, ir.MemRefType(t).element_type.width // 8)


def _workgroup_bytes(func: ir.Operation) -> int:
    count = (
        ir.IntegerAttr(func.attributes["workgroup_attributions"]).value
        if ("workgroup_attributions" in func.attributes)
        else 0
    )
    args = func.regions[0].blocks[0].arguments
    first = len(args) - count - _private_count(func)
    total = 0
    for arg in list(args)[first : first + count]:
        t = ir.MemRefType(arg.type)
        n = 1
        for d in t.shape:
            n *= d
        total += n * _element_bytes(t)
    return total


def _private_count(func: ir.Operation) -> int:
    if "private_attributions" not in func.attributes:
        return 0
    return ir.IntegerAttr(func.attributes["private_attributions"]).value


def _kernel_funcs(module: ir.Operation) -> dict[str, ir.Operation]:
    found = {}
    for gm in ops_matching(module, lambda o: o.name == "gpu.module"):
        mod = ir.StringAttr(gm.attributes["sym_name"]).value
        for f in ops_matching(gm, lambda o: o.name == "gpu.func"):
            found[f"{mod}::{ir.StringAttr(f.attributes['sym_name']).value}"] = f
    return found


def _launch_size(value: ir.Value, kernel: str) -> int:
    """A launch's grid, block or shared size: constants by construction
    (static shapes, lowerline.gpu.plan), so anything else is a bug to report."""
    size = int_constant(value)
    if size is None:
        raise ValueError(f"the launch of kernel '{kernel}' has a size that is not a constant")
    return size


def kernel_plan(module: ir.Module) -> list[Kernel]:
    """Every ``gpu.launch_func`` of the host code, in program order."""
    funcs = _kernel_funcs(module.operation)
    kernels = []
    for launch in ops_matching(module.operation, lambda o: o.name == "gpu.launch_func"):
        view = launch.opview
        name = str(view.kernel).replace("@", "")
        sizes = [
            _launch_size(v, name)
            for v in (view.gridSizeX, view.gridSizeY, view.gridSizeZ,
                      view.blockSizeX, view.blockSizeY, view.blockSizeZ)
        ]  # fmt: skip
        params = [b for a in view.kernelOperands for b in param_bytes(a.type)]
        dynamic = view.dynamicSharedMemorySize
        dynamic_bytes = 0 if dynamic is None else _launch_size(dynamic, name)
        func = funcs.get(name)
        kernels.append(
            Kernel(
                name=name,
                grid=sizes[:3],
                block=sizes[3:6],
                shared_bytes=_workgroup_bytes(func) if func is not None else 0,
                dynamic_shared_bytes=dynamic_bytes,
                param_bytes=params,
            )
        )
    return kernels


def _object_of(binary: ir.Operation) -> gpu.ObjectAttr:
    return gpu.ObjectAttr(ir.ArrayAttr(binary.attributes["objects"])[0])


def finish_binaries(
    module: ir.Module, target: GpuTarget, folder: str, embed: str, kernels: list[Kernel]
) -> str:
    """Assemble every kernel module's PTX (files in ``folder``), attach ptxas'
    resources to ``kernels`` and make each ``gpu.binary`` hold ``embed``
    ("fatbin" or "ptx"). Returns all the PTX, module after module."""
    texts = []
    by_module = {k.name.split("::")[0]: k for k in kernels}
    for binary in ops_matching(module.operation, lambda o: o.name == "gpu.binary"):
        name = ir.StringAttr(binary.attributes["sym_name"]).value
        obj = _object_of(binary)
        text = bytes(obj.object).decode()
        texts.append(f"// ---- kernel module {name}\n{text}")
        with open(os.path.join(folder, f"{name}.ptx"), "w", encoding="utf-8") as handle:
            handle.write(text)
        cubin, resources = ptx.assemble(text, target.chip, os.path.join(folder, f"{name}.cubin"))
        for r in resources:  # one kernel per module (gpu-kernel-outlining)
            if name in by_module:
                by_module[name].resources[r.arch] = asdict(r)
        if embed == "fatbin":
            image = ptx.fatbin(text, {target.chip: cubin}, os.path.join(folder, f"{name}.fatbin"))
            new = gpu.ObjectAttr.get(obj.target, FORMAT_FATBIN, image, obj.properties)
            binary.attributes["objects"] = ir.ArrayAttr.get([new])
    all_ptx = "\n".join(texts)
    with open(os.path.join(folder, "kernels.ptx.txt"), "w", encoding="utf-8") as handle:
        handle.write(all_ptx)
    return all_ptx


def write_plan(kernels: list[Kernel], path: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        json.dump([asdict(k) for k in kernels], handle, indent=1)
