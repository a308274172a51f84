"""Quantize and dequantize steps rebuilt at another place of the graph, and
the integer values of float constants, for the QDQ passes
(lowerline-sink-qdq-through-layout-ops, lowerline-fold-qdq-conv,
lowerline-fold-qdq-batch-matmul).

The steps are rebuilt in the form they were matched in: quantize is the
scaling (torch-mlir's ``divf`` by the scale, or, in a generic marked
``lowerline.quantize``, the frontend's ``mulf`` by ``f32(1 / scale)``, which
is eager torch's ``quantized_decomposed`` arithmetic bit for bit),
``roundeven``, the zero point added, clamped, ``fpto[us]i``; dequantize is
``ext``, ``subi``, ``sitofp``, ``mulf`` (in i32 where torch-mlir uses i64:
the values are the same). The matchers live in lowerline-fold-qdq-matmul.
"""

from __future__ import annotations

import numpy as np
from mlir import ir
from mlir.dialects import arith, math

from lowerline.passes.graph.fold_qdq_matmul import (
    Affine,
    Requantize,
    _f32,
    _generic,
)
from lowerline.passes.graph.fold_qdq_matmul import quantized as quantized  # re-exported
from lowerline.pipeline import protocol


def i8_type() -> ir.Type:
    return ir.IntegerType.get_signless(8)


def i8_constant(stored: int) -> ir.Value:
    """An i8 constant holding ``stored`` (a u8 value above 127 wraps)."""
    return arith.ConstantOp(i8_type(), int(np.int8(np.uint8(stored & 0xFF)))).result


def integer_for(x: Affine, real: float) -> int | None:
    """The stored integer whose dequantized value is exactly ``real``, or None."""
    if x.axis is not None or not np.isfinite(real):
        return None
    stored = float(np.float32(real) / np.float32(x.scale[0])) + float(x.zero_point[0])
    low, high = (0, 255) if x.unsigned else (-128, 127)
    if stored != round(stored) or not low <= stored <= high:
        return None
    if dequantized(x, int(stored)) != np.float32(real):
        return None
    return int(stored)


def dequantized(x: Affine, stored: int) -> np.float32:
    return np.float32(stored - int(x.zero_point[0])) * np.float32(x.scale[0])


def type_range(unsigned: bool) -> tuple[int, int]:
    return (0, 255) if unsigned else (-128, 127)


def quantize(q: Requantize, value: ir.Value) -> ir.Value:
    """``q`` applied to every element of the f32 tensor ``value``."""
    kind = ir.RankedTensorType(value.type)
    out = ir.RankedTensorType.get(kind.shape, i8_type())
    identity = ir.AffineMap.get_identity(kind.rank)

    def body(args: list[ir.Value]) -> ir.Value:
        stored = arith.addf(math.roundeven(q.scaled(args[0])), _f32(q.zero_point))
        stored = arith.minimumf(arith.maximumf(stored, _f32(q.low)), _f32(q.high))
        return (arith.fptoui if q.unsigned else arith.fptosi)(i8_type(), stored)

    result = _generic(out, [value], [identity] * 2, body)
    if q.inverse is not None:  # still the frontend's form: the matchers take it again
        protocol.QUANTIZE.set(result.owner, q.scale)
    return result


def dequantize(x: Affine, value: ir.Value) -> ir.Value:
    """``x``'s per-tensor dequantize applied to the i8 tensor ``value``."""
    kind = ir.RankedTensorType(value.type)
    out = ir.RankedTensorType.get(kind.shape, ir.F32Type.get())
    identity = ir.AffineMap.get_identity(kind.rank)
    i32 = ir.IntegerType.get_signless(32)

    def body(args: list[ir.Value]) -> ir.Value:
        wide = (arith.extui if x.unsigned else arith.extsi)(i32, args[0])
        shifted = arith.subi(wide, arith.ConstantOp(i32, int(x.zero_point[0])).result)
        return arith.mulf(arith.sitofp(ir.F32Type.get(), shifted), _f32(float(x.scale[0])))

    return _generic(out, [value], [identity] * 2, body)


def flip_sign_bit(value: ir.Value) -> ir.Value:
    """``value ^ 0x80`` per element: u8 as s8 minus 128, and back."""
    kind = ir.RankedTensorType(value.type)
    identity = ir.AffineMap.get_identity(kind.rank)
    flip = arith.ConstantOp(i8_type(), -128).result
    return _generic(kind, [value], [identity] * 2, lambda a: arith.xori(a[0], flip))


def same_parameters(q: Requantize, x: Affine) -> bool:
    """``q(dequantize x (s))`` is ``s`` for every stored ``s``: same scale,
    zero point and type, and ``q`` clamps to the whole type."""
    if x.axis is not None or q.unsigned != x.unsigned:
        return False
    if (q.low, q.high) != type_range(q.unsigned):
        return False
    same_scale = np.float32(q.scale) == np.float32(x.scale[0])
    return bool(same_scale) and q.zero_point == float(x.zero_point[0])
