"""``lowerline-sink-qdq-through-layout-ops``: layout ops between quantized
layers move onto the stored 8-bit integers, and the quantize/dequantize
pairs they leave behind disappear, so a chain of quantized layers stays in
8 bits from one kernel to the next.

A layout op (``linalg.transpose``, ``tensor.collapse_shape`` /
``expand_shape``, ``tensor.pad`` with a constant, ``linalg.pooling_nchw_max``
over a constant fill, ``tensor.concat``, a static ``tensor.extract_slice``)
commutes with a per-tensor quantize or dequantize: it moves elements and,
for max pooling, picks the largest, which a monotone map preserves. Three
rewrites, to a fixed point::

    %q = quantize(L(%y))            ==>  L'(quantize(%y))           (hoist)
    L(dequantize(%x))               ==>  dequantize(L'(%x))         (sink)
    quantize(dequantize(%x))        ==>  %x   (same scale, zero point, type)

``L'`` is ``L`` on i8 with its constants mapped: a pad or fill value ``v``
becomes ``quantize(v)`` when hoisting (``-inf`` becomes the clamp's low
end), and when sinking must be exactly ``dequantize(p)`` of a stored ``p``
(0.0 is the zero point), else nothing moves. A u8 max pooling runs on the
values flipped to s8 (``xori 0x80``, monotone), since
``linalg.pooling_nchw_max`` compares signed. A concat sinks only when every
input is dequantized with the same parameters.

In torch-mlir's lowering of a PT2E model (X86InductorQuantizer), a
convolution's ReLU output goes through max pooling before the next
quantize, and the next convolution pads its dequantized input with 0.0:
hoisting and sinking make both integer, which lets lowerline-fold-qdq-conv
see ``dequantize`` right at each convolution. XNNPACKQuantizer's
``quantize -> dequantize -> L -> quantize -> dequantize`` (shared
parameters) becomes ``L'`` between the stored integers.
``lowerline.quant.Int8`` gives q, k and v the in-projection's parameters:
torch-mlir's ``dequantize -> extract_slice -> quantize`` per head input
becomes a slice of the stored integers (a slice only sinks: hoisting a
quantize above it would quantize the whole tensor for a part of it).

Upstream MLIR has no such rewrite: the ``quant`` dialect is not what
torch-mlir emits (quantize and dequantize are arith in ``linalg.generic``s),
and ``canonicalize`` would erase ``dcast(qcast(x))``, the lossy order, not
``qcast(dcast(x))``, the exact one removed here.

Not moved: per-channel parameters, dequantized constants (weights, which
the folds read where they are), a layout op whose result has other users
(hoisting), pad or fill values a stored integer cannot give (sinking), max
pooling with a fill other than ``-inf`` (sinking), and a quantize after a
slice (hoisting).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from mlir import ir
from mlir.dialects import linalg, tensor

from lowerline.passes.graph import qdq_ops
from lowerline.passes.graph.fold_qdq_conv import keep_window_attributes
from lowerline.passes.graph.fold_qdq_matmul import (
    Affine,
    Requantize,
    _defining,
    _erase_dead,
    _only_user,
    match_dequantize,
    match_requantize,
)
from lowerline.passes.support.ir_constants import constant_attr
from lowerline.pipeline.pass_api import Pass, ops_matching

# A float constant of the layout op (pad value, pooling fill) to the i8 one
# its integer twin uses, or None when no stored integer stands for it.
ValueMap = Callable[[float], "int | None"]

_LAYOUT = (
    "linalg.transpose",
    "tensor.collapse_shape",
    "tensor.expand_shape",
    "tensor.pad",
    "linalg.pooling_nchw_max",
    "tensor.concat",
    "tensor.extract_slice",
)


def _float_inputs(op: ir.Operation) -> list[ir.Value]:
    """The tensors ``op`` moves: every operand but the inits and the window."""
    if op.name == "tensor.concat":
        return list(op.operands)
    return [op.operands[0]]


def _scalar_constant(value: ir.Value) -> float | None:
    attr = constant_attr(value)
    return ir.FloatAttr(attr).value if isinstance(attr, ir.FloatAttr) else None


def _pad_value(pad: ir.Operation) -> float | None:
    block = pad.regions[0].blocks[0]
    yielded = list(block.operations)[-1].operands[0]
    if not isinstance(yielded, ir.OpResult):
        return None
    return _scalar_constant(yielded)


def _fill_value(pool: ir.Operation) -> float | None:
    fill = _defining(pool.operands[2], "linalg.fill")
    return _scalar_constant(fill.operands[0]) if fill is not None else None


def _like(value: ir.Value, shape_of: ir.Value) -> ir.RankedTensorType:
    """``shape_of``'s shape with ``value``'s element type."""
    element = ir.RankedTensorType(value.type).element_type
    return ir.RankedTensorType.get(ir.RankedTensorType(shape_of.type).shape, element)


def _integer_pad(pad: ir.Operation, source: ir.Value, stored: int) -> ir.Value:
    result = _like(source, pad.results[0])
    new = tensor.PadOp(
        result,
        source,
        [],
        [],
        pad.attributes["static_low"],
        pad.attributes["static_high"],
    )
    index = ir.IndexType.get()
    block = new.regions[0].blocks.append(*[index] * result.rank)
    with ir.InsertionPoint(block):
        tensor.YieldOp(qdq_ops.i8_constant(stored))
    return new.result


def _integer_pool(pool: ir.Operation, source: ir.Value, stored: int, unsigned: bool) -> ir.Value:
    """Max pooling of the i8 ``source`` from a fill of ``stored``; a u8
    source is compared as s8 after flipping its sign bit, and flipped back."""
    if unsigned:
        source, stored = qdq_ops.flip_sign_bit(source), stored ^ 0x80
    result = _like(source, pool.results[0])
    init = tensor.EmptyOp(result.shape, result.element_type).result
    filled = linalg.fill(qdq_ops.i8_constant(stored), outs=[init])
    window = tensor.EmptyOp(ir.RankedTensorType(pool.operands[1].type).shape, qdq_ops.i8_type())
    pooled = keep_window_attributes(
        pool, linalg.pooling_nchw_max(source, window.result, outs=[filled])
    )
    return qdq_ops.flip_sign_bit(pooled) if unsigned else pooled


def _integer_slice(op: ir.Operation, source: ir.Value) -> ir.Value:
    """``op``'s static slice (rank-reducing or not) of the i8 ``source``."""
    view = op.opview
    return tensor.ExtractSliceOp(
        _like(source, op.results[0]), source, [], [], [],
        view.static_offsets, view.static_sizes, view.static_strides,
    ).result  # fmt: skip


def _integer_twin(
    op: ir.Operation, sources: list[ir.Value], to_int: ValueMap, unsigned: bool
) -> ir.Value | None:
    """``op`` on the i8 ``sources`` in place of its float inputs, or None
    when one of its constants has no integer counterpart."""
    source = sources[0]
    if op.name == "linalg.transpose":
        init = tensor.EmptyOp(ir.RankedTensorType(op.results[0].type).shape, qdq_ops.i8_type())
        permutation = op.attributes["permutation"]
        return linalg.transpose(source, outs=[init.result], permutation=permutation).results[0]
    if op.name == "tensor.collapse_shape":
        result = _like(source, op.results[0])
        return tensor.CollapseShapeOp(result, source, op.attributes["reassociation"]).result
    if op.name == "tensor.expand_shape":
        result = _like(source, op.results[0])
        static = op.attributes["static_output_shape"]
        return tensor.ExpandShapeOp(
            result, source, op.attributes["reassociation"], [], static
        ).result
    if op.name == "tensor.concat":
        return tensor.ConcatOp(_like(source, op.results[0]), op.attributes["dim"], sources).result
    if op.name == "tensor.extract_slice":
        return _integer_slice(op, source)
    value = _pad_value(op) if op.name == "tensor.pad" else _fill_value(op)
    stored = to_int(value) if value is not None else None
    if stored is None:
        return None
    if op.name == "tensor.pad":
        return _integer_pad(op, source, stored)
    return _integer_pool(op, source, stored, unsigned)


def _movable(op: ir.Operation) -> bool:
    """Static shapes: a pad, expand_shape or extract_slice with no operand but
    its source (dynamic pad sizes, output sizes or slice offsets are operands
    the twin does not take)."""
    if op.name in ("tensor.pad", "tensor.expand_shape", "tensor.extract_slice"):
        return len(op.operands) == 1
    return True


def _replace(op: ir.Operation, value: ir.Value, producers: list[ir.Operation]) -> None:
    """``op``'s uses to ``value``; ``op`` erased, ``producers`` too where dead.
    ``op`` goes at once, as a dead layout op would match again."""
    op.results[0].replace_all_uses_with(value)
    op.erase()
    _erase_dead(producers)


def _hoist_quantize(op: ir.Operation) -> bool:
    """``quantize(L(y)) -> L'(quantize(y))``."""
    if op.name == "tensor.extract_slice":
        return False  # it would quantize all of ``y`` for a part of it
    user = _only_user(op.results[0])
    if user is None:
        return False
    q: Requantize | None = match_requantize(user)
    if q is None or q.scale <= 0:
        return False
    with ir.InsertionPoint(user), user.location:
        sources = [qdq_ops.quantize(q, v) for v in _float_inputs(op)]
        twin = _integer_twin(op, sources, lambda v: qdq_ops.quantized(q, v), q.unsigned)
        if twin is None:
            _erase_dead([s.owner for s in sources])
            return False
    _replace(user, twin, [])
    op.erase()
    return True


def _common_dequantize(op: ir.Operation) -> tuple[Affine, list[ir.Value]] | None:
    """The per-tensor dequantize every float input of ``op`` comes from."""
    found = [match_dequantize(v, rank=None) for v in _float_inputs(op)]
    first = found[0]
    if first is None or first.axis is not None or first.scale[0] <= 0:
        return None
    if _defining(first.source, "arith.constant") is not None:
        return None  # a weight: the folds read it at compile time where it is
    same = all(
        a is not None
        and a.axis is None
        and a.unsigned == first.unsigned
        and np.float32(a.scale[0]) == np.float32(first.scale[0])
        and a.zero_point[0] == first.zero_point[0]
        for a in found
    )
    return (first, [a.source for a in found if a is not None]) if same else None


def _sink_dequantize(op: ir.Operation) -> bool:
    """``L(dequantize(x)) -> dequantize(L'(x))``."""
    found = _common_dequantize(op)
    if found is None:
        return False
    x, sources = found
    if op.name == "linalg.pooling_nchw_max" and _fill_value(op) != -np.inf:
        return False
    low = qdq_ops.type_range(x.unsigned)[0]

    def to_int(value: float) -> int | None:
        # A -inf fill of a max pooling is the type's least value.
        return low if value == -np.inf else qdq_ops.integer_for(x, value)

    dequantizes = [v.owner for v in _float_inputs(op)]
    with ir.InsertionPoint(op), op.location:
        twin = _integer_twin(op, sources, to_int, x.unsigned)
        if twin is None:
            return False
        result = qdq_ops.dequantize(x, twin)
    _replace(op, result, dequantizes)
    return True


def _drop_requantize_of_dequantize(op: ir.Operation) -> bool:
    """``quantize(dequantize(x)) -> x`` with the same parameters."""
    q = match_requantize(op)
    x = match_dequantize(op.operands[0], rank=None) if q is not None else None
    if q is None or x is None or not qdq_ops.same_parameters(q, x):
        return False
    _replace(op, x.source, [op.operands[0].owner])
    return True


def _rewrite_once(func: ir.Operation) -> bool:
    """One rewrite anywhere in ``func``; True when something changed."""
    for op in ops_matching(func, lambda c: c.name in _LAYOUT):
        if not _movable(op) or str(ir.RankedTensorType(op.results[0].type).element_type) != "f32":
            continue
        if _hoist_quantize(op) or _sink_dequantize(op):
            return True
    generics = ops_matching(func, lambda c: c.name == "linalg.generic")
    return any(_drop_requantize_of_dequantize(op) for op in generics)


@dataclass(frozen=True)
class SinkQdqThroughLayoutOps(Pass):
    flag = "lowerline-sink-qdq-through-layout-ops"
    summary = "Move reshapes, transposes, pads, max pooling and concats onto quantized integers"
    anchor = "func.func"

    def run(self, op: ir.Operation) -> None:
        while _rewrite_once(op):
            pass
