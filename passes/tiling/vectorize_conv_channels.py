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
lowerline-winograd-conv takes (``keep-winograd``) are left to it.

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
from lowerline.passes.support.linalg_info import describe
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
    if flt.shape[1] < options.min_channels:
        # The ResNet stem (3 channels, 7x7 stride 2, 64 x 64, BN + ReLU + max
        # pool), one thread: 90 us with the row kernels (column phases,
        # lowerline-split-strided-columns), 133 us with this; 16 channels at
        # 3x3 stride 2 were 30% faster with this.
        return f"{flt.shape[1]} input channels: below min-channels={options.min_channels}"
    if window == [1, 1]:
        # No input element serves two taps: the broadcasts are as many as the
        # multiplies' vectors, and the row kernels (a 1x1 stride-1 plane as one
        # long row, lowerline-pointwise-conv-rows) were faster (1x1 stride 2,
        # 64 -> 128 channels at 56 x 56, one thread: 71 -> 86 us).
        return "a 1x1 window"
    if not _narrow_or_strided(ow, strides[1], lanes):
        return f"{ow}-wide unit-stride rows: whole vectors for the direct kernels"
    array = constant_filter(op)
    if array is None:
        return "the filter is not a constant with known bytes"
    vectors = 2 if f % (2 * lanes) == 0 else 1
    pixels = max(1, _accumulators(target, vectors, window[1], options.accumulators) // vectors)
    accumulate = not zero_init(op.operands[2])
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
        find_epilogue(op),
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
        for kw in range(kw_count):
            w = [read_row(packed, [b, c, kh, index(kw), index(0)], conv.lanes) for b in blocks]
            for p in range(pixels):
                element = tensor.extract(x, [n, c, row, _plus(col0, p * sw + kw * dw)])
                xs = vector.broadcast(vtype, element)
                for v in range(conv.vectors):
                    acc[p * conv.vectors + v] = vector.fma(xs, w[v], acc[p * conv.vectors + v])
        scf.YieldOp(acc)
    results = list(loop.results)
    return [results[p * conv.vectors : (p + 1) * conv.vectors] for p in range(pixels)]


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
    epilogue applied to each row."""
    pixels = len(products)
    rtype = ir.VectorType.get([pixels], ir.F32Type.get())
    for v in range(conv.vectors):
        for lane in range(conv.lanes):
            channel = v * conv.lanes + lane
            scalars = [vector.extract(products[p][v], [], [lane]) for p in range(pixels)]
            row = vector.from_elements(rtype, scalars)
            f = _plus(f0, channel)
            at = [index(0), index(channel), index(0), ow0]  # in the slice
            where = [n, f, oh, ow0]  # in the whole output
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
    min_channels: int = opt(16, "fewest input channels rewritten (fewer: the row kernels)")
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
            if not isinstance(plan, str):
                _rewrite(plan)
