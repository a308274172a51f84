"""``lowerline-strided-copies-to-linalg``: copies of strided views as loops.

Why: bufferization copies with ``memref.copy``. Between two buffers of the
identity layout that is one ``memcpy``; but where either side is a strided
view (a padded input's interior, a tile of a larger buffer) the CPU lowering
calls MLIR's generic runtime ``memrefCopy``, which copies element by element
(about 10% of a ResNet basic block here, measured, for its two padded
inputs). Where the rows are static, contiguous and short (a tile's or an
image's rows), the copy becomes loops over the outer dims with one vector
read and write per row; otherwise a ``linalg.copy``, which becomes scalar
loops. (LLVM does not vectorize those loops between two strided views: it
cannot rule out overlap, and unrolls them into scalar moves, measured.)
Upstream can bufferize to ``linalg.copy`` (one-shot-bufferize's
``memcpyOp``), but the option is not exposed in pass pipelines and would
also turn the contiguous copies into loops.

Before / after::

    memref.copy %a, %view : memref<4x6x6xf32> to memref<4x6x6xf32, strided<[64, 8, 1], offset: 9>>
        ==>
    scf.for %i = %c0 to %c4 step %c1 {
      scf.for %j = %c0 to %c6 step %c1 {
        %row = vector.transfer_read %a[%i, %j, %c0], %zero {in_bounds = [true]} : ..., vector<6xf32>
        vector.transfer_write %row, %view[%i, %j, %c0] {in_bounds = [true]} : vector<6xf32>, ...

Copies between identity-layout buffers stay; a copy of a buffer onto itself
(left by bufferizing an ``scf.forall`` result in place) is dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, linalg, scf, vector

from lowerline.pipeline.options import opt
from lowerline.pipeline.pass_api import Pass, ops_matching


def _identity_layout(value: ir.Value) -> bool:
    mtype = ir.MemRefType(value.type)
    identity = ir.AffineMap.get_identity(mtype.rank)
    return isinstance(mtype.layout, ir.AffineMapAttr) and mtype.layout.value == identity


# Rows up to this many elements are copied as one vector each.
_MAX_ROW = 256


def _row_length(source: ir.Value, target: ir.Value) -> int | None:
    """The innermost size when it is static, at most ``_MAX_ROW`` and
    contiguous on both sides; None otherwise."""
    types = [ir.MemRefType(v.type) for v in (source, target)]
    if types[0].rank == 0 or not types[0].has_static_shape:
        return None
    if not _vector_element(types[0].element_type):  # complex: no vector of it exists
        return None
    if any(t.get_strides_and_offset()[0][-1] != 1 for t in types):
        return None
    row = types[0].shape[-1]
    return row if row <= _MAX_ROW else None


def _copy_rows(source: ir.Value, target: ir.Value, row: int) -> None:
    """Loops over the outer dims, a vector transfer per row: the vector
    semantics say the row is read before it is written, which LLVM cannot
    assume of a scalar loop over two strided views (it unrolls it to scalar
    moves instead, measured)."""
    mtype = ir.MemRefType(source.type)
    index = ir.IndexType.get()
    zero, one = arith.constant(index, 0), arith.constant(index, 1)
    vtype = ir.VectorType.get([row], mtype.element_type)
    padding = arith.constant(mtype.element_type, 0.0 if _is_float(mtype) else 0)
    in_bounds = ir.ArrayAttr.get([ir.BoolAttr.get(True)])
    minor = ir.AffineMapAttr.get(ir.AffineMap.get_minor_identity(mtype.rank, 1))

    def nest(outer: list[int], indices: list[ir.Value]) -> None:
        if not outer:
            value = vector.transfer_read(vtype, source, [*indices, zero], minor, padding, in_bounds)
            vector.transfer_write(None, value, target, [*indices, zero], minor, in_bounds)
            return
        if outer[0] == 1:
            nest(outer[1:], [*indices, zero])
            return
        loop = scf.ForOp(zero, arith.constant(index, outer[0]), one)
        with ir.InsertionPoint(loop.body):
            nest(outer[1:], [*indices, loop.induction_variable])
            scf.YieldOp([])

    nest(list(mtype.shape[:-1]), [])


def _vector_element(etype: ir.Type) -> bool:
    return isinstance(etype, (ir.IntegerType, ir.IndexType, ir.FloatType))


def _is_float(mtype: ir.MemRefType) -> bool:
    return isinstance(mtype.element_type, (ir.F16Type, ir.BF16Type, ir.F32Type, ir.F64Type))


def copies_to_linalg(func: ir.Operation, strided_only: bool, vector_rows: bool = False) -> None:
    """memref.copy -> linalg.copy (with ``strided_only``, only where a side is
    a strided view; with ``vector_rows``, loops of vector rows where the rows
    allow); self-copies are dropped. The GPU path wants linalg.copy, which it
    maps to threads."""
    for copy in ops_matching(func, lambda o: o.name == "memref.copy"):
        source, target = copy.operands
        if source == target:
            copy.erase()
            continue
        if strided_only and _identity_layout(source) and _identity_layout(target):
            continue
        row = _row_length(source, target) if vector_rows else None
        with ir.InsertionPoint(copy), copy.location:
            if row is None:
                linalg.copy(source, outs=[target])
            else:
                _copy_rows(source, target, row)
        copy.erase()


@dataclass(frozen=True)
class StridedCopiesToLinalg(Pass):
    flag = "lowerline-strided-copies-to-linalg"
    summary = "Rewrite memref.copy of strided views as loops (a vector per static row)"
    anchor = "func.func"

    vector_rows: bool = opt(
        True, "static contiguous rows as vector transfers (False: linalg.copy, for GPU mapping)"
    )

    def run(self, op: ir.Operation) -> None:
        copies_to_linalg(op, strided_only=True, vector_rows=self.vector_rows)
