"""``lowerline-pointwise-conv-rows``: a 1x1, stride-1 NCHW convolution and
the elementwise chain reading it work on each H x W plane as one row of
H * W columns.

Why: ``lowerline-tile-and-fuse`` tiles an NCHW convolution by output rows,
its register tile ``mr`` channels x whole vectors of one row. A 1x1
convolution has no window across rows, so its rows are one contiguous
matrix per image, ``out[n] = W[F x C] . x[n][C x H*W]``; tiled row by row,
the small planes of mobile networks give short, mostly masked tiles (a 10 x
10 plane: 8 + 2 columns of 16-lane vectors, measured 1.4-1.55x eager's time
at batch 8, one thread). As one row of 100 columns the tiles are three
whole 32-column ones plus 4. Upstream's ways to a matmul copy (its im2col,
``transform.structured.convert_conv2d_to_img2col``) or drop only unit
windowed dims (its conv decomposition); ``linalg::collapseOpIterationDims``
is not in the Python bindings and would make the convolution a generic,
which no longer tiles as one.

The rewrite re-views the plane ``[H, W]`` as ``[1, H * W]`` (a collapse and
an expand of a contiguous tensor: views after bufferization)::

    %c = linalg.conv_2d_nchw_fchw ins(%x, %w : NxCxHxW, Fx Cx1x1) outs(%b : NxFxHxW)
    %r = linalg.generic {maps [id, (n, f, h, w) -> (f), id]} ins(%c, %s) outs(%e)
  ->
    %c2 = linalg.conv_2d_nchw_fchw ins(row(%x), %w : NxCx1x(H*W), ..) outs(%b2 : NxFx1x(H*W))
    %r2 = linalg.generic {the same maps} ins(%c2, %s) outs(%e2 : NxFx1x(H*W))
    %r = plane(%r2) : NxFxHxW

The init's empty tensor, fill or bias broadcast is rebuilt in the new shape
(tile-and-fuse fuses those into the tiles). A consumer joins the chain when
it is the only user, elementwise with an identity result map over the
convolution's shape, reads no loop index, and every operand reads the two
plane dims together, in order, or neither.

Left alone: strided convolutions, other kernels and layouts, and dynamic
planes (a dynamic batch is fine).
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
_H, _W = 2, 3  # the plane's loop dims (and result dims) of an NCHW convolution


def _ones(op: ir.Operation, name: str) -> bool:
    return name not in op.attributes or all(
        int(v) == 1 for v in ir.DenseIntElementsAttr(op.attributes[name])
    )


def _plane(value: ir.Value) -> tuple[int, int] | None:
    """The static (H, W) of a 4-D NCHW tensor; None when dynamic."""
    shape = ir.RankedTensorType(value.type).shape
    h, w = shape[_H], shape[_W]
    return None if _DYNAMIC in (h, w) else (h, w)


def is_pointwise_conv(op: ir.Operation) -> bool:
    """A ``linalg.conv_2d_nchw_fchw`` with a 1x1 kernel and stride 1 (the
    dilation does not matter with one tap) on static planes."""
    if op.name != "linalg.conv_2d_nchw_fchw" or not _ones(op, "strides"):
        return False
    kernel = ir.RankedTensorType(op.operands[1].type).shape
    if list(kernel[2:]) != [1, 1]:
        return False
    return _plane(op.operands[0]) is not None and _plane(op.results[0]) is not None


_NO_PLANE = -1  # an operand that reads neither plane dim (a per-channel bias)


def _plane_position(amap: ir.AffineMap) -> int | None:
    """Where an operand reads the plane: the position of ``h``, followed by
    ``w``; ``_NO_PLANE`` when it reads neither; None when it reads them
    otherwise (apart, swapped, one alone, through an expression)."""
    if any(not isinstance(e, ir.AffineDimExpr | ir.AffineConstantExpr) for e in amap.results):
        return None
    dims = [e.position if isinstance(e, ir.AffineDimExpr) else None for e in amap.results]
    if _H not in dims and _W not in dims:
        return _NO_PLANE
    at = dims.index(_H) if _H in dims else -1
    if at < 0 or at + 1 >= len(dims) or dims[at + 1] != _W or dims.count(_W) + dims.count(_H) > 2:
        return None
    return at


def _joins(op: ir.Operation, shape: list[int]) -> bool:
    """Whether the elementwise ``op`` over the 4-D ``shape`` can follow the
    convolution into rows."""
    if op.name != "linalg.generic" or len(op.results) != 1 or not all_parallel(op):
        return False
    result = ir.RankedTensorType(op.results[0].type)
    if list(result.shape) != shape or has_index_op(op):
        return False
    maps = indexing_maps(op)
    if maps[-1] != ir.AffineMap.get_identity(4):
        return False
    return all(_plane_position(m) is not None for m in maps)


def consumer_chain(conv: ir.Operation) -> list[ir.Operation]:
    """The elementwise ops reading the convolution one after the other, each
    the only user of the one before."""
    shape = list(ir.RankedTensorType(conv.results[0].type).shape)
    return single_user_chain(conv, lambda op: _joins(op, shape))


def _reassociation(rank: int, at: int) -> ir.ArrayAttr:
    """Dims ``at`` and ``at + 1`` of a rank-``rank`` tensor as one group."""
    groups = [[i] for i in range(at)] + [[at, at + 1]] + [[i] for i in range(at + 2, rank)]
    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get(
        [ir.ArrayAttr.get([ir.IntegerAttr.get(i64, i) for i in g]) for g in groups]
    )


def _dynamic_sizes(value: ir.Value) -> list[ir.Value]:
    """tensor.dim of every dynamic dim of ``value``, in order."""
    shape = ir.RankedTensorType(value.type).shape
    index = ir.IndexType.get()
    found = []
    for d, size in enumerate(shape):
        if size == _DYNAMIC:
            found.append(tensor.dim(value, arith.ConstantOp(index, d).result))
    return found


def _reshape(value: ir.Value, at: int, target: list[int]) -> ir.Value:
    """``value`` with dims ``at``, ``at + 1`` merged, then split into
    ``target``'s two dims there (both contiguous views)."""
    vtype = ir.RankedTensorType(value.type)
    shape = list(vtype.shape)
    merged = [*shape[:at], shape[at] * shape[at + 1], *shape[at + 2 :]]
    groups = _reassociation(len(shape), at)
    flat = tensor.collapse_shape(ir.RankedTensorType.get(merged, vtype.element_type), value, groups)
    result = [*shape[:at], *target, *shape[at + 2 :]]
    return tensor.expand_shape(
        ir.RankedTensorType.get(result, vtype.element_type),
        flat,
        groups,
        _dynamic_sizes(value),
        result,
    )


def _as_row(value: ir.Value, at: int) -> ir.Value:
    """``value``'s plane at ``at`` as one row; an init's empty, fill or
    broadcast is rebuilt in that shape instead, so that it stays one op
    tile-and-fuse can fuse."""
    vtype = ir.RankedTensorType(value.type)
    shape = list(vtype.shape)
    row = [*shape[:at], 1, shape[at] * shape[at + 1], *shape[at + 2 :]]
    owner = value.owner if isinstance(value, ir.OpResult) else None
    if owner is not None and owner.name == "tensor.empty":
        dynamic = iter(owner.operands)  # the batch's size, if dynamic
        sizes = [next(dynamic) if s == _DYNAMIC else s for s in row]
        return tensor.empty(sizes, vtype.element_type)
    if owner is not None and owner.name == "linalg.fill":
        return linalg.fill(owner.operands[0], outs=[_as_row(owner.operands[1], at)])
    if owner is not None and owner.name == "linalg.broadcast" and at == _H:
        dims = list(ir.DenseI64ArrayAttr(owner.attributes["dimensions"]))
        if _H in dims and _W in dims:  # the plane is all broadcast (a bias)
            init = _as_row(owner.operands[1], at)
            return linalg.broadcast(owner.operands[0], outs=[init], dimensions=dims)
    return _reshape(value, at, [1, shape[at] * shape[at + 1]])


def _generic_as_rows(op: ir.Operation, replaced: ir.Value, by: ir.Value) -> ir.Value:
    maps = indexing_maps(op)
    operands = []
    for value, amap in zip(op.operands, maps, strict=True):
        at = _plane_position(amap)
        if value == replaced:
            operands.append(by)
        elif at is not None and at != _NO_PLANE:
            operands.append(_as_row(value, at))
        else:
            operands.append(value)
    return rebuild_generic(op, operands, maps, ["parallel"] * 4)


def conv_as_rows(conv: ir.Operation) -> bool:
    """Rewrite one pointwise convolution and its chain; whether it was."""
    if not is_pointwise_conv(conv):
        return False
    chain = consumer_chain(conv)
    h, w = _plane(conv.results[0]) or (0, 0)
    with ir.InsertionPoint(conv), conv.location:
        rows = _as_row(conv.operands[0], _H)
        init = _as_row(conv.operands[2], _H)
        value = linalg.conv_2d_nchw_fchw(rows, conv.operands[1], outs=[init])
    for named in list(conv.attributes):  # strides, dilations, an integer conv's marks
        key = named if isinstance(named, str) else named.name
        if key != "operandSegmentSizes":
            value.owner.attributes[key] = conv.attributes[key]
    replace_chain(conv, chain, value, _generic_as_rows, lambda v: _reshape(v, _H, [h, w]))
    return True


@dataclass(frozen=True)
class PointwiseConvRows(Pass):
    flag = "lowerline-pointwise-conv-rows"
    summary = "View the planes of 1x1 stride-1 NCHW convolutions (and their epilogues) as rows"
    anchor = "func.func"

    def run(self, op: ir.Operation) -> None:
        for conv in ops_matching(op, is_pointwise_conv):
            conv_as_rows(conv)
