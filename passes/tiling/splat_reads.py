"""Reads of a tensor that a splat ``vector.transfer_write`` wholly overwrote.

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
