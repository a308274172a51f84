"""``lowerline-unit-stride-gathers``: gathers from non-contiguous views made
gathers from a unit-stride view of the same memory.

Why: ``convert-vector-to-llvm`` lowers a ``vector.gather`` only where the
source memref's innermost stride is 1, otherwise the op is left as it is
and the llvm stage fails on it; and where it does lower it, it adds the
index vector to the base address as memory offsets, while the index vector
counts elements of the view flattened row-major. The two agree only for a
contiguous view. Such gathers are common: lowerline-vectorize
turns index-dependent reads (``flip``, reflection padding, ``x[:, idx]``) into
gathers on tensors, and bufferization makes their source a strided view when
the tensor was a strided slice (``x[:, ::2]``, the real part of a complex
tensor). Upstream's ``RemoveStrideFromGatherSource`` pattern covers only a
1-D gather from a ``memref.subview`` of a contiguous 2-D buffer, and is not
reachable from a pass pipeline or a transform op.

The rewrite reads the view's base, offset, sizes and strides
(``memref.extract_strided_metadata``), reinterprets the base as a 1-D memref
of unit stride covering the view, and gathers from it at physical offsets:
a gather's indices count elements of the view flattened row-major (which
is its memory only where the view is contiguous), so each lane's flat
position is delinearized over the sizes and weighted by the strides.
``expand-strided-metadata`` then folds the metadata of static layouts into
constants, and the divisions become multiplies and shifts. The gather
stays one vector gather.

Before / after::

    %g = vector.gather %v[%i, %c0] [%idx], %m, %p
        : memref<5x7xf32, strided<[14, 2]>>, vector<7xindex>, ... into vector<7xf32>
        ==>
    %base, %off, %sizes:2, %strides:2 = memref.extract_strided_metadata %v
    %flat = memref.reinterpret_cast %base to offset: [%off], sizes: [%extent], strides: [1]
    %q = %i * %sizes#1 + %idx                      (flat positions, vector)
    %o = (%q / %sizes#1) * %strides#0 + (%q % %sizes#1) * %strides#1
    %g = vector.gather %flat[0] [%o], %m, %p

Gathers whose source is contiguous (its strides the row-major products of
its sizes, whatever its offset), or a tensor, are left alone. A view with
unit innermost stride but gaps between rows (``x[:, 2:9]``) is rewritten
too: convert-vector-to-llvm lowers its gather, but with the flat offsets
taken as memory offsets, which read the wrong rows.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, memref, vector

from lowerline.pipeline.pass_api import Pass, ops_matching

_DYNAMIC = ir.ShapedType.get_dynamic_size()


def _contiguous(mtype: ir.MemRefType) -> bool:
    """Whether the view's elements lie row-major without gaps: then a
    gather's flat offsets are memory offsets, as convert-vector-to-llvm
    assumes."""
    if isinstance(
        mtype.layout, ir.AffineMapAttr
    ) and mtype.layout.value == ir.AffineMap.get_identity(mtype.rank):
        return True
    strides, _ = mtype.get_strides_and_offset()
    expected = 1
    for dim in reversed(range(mtype.rank)):
        size = mtype.shape[dim]
        if size != 1 and strides[dim] != expected:
            return False
        if size == _DYNAMIC:
            # The next stride out would have to be a product with an
            # unknown size: contiguous only if every outer dim is 1.
            return all(outer == 1 for outer in mtype.shape[:dim])
        expected *= size
    return True


def _strided_gather(op: ir.Operation) -> bool:
    if op.name != "vector.gather":
        return False
    base = op.operands[0].type
    return isinstance(base, ir.MemRefType) and base.rank > 0 and not _contiguous(base)


def _extent(sizes: list[ir.Value], strides: list[ir.Value]) -> ir.Value:
    """Elements from the view's first element to its last, inclusive:
    1 + sum((size - 1) * stride), the length the flat view must cover."""
    index = ir.IndexType.get()
    one = arith.constant(index, 1)
    extent = one
    for size, stride in zip(sizes, strides, strict=True):
        last = arith.subi(size, one)
        extent = arith.addi(extent, arith.muli(last, stride))
    return extent


def _splat(vtype: ir.VectorType, value: ir.Value) -> ir.Value:
    return vector.broadcast(vtype, value)


def _physical_offsets(
    positions: list[ir.Value],
    offsets: ir.Value,
    sizes: list[ir.Value],
    strides: list[ir.Value],
) -> ir.Value:
    """The index vector as element offsets into the strided view's memory.

    A gather's index vector counts elements of the view flattened row-major
    from the base indices (upstream's vectorization of ``tensor.extract``
    linearizes over the whole shape), which is the memory offset only for a
    contiguous view. Here each lane's flat position is delinearized over the
    view's sizes and weighted by its strides; with static sizes the divisions
    are by constants, which LLVM makes multiplies and shifts."""
    vtype = ir.VectorType(offsets.type)
    index = ir.IndexType.get()
    flat = arith.constant(index, 0)
    for position, size in zip(positions, sizes, strict=True):
        flat = arith.addi(arith.muli(flat, size), position)
    remaining = arith.addi(_splat(vtype, flat), offsets)
    physical = None
    for dim in reversed(range(len(sizes))):
        if dim == 0:
            coordinate = remaining
        else:
            size = _splat(vtype, sizes[dim])
            coordinate = arith.remui(remaining, size)
            remaining = arith.divui(remaining, size)
        term = arith.muli(coordinate, _splat(vtype, strides[dim]))
        physical = term if physical is None else arith.addi(physical, term)
    assert physical is not None
    return physical


def _rewrite(op: ir.Operation) -> None:
    source, *rest = op.operands
    mtype = ir.MemRefType(source.type)
    rank = mtype.rank
    positions, index_vector, mask, pass_thru = (
        rest[:rank],
        rest[rank],
        rest[rank + 1],
        rest[rank + 2],
    )
    with ir.InsertionPoint(op), op.location:
        metadata = memref.extract_strided_metadata(source)
        base, offset = metadata[0], metadata[1]
        sizes, strides = list(metadata[2 : 2 + rank]), list(metadata[2 + rank :])
        flat_type = ir.MemRefType.get(
            [_DYNAMIC],
            mtype.element_type,
            layout=ir.StridedLayoutAttr.get(_DYNAMIC, [1]),
            memory_space=mtype.memory_space,
        )
        flat = memref.reinterpret_cast(
            flat_type,
            base,
            [offset],
            [_extent(sizes, strides)],
            [],
            [_DYNAMIC],
            [_DYNAMIC],
            [1],
        )
        physical = _physical_offsets(positions, index_vector, sizes, strides)
        zero = arith.constant(ir.IndexType.get(), 0)
        gathered = vector.gather(op.results[0].type, flat, [zero], physical, mask, pass_thru)
    op.results[0].replace_all_uses_with(gathered)
    op.erase()


@dataclass(frozen=True)
class UnitStrideGathers(Pass):
    flag = "lowerline-unit-stride-gathers"
    summary = "Gather from strided views through a unit-stride view of the same memory"
    anchor = "func.func"

    def run(self, op: ir.Operation) -> None:
        for gather in ops_matching(op, _strided_gather):
            _rewrite(gather)
