"""``lowerline-amx-int8-matmul``: on a target with Intel AMX, an i8 x i8 ->
i32 matmul with a constant B becomes a contraction over B packed at compile
time in AMX's VNNI layout, marked for AMX tiles (lowerline-amx-tiles lowers
it to ``tdpbssd`` once it reads buffers)::

    %m = linalg.matmul ins(%a : MxKxi8, %b : KxNxi8 constant) outs(%c : MxNxi32)
  ->
    %a4 = %a zero-padded to M x K4                     // only when K % 4 != 0
    %a3 = tensor.expand_shape %a4 : M x K4/4 x 4
    %bp = arith.constant (B as K4/4 x N x 4)          // computed here
    %m = linalg.generic {lowerline.amx_tiles}          // (m, n, q, r):
           ins(%a3 : (m, q, r), %bp : (q, n, r)) outs(%c : (m, n))
           { c + sext(a) * sext(b) }

An AMX B tile holds rows of 4 consecutive k bytes per output column: row
``q``, bytes ``4n .. 4n + 3`` are ``B[4q .. 4q + 3, n]``, which is
lowerline.passes.tiling.vnni_weights' layout (``vnni_layout``, here with
its rows split as N x 4: linalg wants maps it can invert). The
generic states exactly what the packed operands mean, so whatever does not
become tiles is still a correct (scalar) contraction; lowerline-tile-and-fuse
leaves the marked op alone and its epilogue (the requantize) reads the i32
result from memory.

Signedness: lowerline-fold-qdq-matmul's matmul is signed x signed (u8
activations are shifted to s8 so that one named op holds every case), which
is ``tdpbssd`` exactly. ``tdpbusd`` would read A as u8 and need the 128-shift
correction that ``vpdpbusd`` needs (lowerline.passes.tiling.int8_corrections);
the signed variant costs the same and needs none.

Upstream: ``convert-vector-to-amx`` rewrites only ``vector.contract`` ops
already in VNNI-packed, tile-sized form and packs nothing; MLIR has no pass
that packs a constant for AMX or chooses to use it. Left alone (remark):
dynamic shapes, B with unknown bytes, transposed or unsigned variants.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mlir import ir
from mlir.dialects import arith, linalg, tensor

from lowerline import weights
from lowerline.passes.support.ir_constants import constant_attr
from lowerline.passes.support.linalg_info import indexing_maps
from lowerline.passes.support.pass_options import cpu_target_option
from lowerline.passes.tiling.vnni_weights import vnni_layout
from lowerline.pipeline.options import opt
from lowerline.pipeline.pass_api import Pass, ops_matching, resolve_target
from lowerline.pipeline.protocol import AMX_TILES
from lowerline.pipeline.remarks import REFUSAL, Remark, about, publish
from lowerline.targets import cpu_target

# Bytes of k per i32 lane of an AMX int8 tile row.
K_GROUP = 4
# Every tile lowerline emits: 16 rows of 64 bytes (16 i32 or 64 i8 columns).
TILE_ROWS = 16
TILE_BYTES = 64
_MATMUL_MAPS = [
    "(d0, d1, d2) -> (d0, d2)",
    "(d0, d1, d2) -> (d2, d1)",
    "(d0, d1, d2) -> (d0, d1)",
]


def _up(size: int, step: int) -> int:
    return -(-size // step) * step


@dataclass(frozen=True)
class _Matmul:
    m: int
    n: int
    k: int
    array: np.ndarray  # B, K x N

    @property
    def padded(self) -> tuple[int, int, int]:
        """M, N, K in whole tiles: 16 rows, 16 columns, 64 bytes of k."""
        return _up(self.m, TILE_ROWS), _up(self.n, TILE_ROWS), _up(self.k, TILE_BYTES)


def _static(value: ir.Value, element: str) -> list[int] | None:
    vtype = value.type
    if not isinstance(vtype, ir.RankedTensorType) or not vtype.has_static_shape:
        return None
    return list(vtype.shape) if str(vtype.element_type) == element else None


def _integer(value: ir.Value) -> bool:
    vtype = value.type
    return isinstance(vtype, ir.RankedTensorType) and str(vtype.element_type) == "i32"


def _plan(op: ir.Operation) -> _Matmul | str:
    """What an int8 matmul becomes, or why it is left alone."""
    if [str(m) for m in indexing_maps(op)] != _MATMUL_MAPS:
        return "not a plain (m, k) x (k, n) matmul"
    if "cast" in op.attributes and "unsigned" in str(op.attributes["cast"]):
        return "unsigned operands"
    a, b, c = (_static(op.operands[i], t) for i, t in enumerate(("i8", "i8", "i32")))
    if a is None or b is None or c is None:
        return "not i8 x i8 -> i32 with static shapes"
    attr = constant_attr(op.operands[1])
    array = None if attr is None else weights.value_of(attr, op.operands[1].type)
    if array is None:
        return "B is not a constant with known bytes"
    return _Matmul(a[0], b[1], a[1], array)


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
    zeros = linalg.fill(arith.constant(element, 0), outs=[empty])
    return tensor.insert_slice(value, zeros, [], [], [], [0, 0], vtype.shape, [1, 1])


def _grouped_lhs(lhs: ir.Value, rows: int, depth: int) -> ir.Value:
    """``lhs`` zero-padded to rows x depth, as rows x depth/4 x 4."""
    padded = _padded(lhs, [rows, depth])
    grouped = ir.RankedTensorType.get([rows, depth // K_GROUP, K_GROUP], _i8())
    return tensor.expand_shape(grouped, padded, [[0], [1, 2]], [], list(grouped.shape))


def _packed_constant(rhs: ir.Value, plan: _Matmul) -> ir.Value:
    """B zero-padded to K' x N' in the VNNI layout, as K'/4 x N' x 4."""
    _, n, k = plan.padded
    padded = np.zeros((k, n), dtype=np.int8)
    padded[: plan.k, : plan.n] = plan.array
    shape = [k // K_GROUP, n, K_GROUP]
    ttype = ir.RankedTensorType.get(shape, _i8())
    name = weights.derived_name(constant_attr(rhs), "amx")
    attr = weights.constant_attr(vnni_layout(padded).reshape(shape), ttype, name)
    return arith.ConstantOp(ttype, attr).result


def _i8() -> ir.Type:
    return ir.IntegerType.get_signless(8)


def _maps() -> ir.ArrayAttr:
    m, n, q, r = (ir.AffineDimExpr.get(i) for i in range(4))
    results = [[m, q, r], [q, n, r], [m, n]]
    return ir.ArrayAttr.get([ir.AffineMapAttr.get(ir.AffineMap.get(4, 0, e)) for e in results])


def _iterators() -> ir.ArrayAttr:
    kinds = ["parallel", "parallel", "reduction", "reduction"]
    return ir.ArrayAttr.get([ir.Attribute.parse(f"#linalg.iterator_type<{k}>") for k in kinds])


def _contraction(lhs: ir.Value, packed: ir.Value, init: ir.Value) -> ir.Operation:
    """``init + sext(lhs) * sext(packed)`` over the packed layout's maps."""
    i32 = ir.IntegerType.get_signless(32)
    generic = linalg.GenericOp([init.type], [lhs, packed], [init], _maps(), _iterators())
    block = generic.regions[0].blocks.append(_i8(), _i8(), i32)
    with ir.InsertionPoint(block):
        a, b, acc = block.arguments
        product = arith.muli(arith.extsi(i32, a), arith.extsi(i32, b))
        linalg.YieldOp([arith.addi(acc, product)])
    AMX_TILES.set(generic.operation, True)
    return generic.operation


def _rewrite(op: ir.Operation, plan: _Matmul) -> None:
    lhs, rhs, init = op.operands
    m, n, k = plan.padded
    with ir.InsertionPoint(op), op.location:
        packed = _packed_constant(rhs, plan)
        generic = _contraction(_grouped_lhs(lhs, m, k), packed, _padded(init, [m, n]))
        result = generic.results[0]
        if (m, n) != (plan.m, plan.n):
            sizes = [plan.m, plan.n]
            result = tensor.extract_slice(init.type, result, [], [], [], [0, 0], sizes, [1, 1])
    op.results[0].replace_all_uses_with(result)
    op.erase()


def _remark(op: ir.Operation, plan: _Matmul | str) -> Remark:
    if isinstance(plan, str):
        return about(op, AmxInt8Matmul.flag, f"not on AMX tiles: {plan}", REFUSAL)
    shape = f"{plan.m}x{plan.k} by {plan.k}x{plan.n}"
    return about(op, AmxInt8Matmul.flag, f"{shape} int8 matmul on AMX tiles, B packed")


@dataclass(frozen=True)
class AmxInt8Matmul(Pass):
    flag = "lowerline-amx-int8-matmul"
    summary = "i8 x i8 -> i32 matmuls with a constant B packed for AMX tiles (targets with AMX)"
    anchor = "func.func"

    target: str = cpu_target_option()
    explain: bool = opt(False, "print each int8 matmul rewritten or refused, and why, as remarks")

    def run(self, op: ir.Operation) -> None:
        target = resolve_target(cpu_target, self.target, op)
        if not target.amx:
            return
        remarks = []
        for matmul in ops_matching(op, lambda o: o.name == "linalg.matmul"):
            if not _integer(matmul.operands[2]):
                continue  # not an integer matmul: nothing to say
            plan = _plan(matmul)
            remarks.append(_remark(matmul, plan))
            if not isinstance(plan, str):
                _rewrite(matmul, plan)
        publish(remarks, self.explain)
