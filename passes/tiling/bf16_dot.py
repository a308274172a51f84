"""bf16 x bf16 -> f32 ``vector.contract`` tiles as ``vdpbf16ps`` (AVX512-BF16).

lowerline-tile-and-fuse gives a bf16 matmul (lowerline-fold-extf-into-
contractions') register tiles 2 deep in k on a target with AVX512-BF16
(``lowerline.cpu.tile_plan.bf16_dot_lanes``); vectorized, each is a
``vector.contract`` of ``A: vector<M x 2 x bf16>`` and ``B: vector<2 x N x bf16>``
into ``vector<M x N x f32>``. ``vdpbf16ps`` adds, in each f32 lane, the two
products of the lane's bf16 pair of its first source with the pair of its
second (both exact in f32; the sum rounds once per pair instead of once
per product). Per 16 columns of the tile:

- B's 2 x 16 values are interleaved so that lane ``n`` holds
  ``B[0, n], B[1, n]`` (one ``vector.shuffle``); a tile narrower than 16
  columns is padded with zero lanes;
- each row of A is one 32-bit pair, broadcast to every lane.

``vdpbf16ps`` treats bf16 subnormal inputs as zero and flushes subnormal
results (below 2**-126 in magnitude): a difference from eager torch only
for values that small.

Upstream has the instruction (``x86vector.avx512.dot``, lowered by
``convert-vector-to-llvm{enable-x86vector}``) but no pattern that forms it
from a contraction. A masked contraction (a partial tile) is rewritten only
when its operands are read with zero padding, so padded k adds ``0 * 0``;
other contractions keep the outer-product lowering (widened to f32, FMAs).
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, vector

from lowerline.cpu.tile_plan import BF16_DOT_K
from lowerline.passes.support.ir_constants import reads_with_zero_padding
from lowerline.passes.tiling.int8_dot import _chunks, _concat, _is_matmul_maps, _shape_and_type
from lowerline.pipeline.pass_api import ops_matching

DOT_OP = "x86vector.avx512.dot"
_LANES = 16  # f32 lanes of a zmm register


def _candidate(op: ir.Operation) -> ir.Operation | None:
    """The op to replace for a pair-dot-shaped contraction (the contract, or
    the ``vector.mask`` around it), or None."""
    if len(op.operands) != 3 or not _is_matmul_maps(op):
        return None
    (_, k), lhs_type = _shape_and_type(op.operands[0])
    (k2, _), rhs_type = _shape_and_type(op.operands[1])
    _, acc_type = _shape_and_type(op.operands[2])
    if (lhs_type, rhs_type, acc_type) != ("bf16", "bf16", "f32") or k != BF16_DOT_K or k2 != k:
        return None
    parent = op.parent
    if parent.name != "vector.mask":
        return op
    padded = all(reads_with_zero_padding(op.operands[i]) for i in (0, 1))
    return parent if padded else None


def _dot(acc: ir.Value, a: ir.Value, b: ir.Value) -> ir.Value:
    f32x16 = ir.VectorType.get([_LANES], ir.F32Type.get())
    return ir.Operation.create(DOT_OP, results=[f32x16], operands=[acc, a, b]).result


def _shuffle(source: ir.Value, indices: list[int]) -> ir.Value:
    """``source[indices]`` as a 1-D vector, index -1 giving a zero lane."""
    vtype = ir.VectorType(source.type)
    zero = vector.broadcast(vtype, _zero(vtype.element_type))
    size = vtype.shape[0]
    return vector.shuffle(source, zero, [size if i < 0 else i for i in indices])


def _zero(element: ir.Type) -> ir.Value:
    return arith.constant(element, ir.FloatAttr.get(element, 0.0))


def _weight_pairs(rhs: ir.Value, n: int) -> list[ir.Value]:
    """Per zmm of columns: ``B[0, n], B[1, n]`` in lane ``n`` (zero in lanes
    past the tile), as <32 x bf16>."""
    flat = vector.shape_cast(ir.VectorType.get([BF16_DOT_K * n], ir.BF16Type.get()), rhs)
    pairs = []
    for columns in _chunks(n):
        lanes = [*columns] + [-1] * (_LANES - len(columns))
        pairs.append(
            _shuffle(flat, [-1 if c < 0 else kk * n + c for c in lanes for kk in range(BF16_DOT_K)])
        )
    return pairs


def _row_pair(lhs: ir.Value, row: int) -> ir.Value:
    """Row ``row`` of A (two bf16 as one i32) broadcast to every lane."""
    i32 = ir.IntegerType.get_signless(32)
    pair = vector.extract(lhs, [], [row])
    word = vector.extract(vector.bitcast(ir.VectorType.get([1], i32), pair), [], [0])
    lanes = vector.broadcast(ir.VectorType.get([_LANES], i32), word)
    return vector.bitcast(ir.VectorType.get([_LANES * BF16_DOT_K], ir.BF16Type.get()), lanes)


def _rewrite(contract: ir.Operation, replaced: ir.Operation) -> None:
    lhs, rhs, acc = contract.operands
    (m, n), _ = _shape_and_type(acc)
    with ir.InsertionPoint(replaced), replaced.location:
        weights = _weight_pairs(rhs, n)
        result = acc
        for row in range(m):
            a = _row_pair(lhs, row)
            c_row = vector.extract(acc, [], [row])
            pieces = []
            for columns, w in zip(_chunks(n), weights, strict=True):
                lanes = [*columns] + [-1] * (_LANES - len(columns))
                pieces.append((columns, _dot(_shuffle(c_row, lanes), a, w)))
            result = vector.insert(_concat(pieces, n), result, [], [row])
    replaced.results[0].replace_all_uses_with(result)
    replaced.erase()


def bf16_dot_products(module: ir.Operation) -> int:
    """Rewrite every pair-dot-shaped bf16 contraction in ``module``; returns
    how many. The caller checks that the target has AVX512-BF16."""
    count = 0
    for contract in ops_matching(module, lambda op: op.name == "vector.contract"):
        replaced = _candidate(contract)
        if replaced is not None:
            _rewrite(contract, replaced)
            count += 1
    return count


def extend_extracted_lanes(module: ir.Operation) -> int:
    """Replace each ``vector.extract`` of a lane of a bf16/f16 -> f32
    ``arith.extf`` by the extension of that lane alone; returns how many
    extensions lost all their users.

    Why: outer products widen the bf16 column of A they broadcast (where
    there is no ``vdpbf16ps``) as one ``vector<M x bf16>``, which LLVM builds
    through the stack on a target without native bf16 vectors (AVX2): a
    store-forwarding stall in every step of k, measured 7x slower than f32
    on haswell. Scalar lanes are a 16-bit load and a shift each."""
    emptied = 0
    for extend in ops_matching(module, lambda op: op.name == "arith.extf"):
        source = extend.operands[0]
        if not isinstance(source.type, ir.VectorType):
            continue
        vtype = ir.VectorType(source.type)
        if vtype.rank != 1 or str(vtype.element_type) not in ("bf16", "f16"):
            continue
        users = [use.owner for use in extend.results[0].uses]
        if not users or any(not _extracts_a_lane(user) for user in users):
            continue
        for user in users:
            with ir.InsertionPoint(user), user.location:
                position = list(ir.DenseI64ArrayAttr(user.attributes["static_position"]))
                lane = vector.extract(source, [], position)
                user.results[0].replace_all_uses_with(arith.extf(user.results[0].type, lane))
            user.erase()
        extend.erase()
        emptied += 1
    return emptied


def _extracts_a_lane(op: ir.Operation) -> bool:
    """A ``vector.extract`` of one scalar at a constant position."""
    if op.name != "vector.extract" or len(op.operands) != 1:
        return False
    return not isinstance(op.results[0].type, ir.VectorType)
