"""``lowerline-split-strided-columns``: a convolution strided along its
rows' columns as one convolution per column phase, each reading a
contiguous copy of every ``s``-th input column.

Why: ``lowerline-tile-and-fuse`` vectorizes an NCHW convolution along the
output row. With a column stride ``s`` the input row a step reads is
strided: ``s`` times the lanes loaded and a permute per vector (dense
strided convolutions go through the window nests,
``lowerline.passes.tiling.window_tiles``), and a register tile of one
output row, 10 columns of ResNet's 3x3 stride-2 downsample at 20 x 20 in
16 lanes (measured 1.55-1.67x ONNX Runtime, ``bench/conv-layers.md``).
Column phase ``q`` of the output reads only kernel taps ``kw = q + s*t``
at input columns ``s*(ow + t) + q``: a stride-1 convolution along the row
over the input's columns ``q, q + s, ...``. Copied once per layer (a
``tensor.pad`` of the strided slice, which ``lowerline-decompose-pad``
makes a parallel copy into a zero-bordered buffer), those are contiguous,
and each phase is a convolution with a row stride only, which takes the
stride-1 kernels (rank-1 updates of ``mr`` channels x whole vectors of the
row). Rows keep their stride: a row is read whole or not at all. The
phases accumulate into the destination in turn (its bias broadcast
joins the first, the epilogue the last); no product is added twice and
none is dropped (a phase reading only padding is skipped).

Upstream MLIR has no such rewrite (its strided convolutions vectorize only
in 1-D channel-last form, output column by output column).

Before / after (3x3, stride 2, padding 1, 20 x 20 input)::

    %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1]          (22 x 22)
    %o = linalg.conv_2d_nchw_fchw {strides = [2, 2]} ins(%p, %w : .., Fx Cx3x3) outs(%b)
        ==>
    %x0 = tensor.extract_slice %x[0, 0, 0, 1] [N, C, 20, 10] [1, 1, 1, 2]
    %p0 = tensor.pad %x0 low[0, 0, 1, 1] high[0, 0, 1, 0]        (22 x 11, taps 0, 2)
    %o0 = linalg.conv_2d_nchw_fchw {strides = [2, 1]} ins(%p0, %w0 : .., Fx Cx3x2) outs(%b)
    %x1 = tensor.extract_slice %x[0, 0, 0, 0] [N, C, 20, 10] [1, 1, 1, 2]
    %p1 = tensor.pad %x1 low[0, 0, 1, 0] high[0, 0, 1, 0]        (22 x 10, tap 1)
    %o = linalg.conv_2d_nchw_fchw {strides = [2, 1]} ins(%p1, %w1 : .., Fx Cx3x1) outs(%o0)

The kernel's taps of a phase are a constant computed at compile time when
the kernel is one, else a strided slice. Fires on float
``linalg.conv_2d_nchw_fchw`` with a column stride above 1 and below the
kernel's width (overlapping windows), column dilation 1 and static shapes
but the batch; its input a ``tensor.pad`` with static
padding of a constant (or no pad). Left alone: integer convolutions
(``lowerline-int8-conv-matmul``), column-dilated ones, other layouts.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, linalg, tensor

from lowerline import weights
from lowerline.pipeline.pass_api import Pass, ops_matching

_DYNAMIC = ir.ShapedType.get_dynamic_size()
_CONV = "linalg.conv_2d_nchw_fchw"


def _pair(op: ir.Operation, name: str) -> tuple[int, int]:
    if name not in op.attributes:
        return 1, 1
    rows, columns = (int(v) for v in ir.DenseIntElementsAttr(op.attributes[name]))
    return rows, columns


@dataclass(frozen=True)
class _Source:
    """The unpadded input and the padding the convolution reads it through."""

    value: ir.Value
    low: list[int]
    high: list[int]
    padding: ir.Value | None  # the pad's value; None: no pad (zeros are used)


def _constant_yield(pad: ir.Operation) -> ir.Value | None:
    """The value a ``tensor.pad`` pads with, when it is defined outside it."""
    body = pad.regions[0].blocks[0]
    value = list(body.operations)[-1].operands[0]
    inside = isinstance(value, ir.BlockArgument) or value.owner.parent == pad
    return None if inside else value


def _source(conv: ir.Operation) -> _Source | None:
    value = conv.operands[0]
    rank = ir.RankedTensorType(value.type).rank
    if not isinstance(value, ir.OpResult) or value.owner.name != "tensor.pad":
        return _Source(value, [0] * rank, [0] * rank, None)
    pad = value.owner
    if len(pad.operands) != 1:  # dynamic padding
        return None
    low = list(ir.DenseI64ArrayAttr(pad.attributes["static_low"]))
    high = list(ir.DenseI64ArrayAttr(pad.attributes["static_high"]))
    padding = _constant_yield(pad)
    if padding is None or any(low[:2]) or any(high[:2]):
        return None
    return _Source(pad.operands[0], low, high, padding)


@dataclass(frozen=True)
class _Phase:
    """Output column phase ``q``: kernel taps ``q, q + s, ...`` (``taps`` of
    them) over input columns ``s * j + q - low`` of the unpadded input for
    ``j`` in ``[0, width)``; ``first..last`` of those inside it."""

    q: int
    taps: int
    width: int  # columns of the phase's input: ow + taps - 1
    first: int  # first j inside the input
    last: int  # last j inside the input


def _phases(stride: int, kernel: int, ow: int, low: int, columns: int) -> list[_Phase]:
    phases = []
    for q in range(min(stride, kernel)):
        taps = -(-(kernel - q) // stride)
        width = ow + taps - 1
        first = max(0, -(-(low - q) // stride))
        last = min(width - 1, (columns - 1 + low - q) // stride)
        if first <= last:  # else it reads only padding: adds nothing
            phases.append(_Phase(q, taps, width, first, last))
    return phases


def _zero(element: ir.Type) -> ir.Value:
    return arith.ConstantOp(element, ir.FloatAttr.get(element, 0.0)).result


def _phase_input(src: _Source, phase: _Phase, stride: int) -> ir.Value:
    """Columns ``j`` of the phase, padded as the convolution reads them."""
    xtype = ir.RankedTensorType(src.value.type)
    n, c, h, _ = xtype.shape
    count = phase.last - phase.first + 1
    start = stride * phase.first + phase.q - src.low[3]
    sizes = [n, c, h, count]
    dynamic = []
    if n == _DYNAMIC:  # a dynamic batch, carried with its runtime size
        zero_index = arith.ConstantOp(ir.IndexType.get(), 0).result
        dynamic.append(tensor.dim(src.value, zero_index))
    sliced = ir.RankedTensorType.get(sizes, xtype.element_type)
    columns = tensor.ExtractSliceOp(
        sliced, src.value, [], dynamic, [], [0, 0, 0, start], sizes, [1, 1, 1, stride]
    ).result
    low = [0, 0, src.low[2], phase.first]
    high = [0, 0, src.high[2], phase.width - 1 - phase.last]
    padded = [n, c, h + low[2] + high[2], phase.width]
    ptype = ir.RankedTensorType.get(padded, xtype.element_type)
    if not any(low) and not any(high):
        # A plain copy: the convolution would read the strided slice itself.
        sizes_or_values = [*dynamic, *padded[1:]] if dynamic else padded
        empty = tensor.EmptyOp(sizes_or_values, xtype.element_type).result
        return linalg.copy(columns, outs=[empty])
    pad = tensor.PadOp(ptype, columns, [], [], low, high)
    block = pad.regions[0].blocks.append(*([ir.IndexType.get()] * 4))
    value = src.padding if src.padding is not None else None
    with ir.InsertionPoint(block):
        tensor.YieldOp(value if value is not None else _zero(xtype.element_type))
    return pad.result


def _phase_kernel(w: ir.Value, phase: _Phase, stride: int) -> ir.Value:
    """Kernel taps ``q, q + s, ...``: a new constant when ``w`` is one."""
    wtype = ir.RankedTensorType(w.type)
    f, c, kh, kw = wtype.shape
    if phase.taps == kw:  # one tap wide: the kernel as it is
        return w
    ktype = ir.RankedTensorType.get([f, c, kh, phase.taps], wtype.element_type)
    owner = w.owner if isinstance(w, ir.OpResult) else None
    if owner is not None and owner.name == "arith.constant":
        array = weights.value_of(owner.attributes["value"], wtype, bits=True)
        if array is not None:
            taps = array[:, :, :, phase.q :: stride]
            name = weights.derived_name(owner.attributes["value"], f"s{stride}q{phase.q}")
            return arith.ConstantOp(ktype, weights.constant_attr(taps, ktype, name)).result
    sizes = [f, c, kh, phase.taps]
    return tensor.ExtractSliceOp(
        ktype, w, [], [], [], [0, 0, 0, phase.q], sizes, [1, 1, 1, stride]
    ).result


def _splits(conv: ir.Operation) -> tuple[_Source, list[_Phase], int] | None:
    """What to split ``conv`` into; None when it does not fire."""
    (_, stride), (_, dilation) = _pair(conv, "strides"), _pair(conv, "dilations")
    if stride == 1 or dilation != 1:
        return None
    x, w, out = (ir.RankedTensorType(v.type) for v in conv.operands)
    if not isinstance(out.element_type, ir.FloatType) or x.element_type != out.element_type:
        return None
    if any(_DYNAMIC in t.shape[1:] for t in (x, out)) or not w.has_static_shape:
        return None
    if 0 in w.shape or 0 in out.shape[1:]:
        return None  # nothing to compute: tile-and-fuse handles empty tensors
    if w.shape[3] <= stride:
        # Windows that do not overlap along the row (1x1 or 2x2 stride 2):
        # no input column serves two taps, and the copy of rows the
        # convolution skips costs more than the permutes it saves (a 1x1
        # stride-2 convolution, 64 -> 128 channels at 56 x 56, one thread:
        # 70 -> 84 us).
        return None
    src = _source(conv)
    if src is None:
        return None
    columns = ir.RankedTensorType(src.value.type).shape[3]
    phases = _phases(stride, w.shape[3], out.shape[3], src.low[3], columns)
    return (src, phases, stride) if phases else None


def _split(conv: ir.Operation) -> bool:
    found = _splits(conv)
    if found is None:
        return False
    src, phases, stride = found
    row_stride, row_dilation = _pair(conv, "strides")[0], _pair(conv, "dilations")[0]
    acc = conv.operands[2]
    with ir.InsertionPoint(conv), conv.location:
        for phase in phases:
            x = _phase_input(src, phase, stride)
            w = _phase_kernel(conv.operands[1], phase, stride)
            acc = linalg.conv_2d_nchw_fchw(
                x, w, outs=[acc], strides=[row_stride, 1], dilations=[row_dilation, 1]
            )
    conv.results[0].replace_all_uses_with(acc)
    padded = conv.operands[0]
    conv.erase()
    # The whole padded input, read by nothing else now: not built at all.
    if isinstance(padded, ir.OpResult) and not list(padded.uses):
        padded.owner.erase()
    return True


@dataclass(frozen=True)
class SplitStridedColumns(Pass):
    flag = "lowerline-split-strided-columns"
    summary = (
        "Compute a column-strided NCHW convolution as one row-strided convolution per "
        "column phase over a contiguous copy of that phase's input columns"
    )
    anchor = "func.func"

    def run(self, op: ir.Operation) -> None:
        for conv in ops_matching(op, lambda o: o.name == _CONV):
            _split(conv)
