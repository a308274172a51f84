"""Unit-window register tiles of pooling and convolutions as elementwise generics.

After ``lowerline-tile-and-fuse`` tiles a pooling, depthwise, grouped or
strided/dilated convolution down to a register tile (a block of channels x a
block of output rows x a block of output columns) and its window (and input
channel) loops to steps of 1, every loop of the tile has extent 1 except the
channel, row and column blocks. What is left per step is elementwise along
them, e.g. for a stride-2 depthwise convolution::

    out[c, oh, ow] += w[c] * in[c, 2 * oh, 2 * ow]     (c < cr, oh < rr, ow < nr)

This module rewrites such a tile into a ``linalg.generic`` over the kept
loops only, reading each operand through a rank-reducing (and, for strided
windows, strided) ``tensor.extract_slice``, with the named op's body moved
into it. The generic's maps are projected permutations, so upstream's
generic vectorizer turns it into whole vectors along the output row
(masked for a partial tile) with the accumulators loop-invariant in the
window loops.

A strided row's horizontal window loop (``row_tap_loop``: kw of a
stride-2 convolution or pooling) is left whole in the tile and unrolled
here: one generic with every tap's slices as inputs and the body once per
tap, e.g. for 3 taps::

    out[c, oh, ow] += w0 * in[.., 2 * ow] + w1 * in[.., 2 * ow + 1] + w2 * in[.., 2 * ow + 2]

so that ``deinterleave_strided_reads`` reads each input row once for all
the taps.

Upstream vectorizes convolutions only in 1-D channel-last form
(``Conv1DGenerator``): an NCHW tile is transposed to NWC, and with a
stride the output columns are unrolled one by one, i.e. scalar code for a
block of one channel. Upstream has no rewrite of a unit-window tile into
an elementwise op; this is it. The same rewrite serves every conv-like op
whose operands are indexed by sums of loop dims times constants.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from mlir import ir
from mlir.dialects import arith, linalg, tensor, vector

from lowerline.passes.support.linalg_info import clone_body, indexing_maps
from lowerline.passes.tiling.reduction_chunks import drop_constant_output_dims

_DYNAMIC = ir.ShapedType.get_dynamic_size()


def _terms(expr: ir.AffineExpr) -> tuple[dict[int, int], int] | None:
    """``expr`` as {loop dim: coefficient} plus a constant; None if it is not
    a sum of dims times constants (a floordiv, a mod, a symbol)."""
    if isinstance(expr, ir.AffineDimExpr):
        return {expr.position: 1}, 0
    if isinstance(expr, ir.AffineConstantExpr):
        return {}, expr.value
    if isinstance(expr, ir.AffineAddExpr):
        lhs, rhs = _terms(expr.lhs), _terms(expr.rhs)
        if lhs is None or rhs is None:
            return None
        merged = dict(lhs[0])
        for dim, coefficient in rhs[0].items():
            merged[dim] = merged.get(dim, 0) + coefficient
        return merged, lhs[1] + rhs[1]
    if isinstance(expr, ir.AffineMulExpr):
        lhs, rhs = _terms(expr.lhs), _terms(expr.rhs)
        if lhs is None or rhs is None or (lhs[0] and rhs[0]):
            return None
        terms, scale = (lhs[0], rhs[1]) if lhs[0] else (rhs[0], lhs[1])
        return {dim: c * scale for dim, c in terms.items()}, lhs[1] * rhs[1]
    return None


@dataclass(frozen=True)
class _Kept:
    """One operand dim that survives the rewrite: indexed by loop ``dim``
    times ``stride`` (plus the constant in ``_Operand.offsets``)."""

    result: int  # the operand dim
    dim: int  # the loop it follows
    stride: int


@dataclass(frozen=True)
class _Operand:
    kept: list[_Kept]
    offsets: list[int]  # of every operand dim (the constant terms)


def _loop_extents(op: ir.Operation, maps: list[ir.AffineMap]) -> list[int] | None:
    """Each loop's extent (dynamic marked) from an operand dim it indexes
    alone; None if some loop is indexed by no operand dim alone."""
    extents: list[int | None] = [None] * maps[0].n_dims
    for operand, amap in zip(op.operands, maps, strict=True):
        shape = ir.RankedTensorType(operand.type).shape
        for expr, size in zip(amap.results, shape, strict=True):
            if isinstance(expr, ir.AffineDimExpr) and extents[expr.position] is None:
                extents[expr.position] = size
    found = [e for e in extents if e is not None]
    return found if len(found) == len(extents) else None


def _operand_plan(
    amap: ir.AffineMap, kept_dims: list[int], at: dict[int, int] | None = None
) -> _Operand | None:
    """Which dims of an operand follow a kept loop, and with which stride;
    None when one follows two kept loops (not elementwise). ``at`` gives
    the unrolled loops' values (the other loops of the tile are at 0)."""
    at = at or {}
    kept, offsets = [], []
    for result, expr in enumerate(amap.results):
        found = _terms(expr)
        if found is None:
            return None
        terms, constant = found
        live = [d for d, c in terms.items() if d in kept_dims and c != 0]
        if len(live) > 1:
            return None
        offsets.append(constant + sum(c * at.get(d, 0) for d, c in terms.items()))
        if live:
            kept.append(_Kept(result, live[0], terms[live[0]]))
    return _Operand(kept, offsets)


def _slice(value: ir.Value, plan: _Operand, extents: list[ir.Value | int]) -> ir.Value:
    """The rank-reducing, strided slice of ``value`` that ``plan`` reads."""
    rank = ir.RankedTensorType(value.type).rank
    sizes: list[ir.Value | int] = [1] * rank
    strides = [1] * rank
    for k in plan.kept:
        sizes[k.result] = extents[k.dim]
        strides[k.result] = k.stride
    static = [s if isinstance(s, int) else _DYNAMIC for s in sizes]
    dynamic = [s for s in sizes if not isinstance(s, int)]
    element = ir.RankedTensorType(value.type).element_type
    result = ir.RankedTensorType.get([static[k.result] for k in plan.kept], element)
    return tensor.ExtractSliceOp(
        result, value, [], dynamic, [], plan.offsets, static, strides
    ).result


def _extent_values(op: ir.Operation, maps: list[ir.AffineMap], static: list[int]) -> list:
    """Each loop's extent: the int, or a ``tensor.dim`` where it is dynamic
    (a partial tile), read from an operand dim the loop indexes alone."""
    values: list[ir.Value | int] = list(static)
    for operand, amap in zip(op.operands, maps, strict=True):
        for index, expr in enumerate(amap.results):
            if not isinstance(expr, ir.AffineDimExpr):
                continue
            known = values[expr.position]
            if not isinstance(known, int) or known != _DYNAMIC:
                continue
            if ir.RankedTensorType(operand.type).shape[index] == _DYNAMIC:
                position = arith.ConstantOp(ir.IndexType.get(), index).result
                values[expr.position] = tensor.DimOp(operand, position).result
    return values


# The most window steps one register tile step unrolls (``row_tap_loop``):
# a row of a 7-wide window has 7.
_MOST_TAPS = 8


@dataclass(frozen=True)
class _Steps:
    """A register tile as elementwise steps: the kept loops, every loop's
    extent and, per unrolled step, each operand's plan."""

    kept: list[int]
    extents: list[int]
    plans: list[list[_Operand]]


def _unrolled_steps(extents: list[int], unrolled: list[int]) -> list[dict[int, int]]:
    """Every combination of the unrolled loops' values, in loop order."""
    return [
        dict(zip(unrolled, values, strict=True))
        for values in itertools.product(*(range(extents[d]) for d in unrolled))
    ]


def _kept_plans(op: ir.Operation) -> _Steps | None:
    """The loops with extent other than 1 that the output follows, their
    extents and each operand's plan per step of the other loops of extent
    other than 1 (window loops ``row_tap_loop`` left whole, unrolled);
    None when the tile is not elementwise along the kept loops."""
    maps = indexing_maps(op)
    extents = _loop_extents(op, maps)
    if extents is None:
        return None
    # The kept loops in the order the output indexes them: the generic's
    # output map is then the identity whatever the named op's loop order
    # (a depthwise convolution's is n, oh, ow, c).
    outputs = [e.position for e in maps[-1].results if isinstance(e, ir.AffineDimExpr)]
    kept = [d for d in outputs if extents[d] != 1]
    unrolled = [d for d, e in enumerate(extents) if d not in kept and e != 1]
    if not kept or not _unrollable(maps[-1], extents, unrolled):
        return None  # a window or input-channel loop not tiled to 1
    steps = []
    for at in _unrolled_steps(extents, unrolled):
        plans = [_operand_plan(m, kept, at) for m in maps]
        if any(p is None for p in plans):
            return None
        steps.append([p for p in plans if p is not None])
    out = steps[0][-1]
    if [k.dim for k in out.kept] != kept or any(k.stride != 1 for k in out.kept):
        return None
    return _Steps(kept, extents, steps)


def _unrollable(out_map: ir.AffineMap, extents: list[int], unrolled: list[int]) -> bool:
    """Loops of a static extent that the output does not follow (window
    loops), few enough steps to unroll."""
    if any(extents[d] == _DYNAMIC for d in unrolled):
        return False
    for expr in out_map.results:
        found = _terms(expr)
        if found is None or set(found[0]) & set(unrolled):
            return False
    return int(np.prod([extents[d] for d in unrolled])) <= _MOST_TAPS


def row_tap_loop(op: ir.Operation) -> tuple[int, int] | None:
    """The window loop a register tile step of ``op`` should keep whole and
    unroll, and the input row's stride: the loop indexing the input row
    beside a strided output column (a stride-2 convolution's or pooling's
    kw). Its taps then read one contiguous span of each input row, which
    ``deinterleave_strided_reads`` reads once and shuffles per tap; with a
    loop of steps of 1 every tap reads the row anew (measured: 2 loads of
    16 lanes and a shuffle per FMA, load-bound). None for a stride-1 row,
    channels-last rows (the row is not the input's contiguous axis) or a
    window wider than ``_MOST_TAPS``."""
    maps = indexing_maps(op)
    last = maps[-1].results[-1]
    found = _terms(maps[0].results[-1])
    if not isinstance(last, ir.AffineDimExpr) or found is None:
        return None
    stride = found[0].get(last.position, 0)
    if stride <= 1:
        return None
    outputs = {e.position for e in maps[-1].results if isinstance(e, ir.AffineDimExpr)}
    taps = [d for d, c in found[0].items() if c and d not in outputs]
    extents = _loop_extents(op, maps)
    if extents is None or len(taps) != 1 or not 1 < extents[taps[0]] <= _MOST_TAPS:
        return None
    return taps[0], stride


def unit_window_to_generic(
    op: ir.Operation, mark: Callable[[ir.Operation, list[int]], None]
) -> bool:
    """Rewrite one unit-window tile as an elementwise ``linalg.generic``;
    ``mark(generic, kept_loops)`` leaves the caller's vectorization plan on it.
    Unrolled window steps (``row_tap_loop``) are one generic too: its
    inputs are every step's operands and its body the named op's, once per
    step, each step accumulating into the last one's result (the order of
    the loop it replaces), so the accumulators are read and written once.

    Returns False (and changes nothing) when the tile has another shape.
    """
    found = _kept_plans(op)
    if found is None:
        return False
    maps = indexing_maps(op)
    kept = found.kept
    with ir.InsertionPoint(op), op.location:
        extents = _extent_values(op, maps, found.extents)
        out_plan = found.plans[0][-1]
        inputs, input_maps = [], []
        for plans in found.plans:
            for value, plan in zip(op.operands[:-1], plans, strict=False):
                inputs.append(_slice(value, plan, extents))
                input_maps.append(_kept_map(plan, kept))
        acc = _slice(op.operands[-1], out_plan, extents)
        parallel = ir.Attribute.parse("#linalg.iterator_type<parallel>")
        generic = linalg.GenericOp(
            [acc.type],
            inputs,
            [acc],
            ir.ArrayAttr.get(
                [ir.AffineMapAttr.get(m) for m in [*input_maps, _kept_map(out_plan, kept)]]
            ),
            ir.ArrayAttr.get([parallel] * len(kept)),
        )
        _unrolled_body(op, generic, len(found.plans))
        merged = _insert(generic.results[0], op.operands[-1], out_plan, extents)
    mark(generic.operation, kept)
    op.results[0].replace_all_uses_with(merged)
    op.erase()
    return True


def _kept_map(plan: _Operand, kept: list[int]) -> ir.AffineMap:
    """An operand's map in the generic: its kept dims in kept-loop order."""
    dims = [ir.AffineExpr.get_dim(kept.index(k.dim)) for k in plan.kept]
    return ir.AffineMap.get(len(kept), 0, dims)


def _unrolled_body(op: ir.Operation, generic: linalg.GenericOp, steps: int) -> None:
    """``generic``'s body: ``op``'s, once per step (the step's inputs for its
    input arguments, the previous step's result for its output's)."""
    body = op.regions[0].blocks[0]
    if steps == 1:
        # The named op's body (its block arguments are the operands'
        # elements in the same order) becomes the generic's.
        body.append_to(generic.regions[0])
        _allow_fma(generic.regions[0].blocks[0])
        return
    ins = len(body.arguments) - 1
    types = [a.type for a in body.arguments[:ins]] * steps + [body.arguments[ins].type]
    block = generic.regions[0].blocks.append(*types)
    acc = block.arguments[len(types) - 1]
    with ir.InsertionPoint(block):
        for step in range(steps):
            mapping = {body.arguments[i]: block.arguments[step * ins + i] for i in range(ins)}
            mapping[body.arguments[ins]] = acc
            (acc,) = clone_body(body, mapping)
        linalg.YieldOp([acc])
    _allow_fma(block)


# Float ops whose multiply-add pairs LLVM may fuse into one FMA.
_CONTRACTIBLE = ("arith.mulf", "arith.addf")


def _allow_fma(body: ir.Block) -> None:
    """Let LLVM fuse the body's multiply and add into an FMA
    (``fastmath<contract>``): without the flag a convolution's step is a
    multiply and a dependent add, two instructions and twice the latency
    (measured: a strided 3x3 convolution at half the FMA rate). The rank-1
    updates of the stride-1 kernels are FMAs already (``vector.contract``);
    the only change in results is the rounding of one product, as there."""
    contract = ir.Attribute.parse("#arith.fastmath<contract>")
    for inner in body.operations:
        if inner.name in _CONTRACTIBLE:
            inner.attributes["fastmath"] = contract


def _insert(value: ir.Value, dest: ir.Value, plan: _Operand, extents: list) -> ir.Value:
    """``value`` written back into ``dest`` where ``plan`` read it."""
    rank = ir.RankedTensorType(dest.type).rank
    sizes: list[ir.Value | int] = [1] * rank
    for k in plan.kept:
        sizes[k.result] = extents[k.dim]
    static = [s if isinstance(s, int) else _DYNAMIC for s in sizes]
    dynamic = [s for s in sizes if not isinstance(s, int)]
    return tensor.InsertSliceOp(
        value, dest, [], dynamic, [], plan.offsets, static, [1] * rank
    ).result


def plane_chunks(
    op: ir.Operation, shape: list[int], iterators: list[str], vl: int, chunk: int
) -> list[int]:
    """Tile sizes reducing a plane (global pooling: a mean or max over H x W)
    a row at a time, the row in whole vectors of ``vl`` lanes, with
    ``lowerline.passes.tiling.reduction_chunks``; [] when the innermost axis
    is parallel, there is no outer reduced axis, or the plane fits in
    ``chunk`` elements (one step of partial results).

    reduction_chunks splits only an innermost axis longer than its chunk: a
    56 x 56 plane would otherwise be one ``vector<3136xf32>``.
    """
    if op.name != "linalg.generic" or iterators[-1] != "reduction":
        return []
    reduced = [size for size, it in zip(shape, iterators, strict=True) if it == "reduction"]
    plane = 1
    for size in reduced:
        plane *= size
    if len(reduced) < 2 or plane <= chunk or not drop_constant_output_dims(op):
        return []
    row = -(-shape[-1] // vl) * vl
    return [0 if it == "parallel" else 1 for it in iterators[:-1]] + [row]


def deinterleave_strided_reads(module: ir.Operation) -> int:
    """Vector reads of a slice strided along its contiguous axis (a window
    step of a stride-2 pooling or convolution) as one contiguous read of
    ``stride`` times the lanes and a shuffle per row keeping every
    ``stride``-th lane; returns how many were rewritten.

    Reads of the same input rows at neighbouring offsets (the unrolled
    horizontal taps of a step, ``row_tap_loop``) share one contiguous read
    of the span they cover, each tap its own shuffle of it: a 3-tap
    stride-2 row of 32 lanes is 5 vector loads for its 3 taps, not 12.

    Upstream lowers a transfer of a strided memref lane by lane (a scalar
    load and an insert per lane); a contiguous read is one (masked) vector
    load. Only reads with no mask, or a mask (``vector.mask``) of constant
    sizes that only masks the lanes past the slice's end, are rewritten:
    those lanes read padding either way. Strides of the outer dims (the
    input rows of a register tile of several stride-2 output rows) stay:
    each row is one contiguous read.
    """
    reads = _strided_reads(module)
    groups: dict[tuple, list[ir.Operation]] = {}
    for read, stride in reads:
        groups.setdefault(_row_key(read, stride), []).append(read)
    for key, group in groups.items():
        _deinterleave(group, key[-1])
    return len(reads)


def _value_key(value: ir.Value) -> object:
    """A key equal for the same value or equal constants (the vectorizer
    makes a constant index and padding per read)."""
    owner = value.owner
    if isinstance(owner, ir.Block) or owner.name not in ("arith.constant", "ub.poison"):
        return value
    attrs = [str(owner.attributes[i]) for i in range(len(owner.attributes))]
    return owner.name, *attrs, str(value.type)


def _row_key(read: ir.Operation, stride: int) -> tuple:
    """Reads with equal keys read the same rows of the same tensor at
    different offsets along them, in the same block: one contiguous read
    serves them all."""
    slice_op = read.operands[0].owner
    attrs = [str(slice_op.attributes[name]) for name in ("static_sizes", "static_strides")]
    offsets = list(ir.DenseI64ArrayAttr(slice_op.attributes["static_offsets"]))
    others = [_value_key(v) for v in read.operands[1:]]  # indices, padding
    return (
        slice_op.operands[0],
        *attrs,
        tuple(offsets[:-1]),
        tuple(others),
        str(read.results[0].type),
        str(read.attributes["permutation_map"]),
        read.parent.name == "vector.mask",
        _anchor(read).parent,
        stride,
    )


def _strided_reads(module: ir.Operation) -> list[tuple[ir.Operation, int]]:
    found: list[tuple[ir.Operation, int]] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "vector.transfer_read":
            stride = _read_stride(op)
            if stride:
                found.append((op, stride))
        return ir.WalkResult.ADVANCE

    module.walk(visit)
    return found


def _read_stride(read: ir.Operation) -> int:
    """The stride of the slice ``read`` reads along its last dim when the
    rewrite applies to it; 0 otherwise."""
    source = read.operands[0]
    if isinstance(source.owner, ir.Block) or source.owner.name != "tensor.extract_slice":
        return 0
    slice_op = source.owner
    if len(slice_op.operands) != 1 or not isinstance(source.type, ir.RankedTensorType):
        return 0  # dynamic offsets, sizes or strides
    strides = list(ir.DenseI64ArrayAttr(slice_op.attributes["static_strides"]))
    sizes = list(ir.DenseI64ArrayAttr(slice_op.attributes["static_sizes"]))
    result = ir.RankedTensorType(source.type)
    if strides[-1] <= 1 or not result.rank:
        return 0
    if result.shape[-1] != sizes[-1] or sizes[-1] == 1:
        return 0  # the strided dim is not the result's last
    vtype = ir.VectorType(read.results[0].type)
    if ir.AffineMapAttr(read.attributes["permutation_map"]).value != _read_map(result, vtype):
        return 0
    if len(read.operands) > 2 + result.rank:
        return 0  # a mask operand: lowered from vector.mask already
    # A mask covers the source dims the read reads (not the broadcast ones).
    masked_shape = vtype.shape[_broadcast_dims(result, vtype) :]
    masked = read.parent.name == "vector.mask"
    if masked and _mask_sizes(read.parent.operands[0]) != [*masked_shape[:-1], sizes[-1]]:
        return 0
    return strides[-1]


def _broadcast_dims(source: ir.RankedTensorType, vtype: ir.VectorType) -> int:
    """Leading vector dims a read broadcasts (a strided convolution's input
    row read for every output channel of the tile)."""
    return max(0, vtype.rank - source.rank)


def _read_map(source: ir.RankedTensorType, vtype: ir.VectorType) -> ir.AffineMap | None:
    """The permutation map of a read the rewrite takes: the minor identity,
    or a 1-D row broadcast along leading vector dims; None for others."""
    lead = _broadcast_dims(source, vtype)
    if not lead:
        return ir.AffineMap.get_minor_identity(source.rank, vtype.rank)
    if source.rank != 1:
        return None
    zero = ir.AffineConstantExpr.get(0)
    return ir.AffineMap.get(1, 0, [zero] * lead + [ir.AffineDimExpr.get(0)])


def _mask_sizes(mask: ir.Value) -> list[int] | None:
    """The constant sizes of a ``vector.create_mask``; None for another mask."""
    if isinstance(mask.owner, ir.Block) or mask.owner.name != "vector.create_mask":
        return None
    sizes = []
    for size in mask.owner.operands:
        if isinstance(size.owner, ir.Block) or size.owner.name != "arith.constant":
            return None
        sizes.append(ir.IntegerAttr(size.owner.attributes["value"]).value)
    return sizes


def _deinterleave(reads: list[ir.Operation], stride: int) -> None:
    """Replace ``reads`` (one key of ``_row_key``, in program order) with
    one contiguous read of the span of the rows they cover and a shuffle
    per read keeping its lanes."""
    first = reads[0]
    slice_op = first.operands[0].owner
    narrow = ir.RankedTensorType(first.operands[0].type)
    rank = narrow.rank
    starts = [_last_offset(r) for r in reads]
    base = min(starts)
    offsets = list(ir.DenseI64ArrayAttr(slice_op.attributes["static_offsets"]))
    offsets[-1] = base
    sizes = list(ir.DenseI64ArrayAttr(slice_op.attributes["static_sizes"]))
    sizes[-1] = (sizes[-1] - 1) * stride + 1 + max(starts) - base
    vtype = ir.VectorType(first.results[0].type)
    lead = _broadcast_dims(narrow, vtype)
    row = ir.VectorType.get(vtype.shape[lead:], vtype.element_type)
    lanes = vtype.shape[-1]
    width = _read_width(max(starts) - base + (lanes - 1) * stride + 1, lanes)
    wide = ir.VectorType.get([*row.shape[:-1], width], vtype.element_type)
    in_bounds = [bool(ir.BoolAttr(b).value) for b in ir.ArrayAttr(first.attributes["in_bounds"])]
    in_bounds = in_bounds[lead:]
    in_bounds[-1] = False  # the lanes past the slice's end read padding
    indices = list(first.operands[1 : 1 + rank])
    padding = first.operands[1 + rank]
    anchor = _anchor(first)
    with ir.InsertionPoint(anchor), first.location:
        dense = ir.RankedTensorType.get([*narrow.shape[:-1], sizes[-1]], narrow.element_type)
        # The outer dims keep their strides (a register tile of several
        # output rows reads every ``stride``-th input row): each row is
        # still one contiguous read.
        strides = list(ir.DenseI64ArrayAttr(slice_op.attributes["static_strides"]))
        contiguous = tensor.ExtractSliceOp(
            dense, slice_op.operands[0], [], [], [], offsets, sizes, [*strides[:-1], 1]
        ).result
        step = arith.ConstantOp(ir.IndexType.get(), stride).result
        indices[-1] = arith.MulIOp(indices[-1], step).result
        whole = vector.TransferReadOp(
            wide,
            contiguous,
            indices,
            ir.AffineMapAttr.get(ir.AffineMap.get_minor_identity(rank, row.rank)),
            padding,
            ir.ArrayAttr.get([ir.BoolAttr.get(b) for b in in_bounds]),
        ).result
    for read, start in zip(reads, starts, strict=True):
        _replace_with_lanes(
            read, whole, row, [start - base + lane * stride for lane in range(lanes)]
        )


def _read_width(needed: int, lanes: int) -> int:
    """Lanes of the contiguous read of a span of ``needed`` elements for
    tiles of ``lanes``: a power-of-two count of tiles. Lanes past the span
    are masked off, never loaded. LLVM builds shuffles out of other widths
    lane by lane (measured: a 3x3 stride-2 max pool reading 48-lane rows
    for 16-lane tiles, 27 unpacks and 51 inserts per step)."""
    tiles = -(-needed // lanes)
    return lanes * (1 << (tiles - 1).bit_length())


def _last_offset(read: ir.Operation) -> int:
    """Where along its rows the strided slice ``read`` reads starts."""
    attrs = read.operands[0].owner.attributes
    return list(ir.DenseI64ArrayAttr(attrs["static_offsets"]))[-1]


def _anchor(read: ir.Operation) -> ir.Operation:
    """The op a read's value comes out of: its ``vector.mask`` if masked."""
    return read.parent if read.parent.name == "vector.mask" else read


def _replace_with_lanes(
    read: ir.Operation, whole: ir.Value, row: ir.VectorType, picks: list[int]
) -> None:
    """Replace ``read`` (with its mask) by the lanes ``picks`` of each row of
    ``whole``, broadcast like the read."""
    vtype = ir.VectorType(read.results[0].type)
    padding = read.operands[1 + ir.RankedTensorType(read.operands[0].type).rank]
    anchor = _anchor(read)
    with ir.InsertionPoint(anchor), read.location:
        result = _pick_lanes(whole, row, picks, padding)
        if vtype.rank > row.rank:
            result = vector.broadcast(vtype, result)
    anchor.results[0].replace_all_uses_with(result)
    anchor.erase()


def _pick_lanes(
    whole: ir.Value, vtype: ir.VectorType, picks: list[int], padding: ir.Value
) -> ir.Value:
    """Every row of ``whole`` shuffled down to the lanes ``picks``."""
    if vtype.rank == 1:
        return vector.shuffle(whole, whole, picks)
    result = vector.broadcast(vtype, padding)
    for row in np.ndindex(*vtype.shape[:-1]):
        position = [int(i) for i in row]
        lanes = vector.extract(whole, [], position)
        picked = vector.shuffle(lanes, lanes, picks)
        result = vector.insert(picked, result, [], position)
    return result
