"""``lowerline-sink-dequantize-through-max``: a max reduction of dequantized
8-bit values runs on the stored integers, and its few results are
dequantized after it.

A dequantize (and any positive scaling fused into it) is non-decreasing in
the stored value, so the largest dequantized value is the dequantized
largest stored value, bit for bit (float rounding is monotone too)::

    %d = generic {extui, subi z, sitofp, mulf s, mulf t}(%q : i8)   // s, t > 0
    %m = generic {maximumf} reduce(%d) outs(fill -inf)
    %e = generic {subf, exp}(%d, broadcast %m)
        ==>
    %mi = generic {maxui} reduce(%q) outs(fill 0 : i8)
    %e = generic {subf(f(%q), f(broadcast %mi)), exp}(%q, %mi)   // f: %d's body

Attention's softmax in a quantized encoder (``lowerline.quant.Int8``) is
that chain: the scores leave the ``q @ k^T`` kernel as u8, and their row
maximum read f32 copies of them (a dequantize kernel writing 4 bytes per
score, then a max reading them). Now the row maximum reads one byte per
score, and the dequantize fuses into the softmax's exp (its only user left;
the pipeline runs lowerline-fuse-elementwise again after this pass). The
dequantized maximum is recomputed by each elementwise user that reads it
broadcast (a handful of instructions per row after LLVM hoists them), so no
kernel of its own is left for it.

Upstream MLIR has no such rewrite: the ``quant`` dialect is not what
torch-mlir emits (quantize and dequantize are arith in ``linalg.generic``s)
and no linalg pattern moves an elementwise map through a reduction.

Not rewritten: a body that is not a chain of non-decreasing steps on one
8-bit input (a negative or non-constant scale, a ``uitofp`` of a value that
may be negative), a reduction over an empty or dynamic extent, an init other
than ``-inf``, or a reduction with more than one input or result.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mlir import ir
from mlir.dialects import arith, linalg, tensor

from lowerline.passes.graph.fuse_elementwise import _compose, fuse
from lowerline.passes.support.ir_constants import constant_attr
from lowerline.passes.support.linalg_info import all_parallel, clone_body, indexing_maps
from lowerline.pipeline.pass_api import Pass, ops_matching

# Integer steps whose other operand is a constant: with the value at most 8
# bits wide before them and the constant this small, nothing overflows.
_INT_STEPS = ("arith.addi", "arith.subi")
_SMALL = 1 << 16
# Float steps by a constant that keep the order of their operand: adding any
# finite constant, multiplying or dividing by a positive one.
_FLOAT_STEPS = ("arith.addf", "arith.subf", "arith.mulf", "arith.divf")


def _body(op: ir.Operation) -> list[ir.Operation]:
    return [o.operation for o in op.regions[0].blocks[0].operations]


def _constant(value: ir.Value) -> float | None:
    attr = constant_attr(value)
    if isinstance(attr, ir.IntegerAttr):
        return float(ir.IntegerAttr(attr).value)
    if isinstance(attr, ir.FloatAttr):
        return ir.FloatAttr(attr).value
    return None


def _other_operand(step: ir.Operation, value: ir.Value) -> tuple[float | None, int]:
    """The constant beside ``value`` in the binary ``step``, and which
    operand ``value`` is (0 or 1)."""
    operands = list(step.operands)
    if len(operands) != 2 or value not in operands:
        return None, -1
    index = operands.index(value)
    return _constant(operands[1 - index]), index


def _keeps_order(step: ir.Operation, value: ir.Value, signed_value: bool) -> bool:
    """Whether ``step`` applied to ``value`` is non-decreasing in it."""
    name = step.name
    if name in ("arith.extsi", "arith.extui", "arith.sitofp"):
        return True
    if name == "arith.uitofp":
        return not signed_value  # a negative value would convert huge
    constant, index = _other_operand(step, value)
    if constant is None or not np.isfinite(constant):
        return False
    if name in _INT_STEPS:
        return abs(constant) < _SMALL and (name == "arith.addi" or index == 0)
    if name in ("arith.addf", "arith.subf"):
        return name == "arith.addf" or index == 0
    if name == "arith.mulf":
        return constant > 0
    return name == "arith.divf" and index == 0 and constant > 0


def monotone_source(producer: ir.Operation) -> bool | None:
    """For an all-parallel generic of one 8-bit input whose body is a chain
    of non-decreasing steps on it: whether the input is read unsigned
    (``extui``/``uitofp`` first); None for any other generic."""
    if producer.name != "linalg.generic" or len(producer.results) != 1:
        return None
    if len(producer.operands) != 2 or not all_parallel(producer):
        return None
    maps = indexing_maps(producer)
    if any(m != ir.AffineMap.get_identity(maps[-1].n_dims) for m in maps):
        return None
    block = producer.regions[0].blocks[0]
    if str(block.arguments[0].type) != "i8" or list(block.arguments[1].uses):
        return None
    value, unsigned, signed_value = block.arguments[0], None, False
    for step in _body(producer):
        if step.name == "arith.constant":
            continue
        if step.name == "linalg.yield":
            return unsigned if step.operands[0] == value and unsigned is not None else None
        if len(step.results) != 1 or not _keeps_order(step, value, signed_value):
            return None
        if unsigned is None:
            if value != block.arguments[0] or step.name not in (
                "arith.extui", "arith.extsi", "arith.uitofp", "arith.sitofp",
            ):  # fmt: skip
                return None
            unsigned = step.name in ("arith.extui", "arith.uitofp")
        signed_value = signed_value or step.name in _INT_STEPS or step.name == "arith.extsi"
        value = step.results[0]
        if len(list(value.uses)) != 1:
            return None
    return None


def _is_max_reduction(op: ir.Operation) -> bool:
    """One input, one result, body ``maximumf``/``maxnumf`` of the input and
    the accumulator, from a fill of -inf, over static non-empty extents."""
    if op.name != "linalg.generic" or len(op.operands) != 2 or len(op.results) != 1:
        return False
    body = _body(op)
    if len(body) != 2 or body[0].name not in ("arith.maximumf", "arith.maxnumf"):
        return False
    block = op.regions[0].blocks[0]
    if set(body[0].operands) != set(block.arguments) or body[1].operands[0] != body[0].results[0]:
        return False
    fill = op.operands[1].owner if isinstance(op.operands[1], ir.OpResult) else None
    if fill is None or fill.name != "linalg.fill" or _constant(fill.operands[0]) != -np.inf:
        return False
    shape = ir.RankedTensorType(op.operands[0].type).shape
    return all(size > 0 for size in shape) and not all_parallel(op)


def _integer_max(op: ir.Operation, producer: ir.Operation, unsigned: bool) -> ir.Value:
    """``op``'s reduction over ``producer``'s i8 input, from the type's least value."""
    i8 = ir.IntegerType.get_signless(8)
    source = producer.operands[0]
    shape = ir.RankedTensorType(op.results[0].type).shape
    least = arith.ConstantOp(i8, 0 if unsigned else -128).result
    init = linalg.fill(least, outs=[tensor.EmptyOp(shape, i8).result])
    maps = indexing_maps(op)
    read = _compose(indexing_maps(producer)[0], maps[0])
    reduced = linalg.GenericOp(
        [init.type], [source], [init],
        ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in (read, maps[1])]),
        op.attributes["iterator_types"],
    )  # fmt: skip
    block = reduced.regions[0].blocks.append(i8, i8)
    with ir.InsertionPoint(block):
        pick = arith.maxui if unsigned else arith.maxsi
        linalg.YieldOp([pick(block.arguments[0], block.arguments[1])])
    return reduced.results[0]


def _dequantized(producer: ir.Operation, stored: ir.Value, result: ir.Type) -> ir.Operation:
    """``producer``'s body applied to each element of ``stored``."""
    kind = ir.RankedTensorType(result)
    rank = kind.rank
    init = tensor.EmptyOp(kind.shape, kind.element_type)
    identity = ir.AffineMapAttr.get(ir.AffineMap.get_identity(rank))
    parallel = ir.Attribute.parse("#linalg.iterator_type<parallel>")
    op = linalg.GenericOp(
        [result], [stored], [init.result],
        ir.ArrayAttr.get([identity, identity]), ir.ArrayAttr.get([parallel] * rank),
    )  # fmt: skip
    old = producer.regions[0].blocks[0]
    block = op.regions[0].blocks.append(*[a.type for a in old.arguments])
    with ir.InsertionPoint(block):
        mapping = dict(zip(old.arguments, block.arguments, strict=True))
        linalg.YieldOp(clone_body(old, mapping))
    return op.operation


def _unit_expansion_map(expand: ir.Operation, amap: ir.AffineMap) -> ir.AffineMap | None:
    """The map reading ``expand``'s source where ``amap`` reads its result,
    when every dim it adds has size 1 and is read at 0; else None."""
    shape = ir.RankedTensorType(expand.results[0].type).shape
    results = list(amap.results)
    kept = []
    for group in ir.ArrayAttr(expand.attributes["reassociation"]):
        dims = [ir.IntegerAttr(d).value for d in ir.ArrayAttr(group)]
        wide = [d for d in dims if shape[d] != 1] or dims[:1]
        units = [d for d in dims if d not in wide[:1]]
        if len(wide) != 1 or not all(_is_zero(results[d]) for d in units):
            return None
        kept.append(results[wide[0]])
    return ir.AffineMap.get(amap.n_dims, 0, kept)


def _is_zero(expr: ir.AffineExpr) -> bool:
    return isinstance(expr, ir.AffineConstantExpr) and ir.AffineConstantExpr(expr).value == 0


def _read_source(reader: ir.Operation, expand: ir.Operation) -> int | None:
    """Make ``reader`` read ``expand``'s source instead of its result; the
    operand's index, or None when it cannot."""
    maps = indexing_maps(reader)
    inputs = list(reader.operands)[: len(reader.operands) - len(reader.results)]
    if expand.results[0] not in inputs:
        return None
    index = inputs.index(expand.results[0])
    amap = _unit_expansion_map(expand, maps[index])
    if amap is None:
        return None
    maps[index] = amap
    reader.operands[index] = expand.operands[0]
    reader.attributes["indexing_maps"] = ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps])
    return index


def _fuse_into_readers(small: ir.Operation) -> None:
    """Recompute ``small`` (the dequantized maxima) in each elementwise
    generic that reads it, directly or through an expand_shape adding unit
    dims: a kernel of a few hundred elements is not worth a parallel region."""
    for use in list(small.results[0].uses):
        user = use.owner.operation
        if user.name == "tensor.expand_shape":
            for reader in [u.owner.operation for u in user.results[0].uses]:
                if reader.name == "linalg.generic" and all_parallel(reader):
                    index = _read_source(reader, user)
                    if index is not None:
                        fuse(small, reader, index)
            if not list(user.results[0].uses):
                user.erase()
        elif user.name == "linalg.generic" and all_parallel(user):
            inputs = list(user.operands)[: len(user.operands) - len(user.results)]
            fuse(small, user, inputs.index(small.results[0]))


def _rewrite(op: ir.Operation) -> bool:
    value = op.operands[0]
    producer = value.owner.operation if isinstance(value, ir.OpResult) else None
    unsigned = monotone_source(producer) if producer is not None else None
    if producer is None or unsigned is None:
        return False
    with ir.InsertionPoint(op), op.location:
        stored_max = _integer_max(op, producer, unsigned)
        small = _dequantized(producer, stored_max, op.results[0].type)
    op.results[0].replace_all_uses_with(small.results[0])
    op.erase()
    _fuse_into_readers(small)
    if not list(small.results[0].uses):
        small.erase()
    return True


@dataclass(frozen=True)
class SinkDequantizeThroughMax(Pass):
    flag = "lowerline-sink-dequantize-through-max"
    summary = "Take a max reduction of dequantized 8-bit values on the stored integers"
    anchor = "func.func"

    def run(self, op: ir.Operation) -> None:
        for reduction in ops_matching(op, _is_max_reduction):
            _rewrite(reduction)
