"""``lowerline-fold-qdq-batch-matmul``: a batch matmul of two dequantized
int8 activations becomes an integer batch matmul with an i32 accumulator,
run-time zero-point corrections and a requantize epilogue.

Unlike a linear layer's weight, neither operand is a constant (attention's
``q @ k^T`` and ``p @ v``), so the zero points cannot be folded into
weight sums at compile time; with ``x' = x - zx`` and ``y' = y - zy`` (after
the u8 -> s8 shift of lowerline-fold-qdq-matmul)::

    sum_k x'[b,m,k] y'[b,k,n] = acc[b,m,n] - zy * rows[b,m] - zx * cols[b,n] + K zx zy

where ``acc`` is the integer batch matmul of the stored values, ``rows`` and
``cols`` the row sums of ``x`` and column sums of ``y`` (two i32 reductions,
each skipped when the other side's zero point is 0)::

    %xd = dequantize(%xq) ; %yd = dequantize(%yq)          // per tensor
    %bm = linalg.batch_matmul ins(%xd, %yd) outs(fill 0.0)
    %r = relu(%bm) | clamp(%bm, lo, hi) ; %q = quantize(%r)
        ==>
    %acc = linalg.batch_matmul ins(%xs, %ys : i8, i8) outs(fill 0 : i32)
    %rows = generic {sum_k extsi}(%xs) ; %cols = generic {sum_k extsi}(%ys)
    %q = generic {acc - zy * rows - zx * cols + K zx zy, sitofp,
                  mulf (sx * sy / so), roundeven, addf zo, clamp q(lo)..q(hi), fpto*i}

Reshapes and transposes around the operands (attention's heads, ``k``
transposed) are moved onto the integers before by
lowerline-sink-qdq-through-layout-ops. Upstream has no such fold (see
lowerline-fold-qdq-matmul).

Not folded: an operand quantized per channel, a float op between a
dequantize and the batch matmul, intermediates with other users, and
products whose correction could leave i32 (``K * 255 * 255 >= 2**31``).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, linalg, tensor

from lowerline.passes.graph import qdq_ops
from lowerline.passes.graph.fold_qdq_matmul import (
    CLAMP_AND_REQUANTIZE,
    Affine,
    Epilogue,
    _f32,
    _float_zero_fill,
    _generic,
    activation_and_requantize,
    fold_each,
    follow_epilogue,
    match_dequantize,
    outside_producers,
    replace_ops,
)
from lowerline.pipeline.pass_api import Pass

_PARALLEL = "#linalg.iterator_type<parallel>"
_REDUCTION = "#linalg.iterator_type<reduction>"


@dataclass
class BatchPlan:
    """The integer batch matmul replacing ``epilogue.ops``: operands ``x``
    (B x M x K) and ``y`` (B x K x N), their zero points after the s8 shift,
    and the f32 multiplier of the corrected accumulator."""

    bmm: ir.Operation
    x: Affine
    y: Affine
    zero_x: int
    zero_y: int
    multiplier: float
    epilogue: Epilogue


def _shifted_zero_point(a: Affine) -> int:
    return int(a.zero_point[0]) - (128 if a.unsigned else 0)


def plan(bmm: ir.Operation) -> BatchPlan | None:
    """How to fold ``bmm`` and what follows it, or None when it does not fold."""
    if not _float_zero_fill(bmm.operands[2]):
        return None
    x, y = (match_dequantize(v, rank=3) for v in bmm.operands[:2])
    if x is None or y is None or x.axis is not None or y.axis is not None:
        return None
    k = ir.RankedTensorType(bmm.operands[0].type).shape[2]
    if k * 255 * 255 >= 2**31:
        return None
    steps = CLAMP_AND_REQUANTIZE
    epilogue = follow_epilogue(bmm, steps)
    scale = float(x.scale[0]) * float(y.scale[0])
    if epilogue.requantize is not None:
        scale = float(epilogue.requantize.multiplier(scale))
    zx, zy = _shifted_zero_point(x), _shifted_zero_point(y)
    return BatchPlan(bmm, x, y, zx, zy, scale, epilogue)


def _signed(a: Affine) -> ir.Value:
    return qdq_ops.flip_sign_bit(a.source) if a.unsigned else a.source


def _sums(value: ir.Value, keep: tuple[int, int], reduced: int) -> ir.Value:
    """The i32 sums of the i8 rank-3 ``value`` over dim ``reduced``, kept dims
    ``keep`` (batch first)."""
    i32 = ir.IntegerType.get_signless(32)
    shape = ir.RankedTensorType(value.type).shape
    out = ir.RankedTensorType.get([shape[d] for d in keep], i32)
    zero = arith.ConstantOp(i32, 0).result
    init = linalg.fill(zero, outs=[tensor.EmptyOp(out.shape, i32).result])
    maps = [
        ir.AffineMap.get_identity(3),
        ir.AffineMap.get(3, 0, [ir.AffineExpr.get_dim(d) for d in keep]),
    ]
    iterators = [_REDUCTION if d == reduced else _PARALLEL for d in range(3)]
    op = linalg.GenericOp(
        [out],
        [value],
        [init],
        ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps]),
        ir.ArrayAttr.get([ir.Attribute.parse(i) for i in iterators]),
    )
    block = op.regions[0].blocks.append(qdq_ops.i8_type(), i32)
    with ir.InsertionPoint(block):
        linalg.YieldOp([arith.addi(block.arguments[1], arith.extsi(i32, block.arguments[0]))])
    return op.result


def _epilogue(
    p: BatchPlan, acc: ir.Value, rows: ir.Value | None, cols: ir.Value | None, k: int
) -> ir.Value:
    """The corrected, scaled, requantized accumulator."""
    i32 = ir.IntegerType.get_signless(32)
    shape = ir.RankedTensorType(acc.type).shape
    element = ir.RankedTensorType(p.epilogue.ops[0].results[0].type).element_type
    out = ir.RankedTensorType.get(shape, element)
    # The sums present, each with its map over (b, m, n) and the zero point
    # of the other side that multiplies it.
    sums = [(rows, (0, 1), p.zero_y), (cols, (0, 2), p.zero_x)]
    present = [(value, dims, zero) for value, dims, zero in sums if value is not None]
    inputs = [acc, *[value for value, _, _ in present]]
    identity = ir.AffineMap.get_identity(3)
    maps = [identity]
    maps += [
        ir.AffineMap.get(3, 0, [ir.AffineExpr.get_dim(d) for d in dims]) for _, dims, _ in present
    ]
    zeros = [zero for _, _, zero in present]

    def body(args: list[ir.Value]) -> ir.Value:
        corrected = arith.addi(args[0], arith.ConstantOp(i32, k * p.zero_x * p.zero_y).result)
        # i32 wraps: only the final sum, |sum x'y'| <= K * 255 * 255, must fit.
        for arg, zero in zip(args[1 : 1 + len(zeros)], zeros, strict=True):
            scaled = arith.muli(arg, arith.ConstantOp(i32, zero).result)
            corrected = arith.subi(corrected, scaled)
        real = arith.mulf(arith.sitofp(ir.F32Type.get(), corrected), _f32(p.multiplier))
        return activation_and_requantize(p.epilogue, real)

    return _generic(out, inputs, [*maps, identity], body)


def _rewrite(p: BatchPlan) -> None:
    ops = p.epilogue.ops
    last = ops[0]
    replaced = outside_producers(ops)
    with ir.InsertionPoint(last), last.location:
        x, y = _signed(p.x), _signed(p.y)
        i32 = ir.IntegerType.get_signless(32)
        shape = ir.RankedTensorType(p.bmm.results[0].type).shape
        zero = arith.ConstantOp(i32, 0).result
        init = linalg.fill(zero, outs=[tensor.EmptyOp(shape, i32).result])
        acc = linalg.batch_matmul(x, y, outs=[init])
        rows = _sums(x, (0, 1), 2) if p.zero_y else None
        cols = _sums(y, (0, 2), 1) if p.zero_x else None
        k = ir.RankedTensorType(x.type).shape[2]
        result = _epilogue(p, acc, rows, cols, k)
    replace_ops(ops, result, replaced)


@dataclass(frozen=True)
class FoldQdqBatchMatmul(Pass):
    flag = "lowerline-fold-qdq-batch-matmul"
    summary = "Fold dequantize -> batch_matmul (ReLU/clamp) -> quantize into i8 x i8 -> i32"
    anchor = "func.func"

    def run(self, op: ir.Operation) -> None:
        fold_each(op, ("linalg.batch_matmul",), plan, _rewrite)
