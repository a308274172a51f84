"""``lowerline-vectorize-conv-channels``: dense convolutions with narrow or
strided output rows vectorized along the output channels.

Why: lowerline-tile-and-fuse vectorizes an NCHW convolution along its output
rows. A row that is not a whole number of vectors leaves lanes idle (a 10-wide
row fills 10 of 16 f32 lanes, a 28-wide one 28 of 32) and a strided one
reads every other input column (permutes, or lowerline-split-strided-columns'
copies). The output channels have no such edge where their count is a
multiple of the lanes: this pass computes each register tile as ``P`` output
pixels of one row x ``V`` vectors of ``L`` channels (the outer-product
microkernel of ONNX Runtime's NCHWc convolutions, without the NCHWc
activations: the input is read in NCHW, one broadcast element per pixel and
tap). The filter is packed at compile time as ``[F / L, C, KH, KW, L]``::

    %o = linalg.conv_2d_nchw_fchw {strides = [2, 2]} ins(%x, %w) outs(%bias)
    %r = linalg.generic {relu} ins(%o) outs(%e)
        ==>
    %wp = arith.constant dense_resource<..>  : tensor<F/L x C x KH x KW x L>
    %r = scf.forall (%n, %fb, %oh) in (N, F / (V L), OH) shared_outs(%e) {
      for each chunk of P output columns:
        %acc = scf.for %c, %kh iter_args(P x V vectors<L>) {
          for kw: acc[p][v] = fma(broadcast(x[n, c, s oh + d kh, s (ow0 + p) + d kw]),
                                  wp[V fb + v, c, kh, kw, :], acc[p][v])
        }
        transpose the P x (V L) tile into V L rows of P columns, add the bias
        row, apply the ReLU, write the rows
    }

threaded over (batch, channel block, output row), the epilogue (the
convolution's only user when elementwise, as for Winograd) applied to each
row before it is stored. Any stride, dilation and window size; the padding is
the input's ``tensor.pad`` (lowerline-decompose-pad, after this pass).

It fires on f32 convolutions with static shapes, a constant filter whose
bytes are known, output channels a multiple of the target's f32 lanes, and a
row the direct kernels vectorize badly: strided along the row, or not a
whole number of vectors wide. 3x3 stride-1 convolutions that
lowerline-winograd-conv takes (``keep-winograd``) are left to it. The tile's
``P x L`` transpose into channel rows is ``log2(L)`` steps of two-operand
``vector.shuffle`` (one instruction each), not ``P L`` extracts.

**With a max pool** (``fuse-max-pool``): where the convolution's (or its
epilogue's) result feeds only a ``linalg.pooling_nchw_max``, directly or
through a -inf ``tensor.pad``, the epilogue reads no same-shape operand and
the init is a zero fill or a per-channel bias broadcast, the convolution,
its epilogue and the pool become one kernel, whatever the input channels
(the ResNet stem's 3-channel 7x7/2 with batch norm, ReLU and a 3x3/2 pool)::

    %r = scf.forall (%n, %fb) in (N, F / (V L)) shared_outs(%pooled) {
      %rows = tensor.empty() : tensor<OH x OW x V L>   channels last, local
      for each output row and register tile: the accumulators as above,
        bias + epilogue on each pixel's channel vectors, stored whole
      for each pooled row: per pooled pixel, the max of its window's
        channel vectors (rows and columns clamped into the output: the
        padding never wins a max, ``_covers``), transposed into rows
    }

Nothing of the unpooled result is transposed or leaves the thread's cache,
and the pad, the pool's -inf fill and the row kernels' column-phase copies
(serial loops) are gone. Fewer than ``min-channels`` input channels are
rewritten only so: alone, the stem's 7x7/2 was slower than the row kernels.

Upstream vectorizes convolutions only in 1-D channel-last form
(``Conv1DGenerator``) and packs with ``linalg.pack`` at run time (it cannot
read ``dense_resource`` bytes); it has no channel-vectorized NCHW kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mlir import ir
from mlir.dialects import arith, scf, tensor, vector

from lowerline import weights
from lowerline.cpu.tile_plan import lanes as vector_lanes
from lowerline.passes.support.conv_epilogue import (
    ConvFilter,
    Epilogue,
    apply_epilogue,
    constant_filter,
    find_epilogue,
    index,
    read_row,
    write_row,
    zero_init,
)
from lowerline.passes.support.ir_constants import constant_attr
from lowerline.passes.support.linalg_info import all_parallel, describe, indexing_maps
from lowerline.passes.support.pass_options import cpu_target_option
from lowerline.pipeline.options import opt
from lowerline.pipeline.pass_api import Pass, ops_matching, resolve_target
from lowerline.pipeline.remarks import REFUSAL, Remark, about, publish
from lowerline.targets import CpuTarget, cpu_target

_CONV = "linalg.conv_2d_nchw_fchw"
_DYNAMIC = ir.ShapedType.get_dynamic_size()


@dataclass
class _Conv(ConvFilter):
    batch: int
    height: int  # of the output
    width: int
    strides: tuple[int, int]
    dilations: tuple[int, int]
    lanes: int  # L: f32 lanes of the target's vectors
    vectors: int  # V: channel vectors per register tile
    pixels: int  # the most output columns per register tile
    accumulate: bool  # the init is not a zero fill (a bias): add it
    epilogue: Epilogue | None
    pool: _Pool | None = None  # a max pool computed from the block's rows
    bias: ir.Value | None = None  # with a pool: the [F] tensor the init broadcasts

    @property
    def block(self) -> int:
        """Output channels per register tile."""
        return self.lanes * self.vectors

    def chunks(self) -> list[tuple[int, int, int]]:
        """(first column, columns per tile, tiles) runs along an output row:
        the row split into the fewest tiles of at most ``pixels`` columns,
        as even as can be (a 10-wide row with 12 at most: one tile of 10; a
        28-wide one: two of 14), the wider tiles first."""
        count = -(-self.width // self.pixels)
        base, wider = divmod(self.width, count)
        runs = [(0, base + 1, wider)] if wider else []
        if count > wider:
            runs.append((wider * (base + 1), base, count - wider))
        return runs


@dataclass
class _Pool:
    """A ``linalg.pooling_nchw_max`` of the convolution's (or its
    epilogue's) result or of its -inf ``tensor.pad``."""

    pad: ir.Operation | None  # none where the pool does not pad
    op: ir.Operation
    window: tuple[int, int]
    strides: tuple[int, int]
    low: tuple[int, int]  # the padding above and left of the convolution's output
    height: int  # of the pooled output
    width: int


def _static_pair(op: ir.Operation, name: str) -> tuple[int, int] | None:
    """A ``tensor.pad``'s static padding of the plane; None when it pads
    the batch or the channels."""
    values = list(ir.DenseI64ArrayAttr(op.attributes[name]))
    return None if values[0] or values[1] else (values[2], values[3])


def _fills_minus_inf(value: ir.Value) -> bool:
    attr = constant_attr(value)
    return isinstance(attr, ir.FloatAttr) and ir.FloatAttr(attr).value == float("-inf")


def _only_user(value: ir.Value, name: str) -> ir.Operation | None:
    uses = list(value.uses)
    return uses[0].owner if len(uses) == 1 and uses[0].owner.name == name else None


def _covers(size: int, pooled: int, window: int, stride: int, low: int) -> bool:
    """Every pooling window overlaps the ``size`` unpadded rows (or
    columns): clamping its indices into them then reads only elements of
    the window, and the -inf padding never wins."""
    return all(p * stride - low < size and p * stride - low + window > 0 for p in range(pooled))


def _padding(result: ir.Value) -> tuple[ir.Value, ir.Operation | None, tuple[int, int]] | None:
    """What the pool reads (``result``, or its -inf ``tensor.pad`` when that
    is ``result``'s only user), the pad, and its padding above and left."""
    pad = _only_user(result, "tensor.pad")
    if pad is None:
        return result, None, (0, 0)
    if pad.operands[0] != result or len(pad.operands) != 1:
        return None  # dynamic padding
    low, high = _static_pair(pad, "static_low"), _static_pair(pad, "static_high")
    yielded = list(pad.regions[0].blocks[0].operations)[-1].operands[0]
    if low is None or high is None or not _fills_minus_inf(yielded):
        return None
    return pad.results[0], pad, low


def _max_pool(result: ir.Value) -> _Pool | None:
    """The max pool that ``result`` (or its -inf padding) feeds, if it can
    be computed from the convolution's rows in place."""
    padded = _padding(result)
    if padded is None:
        return None
    source, pad, low = padded
    pool = _only_user(source, "linalg.pooling_nchw_max")
    if pool is None or pool.operands[0] != source or _pair(pool, "dilations") != (1, 1):
        return None
    init = pool.operands[2]
    if not isinstance(init, ir.OpResult) or init.owner.name != "linalg.fill":
        return None
    if not _fills_minus_inf(init.owner.operands[0]):
        return None
    out = ir.RankedTensorType(pool.results[0].type)
    conv = ir.RankedTensorType(result.type)
    window = tuple(ir.RankedTensorType(pool.operands[1].type).shape)
    strides = _pair(pool, "strides")
    for axis in (0, 1):
        size, pooled = conv.shape[2 + axis], out.shape[2 + axis]
        if not _covers(size, pooled, window[axis], strides[axis], low[axis]):
            return None
    return _Pool(pad, pool, (window[0], window[1]), strides, low, out.shape[2], out.shape[3])


def _channel_bias(init: ir.Value) -> ir.Value | None:
    """The ``[F]`` tensor that ``init`` broadcasts along the batch and the
    plane (a convolution's bias: a ``linalg.broadcast`` as torch-mlir
    writes it, or the generic it generalizes to), if it is one."""
    if not isinstance(init, ir.OpResult):
        return None
    op = init.owner
    if op.name == "linalg.broadcast":
        dimensions = list(ir.DenseI64ArrayAttr(op.attributes["dimensions"]))
        return op.operands[0] if dimensions == [0, 2, 3] else None
    if op.name != "linalg.generic":
        return None
    maps = indexing_maps(op)
    channel = ir.AffineMap.get(4, 0, [ir.AffineDimExpr.get(1)])
    if len(op.operands) != 2 or maps[0] != channel or not all_parallel(op):
        return None
    body = op.regions[0].blocks[0]
    terminator = list(body.operations)[-1]
    if len(list(body.operations)) != 1 or terminator.operands[0] != body.arguments[0]:
        return None
    return op.operands[0]


def _pooled_fusion(
    op: ir.Operation, epilogue: Epilogue | None
) -> tuple[_Pool, ir.Value | None] | str:
    """The max pool to fuse and the bias to add, or why there is none."""
    if epilogue is not None and "row" in epilogue.kinds:
        return "an epilogue with a same-shape operand"
    pool = _max_pool((epilogue.op if epilogue is not None else op).results[0])
    if pool is None:
        return "no max pool follows"
    if zero_init(op.operands[2]):
        return pool, None
    bias = _channel_bias(op.operands[2])
    if bias is None:
        return "the init is neither a zero fill nor a per-channel bias"
    return pool, bias


def _pair(op: ir.Operation, name: str) -> tuple[int, int]:
    if name not in op.attributes:
        return 1, 1
    values = [int(v) for v in ir.DenseIntElementsAttr(op.attributes[name])]
    return values[0], values[1]


def _narrow_or_strided(width: int, stride: int, lanes: int) -> bool:
    """The direct kernels' rows leave lanes idle or read strided columns."""
    return stride > 1 or width % lanes != 0


def _accumulators(target: CpuTarget, vectors: int, taps: int, most: int) -> int:
    """Accumulator vectors of a register tile: the target's vector registers
    less a row of taps' packed filter vectors (``vectors`` per tap, all of
    which LLVM may load ahead) and two for the broadcast input elements,
    ``most`` at most. The 7x7 stem with 24 accumulators and 14 filter
    vectors spilled: 1.67x ONNX Runtime's time against 1.13x for the row
    kernels (one thread, CPU time)."""
    return max(vectors, min(most, target.vector_registers - vectors * taps - 2))


def _plan(op: ir.Operation, target: CpuTarget, options: VectorizeConvChannels) -> _Conv | str:
    """The convolution to rewrite, or why it keeps the direct kernels."""
    types = [ir.RankedTensorType(v.type) for v in (*op.operands, op.results[0])]
    _, flt, init, _ = types
    if not all(t.has_static_shape for t in types):
        return "dynamic shapes"
    if any(str(t.element_type) != "f32" for t in types):
        return "not f32"
    if 0 in init.shape or 0 in flt.shape:
        return "an empty tensor"
    strides, dilations = _pair(op, "strides"), _pair(op, "dilations")
    n, f, oh, ow = init.shape
    lanes = vector_lanes(target, 4)
    if f % lanes:
        return f"{f} output channels: not a multiple of {lanes} lanes"
    window = list(flt.shape[2:])
    winograd = strides == (1, 1) and dilations == (1, 1) and window == [3, 3]
    if options.keep_winograd and winograd and min(f, flt.shape[1]) >= options.winograd_channels:
        return "a 3x3 stride-1 convolution left to lowerline-winograd-conv"
    epilogue = find_epilogue(op)
    pooled = _pooled_fusion(op, epilogue) if options.fuse_max_pool else "fuse-max-pool=false"
    if window == [1, 1]:
        # No input element serves two taps: the broadcasts are as many as the
        # multiplies' vectors, and the row kernels (a 1x1 stride-1 plane as one
        # long row, lowerline-pointwise-conv-rows) were faster (1x1 stride 2,
        # 64 -> 128 channels at 56 x 56, one thread: 71 -> 86 us).
        return "a 1x1 window"
    if isinstance(pooled, str):
        if flt.shape[1] < options.min_channels:
            # The ResNet stem's 7x7/2 (3 channels) alone, one thread: 90 us
            # with the row kernels (column phases), 96 us with this; 16
            # channels at 3x3 stride 2 were 30% faster with this. Fused with
            # its max pool, this is the faster (``_rewrite_pooled``).
            return (
                f"{flt.shape[1]} input channels: below min-channels={options.min_channels} "
                f"and no max pool to fuse ({pooled})"
            )
        if not _narrow_or_strided(ow, strides[1], lanes):
            return f"{ow}-wide unit-stride rows: whole vectors for the direct kernels"
    array = constant_filter(op)
    if array is None:
        return "the filter is not a constant with known bytes"
    vectors = 2 if f % (2 * lanes) == 0 else 1
    pixels = max(1, _accumulators(target, vectors, window[1], options.accumulators) // vectors)
    pool, bias = (None, None) if isinstance(pooled, str) else pooled
    accumulate = not zero_init(op.operands[2]) and pool is None
    return _Conv(
        op,
        array,
        n,
        oh,
        ow,
        strides,
        dilations,
        lanes,
        vectors,
        pixels,
        accumulate,
        epilogue,
        pool,
        bias,
    )


# -- vector code ------------------------------------------------------------------


def _plus(base: ir.Value, constant: int) -> ir.Value:
    return base if constant == 0 else arith.addi(base, index(constant))


def _packed_filter(conv: _Conv) -> ir.Value:
    """``w[F, C, KH, KW]`` as ``[F / L, C, KH, KW, L]``: the ``L`` channels
    of one tap contiguous, one vector load."""
    f, c, kh, kw = conv.filter.shape
    lanes = conv.lanes
    packed = conv.filter.reshape(f // lanes, lanes, c, kh, kw).transpose(0, 2, 3, 4, 1)
    packed = np.ascontiguousarray(packed)
    ptype = ir.RankedTensorType.get(list(packed.shape), ir.F32Type.get())
    name = weights.derived_name(constant_attr(conv.op.operands[1]), f"oc{lanes}")
    return arith.ConstantOp(ptype, weights.constant_attr(packed, ptype, name)).result


def _tile_products(
    conv: _Conv,
    x: ir.Value,
    packed: ir.Value,
    n: ir.Value,
    fb: ir.Value,
    oh: ir.Value,
    ow0: ir.Value,
    pixels: int,
) -> list[list[ir.Value]]:
    """The accumulators of one register tile: ``acc[p][v]`` holds the ``L``
    channels ``(V fb + v) L ..`` of output pixel ``(oh, ow0 + p)``, summed
    over the input channels and the window."""
    (sh, sw), (dh, dw) = conv.strides, conv.dilations
    _, _, kh_count, kw_count = conv.filter.shape
    vtype = ir.VectorType.get([conv.lanes], ir.F32Type.get())
    zero = arith.ConstantOp(vtype, ir.DenseElementsAttr.get_splat(vtype, ir.FloatAttr.get_f32(0.0)))
    count = pixels * conv.vectors
    steps = kh_count * conv.channels
    loop = scf.ForOp(index(0), index(steps), index(1), iter_args=[zero.result] * count)
    with ir.InsertionPoint(loop.body):
        step = loop.induction_variable
        c = arith.divui(step, index(kh_count))
        kh = arith.remui(step, index(kh_count))
        row = arith.addi(arith.muli(oh, index(sh)), arith.muli(kh, index(dh)))
        col0 = arith.muli(ow0, index(sw))
        blocks = [_plus(arith.muli(fb, index(conv.vectors)), v) for v in range(conv.vectors)]
        acc = list(loop.inner_iter_args)
        w = [
            [read_row(packed, [b, c, kh, index(kw), index(0)], conv.lanes) for b in blocks]
            for kw in range(kw_count)
        ]
        # Input column by input column: each broadcast serves every (pixel,
        # tap) that reads it right away and dies.
        for column in sorted({p * sw + kw * dw for p in range(pixels) for kw in range(kw_count)}):
            xs = vector.broadcast(vtype, tensor.extract(x, [n, c, row, _plus(col0, column)]))
            for p in range(pixels):
                kw, left = divmod(column - p * sw, dw)
                if left or not 0 <= kw < kw_count:
                    continue
                for v in range(conv.vectors):
                    acc[p * conv.vectors + v] = vector.fma(xs, w[kw][v], acc[p * conv.vectors + v])
        scf.YieldOp(acc)
    results = list(loop.results)
    return [results[p * conv.vectors : (p + 1) * conv.vectors] for p in range(pixels)]


def _exchange_masks(lanes: int, bit: int) -> tuple[list[int], list[int]]:
    """``vector.shuffle`` masks of one transpose step: rows ``i`` and
    ``i | bit`` (``bit`` clear in ``i``) trade the elements whose row and
    column differ in ``bit``, element ``(r, c)`` going to ``(r ^ bit, c ^
    bit)`` where ``r`` and ``c`` differ there (operand 2's lanes numbered
    from ``lanes``)."""
    low = [(c & ~bit) + (lanes if c & bit else 0) for c in range(lanes)]
    high = [(c | bit) + (lanes if c & bit else 0) for c in range(lanes)]
    return low, high


def _transpose(rows: list[ir.Value], lanes: int) -> list[ir.Value]:
    """The ``lanes x lanes`` transpose of ``rows`` (``lanes`` vectors of
    ``lanes``, a power of two), in ``log2(lanes)`` steps of ``lanes``
    two-operand shuffles (64 for 16 lanes; one ``vpermt2ps`` or unpack
    each): extracting and reinserting the 256 elements one by one cost the
    ResNet stem's channel-vector kernel a fifth of its time."""
    rows = list(rows)
    bit = lanes // 2
    while bit:
        low, high = _exchange_masks(lanes, bit)
        for i in range(lanes):
            if i & bit:
                continue
            a, b = rows[i], rows[i | bit]
            rows[i], rows[i | bit] = vector.shuffle(a, b, low), vector.shuffle(a, b, high)
        bit //= 2
    return rows


def _channel_rows(products: list[ir.Value], lanes: int) -> list[ir.Value]:
    """Per channel of one vector, its row over the ``P <= lanes`` pixels of
    ``products`` (one vector of ``lanes`` channels per pixel)."""
    pixels = len(products)
    vtype = ir.VectorType(products[0].type)
    zero = arith.ConstantOp(vtype, ir.DenseElementsAttr.get_splat(vtype, ir.FloatAttr.get_f32(0.0)))
    square = _transpose([*products, *[zero.result] * (lanes - pixels)], lanes)
    if pixels == lanes:
        return square
    rtype = ir.VectorType.get([pixels], ir.F32Type.get())
    return [vector.extract_strided_slice(rtype, r, [0], [pixels], [1]) for r in square]


def _store_tile(
    conv: _Conv,
    init: ir.Value,
    part: ir.Value,
    products: list[list[ir.Value]],
    n: ir.Value,
    f0: ir.Value,
    oh: ir.Value,
    ow0: ir.Value,
) -> ir.Value:
    """Write the tile's ``V L`` rows of ``P`` columns into ``part`` (the
    slice ``[n, f0 .. f0 + V L, oh, :]``), with the init added and the
    epilogue applied to each row; the rows transposed from the pixels'
    channel vectors ``L`` pixels at a time."""
    for first in range(0, len(products), conv.lanes):
        group = products[first : first + conv.lanes]
        pixels = len(group)
        col = _plus(ow0, first)
        for v in range(conv.vectors):
            rows = _channel_rows([p[v] for p in group], conv.lanes)
            for lane, row in enumerate(rows):
                channel = v * conv.lanes + lane
                f = _plus(f0, channel)
                at = [index(0), index(channel), index(0), col]  # in the slice
                where = [n, f, oh, col]  # in the whole output
                if conv.accumulate:
                    source, indices = (part, at) if conv.epilogue is None else (init, where)
                    row = arith.addf(read_row(source, indices, pixels), row)
                if conv.epilogue is not None:
                    row = apply_epilogue(conv.epilogue, row, where, f, True)
                part = write_row(row, part, at)
    return part


def _row_chunks(
    conv: _Conv,
    x: ir.Value,
    packed: ir.Value,
    init: ir.Value,
    part: ir.Value,
    n: ir.Value,
    fb: ir.Value,
    oh: ir.Value,
) -> ir.Value:
    """Every register tile of output row ``oh``, channel block ``fb``."""
    f0 = arith.muli(fb, index(conv.block))
    for first, pixels, tiles in conv.chunks():
        loop = scf.ForOp(index(0), index(tiles), index(1), iter_args=[part])
        with ir.InsertionPoint(loop.body):
            ow0 = _plus(arith.muli(loop.induction_variable, index(pixels)), first)
            products = _tile_products(conv, x, packed, n, fb, oh, ow0, pixels)
            updated = _store_tile(conv, init, loop.inner_iter_args[0], products, n, f0, oh, ow0)
            scf.YieldOp([updated])
        part = loop.results[0]
    return part


# -- fused max pool ------------------------------------------------------------


def _clamp(value: ir.Value, last: int) -> ir.Value:
    return arith.minsi(arith.maxsi(value, index(0)), index(last))


def _channel_vector(conv: _Conv, product: ir.Value, f: ir.Value) -> ir.Value:
    """One pixel's channels ``f ..`` with the bias added and the epilogue
    applied, all on the channel vector."""
    if conv.bias is not None:
        product = arith.addf(product, read_row(conv.bias, [f], conv.lanes))
    if conv.epilogue is None:
        return product
    return apply_epilogue(conv.epilogue, product, [], f, True, channels=True)


def _block_rows(
    conv: _Conv, x: ir.Value, packed: ir.Value, local: ir.Value, n: ir.Value, fb: ir.Value
) -> ir.Value:
    """The convolution's rows for channel block ``fb`` of image ``n``,
    epilogue applied, into ``local`` (``[OH, OW, V L]``: each pixel's
    channel vectors stored whole, nothing transposed)."""
    f0 = arith.muli(fb, index(conv.block))
    rows = scf.ForOp(index(0), index(conv.height), index(1), iter_args=[local])
    with ir.InsertionPoint(rows.body):
        oh = rows.induction_variable
        local = rows.inner_iter_args[0]
        for first, pixels, tiles in conv.chunks():
            loop = scf.ForOp(index(0), index(tiles), index(1), iter_args=[local])
            with ir.InsertionPoint(loop.body):
                ow0 = _plus(arith.muli(loop.induction_variable, index(pixels)), first)
                products = _tile_products(conv, x, packed, n, fb, oh, ow0, pixels)
                tile = loop.inner_iter_args[0]
                for p, vectors in enumerate(products):
                    for v, product in enumerate(vectors):
                        value = _channel_vector(conv, product, _plus(f0, v * conv.lanes))
                        at = [oh, _plus(ow0, p), index(v * conv.lanes)]
                        tile = write_row(value, tile, at)
                scf.YieldOp([tile])
            local = loop.results[0]
        scf.YieldOp([local])
    return rows.results[0]


def _window_max(conv: _Conv, local: ir.Value, rows: list[ir.Value], pw: int, v: int) -> ir.Value:
    """Channels ``v L ..`` of pooled column ``pw``: the max over its window,
    rows and columns clamped into the convolution's output (``_covers``)."""
    pool = conv.pool
    assert pool is not None
    first = pw * pool.strides[1] - pool.low[1]
    columns = sorted({min(max(first + j, 0), conv.width - 1) for j in range(pool.window[1])})
    result = None
    for row in rows:
        for column in columns:
            value = read_row(local, [row, index(column), index(v * conv.lanes)], conv.lanes)
            result = value if result is None else arith.maximumf(result, value)
    assert result is not None
    return result


def _pool_block(conv: _Conv, local: ir.Value, part: ir.Value) -> ir.Value:
    """The max pool of one channel block's rows (``local``) into ``part``
    (``[1, V L, PH, PW]``), the pooled pixels' channel vectors transposed
    into rows ``L`` columns at a time."""
    pool = conv.pool
    assert pool is not None
    loop = scf.ForOp(index(0), index(pool.height), index(1), iter_args=[part])
    with ir.InsertionPoint(loop.body):
        ph = loop.induction_variable
        top = arith.muli(ph, index(pool.strides[0]))
        rows = [_clamp(_plus(top, i - pool.low[0]), conv.height - 1) for i in range(pool.window[0])]
        part = loop.inner_iter_args[0]
        for pw0 in range(0, pool.width, conv.lanes):
            count = min(conv.lanes, pool.width - pw0)
            for v in range(conv.vectors):
                pixels = [_window_max(conv, local, rows, pw0 + i, v) for i in range(count)]
                for lane, row in enumerate(_channel_rows(pixels, conv.lanes)):
                    at = [index(0), index(v * conv.lanes + lane), ph, index(pw0)]
                    part = write_row(row, part, at)
        scf.YieldOp([part])
    return loop.results[0]


def _erase_unused_fill(value: ir.Value) -> None:
    fill = value.owner if isinstance(value, ir.OpResult) else None
    if fill is not None and fill.name == "linalg.fill" and not list(fill.results[0].uses):
        fill.erase()


def _rewrite_pooled(conv: _Conv) -> None:
    """One kernel for the convolution, its epilogue and the max pool,
    threaded over (batch, channel block): each block's rows are computed
    into a local channels-last buffer, pooled from there, and only the
    pooled rows transposed into NCHW."""
    pool = conv.pool
    assert pool is not None
    op = conv.op
    x, _, init = op.operands
    f32 = ir.F32Type.get()
    with ir.InsertionPoint(pool.op), op.location:
        packed = _packed_filter(conv)
        blocks = conv.filters // conv.block
        # Every pooled element is written: the -inf fill of the pool's init
        # is not needed (and, kept, it is a serial pass over the output).
        out = tensor.empty(ir.RankedTensorType(pool.op.results[0].type).shape, f32)
        loop = scf.ForallOp([0, 0], [conv.batch, blocks], [1, 1], shared_outs=[out])
        with ir.InsertionPoint(loop.body):
            n, fb = loop.induction_variables
            local = tensor.empty([conv.height, conv.width, conv.block], f32)
            local = _block_rows(conv, x, packed, local, n, fb)
            sizes = [1, conv.block, pool.height, pool.width]
            dynamic = [n, arith.muli(fb, index(conv.block))]
            static = [_DYNAMIC, _DYNAMIC, 0, 0]
            shared = loop.inner_iter_args[0]
            ptype = ir.RankedTensorType.get(sizes, f32)
            part = tensor.ExtractSliceOp(ptype, shared, dynamic, [], [], static, sizes, [1] * 4)
            pooled = _pool_block(conv, local, part.result)
            with ir.InsertionPoint(loop.terminator().block):
                tensor.parallel_insert_slice(
                    pooled, shared, dynamic, [], [], static, sizes, [1] * 4
                )
    pool.op.results[0].replace_all_uses_with(loop.results[0])
    pool_init = pool.op.operands[2]
    pad = [pool.pad] if pool.pad is not None else []
    for dead in (pool.op, *pad, *([conv.epilogue.op] if conv.epilogue else []), op):
        dead.erase()
    _erase_unused_fill(init)
    _erase_unused_fill(pool_init)
    if conv.bias is not None and not list(init.uses):
        init.owner.erase()


def _rewrite(conv: _Conv) -> None:
    op = conv.op
    x, _, init = op.operands
    epilogue = conv.epilogue
    last = epilogue.op if epilogue is not None else op
    # A fused epilogue's operands are all defined before it: build the kernel there.
    with ir.InsertionPoint(last), op.location:
        packed = _packed_filter(conv)
        if epilogue is not None:
            dest = epilogue.op.operands[len(epilogue.op.operands) - 1]
        elif conv.accumulate:
            dest = init
        else:
            shape = [conv.batch, conv.filters, conv.height, conv.width]
            dest = tensor.empty(shape, ir.F32Type.get())
        blocks = conv.filters // conv.block
        loop = scf.ForallOp(
            [0, 0, 0], [conv.batch, blocks, conv.height], [1, 1, 1], shared_outs=[dest]
        )
        with ir.InsertionPoint(loop.body):
            n, fb, oh = loop.induction_variables
            shared = loop.inner_iter_args[0]
            f0 = arith.muli(fb, index(conv.block))
            sizes = [1, conv.block, 1, conv.width]
            ptype = ir.RankedTensorType.get(sizes, ir.F32Type.get())
            dynamic = [n, f0, oh]
            static = [_DYNAMIC, _DYNAMIC, _DYNAMIC, 0]
            part = tensor.ExtractSliceOp(ptype, shared, dynamic, [], [], static, sizes, [1] * 4)
            updated = _row_chunks(conv, x, packed, init, part.result, n, fb, oh)
            with ir.InsertionPoint(loop.terminator().block):
                tensor.parallel_insert_slice(
                    updated, shared, dynamic, [], [], static, sizes, [1] * 4
                )
    last.results[0].replace_all_uses_with(loop.results[0])
    if epilogue is not None:
        last.erase()
    fill = init.owner if isinstance(init, ir.OpResult) else None
    op.erase()
    if fill is not None and not list(fill.results[0].uses) and fill.name == "linalg.fill":
        fill.erase()


def _remark(conv: ir.Operation, plan: _Conv | str) -> Remark:
    flag = VectorizeConvChannels.flag
    if isinstance(plan, str):
        return about(conv, flag, f"not vectorized along channels: {plan}", REFUSAL)
    tiles = " + ".join(f"{t}x{p}" for _, p, t in plan.chunks())
    fused = f", epilogue {describe(plan.epilogue.op)} fused" if plan.epilogue else ""
    if plan.pool is not None:
        fused += f", max pool {describe(plan.pool.op)} fused"
    return about(
        conv,
        flag,
        f"vectorized along output channels: register tiles of {plan.vectors}x{plan.lanes} "
        f"channels x ({tiles}) columns per row{fused}",
    )


@dataclass(frozen=True)
class VectorizeConvChannels(Pass):
    flag = "lowerline-vectorize-conv-channels"
    summary = (
        "NCHW f32 convolutions with narrow or strided rows as outer products of "
        "broadcast inputs and packed channel vectors"
    )
    anchor = "func.func"

    target: str = cpu_target_option()
    accumulators: int = opt(24, "accumulator vectors per register tile (pixels x vectors)")
    keep_winograd: bool = opt(
        True, "leave 3x3 stride-1 convolutions lowerline-winograd-conv takes to it"
    )
    min_channels: int = opt(
        16, "fewest input channels rewritten without a fused max pool (fewer: the row kernels)"
    )
    fuse_max_pool: bool = opt(
        True, "compute a following max pool from each channel block's rows in the same kernel"
    )
    winograd_channels: int = opt(
        16, "lowerline-winograd-conv's min-channels (what keep-winograd leaves to it)"
    )
    explain: bool = opt(
        False, "print each convolution rewritten or refused, and why, to stderr as remarks"
    )

    def run(self, op: ir.Operation) -> None:
        target = resolve_target(cpu_target, self.target, op)
        convs = ops_matching(op, lambda o: o.name == _CONV)
        plans = [(conv, _plan(conv, target, self)) for conv in convs]
        publish([_remark(conv, plan) for conv, plan in plans], self.explain)
        for _, plan in plans:
            if isinstance(plan, str):
                continue
            if plan.pool is not None:
                _rewrite_pooled(plan)
            else:
                _rewrite(plan)
