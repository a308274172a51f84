"""``lowerline-decompose-transposed-conv``: a transposed convolution as
``stride``-many sub-convolutions per spatial dim on the un-dilated input.

Why: torch-mlir lowers ``ConvTranspose2d`` (stride s) to a stride-1
convolution over the input dilated with s - 1 zeros between elements (a
``tensor.insert_slice`` with strides into a zero fill) by the flipped
kernel. In 2-D, s*s - 1 of every s*s products of that convolution multiply
an inserted zero, and the dilated copy is s*s times the input. Upstream MLIR
has no rewrite of this pattern.

The output positions of one phase ``r`` (``y = r + s*q`` along each spatial
dim) read only kernel taps ``a = a0 + s*t`` (``a0 = (lo - r) mod s``) and
input rows ``q + t + e`` (``e = (r + a0 - lo) / s``), so each phase is a
plain stride-1 convolution of the input (zero-padded where it reads outside
it) by the strided slice of the kernel, written into the output's strided
view. Every sub-convolution goes through the stride-1 kernels
(``lowerline-tile-and-fuse``; a unit kernel as matmul tiles). The phases
accumulate into the original destination in turn (its bias is broadcast
once), so each output element is written by one sub-convolution only.

Before / after (1-D, stride 2, kernel 3, padding 1)::

    %z = linalg.fill ins(%zero) outs(%e0 : tensor<1x8x12xf32>)
    %d = tensor.insert_slice %x into %z[0, 0, 1] [1, 8, 5] [1, 1, 2]
    %o = linalg.conv_1d_ncw_fcw ins(%d, %w : ...) outs(%init : tensor<1x4x10xf32>)
        ==>
    %w0 = tensor.extract_slice %w[0, 0, 1] [4, 8, 1] [1, 1, 2]     (taps 1)
    %i0 = tensor.extract_slice %init[0, 0, 0] [1, 4, 5] [1, 1, 2]
    %c0 = linalg.conv_1d_ncw_fcw ins(%x, %w0) outs(%i0)
    %a0 = tensor.insert_slice %c0 into %init[0, 0, 0] [1, 4, 5] [1, 1, 2]
    %p1 = tensor.pad %x low[0, 0, 0] high[0, 0, 1]                 (taps 0, 2)
    %w1 = tensor.extract_slice %w[0, 0, 0] [4, 8, 2] [1, 1, 2]
    ...

Only convolutions with unit strides and dilations over such a dilated
input fire (the N x C dims inserted whole); others are left alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import product

from mlir import ir
from mlir.dialects import linalg, tensor

from lowerline.passes.support.ir_constants import constant_attr
from lowerline.pipeline.pass_api import Pass, ops_matching

# Convolution ops over N x C x spatial inputs and F x C x spatial kernels.
_CONVS = ("linalg.conv_1d_ncw_fcw", "linalg.conv_2d_nchw_fchw", "linalg.conv_3d_ncdhw_fcdhw")


@dataclass(frozen=True)
class _Dim:
    """One spatial dim of the dilated convolution."""

    stride: int  # of the insert: s - 1 zeros between input elements
    low: int  # where the first input element lands in the dilated input
    size: int  # of the un-dilated input
    kernel: int
    out: int


@dataclass(frozen=True)
class _Phase:
    """The sub-convolution of one output phase along one spatial dim."""

    first: int  # r: the first output position
    count: int  # Q: output positions r, r + s, ...
    tap: int  # a0: the first kernel tap it reads
    taps: int  # T: taps a0, a0 + s, ...
    start: int  # first input element read (clamped to the input)
    stop: int  # one past the last input element read (clamped)
    pad_low: int  # zeros before the input elements read
    pad_high: int  # zeros after them


def _phase(d: _Dim, r: int) -> _Phase | None:
    """Phase ``r`` of dim ``d``; None when no input element reaches it (its
    outputs keep the destination's values)."""
    tap = (d.low - r) % d.stride
    taps = -(-(d.kernel - tap) // d.stride) if d.kernel > tap else 0
    count = -(-(d.out - r) // d.stride)
    if not taps or count <= 0:
        return None
    first_row = (r + tap - d.low) // d.stride  # exact: r + tap = low (mod s)
    end_row = first_row + count + taps - 1
    start, stop = max(0, first_row), min(d.size, end_row)
    if start >= stop:
        return None
    return _Phase(r, count, tap, taps, start, stop, start - first_row, end_row - stop)


def _static_ints(op: ir.Operation, name: str) -> list[int]:
    return list(ir.DenseI64ArrayAttr(op.attributes[name]))


def _all_ones(op: ir.Operation, name: str) -> bool:
    return name not in op.attributes or all(
        int(v) == 1 for v in ir.DenseIntElementsAttr(op.attributes[name])
    )


def _is_zero(value: ir.Value) -> bool:
    attr = constant_attr(value)
    if isinstance(attr, ir.FloatAttr):
        return ir.FloatAttr(attr).value == 0.0
    return isinstance(attr, ir.IntegerAttr) and ir.IntegerAttr(attr).value == 0


def _dilated_insert(conv: ir.Operation) -> ir.Operation | None:
    """The ``tensor.insert_slice`` spreading the input into a zero fill, with
    static offsets, whole N and C dims and a stride above 1 somewhere."""
    value = conv.operands[0]
    if not isinstance(value, ir.OpResult) or value.owner.name != "tensor.insert_slice":
        return None
    insert = value.owner
    if len(insert.operands) != 2:  # dynamic offsets, sizes or strides
        return None
    dest = insert.operands[1]
    if not isinstance(dest, ir.OpResult) or dest.owner.name != "linalg.fill":
        return None
    source = ir.RankedTensorType(insert.operands[0].type)
    if not _is_zero(dest.owner.operands[0]) or not source.has_static_shape:
        return None
    if _static_ints(insert, "static_sizes") != list(source.shape):
        return None  # a rank-reducing insert
    offsets = _static_ints(insert, "static_offsets")
    strides = _static_ints(insert, "static_strides")
    if offsets[:2] != [0, 0] or strides[:2] != [1, 1] or all(s == 1 for s in strides):
        return None  # a plain padding, or N and C not inserted whole
    return insert


def _dims(conv: ir.Operation, insert: ir.Operation) -> list[_Dim] | None:
    """The spatial dims of a convolution over a dilated input; None when
    the convolution is strided, dilated or has dynamic shapes."""
    if not (_all_ones(conv, "strides") and _all_ones(conv, "dilations")):
        return None
    kernel, out = (ir.RankedTensorType(v.type) for v in conv.operands[1:])
    if not kernel.has_static_shape or not out.has_static_shape:
        return None
    source = ir.RankedTensorType(insert.operands[0].type)
    offsets = _static_ints(insert, "static_offsets")
    strides = _static_ints(insert, "static_strides")
    return [
        _Dim(strides[i], offsets[i], source.shape[i], kernel.shape[i], out.shape[i])
        for i in range(2, source.rank)
    ]


def _phases(dims: list[_Dim]) -> Iterator[tuple[_Phase, ...]]:
    """Every combination of per-dim phases that some input element reaches."""
    per_dim = [[p for r in range(d.stride) if (p := _phase(d, r)) is not None] for d in dims]
    yield from product(*per_dim)


def _slice(value: ir.Value, offsets: list[int], sizes: list[int], strides: list[int]) -> ir.Value:
    vtype = ir.RankedTensorType(value.type)
    result = ir.RankedTensorType.get(sizes, vtype.element_type)
    return tensor.ExtractSliceOp(result, value, [], [], [], offsets, sizes, strides).result


def _insert(value: ir.Value, dest: ir.Value, offsets: list[int], strides: list[int]) -> ir.Value:
    sizes = list(ir.RankedTensorType(value.type).shape)
    return tensor.InsertSliceOp(value, dest, [], [], [], offsets, sizes, strides).result


def _pad(value: ir.Value, low: list[int], high: list[int], zero: ir.Value) -> ir.Value:
    """``value`` padded with ``zero``."""
    if not any(low) and not any(high):
        return value
    vtype = ir.RankedTensorType(value.type)
    shape = [s + lo + hi for s, lo, hi in zip(vtype.shape, low, high, strict=True)]
    result = ir.RankedTensorType.get(shape, vtype.element_type)
    pad = tensor.PadOp(result, value, [], [], low, high)
    index = ir.IndexType.get()
    block = pad.regions[0].blocks.append(*([index] * vtype.rank))
    with ir.InsertionPoint(block):
        tensor.YieldOp(zero)
    return pad.result


def _input(x: ir.Value, phases: tuple[_Phase, ...], zero: ir.Value) -> ir.Value:
    """The input rows one sub-convolution reads, zero-padded where they
    fall outside the input."""
    xtype = ir.RankedTensorType(x.type)
    lead = list(xtype.shape[:2])
    sizes = [p.stop - p.start for p in phases]
    starts = [p.start for p in phases]
    if starts != [0] * len(phases) or sizes != list(xtype.shape[2:]):
        x = _slice(x, [0, 0, *starts], lead + sizes, [1] * xtype.rank)
    low = [0, 0, *[p.pad_low for p in phases]]
    high = [0, 0, *[p.pad_high for p in phases]]
    return _pad(x, low, high, zero)


def _sub_convolution(
    conv: ir.Operation, build: Callable, acc: ir.Value, phases: tuple[_Phase, ...], dims: list[_Dim]
) -> ir.Value:
    """One phase's convolution, accumulated into its strided view of ``acc``."""
    insert = conv.operands[0].owner
    x, zero = insert.operands[0], insert.operands[1].owner.operands[0]
    w = conv.operands[1]
    wtype, otype = (ir.RankedTensorType(v.type) for v in (w, acc))
    strides = [1, 1, *[d.stride for d in dims]]
    taps = _slice(
        w,
        [0, 0, *[p.tap for p in phases]],
        [*wtype.shape[:2], *[p.taps for p in phases]],
        strides,
    )
    out_offsets = [0, 0, *[p.first for p in phases]]
    view = _slice(acc, out_offsets, [*otype.shape[:2], *[p.count for p in phases]], strides)
    ones = [1] * len(dims)
    result = build(_input(x, phases, zero), taps, outs=[view], strides=ones, dilations=ones)
    return _insert(result, acc, out_offsets, strides)


def _decompose(conv: ir.Operation) -> bool:
    insert = _dilated_insert(conv)
    if insert is None:
        return False
    dims = _dims(conv, insert)
    if dims is None:
        return False
    build = getattr(linalg, conv.name.split(".", 1)[1])
    acc = conv.operands[2]
    with ir.InsertionPoint(conv), conv.location:
        for phases in _phases(dims):
            acc = _sub_convolution(conv, build, acc, phases, dims)
    conv.results[0].replace_all_uses_with(acc)
    conv.erase()
    return True


@dataclass(frozen=True)
class DecomposeTransposedConv(Pass):
    flag = "lowerline-decompose-transposed-conv"
    summary = (
        "Compute a convolution over a zero-dilated input (a transposed convolution) "
        "as one stride-1 sub-convolution per output phase"
    )
    anchor = "func.func"

    def run(self, op: ir.Operation) -> None:
        for conv in ops_matching(op, lambda o: o.name in _CONVS):
            _decompose(conv)
