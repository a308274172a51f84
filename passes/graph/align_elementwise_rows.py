"""``lowerline-align-elementwise-rows``: an elementwise op over contiguous
rows whose length is not a whole number of vectors runs over rows that are.

Why: the CPU tiling runs an elementwise op row by row, whole vectors along
the row and its partial last vector masked. A row of 50257 f32 (a
vocabulary's logits) is 785 vectors of 16 and one of 1: each row has a
masked step, and every row but one in 16 starts off a 64-byte boundary, so
each of its vector loads and stores spans two cache lines. On streams
larger than L2 that cost the memory-bound ops (reciprocal, sigmoid, exp2,
hardswish over 64x50257) 6-14% more CPU time than eager, which walks the
same buffer as one flat array (bench/ops-cpu-time-s10-before.md). The data
is one contiguous buffer either way, so the op is computed over other
rows::

    %y = linalg.generic {identity maps, parallel x 2}
           ins(%x : tensor<64x50257xf32>) outs(%e : tensor<64x50257xf32>)
  becomes
    %x2 = tensor.collapse_shape %x [[0, 1]] -> tensor<3216448xf32>
    %x3 = tensor.expand_shape %x2 [[0, 1]] -> tensor<1733x1856xf32>
    %y3 = linalg.generic {identity maps, parallel x 2} ins(%x3) outs(%e3)
    %y = expand_shape (collapse_shape %y3) -> tensor<64x50257xf32>

where the new row length (1856 = 29 x 64) is the largest divisor of the
element count that is a whole number of the target's vector tiles
(``elementwise_tile``) and at most ``max-row`` elements: every row then
starts on a vector boundary (if the buffer does: torch aligns its
allocations to 64 bytes) and no step is masked. After bufferization the
reshapes of contiguous buffers are views: nothing is copied.

Matched: a ``linalg.generic`` with one result, static shape of rank >= 2,
every loop parallel, every indexing map the identity (or a rank-0
operand's, read whole), no ``linalg.index``
in its body, whose innermost dim is not already a multiple of the vector
tile, whose other operands are function arguments, constants or empties (whole,
contiguous tensors: a collapse of them is a view) and whose only users
are ``func.return``. Ops that read other kernels' results or feed them are
left alone: a matmul's epilogue, a row kernel's members and fused chains
are tiled with their neighbours, which reshaping would separate. An
element count with no such divisor is left alone too.

Upstream has the reshaping mechanisms (``tensor.collapse_shape`` /
``expand_shape``, ``linalg::collapseOpIterationDims``, the transform op
``structured.flatten_elementwise``, which flattens to one dim, a long
loop that the CPU tiling would mask at every step) but no pass that picks
a row length for the target's vectors.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import tensor

from lowerline.passes.support.linalg_info import indexing_maps
from lowerline.passes.support.rebuild_generic import rebuild_generic
from lowerline.pipeline.options import opt
from lowerline.pipeline.pass_api import Pass, ops_matching

# Whole, contiguous tensors: a collapse of them is a view after bufferization.
_CONTIGUOUS = ("tensor.empty", "arith.constant")
# Vectors per step of the CPU tiling's elementwise tiles (tile_plan.elementwise_tile).
_TILE_VECTORS = 4


def _lanes(op: ir.Operation, vector_bits: int) -> int:
    """Elements of the result's type per vector (1 for a non-float/int)."""
    element = ir.RankedTensorType(op.results[0].type).element_type if op.results else None
    width = getattr(element, "width", 0) if element is not None else 0
    return max(1, vector_bits // width) if width else 1


def _contiguous(value: ir.Value) -> bool:
    if isinstance(value, ir.BlockArgument):
        return True
    return value.owner.name in _CONTIGUOUS


def _only_returned(op: ir.Operation) -> bool:
    uses = list(op.results[0].uses)
    return bool(uses) and all(use.owner.name == "func.return" for use in uses)


def _uses_index(op: ir.Operation) -> bool:
    return bool(ops_matching(op, lambda o: o.name == "linalg.index"))


def _elementwise_shape(op: ir.Operation) -> list[int] | None:
    """The static shape of an all-parallel, identity-mapped generic with one
    result, else None."""
    if len(op.results) != 1:
        return None
    rtype = op.results[0].type
    if not isinstance(rtype, ir.RankedTensorType) or rtype.rank < 2:
        return None
    if not rtype.has_static_shape:
        return None
    iterators = [str(a) for a in op.attributes["iterator_types"]]
    if any("parallel" not in it for it in iterators):
        return None
    identity = ir.AffineMap.get_identity(rtype.rank)
    if any(m != identity and not _scalar(m) for m in indexing_maps(op)):
        return None
    return list(rtype.shape)


def _scalar(amap: ir.AffineMap) -> bool:
    """A map reading one value for every element (a rank-0 operand)."""
    return not amap.results


def aligned_row(elements: int, tile: int, max_row: int) -> int | None:
    """The largest multiple of ``tile`` dividing ``elements``, at most
    ``max_row``; None if there is none."""
    for row in range(max_row - max_row % tile, 0, -tile):
        if elements % row == 0:
            return row
    return None


def _all_dims(rank: int) -> ir.ArrayAttr:
    """The reassociation merging all ``rank`` dims into one."""
    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, i) for i in range(rank)])])


def _reshaped(value: ir.Value, shape: list[int]) -> ir.Value:
    """``value`` (static, contiguous) seen as ``shape``, through one dim."""
    vtype = ir.RankedTensorType(value.type)
    elements = 1
    for size in vtype.shape:
        elements *= size
    flat = ir.RankedTensorType.get([elements], vtype.element_type)
    collapsed = tensor.collapse_shape(flat, value, _all_dims(vtype.rank))
    target = ir.RankedTensorType.get(shape, vtype.element_type)
    return tensor.expand_shape(target, collapsed, _all_dims(len(shape)), [], shape)


def align_rows(op: ir.Operation, lanes: int, max_row: int) -> bool:
    """Rewrite ``op`` over rows of whole vector tiles; whether it was."""
    shape = _elementwise_shape(op)
    if shape is None or _uses_index(op) or not _only_returned(op):
        return False
    maps = indexing_maps(op)
    if not all(_scalar(m) or _contiguous(v) for v, m in zip(op.operands, maps, strict=True)):
        return False
    if shape[-1] % lanes == 0:
        return False  # rows already start on vector boundaries
    elements = 1
    for size in shape:
        elements *= size
    row = aligned_row(elements, _TILE_VECTORS * lanes, max_row)
    if row is None:
        return False
    new_shape = [elements // row, row]
    identity2 = ir.AffineMap.get_identity(2)
    with ir.InsertionPoint(op), op.location:
        pairs = zip(op.operands, maps, strict=True)
        operands = [v if _scalar(m) else _reshaped(v, new_shape) for v, m in pairs]
        new_maps = [ir.AffineMap.get(2, 0, []) if _scalar(m) else identity2 for m in maps]
        result = rebuild_generic(op, operands, new_maps, ["parallel", "parallel"])
        back = _reshaped(result, shape)
    op.results[0].replace_all_uses_with(back)
    op.erase()
    return True


@dataclass(frozen=True)
class AlignElementwiseRows(Pass):
    flag = "lowerline-align-elementwise-rows"
    summary = "Run a returned elementwise op over rows of whole vector tiles"
    anchor = "func.func"
    vector_bits: int = opt(0, "the target's vector width in bits; 0: leave every op alone")
    max_row: int = opt(4096, "the longest row to choose, in elements")

    def run(self, op: ir.Operation) -> None:
        if not self.vector_bits:
            return
        for generic in ops_matching(op, lambda o: o.name == "linalg.generic"):
            align_rows(generic, _lanes(generic, self.vector_bits), self.max_row)
