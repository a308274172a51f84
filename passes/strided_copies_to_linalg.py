"""``lowerline-strided-copies-to-linalg``: copies of strided views as loops.

Why: bufferization copies with ``memref.copy``. Between two buffers of the
identity layout that is one ``memcpy``; but where either side is a strided
view (a padded input's interior, a tile of a larger buffer) the CPU lowering
calls MLIR's generic runtime ``memrefCopy``, which copies element by element
(about 10% of a ResNet basic block here, measured, for its two padded
inputs). As ``linalg.copy`` it becomes loops that LLVM vectorizes. Upstream
can bufferize to ``linalg.copy`` (one-shot-bufferize's ``memcpyOp``), but the
option is not exposed in pass pipelines and would also turn the contiguous
copies into loops.

Before / after::

    memref.copy %a, %view : memref<1x64x56x56xf32> to memref<1x64x56x56xf32, strided<...>>
        ==>
    linalg.copy ins(%a : memref<1x64x56x56xf32>) outs(%view : memref<..., strided<...>>)

Copies between identity-layout buffers stay; a copy of a buffer onto itself
(left by bufferizing an ``scf.forall`` result in place) is dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import linalg

from lowerline.pass_api import Pass, ops_matching, register_pass


def _identity_layout(value: ir.Value) -> bool:
    mtype = ir.MemRefType(value.type)
    identity = ir.AffineMap.get_identity(mtype.rank)
    return isinstance(mtype.layout, ir.AffineMapAttr) and mtype.layout.value == identity


def copies_to_linalg(func: ir.Operation, strided_only: bool) -> None:
    """memref.copy -> linalg.copy (with ``strided_only``, where a side is a
    strided view); self-copies are dropped."""
    for copy in ops_matching(func, lambda o: o.name == "memref.copy"):
        source, target = copy.operands
        if source == target:
            copy.erase()
            continue
        if strided_only and _identity_layout(source) and _identity_layout(target):
            continue
        with ir.InsertionPoint(copy), copy.location:
            linalg.copy(source, outs=[target])
        copy.erase()


@register_pass
@dataclass(frozen=True)
class StridedCopiesToLinalg(Pass):
    flag = "lowerline-strided-copies-to-linalg"
    summary = "Rewrite memref.copy of strided views as linalg.copy (vectorizable loops)"
    anchor = "func.func"

    def run(self, op: ir.Operation) -> None:
        copies_to_linalg(op, strided_only=True)
