"""An i8 x i8 -> i32 depthwise convolution with a constant filter as one
channels-last elementwise ``linalg.generic`` over its taps, for
lowerline-int8-conv-matmul.

Why: a depthwise convolution has no reduction over channels for ``vpdpbusd``
or ``sdot`` to take 4 bytes deep, and its NCHW window nest
(lowerline.passes.tiling.window_tiles) reads the input along its rows. Next
to the convolutions lowerline-int8-conv-matmul makes channels-last (a
MobileNet block's 1x1 expand and project), that nest also costs a transpose
to NCHW before it and one back after it, each a pass over the block's
widest tensor. Channels-last, every tap is a strided slice of the input
whose elements line up with the output's, so the convolution is one
all-parallel generic over ``(n, oh, ow, c)``, vectorized along the channels:
per tap the input sign-extended to i32, times the tap's weights (one
``C``-vector of i32 per tap, extended here at compile time), added::

    out[n, oh, ow, c] = start + sum_{kh, kw} x[n, oh*sh + kh*dh, ow*sw + kw*dw, c] * w[c, kh, kw]

Its elementwise epilogue (the requantize) is fused into the same generic, so
the i32 sums never reach memory. Upstream has no channels-last rewrite of an
NCHW depthwise convolution, and its vectorizer's convolution path keeps the
NCHW layout (its depthwise vectorization is for ``nhwc`` ops, which
lowerline-tile-and-fuse does not root).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mlir import ir
from mlir.dialects import arith, linalg, tensor

from lowerline import weights
from lowerline.passes.support.ir_constants import constant_attr

DEPTHWISE = "linalg.depthwise_conv_2d_nchw_chw"


@dataclass(frozen=True)
class Depthwise:
    """A depthwise convolution to rewrite: its filter (C x KH x KW), strides,
    dilations and the scalar its accumulators start from (its init's fill)."""

    op: ir.Operation
    filter: np.ndarray
    strides: tuple[int, int]
    dilations: tuple[int, int]
    start: ir.Value

    @property
    def output(self) -> list[int]:
        return list(ir.RankedTensorType(self.op.results[0].type).shape)


def _fill_value(init: ir.Value) -> ir.Value | None:
    owner = init.owner if isinstance(init, ir.OpResult) else None
    return owner.operands[0] if owner is not None and owner.name == "linalg.fill" else None


def int8_filter(op: ir.Operation) -> np.ndarray | str:
    """The constant filter of i8 x i8 -> i32 convolution ``op`` with static
    shapes, or why there is none (shared with the im2col rewrite)."""
    types = [ir.RankedTensorType(v.type) for v in (*op.operands, op.results[0])]
    if not all(t.has_static_shape for t in types):
        return "dynamic shapes"
    elements = [str(t.element_type) for t in types]
    if elements != ["i8", "i8", "i32", "i32"]:
        return f"element types {', '.join(elements[:3])} (needs i8 x i8 -> i32)"
    attr = constant_attr(op.operands[1])
    array = None if attr is None else weights.value_of(attr, types[1])
    return "the filter is not a constant with known bytes" if array is None else array


def plan_depthwise(
    op: ir.Operation, strides: tuple[int, int], dilations: tuple[int, int]
) -> Depthwise | str:
    """The depthwise convolution to rewrite, or why it is left alone."""
    array = int8_filter(op)
    if isinstance(array, str):
        return array
    start = _fill_value(op.operands[2])
    if start is None:
        return "the accumulator's init is not a fill"
    return Depthwise(op, array, strides, dilations, start)


def _tap_weights(conv: Depthwise) -> list[ir.Value]:
    """Per tap (kh, kw), its weights of every channel as a C-vector of i32."""
    c, kh_size, kw_size = conv.filter.shape
    vtype = ir.RankedTensorType.get([c], ir.IntegerType.get_signless(32))
    source = constant_attr(conv.op.operands[1])
    values = []
    for kh in range(kh_size):
        for kw in range(kw_size):
            array = np.ascontiguousarray(conv.filter[:, kh, kw].astype(np.int32))
            name = weights.derived_name(source, f"tap{kh}_{kw}")
            values.append(arith.ConstantOp(vtype, weights.constant_attr(array, vtype, name)).result)
    return values


def _tap_slices(conv: Depthwise, channels_last: ir.Value) -> list[ir.Value]:
    """Per tap, the N x OH x OW x C input elements it multiplies: a strided
    slice of the (padded) channels-last input."""
    n, c, oh, ow = conv.output
    _, kh_size, kw_size = conv.filter.shape
    (sh, sw), (dh, dw) = conv.strides, conv.dilations
    piece = ir.RankedTensorType.get([n, oh, ow, c], ir.IntegerType.get_signless(8))
    slices = []
    for kh in range(kh_size):
        for kw in range(kw_size):
            offsets = [0, kh * dh, kw * dw, 0]
            op = tensor.ExtractSliceOp(
                piece, channels_last, [], [], [], offsets, [n, oh, ow, c], [1, sh, sw, 1]
            )
            slices.append(op.result)
    return slices


def taps_generic(conv: Depthwise, channels_last: ir.Value) -> ir.Operation:
    """The convolution as an N x OH x OW x C generic over its taps (see the
    module's docstring), reading ``channels_last``, the input as N x H x W x C."""
    n, c, oh, ow = conv.output
    i32 = ir.IntegerType.get_signless(32)
    slices = _tap_slices(conv, channels_last)
    tap_weights = _tap_weights(conv)
    identity = ir.AffineMap.get_identity(4)
    channel = ir.AffineMap.get(4, 0, [ir.AffineDimExpr.get(3)])
    maps = [identity] * len(slices) + [channel] * len(tap_weights) + [identity]
    result = ir.RankedTensorType.get([n, oh, ow, c], i32)
    generic = linalg.GenericOp(
        [result], [*slices, *tap_weights], [tensor.empty([n, oh, ow, c], i32)],
        ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps]),
        ir.ArrayAttr.get([ir.Attribute.parse("#linalg.iterator_type<parallel>")] * 4),
    )  # fmt: skip
    i8 = ir.IntegerType.get_signless(8)
    block = generic.regions[0].blocks.append(*[i8] * len(slices), *[i32] * len(tap_weights), i32)
    args = list(block.arguments)
    with ir.InsertionPoint(block):
        total = conv.start
        for x, w in zip(args[: len(slices)], args[len(slices) : -1], strict=True):
            total = arith.addi(total, arith.muli(arith.extsi(i32, x), w))
        linalg.YieldOp([total])
    return generic.operation
