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

A dynamic batch (attention's in-projection over a dynamic sequence length,
which the transpose makes the batch) gives dynamic rows (B*M). Left alone:
a batch matmul whose B operand is not such a broadcast, one with dynamic
dims other than the batch or explicit indexing maps. A consumer is collapsed only when
it is elementwise over the result's shape and every operand it reads either
follows the batch and row dimensions together, in order, or neither.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, linalg, tensor

from lowerline.passes.support.linalg_info import all_parallel, indexing_maps
from lowerline.pipeline.pass_api import Pass, ops_matching

_DYNAMIC = ir.ShapedType.get_dynamic_size()
# Attributes a rebuilt generic sets itself.
_STRUCTURE = ("indexing_maps", "iterator_types", "operandSegmentSizes")


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
    if any(o.operation.name == "linalg.index" for o in op.regions[0].blocks[0].operations):
        return False
    static = all(_static_but_batch(v, m) for v, m in zip(op.operands, maps, strict=True))
    return static and all(collapsed_map(m) is not None for m in maps)


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
    chain: list[ir.Operation] = []
    current = root
    while True:
        uses = list(current.results[0].uses)
        if len(uses) != 1 or not _collapsible(uses[0].owner, shape):
            return chain
        current = uses[0].owner
        chain.append(current)


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
        return tensor.empty(_empty_sizes(owner, shape, at), vtype.element_type)
    if owner is not None and owner.name == "linalg.fill":
        return linalg.fill(owner.operands[0], outs=[collapse_rows(owner.operands[1], at)])
    return tensor.collapse_shape(result, value, reassociation)


def _empty_sizes(empty: ir.Operation, shape: list[int], at: int) -> list[int | ir.Value]:
    """The sizes of ``empty`` (of ``shape``) with dims ``at``, ``at + 1``
    merged; a dynamic one (the batch) times the other, computed here."""
    dynamic = iter(empty.operands)
    sizes: list[int | ir.Value] = [next(dynamic) if d == _DYNAMIC else d for d in shape]
    first, second = sizes[at], sizes[at + 1]
    if isinstance(first, int) and isinstance(second, int):
        rows: int | ir.Value = first * second
    else:
        index = ir.IndexType.get()
        lhs = first if isinstance(first, ir.Value) else arith.constant(index, first)
        rhs = second if isinstance(second, ir.Value) else arith.constant(index, second)
        rows = arith.muli(lhs, rhs)
    return [*sizes[:at], rows, *sizes[at + 2 :]]


def expand_rows(value: ir.Value, shape: list[int], batch: ir.Value | None = None) -> ir.Value:
    """The (b*m, n) ``value`` as (b, m, n); ``batch`` is b when it is dynamic."""
    i64 = ir.IntegerType.get_signless(64)
    reassociation = ir.ArrayAttr.get(
        [
            ir.ArrayAttr.get([ir.IntegerAttr.get(i64, 0), ir.IntegerAttr.get(i64, 1)]),
            ir.ArrayAttr.get([ir.IntegerAttr.get(i64, 2)]),
        ]
    )
    element = ir.RankedTensorType(value.type).element_type
    result = ir.RankedTensorType.get(shape, element)
    sizes = [batch] if batch is not None and shape[0] == _DYNAMIC else []
    return tensor.expand_shape(result, value, reassociation, sizes, shape)


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
    n_in = len(op.operands) - 1
    new_maps = [collapsed_map(m) for m in maps]
    parallel = ir.Attribute.parse("#linalg.iterator_type<parallel>")
    rebuilt = linalg.GenericOp(
        [operands[-1].type],
        operands[:n_in],
        operands[n_in:],
        ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in new_maps if m is not None]),
        ir.ArrayAttr.get([parallel, parallel]),
    )
    for named in list(op.attributes):
        key = named if isinstance(named, str) else named.name
        if key not in _STRUCTURE:
            rebuilt.attributes[key] = op.attributes[key]
    old = op.regions[0].blocks[0]
    block = rebuilt.regions[0].blocks.append(
        *[a.type for a in old.arguments], arg_locs=[a.location for a in old.arguments]
    )
    for arg, new_arg in zip(old.arguments, block.arguments, strict=True):
        arg.replace_all_uses_with(new_arg)
    for body_op in list(old.operations):
        block.append(body_op.operation)
    return rebuilt.results[0]


def _batch_matmul_maps() -> list[ir.AffineMap]:
    """linalg.batch_matmul's default maps over (b, m, n, k)."""
    b, m, n, k = (ir.AffineDimExpr.get(i) for i in range(4))
    return [ir.AffineMap.get(4, 0, list(e)) for e in ([b, m, k], [b, k, n], [b, m, n])]


def _batch_shape(value: ir.Value) -> list[int] | None:
    """The shape of a tensor whose dims are static but perhaps the first (the batch)."""
    vtype = value.type
    if not isinstance(vtype, ir.RankedTensorType) or _DYNAMIC in vtype.shape[1:]:
        return None
    return list(vtype.shape)


def collapse_batch_matmul(bmm: ir.Operation) -> bool:
    """Rewrite one batch matmul by a broadcast matrix; whether it was."""
    if indexing_maps(bmm) != _batch_matmul_maps():
        return False  # transposed or broadcast operands through explicit maps
    matrix = broadcast_matrix(bmm.operands[1])
    shape = _batch_shape(bmm.results[0])
    if matrix is None or shape is None or _batch_shape(bmm.operands[0]) is None:
        return False
    chain = consumer_chain(bmm, shape)
    with ir.InsertionPoint(bmm), bmm.location:
        rows = collapse_rows(bmm.operands[0], 0)
        init = collapse_rows(bmm.operands[2], 0)
        value = linalg.matmul(rows, matrix, outs=[init])
    if "cast" in bmm.attributes:  # unsigned extension of integer operands
        value.owner.attributes["cast"] = bmm.attributes["cast"]
    replaced = bmm.results[0]
    for op in chain:
        with ir.InsertionPoint(op), op.location:
            value = collapse_generic(op, replaced, value)
        replaced = op.results[0]
    last = chain[-1] if chain else bmm
    with ir.InsertionPoint(last), last.location:
        batch = None
        if shape[0] == _DYNAMIC:
            batch = tensor.dim(bmm.operands[0], arith.constant(ir.IndexType.get(), 0))
        expanded = expand_rows(value, shape, batch)
    last.results[0].replace_all_uses_with(expanded)
    broadcast = _owner(bmm.operands[1])
    for op in [*reversed(chain), bmm]:
        op.erase()
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
