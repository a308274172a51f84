"""Convolution register tiles as matmuls.

After ``lowerline-tile-and-fuse`` tiles an NCHW convolution down to one
register tile (``mr`` output channels x ``nr`` output columns of one output
row) and its (c, kh, kw) loops to steps of 1, what remains per step is a
rank-1 update: ``out[f, ow] += w[f, c, kh, kw] * in[c, oh + kh, ow + kw]``.
This module rewrites that unit-window ``linalg.conv_2d_nchw_fchw`` into a
``linalg.matmul`` on rank-reduced slices (M = channels, K = 1, N = columns),
which vectorizes to one broadcast and FMAs per channel like any matmul tile.
An i8 x i8 -> i32 convolution (lowerline-fold-qdq-conv's) on a target with
an int8 dot product steps 4 input channels at a time: K = 4, which
lowerline-vectorize makes ``vpdpbusd`` as for an integer matmul. A strided
1x1 i8 convolution (planned so by lowerline-tile-and-fuse) has the same
tiles, its input row read as every ``stride``-th column (a strided slice
that lowerline-vectorize deinterleaves).

Upstream vectorizes only 1-D convolutions, in NWC form: an NCHW tile would
be transposed there and back at every step. Upstream has no rewrite of a
unit-window convolution into a matmul; this is it.
"""

from __future__ import annotations

from collections.abc import Callable

from mlir import ir
from mlir.dialects import arith, linalg, tensor

_DYNAMIC = ir.ShapedType.get_dynamic_size()


def _sizes(value: ir.Value) -> tuple[list[int], list[ir.Value]]:
    """Static sizes (dynamic marked) and the values of the dynamic ones."""
    vtype = ir.RankedTensorType(value.type)
    shape = list(vtype.shape)
    dynamic = []
    for d, size in enumerate(shape):
        if size == _DYNAMIC:
            index = arith.ConstantOp(ir.IndexType.get(), d).result
            dynamic.append(tensor.DimOp(value, index).result)
    return shape, dynamic


def _reduce(value: ir.Value, keep: list[int], step: int = 1, width: int = 0) -> ir.Value:
    """A rank-reducing slice of the whole of ``value`` keeping dims ``keep``;
    with ``step`` > 1, every ``step``-th of the first ``width`` elements of
    its last dim (a strided convolution's input row)."""
    vtype = ir.RankedTensorType(value.type)
    shape, dynamic = _sizes(value)
    strides = [1] * len(shape)
    if step > 1:
        shape[-1], strides[-1] = width, step
    result = ir.RankedTensorType.get([shape[d] for d in keep], vtype.element_type)
    rank = len(shape)
    return tensor.ExtractSliceOp(result, value, [], dynamic, [], [0] * rank, shape, strides).result


def _column_stride(conv: ir.Operation) -> int:
    if "strides" not in conv.attributes:
        return 1
    return int(list(ir.DenseIntElementsAttr(conv.attributes["strides"]))[-1])


def unit_window_conv_to_matmul(conv: ir.Operation, mark: Callable[[ir.Operation], None]) -> bool:
    """Rewrite one tiled conv (n = 1, oh = 1, kh = kw = 1, a static c: 1,
    or 4 for an int8 dot product) as a matmul; ``mark`` leaves the caller's
    vectorization plan on the new matmul.

    Returns False (and changes nothing) when the tile does not have that shape.
    """
    inp, flt, out = (ir.RankedTensorType(v.type) for v in conv.operands)
    n, f, oh, ow = out.shape
    c = flt.shape[1]
    if (n, oh) != (1, 1) or list(flt.shape[2:]) != [1, 1] or list(inp.shape[:3]) != [1, c, 1]:
        return False
    if c == _DYNAMIC:
        return False
    if f == _DYNAMIC:
        return False
    step = _column_stride(conv)
    # The tile's input row: ow columns (a partial row tile is dynamic in
    # both), or (ow - 1) * step + 1 of a strided one (static tiles only).
    width = ow if step == 1 or ow == _DYNAMIC else (ow - 1) * step + 1
    if inp.shape[3] != width or (step > 1 and ow == _DYNAMIC):
        return False
    with ir.InsertionPoint(conv), conv.location:
        weights = _reduce(conv.operands[1], [0, 1])  # f x c
        row = _reduce(conv.operands[0], [1, 3], step, ow)  # c x ow
        acc = _reduce(conv.operands[2], [1, 3])  # f x ow
        product = linalg.matmul(weights, row, outs=[acc])
        matmul = product.owner
        mark(matmul)
        rank = 4
        shape, dynamic = _sizes(conv.operands[2])
        merged = tensor.InsertSliceOp(
            product, conv.operands[2], [], dynamic, [], [0] * rank, shape, [1] * rank
        ).result
    conv.results[0].replace_all_uses_with(merged)
    conv.erase()
    return True
