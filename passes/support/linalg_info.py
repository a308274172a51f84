"""Reading linalg ops from Python: indexing maps, iterator kinds, a short name;
cloning a body into a new one.

Shared by the passes that inspect linalg ops (tile-and-fuse, fuse-elementwise,
vectorize), so that each reads the attributes the same way.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import linalg


def indexing_maps(op: ir.Operation) -> list[ir.AffineMap]:
    """The maps of any linalg op (named ops keep theirs implicit)."""
    if "indexing_maps" in op.attributes:
        maps = op.attributes["indexing_maps"]
    else:
        maps = linalg.get_indexing_maps(op)
    return [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(maps)]


def iterator_kinds(op: ir.Operation) -> list[str]:
    """``["parallel", "reduction", ...]``; for named ops, from the init's map
    (the loops that index the output are the parallel ones)."""
    if "iterator_types" in op.attributes:
        return [
            str(a).split("<")[-1].rstrip(">") for a in ir.ArrayAttr(op.attributes["iterator_types"])
        ]
    maps = indexing_maps(op)
    out = {r.position for r in maps[-1].results if isinstance(r, ir.AffineDimExpr)}
    return ["parallel" if d in out else "reduction" for d in range(maps[-1].n_dims)]


def all_parallel(op: ir.Operation) -> bool:
    return all(kind == "parallel" for kind in iterator_kinds(op))


def static_loop_sizes(op: ir.Operation) -> list[int] | None:
    """The loop bounds of a linalg op on static shapes, from the operand dims
    its maps index directly; None when one is dynamic or never indexed alone."""
    maps = indexing_maps(op)
    sizes: list[int | None] = [None] * maps[0].n_dims
    for operand, amap in zip(op.operands, maps, strict=False):
        if not isinstance(operand.type, ir.ShapedType):
            continue
        shaped = ir.ShapedType(operand.type)
        if not shaped.has_static_shape:
            return None
        for expr, size in zip(amap.results, shaped.shape, strict=True):
            if isinstance(expr, ir.AffineDimExpr):
                sizes[expr.position] = size
    static = [size for size in sizes if size is not None]
    return static if len(static) == len(sizes) else None


def loop_sizes(op: ir.Operation) -> list[int] | None:
    """The loop bounds of a linalg op, ``ShapedType.get_dynamic_size()`` for
    a loop no operand gives statically; None when a loop is never indexed alone."""
    dynamic = ir.ShapedType.get_dynamic_size()
    maps = indexing_maps(op)
    sizes: list[int | None] = [None] * maps[0].n_dims
    for operand, amap in zip(op.operands, maps, strict=False):
        if not isinstance(operand.type, ir.ShapedType):
            continue
        shape = ir.ShapedType(operand.type).shape
        for expr, size in zip(amap.results, shape, strict=True):
            if isinstance(expr, ir.AffineDimExpr) and sizes[expr.position] in (None, dynamic):
                sizes[expr.position] = size
    found = [size for size in sizes if size is not None]
    return found if len(found) == len(sizes) else None


def describe(op: ir.Operation) -> str:
    """``linalg.matmul at "file.mlir":4:8``: for explain output."""
    loc = str(op.location)
    return f"{op.name} at {loc[4:-1] if loc.startswith('loc(') else loc}"


def clone_body(source: ir.Block, mapping: dict) -> list[ir.Value]:
    """Clone ``source``'s ops at the current insertion point, remapping operands.
    Returns the (remapped) values yielded by ``source``."""
    for op in source.operations:
        op = op.operation
        if op.name == "linalg.yield":
            return [mapping.get(v, v) for v in op.operands]
        clone = op.clone()
        for i, operand in enumerate(clone.operands):
            if operand in mapping:
                clone.operands[i] = mapping[operand]
        for old, new in zip(op.results, clone.results, strict=True):
            mapping[old] = new
    return []
