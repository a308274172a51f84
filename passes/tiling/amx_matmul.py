"""``lowerline-amx-matmul``: on a target with Intel AMX, an i8 x i8 -> i32
or bf16 x bf16 -> f32 matmul with a constant B becomes a contraction over
B packed at compile time in AMX's VNNI layout, marked for AMX tiles
(lowerline-amx-tiles lowers it to ``tdpbssd`` or ``tdpbf16ps`` once it
reads buffers)::

    %m = linalg.matmul ins(%a : MxKxi8, %b : KxNxi8 constant) outs(%c : MxNxi32)
  ->
    %ap = %a zero-padded to M' x K'                  // whole tiles, where it is not
    %a3 = tensor.expand_shape %ap : M' x K'/4 x 4
    %bp = arith.constant (B as K'/4 x N' x 4)       // packed and padded here
    %cp = %c's fill over M' x N' (or %c copied into zeros)
    %m' = linalg.generic {lowerline.amx_tiles}       // (m, n, q, r):
           ins(%a3 : (m, q, r), %bp : (q, n, r)) outs(%cp : (m, n))
           { c + sext(a) * sext(b) }
    %m = tensor.extract_slice %m'[0, 0] [M, N]

A row of an AMX B tile holds, per output column, the elements of k one
lane of the instruction reduces (4 bytes, 2 bf16): row ``q``, columns
``g*n .. g*n + g - 1`` are ``B[g*q .. g*q + g - 1, n]``; for int8 that is
lowerline.passes.tiling.vnni_weights' layout (``vnni_layout``), here with
its rows split as N x g (linalg wants maps it can invert). Every tile is
16 rows of 64 bytes, so M and N are padded to multiples of 16 and K to 64
bytes (lowerline.passes.lowering.amx_tiles says why). The generic states
exactly what the packed operands mean, so whatever does not become tiles
is still a correct (scalar) contraction; lowerline-tile-and-fuse leaves
the marked op alone and its epilogue reads the result from memory.

Signedness: lowerline-fold-qdq-matmul's matmul is signed x signed (u8
activations are shifted to s8 so that one named op holds every case), which
is ``tdpbssd`` exactly. ``tdpbusd`` would read A as u8 and need the 128-shift
correction that ``vpdpbusd`` needs (lowerline.passes.tiling.int8_corrections);
the signed variant costs the same and needs none. bf16: ``tdpbf16ps``
multiplies bf16 pairs and accumulates in f32, as the f32 accumulation
``precision="bf16"`` promises.

Upstream: ``convert-vector-to-amx`` rewrites only ``vector.contract`` ops
already in VNNI-packed, tile-sized form and packs nothing; MLIR has no pass
that packs a constant for AMX or chooses to use it. Left alone (remark):
dynamic shapes, B with unknown bytes, transposed or unsigned variants.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from mlir import ir
from mlir.dialects import arith, linalg, tensor

from lowerline import weights
from lowerline.passes.support.ir_constants import constant_attr
from lowerline.passes.support.linalg_info import indexing_maps
from lowerline.passes.support.pass_options import cpu_target_option
from lowerline.pipeline.options import opt
from lowerline.pipeline.pass_api import Pass, ops_matching, resolve_target
from lowerline.pipeline.protocol import AMX_TILES
from lowerline.pipeline.remarks import REFUSAL, Remark, about, publish
from lowerline.targets import cpu_target

# Every tile lowerline emits: 16 rows of 64 bytes (16 i32 or f32, 64 i8 or
# 32 bf16 columns).
TILE_ROWS = 16
TILE_BYTES = 64
_MATMUL_MAPS = [
    "(d0, d1, d2) -> (d0, d2)",
    "(d0, d1, d2) -> (d2, d1)",
    "(d0, d1, d2) -> (d0, d1)",
]


@dataclass(frozen=True)
class Kind:
    """The element types of one AMX dot product: ``group`` elements of k
    per accumulator lane (4 bytes, 2 bf16), ``size`` bytes per element."""

    operand: str
    accumulator: str
    group: int
    size: int
    instruction: str

    @property
    def depth(self) -> int:
        """Elements of k per tile row."""
        return TILE_BYTES // self.size


KINDS = {
    ("i8", "i32"): Kind("i8", "i32", 4, 1, "tdpbssd"),
    ("bf16", "f32"): Kind("bf16", "f32", 2, 2, "tdpbf16ps"),
}


def _up(size: int, step: int) -> int:
    return -(-size // step) * step


@dataclass(frozen=True)
class _Matmul:
    m: int
    n: int
    k: int
    kind: Kind
    array: np.ndarray  # B, K x N (bf16 as its bit patterns)

    @property
    def padded(self) -> tuple[int, int, int]:
        """M, N, K in whole tiles: 16 rows, 16 columns, 64 bytes of k."""
        return _up(self.m, TILE_ROWS), _up(self.n, TILE_ROWS), _up(self.k, self.kind.depth)


def _static(value: ir.Value, element: str) -> list[int] | None:
    vtype = value.type
    if not isinstance(vtype, ir.RankedTensorType) or not vtype.has_static_shape:
        return None
    return list(vtype.shape) if str(vtype.element_type) == element else None


def _kind(op: ir.Operation) -> Kind | None:
    """The AMX kind of a matmul's element types, or None."""
    types = []
    for value in (op.operands[0], op.operands[2]):
        if not isinstance(value.type, ir.RankedTensorType):
            return None
        types.append(str(ir.RankedTensorType(value.type).element_type))
    return KINDS.get((types[0], types[1]))


def _plan(op: ir.Operation, kind: Kind) -> _Matmul | str:
    """What a matmul of ``kind`` becomes, or why it is left alone."""
    if [str(m) for m in indexing_maps(op)] != _MATMUL_MAPS:
        return "not a plain (m, k) x (k, n) matmul"
    if "cast" in op.attributes and "unsigned" in str(op.attributes["cast"]):
        return "unsigned operands"
    a, b, c = (
        _static(op.operands[i], t)
        for i, t in enumerate((kind.operand, kind.operand, kind.accumulator))
    )
    if a is None or b is None or c is None:
        return f"not {kind.operand} x {kind.operand} -> {kind.accumulator} with static shapes"
    attr = constant_attr(op.operands[1])
    array = None if attr is None else weights.value_of(attr, op.operands[1].type, bits=True)
    if array is None:
        return "B is not a constant with known bytes"
    return _Matmul(a[0], b[1], a[1], kind, array)


def grouped_layout(array: np.ndarray, group: int) -> np.ndarray:
    """``K x N`` (K a multiple of ``group``) as ``K/group x N x group``:
    ``out[q, n, r] = array[group * q + r, n]`` (for 4: ``vnni_layout``)."""
    k, n = array.shape
    return np.ascontiguousarray(array.reshape(k // group, group, n).transpose(0, 2, 1))


def _padded(value: ir.Value, shape: list[int]) -> ir.Value:
    """``value`` at the top left of a zero tensor of ``shape``; a fill's
    value filling all of it instead."""
    vtype = ir.RankedTensorType(value.type)
    if list(vtype.shape) == shape:
        return value
    element = vtype.element_type
    empty = tensor.empty(shape, element)
    owner = value.owner if isinstance(value, ir.OpResult) else None
    if owner is not None and owner.name == "linalg.fill":
        return linalg.fill(owner.operands[0], outs=[empty])
    zeros = linalg.fill(_zero(element), outs=[empty])
    return tensor.insert_slice(value, zeros, [], [], [], [0, 0], vtype.shape, [1, 1])


def _zero(element: ir.Type) -> ir.Value:
    if isinstance(element, ir.IntegerType):
        return arith.constant(element, 0)
    return arith.constant(element, 0.0)


def _grouped_lhs(lhs: ir.Value, rows: int, depth: int, group: int) -> ir.Value:
    """``lhs`` zero-padded to rows x depth, as rows x depth/group x group."""
    padded = _padded(lhs, [rows, depth])
    element = ir.RankedTensorType(lhs.type).element_type
    grouped = ir.RankedTensorType.get([rows, depth // group, group], element)
    return tensor.expand_shape(grouped, padded, [[0], [1, 2]], [], list(grouped.shape))


def _packed_constant(rhs: ir.Value, plan: _Matmul) -> ir.Value:
    """B zero-padded to K' x N' in the layout of B tiles."""
    _, n, k = plan.padded
    padded = np.zeros((k, n), dtype=plan.array.dtype)
    padded[: plan.k, : plan.n] = plan.array
    packed = grouped_layout(padded, plan.kind.group)
    element = ir.RankedTensorType(rhs.type).element_type
    ttype = ir.RankedTensorType.get(list(packed.shape), element)
    name = weights.derived_name(constant_attr(rhs), "amx")
    return arith.ConstantOp(ttype, weights.constant_attr(packed, ttype, name)).result


def _maps() -> ir.ArrayAttr:
    m, n, q, r = (ir.AffineDimExpr.get(i) for i in range(4))
    results = [[m, q, r], [q, n, r], [m, n]]
    return ir.ArrayAttr.get([ir.AffineMapAttr.get(ir.AffineMap.get(4, 0, e)) for e in results])


def _iterators() -> ir.ArrayAttr:
    kinds = ["parallel", "parallel", "reduction", "reduction"]
    return ir.ArrayAttr.get([ir.Attribute.parse(f"#linalg.iterator_type<{k}>") for k in kinds])


def _multiply_add(acc: ir.Value, a: ir.Value, b: ir.Value) -> ir.Value:
    """``acc + a * b`` in the accumulator's type: sign-extended integers
    (the named op's ``cast_signed``) or floats extended exactly."""
    wide = acc.type
    extend: Callable[..., ir.Value] = arith.extsi
    multiply, add = arith.muli, arith.addi
    if not isinstance(wide, ir.IntegerType):
        extend, multiply, add = arith.extf, arith.mulf, arith.addf
    return add(acc, multiply(extend(wide, a), extend(wide, b)))


def _contraction(lhs: ir.Value, packed: ir.Value, init: ir.Value) -> ir.Operation:
    """``init + lhs * packed`` over the packed layout's maps."""
    generic = linalg.GenericOp([init.type], [lhs, packed], [init], _maps(), _iterators())
    element = ir.RankedTensorType(lhs.type).element_type
    wide = ir.RankedTensorType(init.type).element_type
    block = generic.regions[0].blocks.append(element, element, wide)
    with ir.InsertionPoint(block):
        a, b, acc = block.arguments
        linalg.YieldOp([_multiply_add(acc, a, b)])
    AMX_TILES.set(generic.operation, True)
    return generic.operation


def _rewrite(op: ir.Operation, plan: _Matmul) -> None:
    lhs, rhs, init = op.operands
    m, n, k = plan.padded
    with ir.InsertionPoint(op), op.location:
        packed = _packed_constant(rhs, plan)
        grouped = _grouped_lhs(lhs, m, k, plan.kind.group)
        generic = _contraction(grouped, packed, _padded(init, [m, n]))
        result = generic.results[0]
        if (m, n) != (plan.m, plan.n):
            sizes = [plan.m, plan.n]
            result = tensor.extract_slice(init.type, result, [], [], [], [0, 0], sizes, [1, 1])
    op.results[0].replace_all_uses_with(result)
    op.erase()


def _remark(op: ir.Operation, plan: _Matmul | str) -> Remark:
    if isinstance(plan, str):
        return about(op, AmxMatmul.flag, f"not on AMX tiles: {plan}", REFUSAL)
    shape = f"{plan.m}x{plan.k} by {plan.k}x{plan.n}"
    what = f"{plan.kind.operand} matmul on AMX tiles ({plan.kind.instruction}), B packed"
    return about(op, AmxMatmul.flag, f"{shape} {what}")


@dataclass(frozen=True)
class AmxMatmul(Pass):
    flag = "lowerline-amx-matmul"
    summary = "int8 and bf16 matmuls with a constant B packed for AMX tiles (targets with AMX)"
    anchor = "func.func"

    target: str = cpu_target_option()
    explain: bool = opt(False, "print each matmul rewritten or refused, and why, as remarks")

    def run(self, op: ir.Operation) -> None:
        target = resolve_target(cpu_target, self.target, op)
        if not target.amx:
            return
        remarks = []
        for matmul in ops_matching(op, lambda o: o.name == "linalg.matmul"):
            kind = _kind(matmul)
            if kind is None:
                continue  # f32, f16 and mixed matmuls: AMX has nothing for them
            plan = _plan(matmul, kind)
            remarks.append(_remark(matmul, plan))
            if not isinstance(plan, str):
                _rewrite(matmul, plan)
        publish(remarks, self.explain)
