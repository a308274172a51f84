"""``lowerline-fold-qdq-conv``: a convolution of dequantized int8 operands
becomes an integer convolution with an i32 accumulator and a requantize
epilogue, as lowerline-fold-qdq-matmul does for linear layers.

torch-mlir lowers a PT2E-quantized ``Conv2d`` to a float named convolution
of a dequantized activation and a dequantized constant weight (per tensor or
per output channel), its bias broadcast into the init, then ReLU or a clamp
(ReLU6, hardtanh; folded into the quantize's range as lowerline-fold-qdq-matmul
does) and the next quantize. Dense (strided, dilated), grouped (``conv_2d_ngchw_gfchw``
between ``expand_shape``s and a ``collapse_shape``) and depthwise
(``depthwise_conv_2d_nchw_chw``) convolutions fold::

    %xd = dequantize(%xq)                       // per tensor, zx, sx
    %wd = dequantize(%w)  [-> expand/collapse]  // constant, per channel zw, sw
    %b = linalg.broadcast %bias | linalg.fill 0.0
    %c = linalg.conv_2d_nchw_fchw ins(%xd, %wd) outs(%b) [-> collapse_shape]
    %r = relu(%c) | clamp(%c, lo, hi) ; %q = quantize(%r)
        ==>
    %xs = generic {xori 128}(%xq)              // u8 -> s8: x - 128
    %acc = linalg.conv_2d_nchw_fchw ins(%xs, %w' : i8, i8 constant) outs(fill 0 : i32)
    %q = generic {addi c[f], sitofp, mulf m[f], roundeven, addf zy,
                  clamp q(lo)..q(hi), fptoui}(%acc)  [-> collapse_shape]

with ``w' = w - zw`` (refused when it leaves int8), per output channel ``f``
the correction ``c[f] = -(zx - 128) * sum(w'[f]) + round(bias[f] / (sx * sw[f]))``
(weight sums taken here, the bias in i32) and the multiplier
``m[f] = sx * sw[f] / sy``. The named convolutions sign-extend both
operands, hence the shift of u8 activations (its effect is in ``c[f]``).
Without a quantize after it the epilogue is float:
``(acc + c[f]) * sx * sw[f] + bias[f]``.

Padding: torch-mlir pads the *dequantized* activation with 0.0;
lowerline-sink-qdq-through-layout-ops (run before this pass in the graph
stage) moves that pad onto the integers with the zero point as its value,
so every element of the window, padding included, contributes
``(x - zx) * w'`` and the correction stays one constant per channel. A
convolution still reading a float pad is not folded.

Upstream has no such fold (see lowerline-fold-qdq-matmul's docstring).

Not folded (the float convolution stays, which is exact): activations
quantized per channel, weights or parameters that are not constants, scales
along another axis than the output channels, a float op between a
dequantize and the convolution, intermediates with other users, and
corrections that leave i32.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from mlir import ir
from mlir.dialects import arith, linalg, tensor

from lowerline import weights
from lowerline.passes.graph import qdq_ops
from lowerline.passes.graph.fold_qdq_matmul import (
    CLAMP_AND_REQUANTIZE,
    Affine,
    Epilogue,
    Plan,
    _constant_array,
    _defining,
    _epilogue_body,
    _float_zero_fill,
    _generic,
    _vector_constant,
    epilogue_constants,
    fold_each,
    follow_epilogue,
    match_dequantize,
    one_op,
    outside_producers,
    replace_ops,
)
from lowerline.pipeline.pass_api import Pass

# Named convolution -> (its Python builder, the output dims its output
# channels span: a grouped convolution's are (g, f)).
_CONVOLUTIONS: dict[str, tuple[Callable, tuple[int, ...]]] = {
    "linalg.conv_2d_nchw_fchw": (linalg.conv_2d_nchw_fchw, (1,)),
    "linalg.conv_2d_ngchw_gfchw": (linalg.conv_2d_ngchw_gfchw, (1, 2)),
    "linalg.depthwise_conv_2d_nchw_chw": (linalg.depthwise_conv_2d_nchw_chw, (1,)),
}
_RESHAPES = ("tensor.expand_shape", "tensor.collapse_shape")


@dataclass
class ConvPlan(Plan):
    """A matmul fold's plan for convolution ``conv``: the weight ``w`` is
    ``w - zw`` in the convolution's operand shape, the per-column constants
    run along the output channels in order, and the grouped convolution's
    ``collapse_shape`` (``epilogue.collapse``) is applied to the epilogue's
    result."""

    conv: ir.Operation


def _through_reshape(value: ir.Value) -> ir.Value:
    """The value a reshape (expand or collapse) reads, or ``value`` itself."""
    if isinstance(value, ir.OpResult) and value.owner.name in _RESHAPES:
        return value.owner.operands[0]
    return value


def _weight(value: ir.Value) -> tuple[Affine, np.ndarray, ir.Attribute] | None:
    """The dequantized constant weight (output channels first) and
    ``w - zw`` in the shape ``value`` has; scales must run along the output
    channels (axis 0) or be one per tensor."""
    affine = match_dequantize(_through_reshape(value), rank=None)
    stored = _constant_array(affine.source) if affine is not None else None
    if affine is None or stored is None or affine.axis not in (None, 0):
        return None
    shape = [stored.shape[0]] + [1] * (stored.ndim - 1)
    shifted = stored.astype(np.int64) - affine.zero_point.reshape(shape if affine.axis == 0 else -1)
    if shifted.min(initial=0) < -128 or shifted.max(initial=0) > 127:
        return None
    operand_shape = ir.RankedTensorType(value.type).shape
    return affine, shifted.reshape(operand_shape), affine.source.owner.attributes["value"]


def _bias(init: ir.Value, channels: int) -> tuple[np.ndarray | None, bool]:
    """(the per-channel bias the init broadcasts, or None for a 0.0 fill;
    whether the init is one of the two)."""
    init = _through_reshape(init)
    if _float_zero_fill(init):
        return None, True
    broadcast = _defining(init, "linalg.broadcast")
    if broadcast is None:
        return None, False
    bias = _constant_array(broadcast.operands[0])
    if bias is None or bias.size != channels:
        return None, False
    rank = ir.RankedTensorType(init.type).rank
    dims = list(ir.DenseI64ArrayAttr(broadcast.attributes["dimensions"]))
    # Per channel: the bias fills the output's dim 1 only.
    return (bias.reshape(-1), True) if dims == [d for d in range(rank) if d != 1] else (None, False)


def _collapse(op: ir.Operation) -> ir.Operation | None:
    """A grouped convolution's (n, g, f, h, w) -> (n, g * f, h, w)."""
    if op.name != "tensor.collapse_shape":
        return None
    groups = [list(ir.ArrayAttr(g)) for g in ir.ArrayAttr(op.attributes["reassociation"])]
    merged = [[ir.IntegerAttr(i).value for i in g] for g in groups]
    return op if merged == [[0], [1, 2], [3], [4]] else None


def match_epilogue(conv: ir.Operation, grouped: bool) -> Epilogue:
    """The collapse (grouped), ReLU or clamp and quantize after ``conv``, each
    optional, each the only user of the one before."""
    steps = [("collapse", one_op(_collapse))] if grouped else []
    steps += CLAMP_AND_REQUANTIZE
    return follow_epilogue(conv, steps)


def plan(conv: ir.Operation) -> ConvPlan | None:
    """How to fold ``conv`` and what follows it, or None when it does not fold."""
    x = match_dequantize(conv.operands[0], rank=None)
    found = _weight(conv.operands[1])
    if x is None or x.axis is not None or found is None:
        return None
    w_affine, w, w_attr = found
    out_shape = ir.RankedTensorType(conv.results[0].type).shape
    channels = int(np.prod([out_shape[d] for d in _CONVOLUTIONS[conv.name][1]]))
    bias, known_init = _bias(conv.operands[2], channels)
    if not known_init:
        return None
    epilogue = match_epilogue(conv, grouped=w.ndim == 5)
    # The activation's stored value minus its zero point, after the u8 -> s8 shift.
    zero_x = int(x.zero_point[0]) - (128 if x.unsigned else 0)
    correction = -zero_x * w.reshape(channels, -1).sum(axis=1)
    scale = x.scale[0] * np.broadcast_to(w_affine.scale, (channels,))
    found_constants = epilogue_constants(correction, scale, bias, epilogue.requantize)
    if found_constants is None:
        return None
    return ConvPlan(x, w, w_attr, epilogue, *found_constants, conv=conv)


def _integer_conv(p: ConvPlan) -> ir.Value:
    i8, i32 = qdq_ops.i8_type(), ir.IntegerType.get_signless(32)
    x = qdq_ops.flip_sign_bit(p.x.source) if p.x.unsigned else p.x.source
    w_type = ir.RankedTensorType.get(list(p.w.shape), i8)
    name = weights.derived_name(p.w_attr, "qdq")
    w_value = arith.ConstantOp(
        w_type, weights.constant_attr(p.w.astype(np.int8), w_type, name)
    ).result
    shape = ir.RankedTensorType(p.conv.results[0].type).shape
    filled = linalg.fill(arith.ConstantOp(i32, 0).result, outs=[tensor.EmptyOp(shape, i32).result])
    build = _CONVOLUTIONS[p.conv.name][0]
    return keep_window_attributes(p.conv, build(x, w_value, outs=[filled]))


def keep_window_attributes(original: ir.Operation, value: ir.Value) -> ir.Value:
    """``value``'s op with ``original``'s strides and dilations, attributes
    as they were (the Python builders would store them as tensors)."""
    for name in ("strides", "dilations"):
        value.owner.attributes[name] = original.attributes[name]
    return value


def _channel_map(rank: int, dims: tuple[int, ...]) -> ir.AffineMap:
    return ir.AffineMap.get(rank, 0, [ir.AffineExpr.get_dim(d) for d in dims])


def _channel_constants(p: ConvPlan, shape: list[int], dims: tuple[int, ...]) -> list[ir.Value]:
    """The per-channel epilogue operands, shaped as the output's channel dims."""
    channel_shape = [shape[d] for d in dims]
    i32, f32 = ir.IntegerType.get_signless(32), ir.F32Type.get()
    arrays = [(p.correction, i32, np.int32), (p.multiplier, f32, np.float32)]
    if p.bias is not None:
        arrays.append((p.bias, f32, np.float32))
    values = []
    for array, element, dtype in arrays:
        flat = _vector_constant(array, element, dtype)
        if len(dims) > 1:
            kind = ir.RankedTensorType.get(channel_shape, element)
            reassociation = [list(range(len(dims)))]
            flat = tensor.ExpandShapeOp(kind, flat, reassociation, [], channel_shape).result
        values.append(flat)
    return values


def _rewrite(p: ConvPlan) -> None:
    ops = p.epilogue.ops
    last = ops[0]
    replaced = outside_producers(ops)
    with ir.InsertionPoint(last), last.location:
        accumulator = _integer_conv(p)
        shape = ir.RankedTensorType(accumulator.type).shape
        dims = _CONVOLUTIONS[p.conv.name][1]
        columns = _channel_constants(p, shape, dims)
        identity = ir.AffineMap.get_identity(len(shape))
        maps = [identity, *[_channel_map(len(shape), dims)] * len(columns), identity]
        element = ir.RankedTensorType(last.results[0].type).element_type
        out = ir.RankedTensorType.get(shape, element)
        result = _generic(
            out, [accumulator, *columns], maps, _epilogue_body(p.epilogue, p.bias is not None)
        )
        if p.epilogue.collapse is not None:
            collapsed = ir.RankedTensorType.get(
                ir.RankedTensorType(p.epilogue.collapse.results[0].type).shape, element
            )
            result = tensor.CollapseShapeOp(
                collapsed, result, p.epilogue.collapse.attributes["reassociation"]
            ).result
    replace_ops(ops, result, replaced)


@dataclass(frozen=True)
class FoldQdqConv(Pass):
    flag = "lowerline-fold-qdq-conv"
    summary = "Fold dequantize -> conv (+bias, ReLU/clamp) -> quantize into an i8 x i8 -> i32 conv"
    anchor = "func.func"

    def run(self, op: ir.Operation) -> None:
        fold_each(op, tuple(_CONVOLUTIONS), plan, _rewrite)
