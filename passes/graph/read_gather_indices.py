"""``lowerline-read-gather-indices``: in a gather (a linalg.generic whose body
reads a tensor at computed indices), an index input that is the same across
the innermost loop is read in the body with ``tensor.extract`` at
``linalg.index`` instead of coming in as a block argument.

Why: an embedding lookup or ``index_select`` (torch-mlir's lowering) reads a
whole row per index::

    linalg.generic ins(%ids : tensor<104xi64>) outs(%rows : tensor<104x67xf32>)
        maps (d0, d1) -> (d0), (d0, d1) -> (d0, d1) {
      ^bb0(%id: i64, %out: f32):
        %r = arith.index_cast %id : i64 to index
        %v = tensor.extract %table[%r, linalg.index 1]

The row is contiguous, but upstream's vectorizer (``vectorize_nd_extract``)
counts every block argument of the generic as changing across the vector
lanes, so it emitted a ``vector.gather`` (a hardware gather of 67 addresses
one apart). With ``%id = tensor.extract %ids[linalg.index 0]`` in the body it
sees the row index is the same for the whole tile (the row loop is tiled to
1) and reads the row with one contiguous ``vector.transfer_read``. No
upstream pass or option moves an input into the body; canonicalize then
drops the unused input.

Only integer inputs that feed an index of a ``tensor.extract`` and whose map
picks loop dims other than the innermost are moved: an input that varies
along the innermost loop is a vector read either way.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import linalg, tensor

from lowerline.pipeline.pass_api import Pass, ops_matching


def _feeds_extract_index(value: ir.Value) -> bool:
    """Whether ``value``, directly or through an index_cast, is an index (not
    the source) of a tensor.extract."""
    for use in value.uses:
        owner = use.owner
        if owner.name == "tensor.extract" and use.operand_number > 0:
            return True
        if owner.name == "arith.index_cast" and _feeds_extract_index(owner.results[0]):
            return True
    return False


def _outer_dims(map_attr: ir.Attribute, loops: int) -> list[int] | None:
    """The loop dims a map reads, when they are plain dims and the innermost
    loop is not among them."""
    dims = []
    for expr in ir.AffineMapAttr(map_attr).value.results:
        if not isinstance(expr, ir.AffineDimExpr):
            return None
        dims.append(expr.position)
    return dims if loops - 1 not in dims else None


def read_gather_indices(generic: ir.Operation) -> bool:
    """Move ``generic``'s row-index inputs into its body; whether one moved."""
    block = generic.regions[0].blocks[0]
    if not any(op.operation.name == "tensor.extract" for op in block.operations):
        return False
    inputs = len(generic.operands) - len(generic.results)
    loops = len(ir.ArrayAttr(generic.attributes["iterator_types"]))
    maps = list(ir.ArrayAttr(generic.attributes["indexing_maps"]))
    moved = False
    for position in range(inputs):
        arg, source = block.arguments[position], generic.operands[position]
        dims = _outer_dims(maps[position], loops)
        if dims is None or not isinstance(arg.type, ir.IntegerType):
            continue
        if not _feeds_extract_index(arg):
            continue
        with ir.InsertionPoint.at_block_begin(block), generic.location:
            at = [linalg.IndexOp(d).result for d in dims]
            arg.replace_all_uses_with(tensor.extract(source, at))
        moved = True
    return moved


@dataclass(frozen=True)
class ReadGatherIndices(Pass):
    flag = "lowerline-read-gather-indices"
    summary = "Read a gather's row indices in its body, so its rows vectorize as contiguous reads"
    anchor = "func.func"

    def run(self, op: ir.Operation) -> None:
        for generic in ops_matching(op, lambda o: o.name == "linalg.generic"):
            read_gather_indices(generic)
