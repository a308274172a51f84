"""An i8 x i8 -> i32 grouped convolution (``linalg.conv_2d_ngchw_gfchw``)
with a constant filter as one dense NCHW convolution per group, for
lowerline-int8-conv-matmul, which then makes each an im2col matmul on the
int8 dot product like any dense convolution::

    %c = linalg.conv_2d_ngchw_gfchw ins(%x : NxGxCxHxW, %w : GxFxCxKHxKW constant)
                                    outs(%init : NxGxFxOHxOW)
  ->
    for g in 0 .. G:
      %cg = linalg.conv_2d_nchw_fchw ins(%x[:, g] : NxCxHxW, %w[g] : FxCxKHxKW constant)
                                     outs(%init[:, g] : NxFxOHxOW)
    %c = the %cg inserted at [:, g] of an NxGxFxOHxOW tensor

Why: lowerline-tile-and-fuse plans a grouped convolution as a window nest
whose k loop steps one channel at a time (``vpmulld`` outer products); the
dense route's matmul steps 4 channels deep (``vpdpbusd``, ``sdot``), its
channels not a multiple of 4 padded as the dense route pads them. One matmul
per group does only the group's work (a block-diagonal filter would do G
times as much). Upstream has no per-group split of a named grouped
convolution. The zero-point corrections are in the epilogue already
(lowerline-fold-qdq-conv), per output channel, and stay there.

Left to its window nest, where the split measured no faster: fewer output
channels per group than the dot product's lanes (the matmul's lanes are
the group's output channels), 1x1 filters; also one input channel per group
(depthwise in all but name: no channel reduction for the dot product), and
what ``int8_filter`` refuses (dynamic shapes, other element types, filters
of unknown bytes).
"""

from __future__ import annotations

import numpy as np
from mlir import ir
from mlir.dialects import arith, linalg, tensor

from lowerline import weights
from lowerline.passes.support.ir_constants import constant_attr
from lowerline.passes.tiling.int8_depthwise import int8_filter

GROUPED = "linalg.conv_2d_ngchw_gfchw"


def split_groups(op: ir.Operation, lanes: int) -> list[ir.Operation] | str:
    """Replace grouped convolution ``op`` by one dense convolution per group
    (returned), or say why it is left alone; ``lanes``: the i32 lanes of
    the target's int8 dot product."""
    array = int8_filter(op)
    if isinstance(array, str):
        return array
    why = _unprofitable(array.shape, lanes)
    return why if why is not None else split(op, array)


def _unprofitable(shape: tuple[int, ...], lanes: int) -> str | None:
    """Why a filter of ``shape`` (G x F x C x KH x KW) stays a window nest."""
    _, f, c, kh, kw = shape
    if c == 1:
        return "one input channel per group (no channel reduction for the dot product)"
    # The matmul's lanes are the group's output channels: fewer leave most of
    # each dot product idle (ResNeXt's 4 per group: 1.45-1.50x the window
    # nest's time, 8 per group 1.02-1.10x; bench/int8-grouped-conv-ab.md).
    if f < lanes:
        return f"{f} output channels per group (fewer than the dot product's {lanes} lanes)"
    # A 1x1 window nest already reduces the channels in order; the split only
    # adds the transposes (1.15-1.22x at 16 channels per group, 0.99-1.02x at 64).
    if kh * kw == 1:
        return "a 1x1 filter (its window nest is as fast)"
    return None


def split(op: ir.Operation, array: np.ndarray) -> list[ir.Operation]:
    """Replace ``op`` (filter ``array``) by one dense convolution per group."""
    x, _, init = op.operands
    result_type = ir.RankedTensorType(op.results[0].type)
    convs = []
    with ir.InsertionPoint(op), op.location:
        out = tensor.empty(list(result_type.shape), result_type.element_type)
        for g in range(result_type.shape[1]):
            conv = _group_conv(op, array[g], g, _slice(x, g), _group_init(init, g))
            convs.append(conv)
            out = _insert(conv.results[0], out, g)
    op.results[0].replace_all_uses_with(out)
    op.erase()
    return convs


def _slice(value: ir.Value, g: int) -> ir.Value:
    """``value[:, g]`` of an N x G x ... tensor, as N x ..."""
    shape = list(ir.RankedTensorType(value.type).shape)
    element = ir.RankedTensorType(value.type).element_type
    result = ir.RankedTensorType.get([shape[0], *shape[2:]], element)
    offsets = [0, g, 0, 0, 0]
    sizes = [shape[0], 1, *shape[2:]]
    return tensor.ExtractSliceOp(result, value, [], [], [], offsets, sizes, [1] * 5).result


def _insert(piece: ir.Value, into: ir.Value, g: int) -> ir.Value:
    shape = list(ir.RankedTensorType(piece.type).shape)
    sizes = [shape[0], 1, *shape[1:]]
    return tensor.InsertSliceOp(piece, into, [], [], [], [0, g, 0, 0, 0], sizes, [1] * 5).result


def _group_init(init: ir.Value, g: int) -> ir.Value:
    """The group's accumulator init: a fill made anew in its shape (so the
    dense route fuses it), else a slice."""
    owner = init.owner if isinstance(init, ir.OpResult) else None
    if owner is None or owner.name != "linalg.fill":
        return _slice(init, g)
    shape = list(ir.RankedTensorType(init.type).shape)
    element = ir.RankedTensorType(init.type).element_type
    empty = tensor.empty([shape[0], *shape[2:]], element)
    return linalg.fill(owner.operands[0], outs=[empty])


def _group_conv(
    op: ir.Operation, group_filter: np.ndarray, g: int, x: ir.Value, init: ir.Value
) -> ir.Operation:
    ftype = ir.RankedTensorType.get(list(group_filter.shape), ir.IntegerType.get_signless(8))
    name = weights.derived_name(constant_attr(op.operands[1]), f"group{g}")
    data = np.ascontiguousarray(group_filter)
    w = arith.ConstantOp(ftype, weights.constant_attr(data, ftype, name)).result
    value = linalg.conv_2d_nchw_fchw(x, w, outs=[init])
    conv = value.owner if isinstance(value, ir.Value) else value
    for name in ("strides", "dilations"):
        if name in op.attributes:
            conv.attributes[name] = op.attributes[name]
    return conv
