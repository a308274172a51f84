"""Reads of a tensor that a ``vector.transfer_write`` wholly overwrote: of a
splat (``fold_reads_of_splat_writes``), or of any vector read back lane for
lane (``forward_whole_writes``).

A convolution's register tile starts from a fill fused into it (zero
accumulators). Vectorized, the fill is a ``transfer_write`` of a zero
``vector<8x1x32>`` into the 4-D output tile and the accumulators are read
back from it as a ``vector<8x32>`` (the unit output-row dimension dropped),
or from a slice of it (a partial column piece). Upstream folds a read of a
write only when the read's map is a permutation or broadcast of the
write's (``TransferReadAfterWriteToBroadcast``); a rank-reducing read, or one
through ``tensor.extract_slice``, stays, and bufferization then gives every
tile a temporary buffer. This folds such a read to the splat constant.
"""

from __future__ import annotations

import itertools

import numpy as np
from mlir import ir
from mlir.dialects import arith, vector

from lowerline.passes.support.ir_constants import constant_attr, int_constant
from lowerline.pipeline.pass_api import ops_matching


def _covers(write: vector.TransferWriteOp) -> bool:
    """The write stores into every element of its destination tensor."""
    dest = ir.RankedTensorType(write.base.type)
    vtype = ir.VectorType(write.valueToStore.type)
    if not dest.has_static_shape or not all(int_constant(i) == 0 for i in write.indices):
        return False
    dims = [ir.AffineDimExpr(e).position for e in write.permutation_map.value.results]
    extents = []  # per vector dim: how much of it lands in the tensor
    for size, dim in zip(vtype.shape, dims, strict=True):
        if size < dest.shape[dim]:
            return False
        extents.append(dest.shape[dim])
    if any(dest.shape[d] != 1 for d in range(dest.rank) if d not in dims):
        return False
    if write.mask is None:
        return True
    mask = constant_attr(write.mask)
    if mask is None:
        return False  # a mask computed at run time
    mask = ir.DenseIntElementsAttr(mask)
    if mask.is_splat:
        return bool(mask.get_splat_value().value)
    strides = list(itertools.accumulate(reversed(vtype.shape[1:]), lambda a, b: a * b, initial=1))
    strides.reverse()
    return all(
        mask[sum(i * s for i, s in zip(index, strides, strict=True))]
        for index in itertools.product(*(range(e) for e in extents))
    )


def _splat_source(read: vector.TransferReadOp) -> ir.Attribute | None:
    """The splat that the read's (sliced) source was wholly written with."""
    source = read.base
    while not isinstance(source.owner, ir.Block) and source.owner.name == "tensor.extract_slice":
        source = source.owner.operands[0]
    if isinstance(source.owner, ir.Block) or source.owner.name != "vector.transfer_write":
        return None
    write = source.owner.operation.opview
    value = constant_attr(write.valueToStore)
    if not isinstance(value, ir.DenseElementsAttr) or not ir.DenseElementsAttr(value).is_splat:
        return None
    return ir.DenseElementsAttr(value).get_splat_value() if _covers(write) else None


def fold_reads_of_splat_writes(root: ir.Operation) -> int:
    """Replace in-bounds, unmasked reads of wholly splat-written tensors by
    the splat; returns how many were folded."""
    folded = 0
    for op in ops_matching(root, lambda o: o.name == "vector.transfer_read"):
        read = op.opview
        in_bounds = [ir.BoolAttr(b).value for b in read.in_bounds]
        if read.mask is not None or not all(in_bounds):
            continue
        if not isinstance(read.base.type, ir.RankedTensorType):
            continue
        scalar = _splat_source(read)
        if scalar is None:
            continue
        vtype = ir.VectorType(read.result.type)
        with ir.InsertionPoint(op), op.location:
            splat = arith.constant(vtype, ir.DenseElementsAttr.get_splat(vtype, scalar))
        read.result.replace_all_uses_with(splat)
        op.erase()
        folded += 1
    return folded


# -- reads of a whole written tile, forwarded from the written vector --------


def _non_unit(shape: list[int]) -> list[int]:
    return [d for d, size in enumerate(shape) if size != 1]


def _full_insert(op: ir.Operation) -> bool:
    """A ``tensor.insert_slice`` that overwrites all of its static destination
    (its result is its source with unit dims added)."""
    if len(op.operands) != 2:  # dynamic offsets, sizes or strides
        return False
    dest = ir.RankedTensorType(op.results[0].type)
    offsets = list(ir.DenseI64ArrayAttr(op.attributes["static_offsets"]))
    sizes = list(ir.DenseI64ArrayAttr(op.attributes["static_sizes"]))
    strides = list(ir.DenseI64ArrayAttr(op.attributes["static_strides"]))
    return (
        dest.has_static_shape
        and sizes == list(dest.shape)
        and not any(offsets)
        and (all(s == 1 for s in strides))
    )


def _corner_slice(op: ir.Operation) -> bool:
    """A static ``tensor.extract_slice`` at offset 0 with unit strides that
    keeps every dim longer than 1 longer than 1 (it drops or keeps unit dims
    only): its non-unit dims are its source's, in order."""
    if len(op.operands) != 1:
        return False
    offsets = list(ir.DenseI64ArrayAttr(op.attributes["static_offsets"]))
    strides = list(ir.DenseI64ArrayAttr(op.attributes["static_strides"]))
    source = ir.RankedTensorType(op.operands[0].type)
    result = ir.RankedTensorType(op.results[0].type)
    if any(offsets) or any(s != 1 for s in strides) or not result.has_static_shape:
        return False
    return len(_non_unit(list(source.shape))) == len(_non_unit(list(result.shape)))


def _writing_op(value: ir.Value) -> vector.TransferWriteOp | None:
    """The transfer_write whose whole tile ``value`` is, through corner
    slices and whole-tile inserts; None if it is something else."""
    while isinstance(value, ir.OpResult):
        owner = value.owner
        corner = owner.name == "tensor.extract_slice" and _corner_slice(owner)
        if corner or (owner.name == "tensor.insert_slice" and _full_insert(owner)):
            value = owner.operands[0]
        elif owner.name == "vector.transfer_write":
            return owner.opview
        else:
            return None
    return None


def _mapped_dims(vtype: ir.VectorType, amap: ir.AffineMap) -> list[int] | None:
    """The tensor dims the non-unit vector dims follow; None for a broadcast."""
    dims = []
    for size, expr in zip(vtype.shape, amap.results, strict=True):
        if size == 1:
            continue
        if not isinstance(expr, ir.AffineDimExpr):
            return None
        dims.append(ir.AffineDimExpr(expr).position)
    return dims


def _follows_non_unit_dims(vtype: ir.VectorType, amap: ir.AffineMap, tensor: ir.Type) -> bool:
    """The vector's non-unit dims are the tensor's non-unit dims, in order."""
    shape = list(ir.RankedTensorType(tensor).shape)
    return _mapped_dims(vtype, amap) == _non_unit(shape)


def _valid_lanes(read: vector.TransferReadOp) -> np.ndarray | None:
    """Per lane of the read, whether it reads the tensor (not padding): its
    constant mask, and within the tensor's bounds; None for a mask computed
    at run time."""
    vtype = ir.VectorType(read.result.type)
    shape = list(ir.RankedTensorType(read.base.type).shape)
    valid = np.ones(vtype.shape, dtype=bool)
    if read.mask is not None:
        mask = constant_attr(read.mask)
        if mask is None:
            return None
        dense = ir.DenseIntElementsAttr(mask)
        if dense.is_splat:
            valid[...] = bool(dense.get_splat_value().value)
        else:
            valid = np.array([bool(dense[i]) for i in range(valid.size)]).reshape(vtype.shape)
    results = read.permutation_map.value.results
    for axis, expr in enumerate(results):
        if not isinstance(expr, ir.AffineDimExpr):
            continue  # a broadcast (unit) dim: its one lane is index 0
        index = np.arange(vtype.shape[axis]).reshape(
            [-1 if a == axis else 1 for a in range(vtype.rank)]
        )
        valid &= index < shape[ir.AffineDimExpr(expr).position]
    return valid


def _forwardable(read: vector.TransferReadOp) -> vector.TransferWriteOp | None:
    """The write whose vector the read reads back lane for lane."""
    if not isinstance(read.base.type, ir.RankedTensorType):
        return None
    if not all(int_constant(i) == 0 for i in read.indices):
        return None
    write = _writing_op(read.base)
    if write is None or not _covers(write):
        return None
    written = ir.VectorType(write.valueToStore.type)
    vtype = ir.VectorType(read.result.type)
    if written.element_type != vtype.element_type:
        return None
    if [s for s in written.shape if s != 1] != [s for s in vtype.shape if s != 1]:
        return None
    if not _follows_non_unit_dims(written, write.permutation_map.value, write.base.type):
        return None
    if not _follows_non_unit_dims(vtype, read.permutation_map.value, read.base.type):
        return None
    return write


def forward_whole_writes(root: ir.Operation) -> int:
    """Replace reads of a tile that one ``vector.transfer_write`` wholly
    wrote (through corner slices and whole-tile inserts, at index 0) by the
    written vector, reshaped; lanes the read would not take from the tile
    (masked off, past its end) get the read's padding unless that is
    poison. Returns how many.

    Where: a window nest's register tile starts from its fused bias (a
    ``vector<1x7x16>`` of broadcasts written into a 14-column tile with a
    mask) and its epilogue reads back the accumulators it stored. After
    bufferization each pair is a masked store and a masked load of the same
    lanes, which the CPU cannot forward (measured: a depthwise 3x3 over
    14 x 14 planes took 1.3 ns per vector step, 0.8 over 16 x 16 ones).
    Upstream forwards a write to a read only for identical transfer types
    (``vector.transfer_read`` folding) or on memrefs
    (``transferOpflowOpt``, no pass or transform op in the bindings).
    """
    forwarded = 0
    for op in ops_matching(root, lambda o: o.name == "vector.transfer_read"):
        read = op.opview
        write = _forwardable(read)
        valid = _valid_lanes(read) if write is not None else None
        if write is None or valid is None:
            continue
        vtype = ir.VectorType(read.result.type)
        with ir.InsertionPoint(op), op.location:
            value = vector.shape_cast(vtype, write.valueToStore)
            if not valid.all() and not _is_poison(read.padding):
                value = _with_padding(value, valid, read.padding)
        read.result.replace_all_uses_with(value)
        op.erase()
        forwarded += 1
    return forwarded


def _is_poison(value: ir.Value) -> bool:
    """``ub.poison``: lanes read as it may hold anything (the vectorizer's
    padding where every lane it reads is in the tile)."""
    return isinstance(value, ir.OpResult) and value.owner.name == "ub.poison"


def _with_padding(value: ir.Value, valid: np.ndarray, padding: ir.Value) -> ir.Value:
    """``value`` with the lanes not ``valid`` replaced by ``padding``."""
    vtype = ir.VectorType(value.type)
    mask_type = ir.VectorType.get(vtype.shape, ir.IntegerType.get_signless(1))
    bits = [ir.BoolAttr.get(bool(b)) for b in valid.flatten()]
    mask = arith.constant(mask_type, ir.DenseElementsAttr.get(bits, type=mask_type))
    return arith.select(mask, value, vector.broadcast(vtype, padding))
