"""i8 x i8 -> i32 ``vector.contract`` tiles as int8 dot-product instructions:
``vpdpbusd`` (AVX-512 VNNI) and ``sdot`` (AArch64 with ``+dotprod``).

lowerline-tile-and-fuse gives an integer matmul (lowerline-fold-qdq-matmul's)
register tiles 4 deep in k on a target with an int8 dot product
(``lowerline.cpu.tile_plan.int8_dot_lanes``); vectorized, each is a
``vector.contract`` of ``A: vector<M x 4 x i8>`` and ``B: vector<4 x N x i8>``
into ``vector<M x N x i32>``. Both instructions add, in each i32 lane, the
four products of the lane's 4 bytes of their two byte sources. Per register
of columns (16 i32 lanes of a zmm, 4 of a NEON q register):

- lane ``n`` of B holds ``B[0..3, n]``: loaded as it is where B is a
  constant with known bytes (stored in that layout at compile time,
  lowerline.passes.tiling.vnni_weights), else B's 4 x lanes bytes are
  shuffled into it (one ``vector.shuffle``); a tile narrower than a
  register is padded with zero lanes;
- each row of A is one i32 (its 4 bytes), broadcast to every lane.

``sdot`` multiplies signed bytes by signed bytes, which is what the fold's
matmul holds (it shifts u8 activations to s8 so that the matmul is one named
op), so it takes A and B as they are; ``udot`` (u8 x u8) has no such matmul
to serve. ``vpdpbusd`` reads its A bytes as unsigned: ``a ^ 0x80`` is
``a + 128`` as u8, so the sum gains ``128 * sum_k B[k, n]``, which one more
``vpdpbusd`` of 0x80 bytes with B computes per step; it is the same for
every row, so where the k loop is the accumulator's only writer the loop
carries it and the rows subtract it once after the loop, and for a packed
constant B the whole loop's gain is a constant subtracted once from the
tile's starting accumulators (lowerline.passes.tiling.int8_corrections);
elsewhere every row subtracts it at every step.
Signed A times signed B is also what ``vpdpwssd`` would take, but only after
widening both to i16: two instructions per 4 bytes where this uses one.

Upstream: LLVM 22 does not form ``vpdpbusd`` from extend-multiply-add
reductions (its partial-reduce lowering widens to ``vpmaddwd``/``vpdpwssd``),
and MLIR has no op for it (``x86vector.avx.dot.i8`` is ``vpdpbssd``,
AVX-VNNI-INT8), so the intrinsic is declared and called through the llvm
dialect. For ``sdot`` the upstream ``arm_neon.intr.sdot`` op is emitted (it
translates to ``llvm.aarch64.neon.sdot``); upstream's contraction patterns
for NEON (``arm_neon.vector_contract_to_i8mm``) emit ``smmla``, which needs
``+i8mm``, and none targets ``sdot``.

A batch matmul's register tile (lowerline-fold-qdq-batch-matmul's
attention products, tiled with their batch dim of 1) is taken as its one
matrix (``vector.shape_cast`` in and out); its B is never a constant, so it
takes the shuffle and the carried correction.

A masked contraction (a partial tile in m, n or k) is rewritten only when
its operands are read with zero padding: a padded k then adds a zero product
(``(0 ^ 0x80) * 0`` and a zero correction for ``vpdpbusd``), and padded rows
or columns are not written back. Other contractions keep the outer-product
lowering.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, llvm, vector

from lowerline.cpu.tile_plan import INT8_DOT_K, int8_dot_lanes
from lowerline.passes.support.ir_constants import reads_with_zero_padding
from lowerline.passes.support.matmul_tiles import is_matmul_tile, matrix_of
from lowerline.passes.tiling.int8_corrections import (
    AccumulatorLoop,
    accumulator_loop,
    carried_corrections,
    carry,
    subtract_after,
    subtract_from_start,
)
from lowerline.passes.tiling.vnni_weights import VnniWeights
from lowerline.pipeline.pass_api import ops_matching
from lowerline.targets import CpuTarget

VPDPBUSD_512 = "llvm.x86.avx512.vpdpbusd.512"


def _i8() -> ir.Type:
    return ir.IntegerType.get_signless(8)


def _i32_type() -> ir.Type:
    return ir.IntegerType.get_signless(32)


def _shape_and_type(value: ir.Value) -> tuple[list[int], str]:
    vtype = ir.VectorType(value.type)
    return list(vtype.shape), str(vtype.element_type)


def _batched(op: ir.Operation) -> bool:
    return ir.VectorType(op.operands[2].type).rank == 3


def _transfer_padding_ok(contract: ir.Operation) -> bool:
    return all(reads_with_zero_padding(contract.operands[i]) for i in (0, 1))


def _candidate(op: ir.Operation) -> ir.Operation | None:
    """The op to replace for a dot-product-shaped contraction (the contract,
    or the ``vector.mask`` around it), or None."""
    if len(op.operands) != 3 or not is_matmul_tile(op):
        return None
    *_, k = ir.VectorType(op.operands[0].type).shape
    k2 = ir.VectorType(op.operands[1].type).shape[-2]
    lhs_type = str(ir.VectorType(op.operands[0].type).element_type)
    rhs_type = str(ir.VectorType(op.operands[1].type).element_type)
    _, acc_type = _shape_and_type(op.operands[2])
    if (lhs_type, rhs_type, acc_type) != ("i8", "i8", "i32") or k != INT8_DOT_K or k2 != k:
        return None
    parent = op.parent
    if parent.name != "vector.mask":
        return op
    return parent if _transfer_padding_ok(op) else None


def _i32(value: int) -> ir.Value:
    return arith.constant(_i32_type(), value)


def _splat(vtype: ir.VectorType, value: int) -> ir.Value:
    attr = ir.IntegerAttr.get(vtype.element_type, value)
    return arith.constant(vtype, ir.DenseElementsAttr.get_splat(vtype, attr))


# Pure: a call without memory effects, which bufferization's deallocation
# accepts (``llvm.call_intrinsic`` has unknown effects and is refused).
_NO_MEMORY = (
    "#llvm.memory_effects<other = none, argMem = none, inaccessibleMem = none, "
    "errnoMem = none, targetMem0 = none, targetMem1 = none>"
)
_DECLARATION = (
    f"llvm.func @{VPDPBUSD_512}(vector<16xi32>, vector<64xi8>, vector<64xi8>)"
    f" -> vector<16xi32> attributes {{memory_effects = {_NO_MEMORY}}}"
)


def _declare_vpdpbusd(module: ir.Operation) -> None:
    """Declare the intrinsic in ``module`` once (LLVM knows it by its name)."""
    body = module.regions[0].blocks[0]
    if any(
        op.name == "llvm.func" and ir.StringAttr(op.attributes["sym_name"]).value == VPDPBUSD_512
        for op in body.operations
    ):
        return
    declaration = ir.Operation.parse(_DECLARATION, context=module.context)
    ir.InsertionPoint.at_block_begin(body).insert(declaration)


def _vpdpbusd(acc: ir.Value, unsigned: ir.Value, signed: ir.Value) -> ir.Value:
    call = llvm.call(
        acc.type,
        [acc, unsigned, signed],
        [],
        [],
        callee=ir.FlatSymbolRefAttr.get(VPDPBUSD_512),
        memory_effects=ir.Attribute.parse(_NO_MEMORY),
    )
    return call if isinstance(call, ir.Value) else call.result


def _sdot(acc: ir.Value, a: ir.Value, b: ir.Value) -> ir.Value:
    # The installed bindings have no arm_neon module; the op is registered.
    return ir.Operation.create(
        "arm_neon.intr.sdot", results=[acc.type], operands=[acc, a, b]
    ).result


@dataclass(frozen=True)
class DotInstruction:
    """An int8 dot product: ``lanes`` i32 lanes per register, each adding
    the products of its 4 bytes of A and of B; ``unsigned_a``: A's bytes are
    read as u8 (shifted by 128 and corrected); ``declare`` puts what the
    calls need into the module."""

    lanes: int
    unsigned_a: bool
    emit: Callable[[ir.Value, ir.Value, ir.Value], ir.Value]
    declare: Callable[[ir.Operation], None] | None = None


VPDPBUSD = DotInstruction(16, True, _vpdpbusd, _declare_vpdpbusd)
SDOT = DotInstruction(4, False, _sdot)


def dot_instruction(target: CpuTarget) -> DotInstruction | None:
    """The instruction lowerline emits for ``target``'s int8 dot products."""
    if not int8_dot_lanes(target):
        return None
    return SDOT if target.arch == "aarch64" else VPDPBUSD


def _chunks(n: int, lanes: int) -> list[range]:
    """The columns of each register: ``lanes`` at a time, the last one possibly fewer."""
    return [range(first, min(first + lanes, n)) for first in range(0, n, lanes)]


def _gather(source: ir.Value, indices: list[int]) -> ir.Value:
    """``source[indices]`` as a 1-D vector, index -1 giving a zero lane."""
    vtype = ir.VectorType(source.type)
    size = vtype.shape[0]
    return vector.shuffle(source, _splat(vtype, 0), [size if i < 0 else i for i in indices])


def _weight_lanes(rhs: ir.Value, n: int, lanes: int) -> list[ir.Value]:
    """Per register of columns: ``B[0..3, n]`` in the 4 bytes of lane ``n``
    (zero in lanes past the tile), as <4 * lanes x i8>."""
    flat = vector.shape_cast(ir.VectorType.get([INT8_DOT_K * n], _i8()), rhs)
    chunks = []
    for columns in _chunks(n, lanes):
        order = [*columns] + [-1] * (lanes - len(columns))
        chunks.append(
            _gather(flat, [-1 if c < 0 else kk * n + c for c in order for kk in range(INT8_DOT_K)])
        )
    return chunks


def _row_bytes(lhs: ir.Value, row: int, dot: DotInstruction) -> ir.Value:
    """Row ``row`` of A (as u8, ``a ^ 0x80``, where the instruction reads
    it so), its 4 bytes broadcast to every lane."""
    four = vector.extract(lhs, [], [row])
    word = vector.extract(vector.bitcast(ir.VectorType.get([1], _i32_type()), four), [], [0])
    if dot.unsigned_a:
        word = arith.xori(word, _i32(-0x7F7F7F80))  # 0x80808080 as i32
    lanes = vector.broadcast(ir.VectorType.get([dot.lanes], _i32_type()), word)
    return vector.bitcast(ir.VectorType.get([dot.lanes * INT8_DOT_K], _i8()), lanes)


def _concat(pieces: list[ir.Value], n: int, lanes: int) -> ir.Value:
    """The first ``n`` lanes of the pieces put one after the other."""
    whole = pieces[0]
    if n == lanes:
        return whole
    for piece in pieces[1:]:
        size = ir.VectorType(whole.type).shape[0]
        whole = vector.shuffle(whole, piece, [*range(size + lanes)])
    return vector.shuffle(whole, whole, [*range(n)])


def _corrections(weights: list[ir.Value], dot: DotInstruction) -> list[ir.Value | None]:
    """Per register of columns, ``128 * sum_k B[k, n]``: what reading A as
    u8 adds to every row (None where A is read as signed)."""
    if not dot.unsigned_a:
        return [None] * len(weights)
    bytes_type = ir.VectorType.get([dot.lanes * INT8_DOT_K], _i8())
    high_bits = _splat(bytes_type, -128)
    zero = _splat(ir.VectorType.get([dot.lanes], _i32_type()), 0)
    return [dot.emit(zero, high_bits, w) for w in weights]


def _start_corrected(
    contract: ir.Operation,
    replaced: ir.Operation,
    rhs: ir.Value,
    n: int,
    dot: DotInstruction,
    packed: VnniWeights,
) -> bool:
    """Whether the correction of the whole k loop could be subtracted from
    the accumulators it starts from (lowerline.passes.tiling.int8_corrections),
    which is then done, or must stay per step."""
    found = accumulator_loop(contract, replaced)
    totals = packed.loop_totals(rhs, dot.lanes, found) if found is not None else None
    if found is None or totals is None:
        return False
    with ir.InsertionPoint(found.init), found.init.location:
        subtract_from_start(found, _concat(totals, n, dot.lanes))
    return True


def _carried(
    contract: ir.Operation, replaced: ir.Operation, count: int, dot: DotInstruction
) -> tuple[AccumulatorLoop, list[ir.Value]] | None:
    """For B not a constant and A read as u8: the k loop rebuilt to carry
    the correction's ``count`` column registers (from zero), which the
    caller adds each step and subtracts once after the loop
    (lowerline.passes.tiling.int8_corrections); None where the loop is not
    the accumulator's only writer (the correction then stays per step)."""
    if not dot.unsigned_a:
        return None
    found = accumulator_loop(contract, replaced)
    if found is None:
        return None
    with ir.InsertionPoint(found.loop), found.loop.location:
        zero = _splat(ir.VectorType.get([dot.lanes], _i32_type()), 0)
    return carried_corrections(found, zero, count)


def _concat_after(
    found: AccumulatorLoop, totals: list[ir.Value], n: int, dot: DotInstruction
) -> ir.Value:
    """The loop's final corrections as one ``vector<n x i32>``, after it."""
    results = list(found.loop.results)[-len(totals) :]
    with ir.InsertionPoint.after(found.loop), found.loop.location:
        return _concat(results, n, dot.lanes)


def _rewrite(
    contract: ir.Operation, replaced: ir.Operation, dot: DotInstruction, packed: VnniWeights
) -> None:
    batched = _batched(contract)
    with ir.InsertionPoint(replaced), replaced.location:
        lhs, rhs, acc = (matrix_of(v) for v in contract.operands)
        loaded = packed.lanes(rhs, dot.lanes)
    (m, n), _ = _shape_and_type(acc)
    # Before anything else is emitted: the loop is rebuilt around ``replaced``.
    carried = _carried(contract, replaced, len(_chunks(n, dot.lanes)), dot) if not loaded else None
    with ir.InsertionPoint(replaced), replaced.location:
        if loaded is None:
            weights = _weight_lanes(rhs, n, dot.lanes)
            corrections = [None] * len(weights) if carried else _corrections(weights, dot)
        else:
            weights = loaded[0]
            corrections = loaded[1] if dot.unsigned_a else [None] * len(weights)
            if dot.unsigned_a and _start_corrected(contract, replaced, rhs, n, dot, packed):
                corrections = [None] * len(weights)
        result = acc
        for row in range(m):
            a = _row_bytes(lhs, row, dot)
            c_row = vector.extract(acc, [], [row])
            pieces = []
            for columns, w, corr in zip(_chunks(n, dot.lanes), weights, corrections, strict=True):
                order = [*columns] + [-1] * (dot.lanes - len(columns))
                piece = dot.emit(_gather(c_row, order), a, w)
                pieces.append(piece if corr is None else arith.subi(piece, corr))
            result = vector.insert(_concat(pieces, n, dot.lanes), result, [], [row])
        if batched:
            result = vector.shape_cast(contract.operands[2].type, result)
        if carried is not None:
            high_bits = _splat(ir.VectorType(weights[0].type), -128)
            sums = [dot.emit(s, high_bits, w) for s, w in zip(carried[1], weights, strict=True)]
    if carried is not None:
        carry(carried[0], sums)
        totals = _concat_after(carried[0], sums, n, dot)
        subtract_after(carried[0], contract.operands[2].type, totals)
    replaced.results[0].replace_all_uses_with(result)
    replaced.erase()


def int8_dot_products(module: ir.Operation, target: CpuTarget) -> int:
    """Rewrite every dot-product-shaped i8 contraction in ``module`` into
    ``target``'s int8 dot-product instruction; returns how many (0 when the
    target has none that lowerline emits)."""
    dot = dot_instruction(target)
    if dot is None:
        return 0
    contracts = ops_matching(module, lambda op: op.name == "vector.contract")
    packed = VnniWeights()
    count = 0
    for contract in contracts:
        replaced = _candidate(contract)
        if replaced is not None:
            _rewrite(contract, replaced, dot, packed)
            count += 1
    if count and dot.declare is not None:
        dot.declare(module)
    return count


def widen_batched_integer_contractions(module: ir.Operation) -> int:
    """Extend the narrow operands of the mixed-type contractions with more
    than one parallel dim per side (a batch matmul's tiles keep their unit
    batch dim) to the accumulator's type: i8 x i8 -> i32 sign-extended, and
    f16 or bf16 x ... -> f32 (torch-mlir's half batch matmuls accumulate in
    f32) with ``arith.extf``; returns how many.

    Upstream's outer-product lowering takes only 2-D matmul contractions
    (it extends mixed operands itself); a batched one is left to
    ``convert-vector-to-llvm``, whose contraction lowering needs one element
    type. Extended, it goes that way like an f32 one. The integer extension
    is the named ops' ``cast_signed``."""
    widened = 0
    for contract in ops_matching(module, lambda op: op.name == "vector.contract"):
        # A masked one's operands come from outside its vector.mask.
        before = contract.parent if contract.parent.name == "vector.mask" else contract
        lhs, rhs, acc = contract.operands[:3]
        if not isinstance(acc.type, ir.VectorType) or ir.VectorType(lhs.type).rank <= 2:
            continue
        wide = ir.VectorType(acc.type).element_type
        if ir.VectorType(lhs.type).element_type == wide:
            continue
        extend = arith.extf if isinstance(wide, ir.FloatType) else arith.extsi
        with ir.InsertionPoint(before), contract.location:
            for index, value in ((0, lhs), (1, rhs)):
                shape = ir.VectorType(value.type).shape
                contract.operands[index] = extend(ir.VectorType.get(shape, wide), value)
        widened += 1
    return widened
