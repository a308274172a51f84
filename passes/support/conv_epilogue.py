"""What the hand-written convolution kernels (lowerline-winograd-conv,
lowerline-vectorize-conv-channels) share: the constant filter they pack at
compile time, whether the init is a zero fill or a bias to add, vector row
reads and writes on tensors, and the elementwise epilogue (batch norm, ReLU,
a residual add) that they apply to each output row before storing it, in
place of a pass of its own over the result.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mlir import ir
from mlir.dialects import arith, tensor, vector

from lowerline import weights
from lowerline.passes.support.ir_constants import constant_attr
from lowerline.passes.support.linalg_info import all_parallel, indexing_maps

_ELEMENTWISE_DIALECTS = ("arith", "math")


@dataclass
class ConvFilter:
    """A ``linalg.conv_2d_nchw_fchw`` and its filter's elements (F x C x KH x KW)."""

    op: ir.Operation
    filter: np.ndarray

    @property
    def channels(self) -> int:
        return self.filter.shape[1]

    @property
    def filters(self) -> int:
        return self.filter.shape[0]


@dataclass
class Epilogue:
    """The convolution's only user, an elementwise ``linalg.generic`` that
    reads it element for element, applied to each output row by
    ``apply_epilogue``."""

    op: ir.Operation
    kinds: list[str]  # per input: "conv" (the result), "row" (same shape), "channel" ([f])


def _operand_kind(value: ir.Value, amap: ir.AffineMap, conv: ir.Value) -> str | None:
    out = ir.RankedTensorType(conv.type)
    identity = ir.AffineMap.get_identity(out.rank)
    channel = ir.AffineMap.get(out.rank, 0, [ir.AffineDimExpr.get(1)])
    if value == conv and amap == identity:
        return "conv"
    if value.type == out and amap == identity:
        return "row"
    per_channel = ir.RankedTensorType.get([out.shape[1]], out.element_type)
    if value.type == per_channel and amap == channel:
        return "channel"
    return None


def find_epilogue(conv: ir.Operation) -> Epilogue | None:
    """The elementwise consumer ``apply_epilogue`` can fuse, if any."""
    uses = list(conv.results[0].uses)
    if len(uses) != 1 or uses[0].owner.name != "linalg.generic":
        return None
    op = uses[0].owner
    out = ir.RankedTensorType(conv.results[0].type)
    if len(op.results) != 1 or op.results[0].type != out or not all_parallel(op):
        return None
    maps = indexing_maps(op)
    kinds = [
        _operand_kind(value, amap, conv.results[0])
        for value, amap in zip(op.operands[:-1], maps, strict=False)
    ]
    if None in kinds:
        return None
    known = [kind for kind in kinds if kind is not None]
    body = op.regions[0].blocks[0]
    if maps[-1] != ir.AffineMap.get_identity(out.rank) or list(body.arguments[len(known)].uses):
        return None  # writes elsewhere, or reads its destination
    for inner in list(body.operations)[:-1]:
        if inner.name.split(".")[0] not in _ELEMENTWISE_DIALECTS or len(inner.regions):
            return None
    return Epilogue(op, known)


def zero_init(init: ir.Value) -> bool:
    """``init`` is a ``linalg.fill`` of the constant 0.0."""
    if not isinstance(init, ir.OpResult) or init.owner.name != "linalg.fill":
        return False
    attr = constant_attr(init.owner.operands[0])
    return isinstance(attr, ir.FloatAttr) and ir.FloatAttr(attr).value == 0.0


def constant_filter(op: ir.Operation) -> np.ndarray | None:
    """The filter's elements when it is a constant whose bytes are known."""
    attr = constant_attr(op.operands[1])
    if attr is None:
        return None
    return weights.value_of(attr, ir.RankedTensorType(op.operands[1].type))


def index(value: int) -> ir.Value:
    return arith.ConstantOp(ir.IndexType.get(), value).result


def _in_bounds(inside: bool) -> ir.ArrayAttr:
    return ir.ArrayAttr.get([ir.BoolAttr.get(inside)])


def _along(rank: int, across: bool) -> ir.AffineMap:
    """The map of a vector along the innermost dim, or with ``across`` along
    the one before it (a tiles-major plane's tiles)."""
    if across:
        return ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(rank - 2)])
    return ir.AffineMap.get_minor_identity(rank, 1)


def read_row(
    source: ir.Value,
    indices: list[ir.Value],
    count: int,
    inside: bool = True,
    across: bool = False,
) -> ir.Value:
    """``count`` contiguous elements along the innermost dim of ``source``
    (``across``: the dim before it); zeros past its end unless ``inside``
    (statically within bounds)."""
    stype = ir.RankedTensorType(source.type)
    vtype = ir.VectorType.get([count], stype.element_type)
    row = _along(stype.rank, across)
    pad = arith.ConstantOp(stype.element_type, 0.0).result
    return vector.transfer_read(vtype, source, indices, row, pad, _in_bounds(inside))


def write_row(
    value: ir.Value,
    dest: ir.Value,
    indices: list[ir.Value],
    inside: bool = True,
    across: bool = False,
) -> ir.Value:
    """``value`` along the innermost dim of ``dest`` (``across``: the dim
    before it); the lanes past its end dropped unless ``inside``."""
    row = _along(ir.RankedTensorType(dest.type).rank, across)
    return vector.transfer_write(dest.type, value, dest, indices, row, _in_bounds(inside))


def apply_epilogue(
    epilogue: Epilogue,
    row: ir.Value,
    where: list[ir.Value],
    f: ir.Value,
    inside: bool,
    channels: bool = False,
) -> ir.Value:
    """The epilogue's body on one output row: its scalar ops cloned on vectors
    of the row's length; per-channel operands broadcast, same-shape ones read
    at the row (``where``, channel ``f``). With ``channels``, ``row`` is a
    vector of channels ``f ..`` of one pixel instead: per-channel operands
    are read as vectors there (the epilogue must have no same-shape ones)."""
    op = epilogue.op
    count = ir.VectorType(row.type).shape[0]
    body = op.regions[0].blocks[0]

    def vectors_of(scalar: ir.Type) -> ir.VectorType:
        return ir.VectorType.get([count], scalar)

    values: dict[ir.Value, ir.Value] = {}
    for arg, kind, operand in zip(body.arguments, epilogue.kinds, op.operands, strict=False):
        if kind == "conv":
            values[arg] = row
        elif kind == "row":
            assert not channels, "a same-shape operand has no channel vectors"
            values[arg] = read_row(operand, where, count, inside)
        elif channels:
            values[arg] = read_row(operand, [f], count)
        else:
            values[arg] = vector.broadcast(vectors_of(arg.type), tensor.extract(operand, [f]))

    def vectorized(value: ir.Value) -> ir.Value:
        if value in values:
            return values[value]
        # Defined outside the region (a constant): the same scalar in every lane.
        return vector.broadcast(vectors_of(value.type), value)

    for inner in list(body.operations)[:-1]:
        if inner.name == "arith.constant":
            scalar = inner.operation.clone()
            values[inner.results[0]] = vector.broadcast(
                vectors_of(inner.results[0].type), scalar.results[0]
            )
            continue
        clone = ir.Operation.create(
            inner.name,
            results=[vectors_of(r.type) for r in inner.results],
            operands=[vectorized(v) for v in inner.operands],
            attributes={name: inner.attributes[name] for name in inner.attributes},
        )
        for old, new in zip(inner.results, clone.results, strict=True):
            values[old] = new
    return vectorized(list(body.operations)[-1].operands[0])
