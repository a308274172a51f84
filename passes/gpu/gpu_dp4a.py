"""``lowerline-gpu-dp4a``: four-byte dot products of the kernels as ``dp4a``.

Rewrites, inside ``gpu.module``s,

    %p = arith.muli (arith.ext{s,u}i %a : vector<4xi8>), (arith.ext{s,u}i %b : vector<4xi8>)
    %s = vector.reduction <add>, %p [, %acc] : vector<4xi32> into i32

into ``nvvm.dot.accumulate.4way %a, %b, %acc`` (PTX ``dp4a``, sm_61 and
later), with each side signed or unsigned as its extension says. The steps
come from lowerline-gpu-distribute (``lowerline.passes.gpu.byte_dots``: an
integer matmul's thread tile), but any such reduction is taken.

Upstream has the NVVM op but no pattern forming it: NVPTX lowers the
reduction to byte extractions, four multiplies and three adds.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, nvvm

from lowerline.pipeline.pass_api import Pass, ops_matching

_EXTENSIONS = {
    "arith.extsi": nvvm.DotAccumulateType.SIGNED,
    "arith.extui": nvvm.DotAccumulateType.UNSIGNED,
}


def _defining(value: ir.Value) -> ir.Operation | None:
    owner = value.owner
    return owner if isinstance(owner, ir.Operation) else getattr(owner, "operation", None)


def _byte_source(value: ir.Value) -> tuple[ir.Value, nvvm.DotAccumulateType] | None:
    """(the vector<4xi8>, its signedness) that ``value`` extends, or None."""
    ext = _defining(value)
    if ext is None or ext.name not in _EXTENSIONS:
        return None
    source = ext.operands[0]
    vtype = ir.VectorType(source.type)
    if vtype.shape != [4] or str(vtype.element_type) != "i8":
        return None
    return source, _EXTENSIONS[ext.name]


def _dot_operands(reduction: ir.Operation) -> tuple | None:
    """((a, a_type), (b, b_type), acc or None) of a dp4a-shaped reduction."""
    if str(reduction.attributes["kind"]) != "#vector.kind<add>":
        return None
    if str(reduction.results[0].type) != "i32":
        return None
    product = _defining(reduction.operands[0])
    if product is None or product.name != "arith.muli":
        return None
    a, b = (_byte_source(v) for v in product.operands)
    if a is None or b is None:
        return None
    acc = reduction.operands[1] if len(reduction.operands) > 1 else None
    return a, b, acc


def _in_gpu_module(op: ir.Operation) -> bool:
    parent = op.parent
    while parent is not None and parent.name != "builtin.module":
        if parent.name == "gpu.module":
            return True
        parent = parent.parent
    return False


@dataclass(frozen=True)
class GpuDp4a(Pass):
    flag = "lowerline-gpu-dp4a"
    summary = "Four-byte dot-product reductions in gpu.modules -> nvvm.dot.accumulate.4way (dp4a)"
    anchor = "builtin.module"

    def run(self, op: ir.Operation) -> None:
        reductions = ops_matching(op, lambda o: o.name == "vector.reduction" and _in_gpu_module(o))
        for reduction in reductions:
            if (found := _dot_operands(reduction)) is not None:
                _replace(reduction, *found)


def _replace(reduction: ir.Operation, a: tuple, b: tuple, acc: ir.Value | None) -> None:
    i32 = ir.IntegerType.get_signless(32)
    with ir.InsertionPoint(reduction), reduction.location:
        if acc is None:
            acc = arith.constant(i32, 0)
        dot = nvvm.dot_accumulate_4way(i32, a[0], a[1], b[0], b[1], acc)
    product = _defining(reduction.operands[0])
    reduction.results[0].replace_all_uses_with(dot)
    reduction.erase()
    _erase_if_dead(product)


def _erase_if_dead(op: ir.Operation | None) -> None:
    """Erases ``op`` if nothing reads it, then its dead producers (the
    product's extensions)."""
    if op is None or any(list(r.uses) for r in op.results):
        return
    producers = [_defining(v) for v in op.operands]
    op.erase()
    for producer in producers:
        if producer is not None and producer.name in _EXTENSIONS:
            _erase_if_dead(producer)
