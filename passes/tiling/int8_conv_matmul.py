"""``lowerline-int8-conv-matmul``: an i8 x i8 -> i32 NCHW convolution with a
constant filter as one matmul whose B operand is the filter, so that its
register tiles load B packed for the int8 dot product at compile time
(lowerline.passes.tiling.vnni_weights) and broadcast 4 bytes of activations
at a time as the A operand, as oneDNN's NHWC int8 convolutions do.

Why: lowerline-tile-and-fuse tiles an NCHW convolution with the filter as A
(output channels as rows) and the activations as B (output columns as
lanes). B then holds 4 input channels of one column ``H * W`` bytes apart,
which every step shuffles into the lanes of ``vpdpbusd``/``sdot``: quiet,
bench/quant.md measured the int8 ResNet basic block at 0.46x of lowerline's
f32. Swapped, the output channels are the lanes and the 4 input channels of
a pixel are 4 consecutive bytes, once the activations are channels-last::

    %c = linalg.conv_2d_nchw_fchw ins(%x : NxCxHxW i8, %w : FxCxKHxKW i8 constant)
                                  outs(%init : NxFxOHxOW i32)
    %r = elementwise(%c, per-channel or scalar operands, NxFxOHxOW operands)
  ->
    %t = linalg.transpose %x [0, 2, 3, 1]              // N x H x W x C
    %col = scf.forall over the (n, oh) output rows:    // N x OH x OW x KH x KW x C
             the row's KH * KW strided slices of %t
    %a = collapse %col                                 // (N*OH*OW) x (KH*KW*C)
    %b = arith.constant w as (KH*KW*C) x F             // computed here
    %m = linalg.matmul ins(%a, %b) outs(init as (N*OH*OW) x F)
    %r2 = elementwise over (p, f) of %m                // fused into the matmul
    %r = linalg.transpose (expand %r2) [0, 3, 1, 2]    // N x F x OH x OW

The matmul is an integer matmul like a linear layer's: tiled 4 deep in k
(``INT8_DOT_K``), its B packed, its epilogue (the requantize) fused into its
register tiles. The elementwise consumers that follow it one after the other
(the only user each, all-parallel, writing the convolution's shape through
the identity, reading no loop index, each operand per output channel, a
scalar, or of the convolution's shape) move onto the matmul's rows; an
operand of the convolution's shape (a residual) is transposed to match.
Padding is the input's: lowerline-fold-qdq-conv pads the integers with the
zero point, and the zero-point correction stays in the epilogue's per-channel
constant, out of the k loop.

Only where the target has an int8 dot product that lowerline emits
(``int8_dot_lanes``): without one the k loop steps one channel at a time and
the direct kernels are as fast.

Upstream has ``transform.structured.convert_conv2d_to_img2col``, but for an
NCHW convolution it keeps the filter as the left operand (the layout this
pass exists to change), and its matmul is a ``linalg.generic`` that
lowerline-tile-and-fuse does not plan as a matmul; its im2col reads the
input through a gather.

A depthwise convolution (``linalg.depthwise_conv_2d_nchw_chw``, i8, constant
filter, a filled accumulator) has no channel reduction for the dot product:
it becomes one channels-last generic over its taps with its elementwise
chain fused in (lowerline.passes.tiling.int8_depthwise), reading its input
and read by the next convolution channels-last like the matmuls, so a
MobileNet block's expand, depthwise and project transpose only at its ends.
The channels-last form is also read through the plane reshapes
(``expand_shape(collapse_shape(x))`` of H x W) of 1x1 convolutions
(lowerline-pointwise-conv-rows).

A grouped convolution (``linalg.conv_2d_ngchw_gfchw``, i8, constant filter,
more than one input channel and at least the dot product's lanes of output
channels per group, a filter larger than 1x1) becomes one dense convolution per
group first (lowerline.passes.tiling.int8_grouped), each then an im2col
matmul like any other; its elementwise chain stays on the grouped result.

Left alone: dynamic shapes, filters whose bytes are unknown, other element
types and kernels.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from mlir import ir
from mlir.dialects import arith, linalg, scf, tensor

from lowerline import weights
from lowerline.cpu.tile_plan import int8_dot_lanes
from lowerline.passes.graph.fuse_elementwise import fusable_producer, fuse
from lowerline.passes.support.ir_constants import constant_attr
from lowerline.passes.support.linalg_info import all_parallel, indexing_maps
from lowerline.passes.support.pass_options import cpu_target_option
from lowerline.passes.support.rebuild_generic import (
    has_index_op,
    rebuild_generic,
    replace_chain,
    single_user_chain,
)
from lowerline.passes.tiling.decompose_pad import padding_value, static_padding
from lowerline.passes.tiling.int8_depthwise import (
    DEPTHWISE,
    Depthwise,
    int8_filter,
    plan_depthwise,
    taps_generic,
)
from lowerline.passes.tiling.int8_grouped import GROUPED, split_groups
from lowerline.pipeline.options import opt
from lowerline.pipeline.pass_api import Pass, ops_matching, resolve_target
from lowerline.pipeline.remarks import REFUSAL, Remark, about, publish
from lowerline.targets import cpu_target

_TO_NHWC = [0, 2, 3, 1]
_TO_NCHW = [0, 3, 1, 2]
_DYNAMIC = ir.ShapedType.get_dynamic_size()
_CHANNEL = 1  # the output channel's loop dim (and result dim) of an NCHW convolution
# The channels-last form of each NCHW value made so far, by its defining op and position.
_Layouts = dict[tuple[ir.Operation | ir.Block, int], ir.Value]


@dataclass(frozen=True)
class _Conv:
    """A convolution to rewrite: its filter's elements, strides and dilations."""

    op: ir.Operation
    filter: np.ndarray  # F x C x KH x KW
    strides: tuple[int, int]
    dilations: tuple[int, int]

    @property
    def output(self) -> list[int]:
        return list(ir.RankedTensorType(self.op.results[0].type).shape)

    @property
    def rows(self) -> int:
        n, _, oh, ow = self.output
        return n * oh * ow


def _pair(op: ir.Operation, name: str) -> tuple[int, int]:
    if name not in op.attributes:
        return (1, 1)
    first, second = (int(v) for v in ir.DenseIntElementsAttr(op.attributes[name]))
    return (first, second)


def _plan(op: ir.Operation) -> _Conv | str:
    """The convolution to rewrite, or why it is left alone."""
    array = int8_filter(op)
    if isinstance(array, str):
        return array
    return _Conv(op, array, _pair(op, "strides"), _pair(op, "dilations"))


# -- the matmul's operands --------------------------------------------------------


def _transpose(value: ir.Value, permutation: list[int]) -> ir.Value:
    vtype = ir.RankedTensorType(value.type)
    shape = [vtype.shape[d] for d in permutation]
    empty = tensor.empty(shape, vtype.element_type)
    transposed = linalg.transpose(value, outs=[empty], permutation=permutation)
    # The bindings give the op, not its result, for named ops with a region.
    return transposed if isinstance(transposed, ir.Value) else transposed.results[0]


def _groups(*groups: list[int]) -> ir.ArrayAttr:
    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get(
        [ir.ArrayAttr.get([ir.IntegerAttr.get(i64, i) for i in g]) for g in groups]
    )


def _collapse(value: ir.Value, groups: list[list[int]]) -> ir.Value:
    vtype = ir.RankedTensorType(value.type)
    shape = [int(np.prod([vtype.shape[d] for d in g])) for g in groups]
    result = ir.RankedTensorType.get(shape, vtype.element_type)
    return tensor.collapse_shape(result, value, _groups(*groups))


def _rows_of(value: ir.Value, layouts: _Layouts) -> ir.Value:
    """An NCHW tensor as the matmul's (N*OH*OW) x F rows (an empty one
    made anew in that shape: nothing to move)."""
    vtype = ir.RankedTensorType(value.type)
    if isinstance(value, ir.OpResult) and value.owner.name == "tensor.empty":
        n, f, oh, ow = vtype.shape
        return tensor.empty([n * oh * ow, f], vtype.element_type)
    return _collapse(_channels_last(value, layouts), [[0, 1, 2], [3]])


def _nhwc_of(value: ir.Value, layouts: _Layouts) -> ir.Value:
    """An NCHW tensor as N x H x W x C (an empty one made anew)."""
    vtype = ir.RankedTensorType(value.type)
    if isinstance(value, ir.OpResult) and value.owner.name == "tensor.empty":
        return tensor.empty(_permuted(list(vtype.shape), _TO_NHWC), vtype.element_type)
    return _channels_last(value, layouts)


def _permuted(values: list[int], permutation: list[int]) -> list[int]:
    return [values[d] for d in permutation]


def _elementwise_narrowing(op: ir.Operation) -> bool:
    """A one-input elementwise generic over a 4-D tensor whose input is no
    wider than its result (the u8 -> s8 shift, not a quantize of f32): its
    channels-last form reads its input channels-last, which moves no more
    bytes than transposing its result."""
    if op.name != "linalg.generic" or len(op.operands) != 2 or has_index_op(op):
        return False
    identity = ir.AffineMap.get_identity(4)
    if not all_parallel(op) or any(m != identity for m in indexing_maps(op)):
        return False
    source, result = (ir.RankedTensorType(v.type) for v in (op.operands[0], op.results[0]))
    return _bits(source.element_type) <= _bits(result.element_type)


def _bits(element: ir.Type) -> int:
    if isinstance(element, ir.IntegerType):
        return ir.IntegerType(element).width
    return ir.FloatType(element).width if isinstance(element, ir.FloatType) else 64


_PLANE_GROUPS = [[0], [1], [2, 3]]  # N, C and the plane of an NCHW tensor


def _plane_reshape(op: ir.Operation) -> ir.Value | None:
    """The 4-D source of an ``expand_shape(collapse_shape(x))`` that only
    reshapes the plane of NCHW ``x`` (a 1x1 convolution's 28 x 28 plane as
    1 x 784, lowerline-pointwise-conv-rows), else None."""
    if op.name != "tensor.expand_shape" or not _groups_are(op, _PLANE_GROUPS):
        return None
    source = op.operands[0]
    inner = source.owner if isinstance(source, ir.OpResult) else None
    if inner is None or inner.name != "tensor.collapse_shape":
        return None
    return inner.operands[0] if _groups_are(inner, _PLANE_GROUPS) else None


def _groups_are(op: ir.Operation, groups: list[list[int]]) -> bool:
    found = [[int(ir.IntegerAttr(d).value) for d in ir.ArrayAttr(g)]
             for g in ir.ArrayAttr(op.attributes["reassociation"])]  # fmt: skip
    return found == groups


def _looked_through(value: ir.Value) -> ir.Operation | None:
    """The op ``value``'s channels-last form can be read through: a
    transpose from channels-last (the previous rewritten convolution's
    output), a static pad with a value from outside (the zero point), or a
    narrowing elementwise op."""
    owner = value.owner if isinstance(value, ir.OpResult) else None
    if owner is None:
        return None
    if _elementwise_narrowing(owner) or _plane_reshape(owner) is not None:
        return owner
    if owner.name == "linalg.transpose":
        permutation = list(ir.DenseI64ArrayAttr(owner.attributes["permutation"]))
        return owner if permutation == _TO_NCHW else None
    padded = owner.name == "tensor.pad" and padding_value(owner) is not None
    return owner if padded and static_padding(owner) is not None else None


def _channels_last(value: ir.Value, layouts: _Layouts) -> ir.Value:
    """An NCHW tensor as N x H x W x C: the source of a transpose from that
    layout, a pad or narrowing elementwise op of one in that layout
    (transposing the smaller or narrower tensor), else a transpose; made
    once per value (a residual read by a later convolution's epilogue)."""
    key = _key(value)
    if key not in layouts:
        layouts[key] = _made_channels_last(value, layouts)
    return layouts[key]


def _key(value: ir.Value) -> tuple[ir.Operation | ir.Block, int]:
    if isinstance(value, ir.OpResult):
        return (value.owner, value.result_number)
    return (ir.BlockArgument(value).owner, ir.BlockArgument(value).arg_number)


def _made_channels_last(value: ir.Value, layouts: _Layouts) -> ir.Value:
    owner = _looked_through(value)
    if owner is None:
        return _transpose(value, _TO_NHWC)
    if owner.name == "linalg.transpose":
        return owner.operands[0]
    source_4d = _plane_reshape(owner)
    if source_4d is not None:
        # The plane's (h, w) merge in the same order channels-last.
        n, _, h, w = ir.RankedTensorType(value.type).shape
        merged = _collapse(_channels_last(source_4d, layouts), [[0], [1, 2], [3]])
        vtype = ir.RankedTensorType(merged.type)
        shape = [n, h, w, vtype.shape[2]]
        result = ir.RankedTensorType.get(shape, vtype.element_type)
        return tensor.expand_shape(result, merged, _groups([0], [1, 2], [3]), [], shape)
    if owner.name == "linalg.generic":
        source = _channels_last(owner.operands[0], layouts)
        shape = ir.RankedTensorType(source.type).shape
        init = tensor.empty(shape, ir.RankedTensorType(value.type).element_type)
        # A copy gives its body to the rebuilt op: the original may have other users.
        copy = owner.clone(ir.InsertionPoint.current)
        identity = ir.AffineMap.get_identity(4)
        rebuilt = rebuild_generic(copy, [source, init], [identity] * 2, ["parallel"] * 4)
        copy.erase()
        return rebuilt
    low, high = static_padding(owner) or ([], [])
    source = _channels_last(owner.operands[0], layouts)
    vtype = ir.RankedTensorType(value.type)
    result = ir.RankedTensorType.get(_permuted(list(vtype.shape), _TO_NHWC), vtype.element_type)
    pad = tensor.PadOp(result, source, [], [], _permuted(low, _TO_NHWC), _permuted(high, _TO_NHWC))
    block = pad.regions[0].blocks.append(*[ir.IndexType.get()] * vtype.rank)
    with ir.InsertionPoint(block):
        tensor.YieldOp(padding_value(owner))
    return pad.result


def _erase_unused(value: ir.Value, layouts: _Layouts) -> None:
    """Erase what ``_channels_last`` read through once nothing uses it (and
    forget it: a new op may take an erased one's place)."""
    owner = _looked_through(value)
    if owner is None or list(owner.results[0].uses):
        return
    source_4d = _plane_reshape(owner)
    source = owner.operands[0]
    layouts.pop((owner, 0), None)
    owner.erase()
    if source_4d is not None:  # then the plane reshape's collapse_shape
        if list(source.uses):
            return
        source.owner.erase()
        source = source_4d
    _erase_unused(source, layouts)


def _columns(conv: _Conv, layouts: _Layouts) -> ir.Value:
    """im2col: A[(n, oh, ow), (kh, kw, c)] = x[n, c, oh * sh + kh * dh, ow * sw + kw * dw],
    as one ``scf.forall`` over the output rows ``(n, oh)``: each iteration
    copies the KH * KW taps of its row (strided slices of the channels-last
    input). One parallel loop, where whole-tensor slices per tap were KH * KW
    sequential copies (lowerline-strided-copies-to-linalg's loops: one
    thread each; convblock's 3x3 taps 25 -> 16 us per convolution on one
    thread). A single output row keeps the whole-tensor slices: upstream's
    folding of a one-iteration ``scf.forall`` asserts on several
    ``parallel_insert_slice`` into one result."""
    _, c, kh_size, kw_size = conv.filter.shape
    n, _, oh, ow = conv.output
    channels_last = _channels_last(conv.op.operands[0], layouts)
    element = ir.IntegerType.get_signless(8)
    col = tensor.empty([n, oh, ow, kh_size, kw_size, c], element)
    if n * oh == 1:
        return _collapse(_taps(conv, channels_last, col, [0, 0], [n, oh]), [[0, 1, 2], [3, 4, 5]])
    loop = scf.ForallOp([0], [n * oh], [1], shared_outs=[col])
    inserts = loop.terminator().block  # creates the scf.forall.in_parallel
    with ir.InsertionPoint.at_block_terminator(loop.body):
        (i,) = loop.induction_variables
        first = [arith.divui(i, _index(oh)), arith.remui(i, _index(oh))]
        _taps(
            conv, channels_last, _ParallelInserts(loop.inner_iter_args[0], inserts), first, [1, 1]
        )
    return _collapse(loop.results[0], [[0, 1, 2], [3, 4, 5]])


@dataclass
class _ParallelInserts:
    """Where ``_taps`` puts its slices inside an ``scf.forall``: into its
    shared output, in its terminator."""

    shared: ir.Value
    block: ir.Block  # the body of the forall's scf.forall.in_parallel


def _taps(
    conv: _Conv, source: ir.Value, dest: ir.Value | _ParallelInserts, first: list, rows: list[int]
) -> ir.Value:
    """Copies the taps of output rows ``first`` (image, row; values or
    ints) and ``rows`` (their counts) of ``source`` (channels-last) into
    ``dest``: the im2col tensor (returned, updated) or a forall's shared
    output."""
    _, c, kh_size, kw_size = conv.filter.shape
    ow = conv.output[3]
    (sh, sw), (dh, dw) = conv.strides, conv.dilations
    image, row = first
    piece = ir.RankedTensorType.get([*rows, ow, c], ir.IntegerType.get_signless(8))
    top = arith.muli(row, _index(sh)) if isinstance(row, ir.Value) and sh != 1 else row
    for kh in range(kh_size):
        start = _plus(top, kh * dh)
        for kw in range(kw_size):
            offsets, dynamic = _mixed_offsets([image, start, kw * dw, 0])
            tap = tensor.ExtractSliceOp(
                piece, source, dynamic, [], [], offsets, [*rows, ow, c], [1, sh, sw, 1]
            ).result
            offsets, dynamic = _mixed_offsets([image, row, 0, kh, kw, 0])
            sizes = [*rows, ow, 1, 1, c]
            if isinstance(dest, _ParallelInserts):
                with ir.InsertionPoint(dest.block):
                    tensor.parallel_insert_slice(
                        tap, dest.shared, dynamic, [], [], offsets, sizes, [1] * 6
                    )
                continue
            dest = tensor.InsertSliceOp(tap, dest, dynamic, [], [], offsets, sizes, [1] * 6).result
    return dest if isinstance(dest, ir.Value) else dest.shared


def _plus(value: ir.Value | int, constant: int) -> ir.Value | int:
    if not constant:
        return value
    if isinstance(value, int):
        return value + constant
    return arith.addi(value, _index(constant))


def _mixed_offsets(values: list) -> tuple[list[int], list[ir.Value]]:
    """Static offsets (dynamic ones marked) and the dynamic values."""
    static = [_DYNAMIC if isinstance(v, ir.Value) else v for v in values]
    return static, [v for v in values if isinstance(v, ir.Value)]


def _index(value: int) -> ir.Value:
    return arith.ConstantOp(ir.IndexType.get(), value).result


def filter_matrix(array: np.ndarray) -> np.ndarray:
    """F x C x KH x KW as the (KH*KW*C) x F matrix B[(kh, kw, c), f]."""
    f = array.shape[0]
    return np.ascontiguousarray(np.transpose(array, (2, 3, 1, 0)).reshape(-1, f))


def _filter_constant(conv: _Conv) -> ir.Value:
    matrix = filter_matrix(conv.filter)
    mtype = ir.RankedTensorType.get(list(matrix.shape), ir.IntegerType.get_signless(8))
    name = weights.derived_name(constant_attr(conv.op.operands[1]), "im2col")
    return arith.ConstantOp(mtype, weights.constant_attr(matrix, mtype, name)).result


def _init(conv: _Conv, layouts: _Layouts) -> ir.Value:
    """The accumulator's init as rows: a fill is rebuilt in that shape (so
    tile-and-fuse fuses it), anything else transposed."""
    init = conv.op.operands[2]
    f = conv.filter.shape[0]
    owner = init.owner if isinstance(init, ir.OpResult) else None
    if owner is not None and owner.name == "linalg.fill":
        empty = tensor.empty([conv.rows, f], ir.IntegerType.get_signless(32))
        return linalg.fill(owner.operands[0], outs=[empty])
    return _rows_of(init, layouts)


# -- the elementwise chain --------------------------------------------------------


def _row_map(amap: ir.AffineMap, dims: int = 2) -> ir.AffineMap | None:
    """An operand's map over the ``dims`` loops of the rewritten result, the
    channel last: (p, f) of the matmul's rows, (n, oh, ow, c) channels-last.
    The identity for one of the convolution's shape, ``(f)`` for a
    per-channel one, constants kept; None when it reads a batch or plane dim
    without the others."""
    if amap == ir.AffineMap.get_identity(4):
        return ir.AffineMap.get_identity(dims)
    results = []
    for expr in amap.results:
        if isinstance(expr, ir.AffineConstantExpr):
            results.append(expr)
        elif isinstance(expr, ir.AffineDimExpr) and expr.position == _CHANNEL:
            results.append(ir.AffineDimExpr.get(dims - 1))
        else:
            return None
    return ir.AffineMap.get(dims, 0, results)


def _joins(op: ir.Operation, shape: list[int]) -> bool:
    if op.name != "linalg.generic" or len(op.results) != 1 or not all_parallel(op):
        return False
    if list(ir.RankedTensorType(op.results[0].type).shape) != shape or has_index_op(op):
        return False
    maps = indexing_maps(op)
    if maps[-1] != ir.AffineMap.get_identity(4):
        return False
    return all(_row_map(m) is not None for m in maps)


def _generic_as_rows(
    op: ir.Operation, replaced: ir.Value, by: ir.Value, layouts: _Layouts, dims: int = 2
) -> ir.Value:
    """Chain op ``op`` over the matmul's rows (``dims`` 2) or channels-last
    (``dims`` 4), reading ``by`` in place of ``replaced``."""
    operands, maps = [], []
    for value, amap in zip(op.operands, indexing_maps(op), strict=True):
        row_map = _row_map(amap, dims)
        assert row_map is not None  # _joins checked every map
        if value == replaced:
            operands.append(by)
        elif row_map == ir.AffineMap.get_identity(dims):
            operands.append(_rows_of(value, layouts) if dims == 2 else _nhwc_of(value, layouts))
        else:
            operands.append(value)
        maps.append(row_map)
    return rebuild_generic(op, operands, maps, ["parallel"] * dims)


def _restore(rows: ir.Value, output: list[int]) -> ir.Value:
    """The matmul's rows (or its epilogue's) back as N x F x OH x OW."""
    n, f, oh, ow = output
    element = ir.RankedTensorType(rows.type).element_type
    expanded_shape = [n, oh, ow, f]
    expanded = tensor.expand_shape(
        ir.RankedTensorType.get(expanded_shape, element),
        rows,
        _groups([0, 1, 2], [3]),
        [],
        expanded_shape,
    )
    return _transpose(expanded, _TO_NCHW)


def _chain(conv: _Conv | Depthwise) -> list[ir.Operation]:
    """The elementwise ops that move onto the matmul's rows (or the
    depthwise generic's channels-last result) with it."""
    shape = conv.output
    return single_user_chain(conv.op, lambda user: _joins(user, shape))


def _rewrite(conv: _Conv, chain: list[ir.Operation], layouts: _Layouts) -> None:
    op = conv.op
    with ir.InsertionPoint(op), op.location:
        columns = _columns(conv, layouts)
        product = linalg.matmul(columns, _filter_constant(conv), outs=[_init(conv, layouts)])
    source = op.operands[0]
    replace_chain(
        op,
        chain,
        product,
        lambda user, old, new: _generic_as_rows(user, old, new, layouts),
        lambda rows: _restore(rows, conv.output),
    )
    _erase_unused(source, layouts)


def _rewrite_depthwise(conv: Depthwise, chain: list[ir.Operation], layouts: _Layouts) -> int:
    """The depthwise convolution as a channels-last generic over its taps
    with its chain fused into it, transposed back to NCHW (which the next
    rewritten convolution reads through); how many chain ops were fused."""
    op, source = conv.op, conv.op.operands[0]
    with ir.InsertionPoint(op), op.location:
        product = taps_generic(conv, _channels_last(source, layouts))
    rebuilt: list[ir.Operation] = []

    def as_nhwc(user: ir.Operation, old: ir.Value, new: ir.Value) -> ir.Value:
        value = _generic_as_rows(user, old, new, layouts, dims=4)
        rebuilt.append(value.owner)
        return value

    replace_chain(op, chain, product.results[0], as_nhwc, lambda v: _transpose(v, _TO_NCHW))
    _erase_unused(source, layouts)
    return _fuse_into(product, rebuilt)


def _fuse_into(producer: ir.Operation, consumers: list[ir.Operation]) -> int:
    """Fuse the chain one op after the other into ``producer`` (the i32 sums
    then stay in registers); how many were fused."""
    fused = 0
    for consumer in consumers:
        index = next(i for i, v in enumerate(consumer.operands) if v == producer.results[0])
        if fusable_producer(consumer, index) is None:
            break
        producer = fuse(producer, consumer, index)
        fused += 1
    return fused


def _remark(op: ir.Operation, plan: _Conv | str, fused: int = 0) -> Remark:
    if isinstance(plan, str):
        return about(op, Int8ConvMatmul.flag, f"not rewritten as a matmul: {plan}", REFUSAL)
    k = int(np.prod(plan.filter.shape[1:]))
    return about(
        op,
        Int8ConvMatmul.flag,
        f"rewritten as a {plan.rows}x{k} by {k}x{plan.filter.shape[0]} matmul of "
        f"channels-last columns by the filter, {fused} elementwise ops on its rows",
    )


def _depthwise(op: ir.Operation, layouts: _Layouts) -> Remark:
    plan = plan_depthwise(op, _pair(op, "strides"), _pair(op, "dilations"))
    if isinstance(plan, str):
        return about(op, Int8ConvMatmul.flag, f"not rewritten channels-last: {plan}", REFUSAL)
    chain = _chain(plan)
    remark = about(op, Int8ConvMatmul.flag, "")  # read now: the rewrite erases the op
    fused = _rewrite_depthwise(plan, chain, layouts)
    taps = plan.filter.shape[1] * plan.filter.shape[2]
    message = (
        f"rewritten as a channels-last generic over its {taps} taps, "
        f"{fused} of {len(chain)} elementwise ops fused into it"
    )
    return dataclasses.replace(remark, message=message)


def _split_grouped(op: ir.Operation, lanes: int) -> list[Remark]:
    """Split each grouped convolution into dense ones per group (which the
    rewrite then takes as it finds them); a remark for each."""
    remarks = []
    for conv in ops_matching(op, lambda o: o.name == GROUPED):
        remark = about(conv, Int8ConvMatmul.flag, "")  # read now: the split erases the op
        split = split_groups(conv, lanes)
        if isinstance(split, str):
            message, kind = f"not split into its groups: {split}", REFUSAL
            remarks.append(dataclasses.replace(remark, message=message, kind=kind))
            continue
        message = f"split into {len(split)} dense convolutions, one per group"
        remarks.append(dataclasses.replace(remark, message=message))
    return remarks


@dataclass(frozen=True)
class Int8ConvMatmul(Pass):
    flag = "lowerline-int8-conv-matmul"
    summary = (
        "i8 NCHW convolutions with a constant filter as an im2col matmul with the filter as B, "
        "depthwise ones as a channels-last generic over their taps"
    )
    anchor = "func.func"

    target: str = cpu_target_option()
    explain: bool = opt(
        False, "print each convolution rewritten or refused, and why, to stderr as remarks"
    )

    def run(self, op: ir.Operation) -> None:
        target = resolve_target(cpu_target, self.target, op)
        if not int8_dot_lanes(target):
            return
        remarks = _split_grouped(op, int8_dot_lanes(target))
        convs = ops_matching(op, lambda o: o.name in ("linalg.conv_2d_nchw_fchw", DEPTHWISE))
        layouts: _Layouts = {}
        for conv in convs:
            if conv.name == DEPTHWISE:
                remarks.append(_depthwise(conv, layouts))
                continue
            plan = _plan(conv)
            if isinstance(plan, str):
                remarks.append(_remark(conv, plan))
                continue
            chain = _chain(plan)
            remarks.append(_remark(conv, plan, len(chain)))
            _rewrite(plan, chain, layouts)
        publish(remarks, self.explain)
