"""``lowerline-collapse-broadcast-batch-matmul``: a batch matmul by one
matrix broadcast over the batch becomes one matmul over all the rows.

Why: torch folds ``x @ w`` (``nn.Linear``) on a 3-D ``x`` into one 2-D
matmul only when ``x`` is contiguous; otherwise (the sequence-first input
``nn.MultiheadAttention`` makes of a batch-first one by a transpose) it
expands ``w`` over the batch and calls ``bmm``. torch-mlir keeps that
expansion as a broadcast ``linalg.generic``: the whole weight copied once per
batch entry on every call (a 256x768 projection over 32 positions: 25 MB
written and read per call, most of a batch-8 encoder layer's time), and the
batch matmul of 8-row slices that follows re-reads the weight per slice and
cannot take the packed-weight path of ``lowerline-pack-weights``. Upstream
has no pattern folding a broadcast operand into a matmul over collapsed rows
(``linalg.batch_matmul``'s broadcast indexing maps still iterate per batch).

The elementwise chain reading the result (the bias add) is collapsed with
it, so that ``lowerline-tile-and-fuse`` still fuses it into the matmul's
register tiles::

    %wb = linalg.generic {maps [(b, m, n) -> (m, n), id]} ins(%w : KxN) outs(: BxKxN)
    %c = linalg.batch_matmul ins(%a, %wb : BxMxK, BxKxN) outs(%fill : BxMxN)
    %r = linalg.generic {maps [id, (b, m, n) -> (n), id]} ins(%c, %bias) outs(%e : BxMxN)
  ->
    %a2 = tensor.collapse_shape %a [[0, 1], [2]] : BxMxK into (B*M)xK
    %c2 = linalg.matmul ins(%a2, %w) outs(collapse_shape %fill : (B*M)xN)
    %r2 = linalg.generic {maps [id, (r, n) -> (n), id]} ins(%c2, %bias) outs(collapse_shape %e)
    %r = tensor.expand_shape %r2 [[0, 1], [2]] : (B*M)xN into BxMxN

A dynamic batch or row count (``lowerline.compile(..., dynamic=...)``: a
sequence-first encoder over a dynamic batch) merges into a dynamic row
count, the sizes of the empties and the expansion read with ``tensor.dim``.

Left alone: a batch matmul whose B operand is not such a broadcast, one
with a dynamic K or N, or explicit indexing maps. A consumer is collapsed only when
it is elementwise over the result's shape and every operand it reads either
follows the batch and row dimensions together, in order, or neither.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, linalg, tensor

from lowerline.passes.support.linalg_info import all_parallel, indexing_maps
from lowerline.passes.support.rebuild_generic import (
    has_index_op,
    rebuild_generic,
    replace_chain,
    single_user_chain,
)
from lowerline.pipeline.pass_api import Pass, ops_matching

_DYNAMIC = ir.ShapedType.get_dynamic_size()


def _owner(value: ir.Value) -> ir.Operation | None:
    return value.owner if isinstance(value, ir.OpResult) else None


def _is_copy_body(op: ir.Operation) -> bool:
    """A body that yields its input element unchanged."""
    block = op.regions[0].blocks[0]
    ops = [o.operation for o in block.operations]
    return len(ops) == 1 and ops[0].operands[0] == block.arguments[0]


def broadcast_matrix(value: ir.Value) -> ir.Value | None:
    """The 2-D matrix that ``value`` broadcasts along a new leading (batch)
    dimension: through ``linalg.broadcast`` or an equivalent generic; None
    otherwise."""
    op = _owner(value)
    if op is None:
        return None
    source = op.operands[0]
    if not isinstance(source.type, ir.RankedTensorType) or source.type.rank != 2:
        return None
    if op.name == "linalg.broadcast":
        return source if list(ir.DenseI64ArrayAttr(op.attributes["dimensions"])) == [0] else None
    if op.name != "linalg.generic" or len(op.operands) != 2 or not all_parallel(op):
        return None
    d0, d1, d2 = (ir.AffineDimExpr.get(i) for i in range(3))
    expected = [ir.AffineMap.get(3, 0, [d1, d2]), ir.AffineMap.get(3, 0, [d0, d1, d2])]
    return source if indexing_maps(op) == expected and _is_copy_body(op) else None


def collapsed_map(amap: ir.AffineMap) -> ir.AffineMap | None:
    """``amap`` over loops (b, m, n) as a map over (b*m, n): b and m must be
    read together, in that order, or not at all; None when they are not."""
    exprs = list(amap.results)
    dims = [e.position if isinstance(e, ir.AffineDimExpr) else None for e in exprs]
    if 0 in dims or 1 in dims:
        first = dims.index(0) if 0 in dims else -1
        if first < 0 or first + 1 >= len(dims) or dims[first + 1] != 1 or dims.count(1) > 1:
            return None
        exprs = [*exprs[:first], ir.AffineDimExpr.get(0), *exprs[first + 2 :]]
    renamed = [ir.AffineDimExpr.get(1) if e == ir.AffineDimExpr.get(2) else e for e in exprs]
    if any(not isinstance(e, ir.AffineDimExpr | ir.AffineConstantExpr) for e in renamed):
        return None
    return ir.AffineMap.get(2, 0, renamed)


def _reads_rows(amap: ir.AffineMap) -> int | None:
    """Where ``amap`` reads the (b, m) pair: the first of the two positions."""
    for position, expr in enumerate(amap.results):
        if isinstance(expr, ir.AffineDimExpr) and expr.position == 0:
            return position
    return None


def _collapsible(op: ir.Operation, shape: list[int]) -> bool:
    """An elementwise generic over loops ``shape`` (b, m, n) whose operands
    all collapse with the rows."""
    if op.name != "linalg.generic" or len(op.results) != 1 or not all_parallel(op):
        return False
    result = op.results[0].type
    if not isinstance(result, ir.RankedTensorType) or list(result.shape) != shape:
        return False
    maps = indexing_maps(op)
    if maps[-1] != ir.AffineMap.get_identity(3):
        return False
    if has_index_op(op):
        return False
    return all(collapsed_map(m) is not None for m in maps)


def _static_but_batch(value: ir.Value, amap: ir.AffineMap) -> bool:
    """Every dim of ``value`` static but one it reads along the batch loop (d0)."""
    if not isinstance(value.type, ir.ShapedType):
        return True
    shape = ir.ShapedType(value.type).shape
    return all(
        size != _DYNAMIC or expr == ir.AffineDimExpr.get(0)
        for size, expr in zip(shape, amap.results, strict=True)
    )


def consumer_chain(root: ir.Operation, shape: list[int]) -> list[ir.Operation]:
    """The elementwise ops reading ``root``'s result one after the other,
    each the only user of the one before, that collapse with it."""
    return single_user_chain(root, lambda op: _collapsible(op, shape))


def _size(value: ir.Value, dim: int) -> int | ir.Value:
    """Dim ``dim`` of ``value``: an int, or a ``tensor.dim`` where dynamic."""
    size = ir.RankedTensorType(value.type).shape[dim]
    if size != _DYNAMIC:
        return size
    return tensor.dim(value, arith.constant(ir.IndexType.get(), dim))


def _index(size: int | ir.Value) -> ir.Value:
    return arith.constant(ir.IndexType.get(), size) if isinstance(size, int) else size


def _product(a: int | ir.Value, b: int | ir.Value) -> int | ir.Value:
    """``a * b``, folded where both are known (a dynamic batch or row count
    (``lowerline.compile(..., dynamic=...)``) gives an ``arith.muli``)."""
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    return arith.muli(_index(a), _index(b))


def collapse_rows(value: ir.Value, at: int) -> ir.Value:
    """``value`` with dims ``at`` and ``at + 1`` merged (inserted at the
    current insertion point)."""
    vtype = ir.RankedTensorType(value.type)
    shape = list(vtype.shape)
    rows = _DYNAMIC if _DYNAMIC in shape[at : at + 2] else shape[at] * shape[at + 1]
    merged = [*shape[:at], rows, *shape[at + 2 :]]
    groups = [[i] for i in range(at)] + [[at, at + 1]]
    groups += [[i] for i in range(at + 2, len(shape))]
    i64 = ir.IntegerType.get_signless(64)
    reassociation = ir.ArrayAttr.get(
        [ir.ArrayAttr.get([ir.IntegerAttr.get(i64, i) for i in g]) for g in groups]
    )
    result = ir.RankedTensorType.get(merged, vtype.element_type)
    # New empties and fills rather than reshapes of them: canonicalize keeps
    # a collapsed tensor.empty, where tile-and-fuse wants a fill of an empty.
    owner = value.owner if isinstance(value, ir.OpResult) else None
    if owner is not None and owner.name == "tensor.empty":
        sizes = [_size(value, d) for d in range(len(shape))]
        sizes = [*sizes[:at], _product(sizes[at], sizes[at + 1]), *sizes[at + 2 :]]
        return tensor.empty(sizes, vtype.element_type)
    if owner is not None and owner.name == "linalg.fill":
        return linalg.fill(owner.operands[0], outs=[collapse_rows(owner.operands[1], at)])
    return tensor.collapse_shape(result, value, reassociation)


def expand_rows(value: ir.Value, shape: list[int], like: ir.Value) -> ir.Value:
    """The (b*m, n) ``value`` as (b, m, n), dynamic sizes those of ``like``."""
    i64 = ir.IntegerType.get_signless(64)
    reassociation = ir.ArrayAttr.get(
        [
            ir.ArrayAttr.get([ir.IntegerAttr.get(i64, 0), ir.IntegerAttr.get(i64, 1)]),
            ir.ArrayAttr.get([ir.IntegerAttr.get(i64, 2)]),
        ]
    )
    element = ir.RankedTensorType(value.type).element_type
    result = ir.RankedTensorType.get(shape, element)
    dynamic = [_size(like, d) for d, size in enumerate(shape) if size == _DYNAMIC]
    return tensor.expand_shape(result, value, reassociation, dynamic, shape)


def _collapsed_operand(value: ir.Value, amap: ir.AffineMap) -> ir.Value:
    at = _reads_rows(amap)
    return value if at is None else collapse_rows(value, at)


def collapse_generic(op: ir.Operation, replaced: ir.Value, by: ir.Value) -> ir.Value:
    """Rebuild the elementwise ``op`` over (b*m, n), reading ``by`` where it
    read ``replaced``; its body moves over. Returns the new result."""
    maps = indexing_maps(op)
    operands = [
        by if v == replaced else _collapsed_operand(v, m)
        for v, m in zip(op.operands, maps, strict=True)
    ]
    new_maps = [m for m in (collapsed_map(m) for m in maps) if m is not None]
    return rebuild_generic(op, operands, new_maps, ["parallel", "parallel"])


def _batch_matmul_maps() -> list[ir.AffineMap]:
    """linalg.batch_matmul's default maps over (b, m, n, k)."""
    b, m, n, k = (ir.AffineDimExpr.get(i) for i in range(4))
    return [ir.AffineMap.get(4, 0, list(e)) for e in ([b, m, k], [b, k, n], [b, m, n])]


def _rows_shape(value: ir.Value) -> list[int] | None:
    """The (b, m, n/k) shape of a batch matmul operand, b and m possibly
    dynamic (``lowerline.compile(..., dynamic=...)``): they merge into a
    dynamic row count. None for a dynamic last dim."""
    vtype = value.type
    if not isinstance(vtype, ir.RankedTensorType) or vtype.rank != 3:
        return None
    shape = list(vtype.shape)
    return None if shape[-1] == _DYNAMIC else shape


def collapse_batch_matmul(bmm: ir.Operation) -> bool:
    """Rewrite one batch matmul by a broadcast matrix; whether it was."""
    if indexing_maps(bmm) != _batch_matmul_maps():
        return False  # transposed or broadcast operands through explicit maps
    matrix = broadcast_matrix(bmm.operands[1])
    shape = _rows_shape(bmm.results[0])
    if matrix is None or shape is None or _rows_shape(bmm.operands[0]) is None:
        return False
    chain = consumer_chain(bmm, shape)
    with ir.InsertionPoint(bmm), bmm.location:
        rows = collapse_rows(bmm.operands[0], 0)
        init = collapse_rows(bmm.operands[2], 0)
        value = linalg.matmul(rows, matrix, outs=[init])
    if "cast" in bmm.attributes:  # unsigned extension of integer operands
        value.owner.attributes["cast"] = bmm.attributes["cast"]
    broadcast = _owner(bmm.operands[1])
    replace_chain(
        bmm, chain, value, collapse_generic, lambda v: expand_rows(v, shape, bmm.operands[0])
    )
    if broadcast is not None and not list(broadcast.results[0].uses):
        broadcast.erase()  # the copies per batch entry are gone
    return True


@dataclass(frozen=True)
class CollapseBroadcastBatchMatmul(Pass):
    flag = "lowerline-collapse-broadcast-batch-matmul"
    summary = "Rewrite a batch matmul by a broadcast matrix as one matmul over all rows"
    anchor = "func.func"

    def run(self, op: ir.Operation) -> None:
        for bmm in ops_matching(op, lambda o: o.name == "linalg.batch_matmul"):
            collapse_batch_matmul(bmm)
