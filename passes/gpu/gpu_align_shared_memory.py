"""``lowerline-gpu-align-shared-memory``: shared buffers aligned for vector access.

The kernels are lowered with ``use-vector-alignment``: a vector load or store
claims the alignment of its vector (16 bytes for ``vector<4xf32>``, more for
longer rows). ``lowerline-gpu-distribute`` only vectorizes accesses whose
offsets it proved to be multiples of the vector, counting from the buffer's
start; this pass makes the start of every shared buffer (a workgroup
attribution of a ``gpu.func``) aligned enough: ``llvm.align`` on the
attribution, which ``convert-gpu-to-nvvm`` puts on the ``.shared`` global.
Upstream gives these globals the element type's alignment (4 for f32).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from lowerline.pipeline.options import opt
from lowerline.pipeline.pass_api import Pass, ops_matching


@dataclass(frozen=True)
class GpuAlignSharedMemory(Pass):
    flag = "lowerline-gpu-align-shared-memory"
    summary = "Align the workgroup attributions of gpu.funcs (llvm.align) for vector access"
    anchor = "builtin.module"

    alignment: int = opt(64, "bytes; the longest vector row a thread reads (16 f32)")

    def run(self, op: ir.Operation) -> None:
        i64 = ir.IntegerType.get_signless(64)
        for func in ops_matching(op, lambda o: o.name == "gpu.func"):
            if "workgroup_attributions" not in func.attributes:
                continue
            count = ir.IntegerAttr(func.attributes["workgroup_attributions"]).value
            old = func.attributes.get("workgroup_attrib_attrs")
            existing = list(ir.ArrayAttr(old)) if old is not None else [None] * count
            merged = [self._aligned(attrs, i64) for attrs in existing]
            func.attributes["workgroup_attrib_attrs"] = ir.ArrayAttr.get(merged)

    def _aligned(self, attrs: ir.Attribute | None, i64: ir.Type) -> ir.DictAttr:
        """``attrs`` with ``llvm.align`` at least the pass's alignment."""
        entries = {a.name: a.attr for a in ir.DictAttr(attrs)} if attrs is not None else {}
        current = entries.get("llvm.align")
        align = self.alignment
        if current is not None:
            align = max(align, ir.IntegerAttr(current).value)
        entries["llvm.align"] = ir.IntegerAttr.get(i64, align)
        return ir.DictAttr.get(entries)
