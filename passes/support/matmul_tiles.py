"""Register tiles of a matmul as ``vector.contract``: recognizing them and
taking a batch matmul's batch-of-one tile as its matrix.

lowerline-tile-and-fuse steps a batch matmul's batch dim by one, so each of
its register tiles (CPU) or thread tiles (GPU) is one matrix product once
that dim is dropped. The int8 dot-product rewrites (``vpdpbusd``/``sdot``,
GPU ``dp4a``) take both forms.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import vector

MATMUL_MAPS = [
    "(d0, d1, d2) -> (d0, d2)",
    "(d0, d1, d2) -> (d2, d1)",
    "(d0, d1, d2) -> (d0, d1)",
]
BATCH_MATMUL_MAPS = [
    "(d0, d1, d2, d3) -> (d0, d1, d3)",
    "(d0, d1, d2, d3) -> (d0, d3, d2)",
    "(d0, d1, d2, d3) -> (d0, d1, d2)",
]


def contraction_maps(op: ir.Operation) -> list[str]:
    return [str(ir.AffineMapAttr(a).value) for a in ir.ArrayAttr(op.attributes["indexing_maps"])]


def is_matmul_tile(op: ir.Operation) -> bool:
    """A ``vector.contract`` (m, k) x (k, n) -> (m, n), k reduced; or a
    batch of one of those."""
    if len(op.operands) != 3:
        return False
    maps = contraction_maps(op)
    if maps == BATCH_MATMUL_MAPS:
        return ir.VectorType(op.operands[2].type).shape[0] == 1
    return maps == MATMUL_MAPS


def matrix_of(value: ir.Value) -> ir.Value:
    """A batch-of-one tile (1 x a x b) as its one matrix (a x b)."""
    vtype = ir.VectorType(value.type)
    if vtype.rank == 2:
        return value
    return vector.shape_cast(ir.VectorType.get(vtype.shape[1:], vtype.element_type), value)
