"""i8 x i8 -> i32 ``vector.contract`` tiles as ``vpdpbusd`` calls (AVX-512 VNNI).

lowerline-tile-and-fuse gives an integer matmul (lowerline-fold-qdq-matmul's)
register tiles 4 deep in k on a target with an int8 dot product
(``lowerline.cpu.tile_plan.int8_dot_lanes``); vectorized, each is a
``vector.contract`` of ``A: vector<M x 4 x i8>`` and ``B: vector<4 x N x i8>``
into ``vector<M x N x i32>``. ``vpdpbusd`` adds, in each i32 lane, the four
products of the lane's u8 bytes of its first source with the s8 bytes of its
second. Per 16 columns of the tile:

- B's 4 x 16 bytes are shuffled so that lane ``n`` holds ``B[0..3, n]``
  (one ``vector.shuffle``; the weight is not yet packed at compile time); a
  tile narrower than 16 columns is padded with zero lanes;
- each row of A is one i32 (its 4 bytes), broadcast to every lane;
- A is signed (the fold shifts u8 activations to s8 so that the matmul is one
  named op) but ``vpdpbusd`` reads its A bytes as unsigned: ``a ^ 0x80`` is
  ``a + 128`` as u8, so the sum gains ``128 * sum_k B[k, n]``, which one more
  ``vpdpbusd`` of 0x80 bytes with B computes per tile and the rows subtract.
  Signed A times signed B is also what ``vpdpwssd`` would take, but only after
  widening both to i16: two instructions per 4 bytes where this uses one.

LLVM 22 does not form ``vpdpbusd`` from extend-multiply-add reductions (its
partial-reduce lowering widens to ``vpmaddwd``/``vpdpwssd``), and upstream
MLIR has no op for it (``x86vector.avx.dot.i8`` is ``vpdpbssd``, AVX-VNNI-INT8),
so the intrinsic is declared and called through the llvm dialect.

A masked contraction (a partial tile in m, n or k) is rewritten only when
its operands are read with zero padding: a padded k then adds
``(0 ^ 0x80) * 0`` and a zero correction, and padded rows or columns are not
written back. Other contractions keep the outer-product lowering.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, llvm, vector

from lowerline.cpu.tile_plan import INT8_DOT_K
from lowerline.passes.support.ir_constants import constant_attr
from lowerline.pipeline.pass_api import ops_matching

VPDPBUSD_512 = "llvm.x86.avx512.vpdpbusd.512"
_LANES = 16  # i32 lanes of a zmm register


def _shape_and_type(value: ir.Value) -> tuple[list[int], str]:
    vtype = ir.VectorType(value.type)
    return list(vtype.shape), str(vtype.element_type)


def _is_matmul_maps(op: ir.Operation) -> bool:
    """(m, k) x (k, n) -> (m, n), k reduced."""
    maps = [str(ir.AffineMapAttr(a).value) for a in ir.ArrayAttr(op.attributes["indexing_maps"])]
    return maps == [
        "(d0, d1, d2) -> (d0, d2)",
        "(d0, d1, d2) -> (d2, d1)",
        "(d0, d1, d2) -> (d0, d1)",
    ]


def _reads_with_zero_padding(value: ir.Value) -> bool:
    """``value`` is a ``vector.transfer_read`` (possibly masked) padding with 0."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return False
    if owner.name == "vector.mask":
        inner = owner.regions[0].blocks[0].operations[0]
        owner = inner if inner.name == "vector.transfer_read" else owner
    if owner.name != "vector.transfer_read":
        return False
    padding = constant_attr(owner.opview.padding)
    return isinstance(padding, ir.IntegerAttr) and ir.IntegerAttr(padding).value == 0


def _transfer_padding_ok(contract: ir.Operation) -> bool:
    return all(_reads_with_zero_padding(contract.operands[i]) for i in (0, 1))


def _candidate(op: ir.Operation) -> ir.Operation | None:
    """The op to replace for a dot-product-shaped contraction (the contract,
    or the ``vector.mask`` around it), or None."""
    if len(op.operands) != 3 or not _is_matmul_maps(op):
        return None
    (_, k), lhs_type = _shape_and_type(op.operands[0])
    (k2, _), rhs_type = _shape_and_type(op.operands[1])
    _, acc_type = _shape_and_type(op.operands[2])
    if (lhs_type, rhs_type, acc_type) != ("i8", "i8", "i32") or k != INT8_DOT_K or k2 != k:
        return None
    parent = op.parent
    if parent.name != "vector.mask":
        return op
    return parent if _transfer_padding_ok(op) else None


def _i32(value: int) -> ir.Value:
    return arith.constant(ir.IntegerType.get_signless(32), value)


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


def _declare(module: ir.Operation) -> None:
    """Declare the intrinsic in ``module`` once (LLVM knows it by its name)."""
    body = module.regions[0].blocks[0]
    if any(
        op.name == "llvm.func" and ir.StringAttr(op.attributes["sym_name"]).value == VPDPBUSD_512
        for op in body.operations
    ):
        return
    declaration = ir.Operation.parse(_DECLARATION, context=module.context)
    ir.InsertionPoint.at_block_begin(body).insert(declaration)


def _dot(acc: ir.Value, unsigned: ir.Value, signed: ir.Value) -> ir.Value:
    i32x16 = ir.VectorType.get([_LANES], ir.IntegerType.get_signless(32))
    call = llvm.call(
        i32x16,
        [acc, unsigned, signed],
        [],
        [],
        callee=ir.FlatSymbolRefAttr.get(VPDPBUSD_512),
        memory_effects=ir.Attribute.parse(_NO_MEMORY),
    )
    return call if isinstance(call, ir.Value) else call.result


def _chunks(n: int) -> list[range]:
    """The columns of each zmm: 16 at a time, the last one possibly fewer."""
    return [range(first, min(first + _LANES, n)) for first in range(0, n, _LANES)]


def _gather(source: ir.Value, indices: list[int]) -> ir.Value:
    """``source[indices]`` as a 1-D vector, index -1 giving a zero lane."""
    vtype = ir.VectorType(source.type)
    zero = arith.constant(
        vtype, ir.DenseElementsAttr.get_splat(vtype, ir.IntegerAttr.get(vtype.element_type, 0))
    )
    size = vtype.shape[0]
    return vector.shuffle(source, zero, [size if i < 0 else i for i in indices])


def _weight_lanes(rhs: ir.Value, n: int) -> list[ir.Value]:
    """Per zmm of columns: ``B[0..3, n]`` in the 4 bytes of lane ``n`` (zero
    in lanes past the tile), as <64 x i8>."""
    i8 = ir.IntegerType.get_signless(8)
    flat = vector.shape_cast(ir.VectorType.get([INT8_DOT_K * n], i8), rhs)
    chunks = []
    for columns in _chunks(n):
        lanes = [*columns] + [-1] * (_LANES - len(columns))
        chunks.append(
            _gather(flat, [-1 if c < 0 else kk * n + c for c in lanes for kk in range(INT8_DOT_K)])
        )
    return chunks


def _row_bytes(lhs: ir.Value, row: int) -> ir.Value:
    """Row ``row`` of A as u8 (``a ^ 0x80``), its 4 bytes broadcast to every lane."""
    i8, i32 = ir.IntegerType.get_signless(8), ir.IntegerType.get_signless(32)
    four = vector.extract(lhs, [], [row])
    word = vector.extract(vector.bitcast(ir.VectorType.get([1], i32), four), [], [0])
    unsigned = arith.xori(word, _i32(-0x7F7F7F80))  # 0x80808080 as i32
    lanes = vector.broadcast(ir.VectorType.get([_LANES], i32), unsigned)
    return vector.bitcast(ir.VectorType.get([_LANES * INT8_DOT_K], i8), lanes)


def _concat(pieces: list[tuple[range, ir.Value]], n: int) -> ir.Value:
    """The first ``len(columns)`` lanes of each piece, one after the other."""
    whole = pieces[0][1]
    if n == _LANES:
        return whole
    if len(pieces) > 1:
        whole = vector.shuffle(pieces[0][1], pieces[1][1], [*range(2 * _LANES)])
        for _, piece in pieces[2:]:
            size = ir.VectorType(whole.type).shape[0]
            whole = vector.shuffle(whole, piece, [*range(size + _LANES)])
    return vector.shuffle(whole, whole, [*range(n)])


def _rewrite(contract: ir.Operation, replaced: ir.Operation) -> None:
    lhs, rhs, acc = contract.operands
    (m, n), _ = _shape_and_type(acc)
    with ir.InsertionPoint(replaced), replaced.location:
        i8x64 = ir.VectorType.get([_LANES * INT8_DOT_K], ir.IntegerType.get_signless(8))
        i32x16 = ir.VectorType.get([_LANES], ir.IntegerType.get_signless(32))
        weights = _weight_lanes(rhs, n)
        high_bits = arith.constant(
            i8x64,
            ir.DenseElementsAttr.get_splat(
                i8x64, ir.IntegerAttr.get(ir.IntegerType.get_signless(8), -128)
            ),
        )
        zero = arith.constant(
            i32x16,
            ir.DenseElementsAttr.get_splat(
                i32x16, ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 0)
            ),
        )
        # 128 * sum_k B[k, n]: what reading A as u8 added to every row.
        corrections = [_dot(zero, high_bits, w) for w in weights]
        result = acc
        for row in range(m):
            a = _row_bytes(lhs, row)
            c_row = vector.extract(acc, [], [row])
            pieces = []
            for columns, w, corr in zip(_chunks(n), weights, corrections, strict=True):
                lanes = [*columns] + [-1] * (_LANES - len(columns))
                piece = arith.subi(_dot(_gather(c_row, lanes), a, w), corr)
                pieces.append((columns, piece))
            result = vector.insert(_concat(pieces, n), result, [], [row])
    replaced.results[0].replace_all_uses_with(result)
    replaced.erase()


def int8_dot_products(module: ir.Operation) -> int:
    """Rewrite every dot-product-shaped i8 contraction in ``module``; returns
    how many. The caller checks that the target has AVX-512 VNNI."""
    contracts = ops_matching(module, lambda op: op.name == "vector.contract")
    count = 0
    for contract in contracts:
        replaced = _candidate(contract)
        if replaced is not None:
            _rewrite(contract, replaced)
            count += 1
    if count:
        _declare(module)
    return count


def widen_batched_integer_contractions(module: ir.Operation) -> int:
    """Sign-extend the i8 operands of the i8 x i8 -> i32 contractions with
    more than one parallel dim per side (a batch matmul's tiles keep their
    unit batch dim) to i32; returns how many.

    Upstream's outer-product lowering takes only 2-D matmul contractions
    (it extends mixed operands itself); a batched one is left to
    ``convert-vector-to-llvm``, whose contraction lowering needs one element
    type. Extended, an integer one goes that way like a float one. The
    extension is the named ops' ``cast_signed``."""
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
        with ir.InsertionPoint(before), contract.location:
            for index, value in ((0, lhs), (1, rhs)):
                shape = ir.VectorType(value.type).shape
                contract.operands[index] = arith.extsi(ir.VectorType.get(shape, wide), value)
        widened += 1
    return widened
