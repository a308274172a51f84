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
  ``B[0, n], B[1, n]``: read as one vector from a copy of the weight made
  at compile time in that layout, where B is a panel of a constant packed
  by lowerline-pack-weights (whole register tiles, k stepping by 2 from
  0); otherwise one ``vector.shuffle`` of its two rows, a tile narrower
  than 16 columns padded with zero lanes;
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

from lowerline import weights
from lowerline.cpu.tile_plan import BF16_DOT_K
from lowerline.passes.support.ir_constants import int_constant, reads_with_zero_padding
from lowerline.pipeline.pass_api import ops_matching

DOT_OP = "x86vector.avx512.dot"
_LANES = 16  # f32 lanes of a zmm register
_MATMUL_MAPS = ["(d0, d1, d2) -> (d0, d2)", "(d0, d1, d2) -> (d2, d1)", "(d0, d1, d2) -> (d0, d1)"]


def _shape_and_type(value: ir.Value) -> tuple[list[int], str]:
    vtype = ir.VectorType(value.type)
    return list(vtype.shape), str(vtype.element_type)


def _is_matmul_maps(op: ir.Operation) -> bool:
    """(m, k) x (k, n) -> (m, n), k reduced."""
    maps = ir.ArrayAttr(op.attributes["indexing_maps"])
    return [str(ir.AffineMapAttr(a).value) for a in maps] == _MATMUL_MAPS


def _chunks(n: int) -> list[range]:
    """The columns of each zmm of the tile: 16 at a time, the last one possibly fewer."""
    return [range(first, min(first + _LANES, n)) for first in range(0, n, _LANES)]


def _concat(pieces: list[ir.Value], n: int) -> ir.Value:
    """The tile's row of ``n`` lanes from its zmm pieces (the last one's
    lanes past ``n`` dropped)."""
    whole = pieces[0]
    for piece in pieces[1:]:
        size = ir.VectorType(whole.type).shape[0]
        whole = vector.shuffle(whole, piece, [*range(size + _LANES)])
    if ir.VectorType(whole.type).shape[0] == n:
        return whole
    return vector.shuffle(whole, whole, [*range(n)])


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


def _packed_read(rhs: ir.Value, n: int) -> tuple[ir.Operation, ir.Value, ir.Value] | None:
    """For B read whole from a weight panel (lowerline-pack-weights' slice
    ``[panel, k, 0] [1, 2, n]`` of a ``tensor<panels x K x n>`` constant, k
    stepping by 2 from 0): the constant and the slice's panel and k; else None."""
    read = rhs.owner
    if isinstance(read, ir.Block) or read.name != "vector.transfer_read" or n % _LANES:
        return None
    in_bounds = [ir.BoolAttr(a).value for a in ir.ArrayAttr(read.attributes["in_bounds"])]
    if len(read.operands) != 4 or not all(in_bounds):
        return None  # masked, or partly out of bounds
    if any(int_constant(i) != 0 for i in read.operands[1:3]):
        return None
    tile = read.operands[0]
    if not isinstance(tile, ir.OpResult) or tile.owner.name != "tensor.extract_slice":
        return None
    return _panel_slice(tile.owner, n)


def _panel_slice(op: ir.Operation, n: int) -> tuple[ir.Operation, ir.Value, ir.Value] | None:
    """The constant, panel and k of ``tensor.extract_slice %c[panel, k, 0] [1, 2, n]``."""
    source = op.operands[0]
    if not isinstance(source, ir.OpResult) or source.owner.name != "arith.constant":
        return None
    ctype = ir.RankedTensorType(source.type)
    if ctype.rank != 3 or ctype.shape[2] != n or ctype.shape[1] % BF16_DOT_K:
        return None
    sizes = list(ir.DenseI64ArrayAttr(op.attributes["static_sizes"]))
    strides = list(ir.DenseI64ArrayAttr(op.attributes["static_strides"]))
    if sizes != [1, BF16_DOT_K, n] or strides != [1, 1, 1] or len(op.operands) != 4:
        return None  # offsets [panel, k, 0] all dynamic values, as pack-weights writes them
    panel, k, column = op.operands[1:4]
    if int_constant(column) != 0 or not _even_step_from_zero(_through_identity_apply(k)):
        return None
    return source.owner, panel, k


def _through_identity_apply(value: ir.Value) -> ir.Value:
    """``s0`` for ``affine.apply ()[s0] -> (s0)``, else ``value``."""
    if not isinstance(value, ir.OpResult) or value.owner.name != "affine.apply":
        return value
    amap = ir.AffineMapAttr(value.owner.attributes["map"]).value
    single = len(value.owner.operands) == 1 and amap.n_dims + amap.n_symbols == 1
    identity = single and str(amap) in ("()[s0] -> (s0)", "(d0) -> (d0)")
    return value.owner.operands[0] if identity else value


def _even_step_from_zero(k: ir.Value) -> bool:
    """``k`` is the induction variable of an ``scf.for`` from 0 by BF16_DOT_K."""
    if not isinstance(k, ir.BlockArgument) or k.owner.owner.name != "scf.for":
        return False
    loop = k.owner.owner
    lower, step = loop.operands[0], loop.operands[2]
    return k == loop.regions[0].blocks[0].arguments[0] and (
        int_constant(lower) == 0 and int_constant(step) == BF16_DOT_K
    )


def _pair_constant(constant: ir.Operation, cache: dict) -> ir.Value | None:
    """``constant`` (panels x K x n) as panels x K/2 x 2n, each k pair
    interleaved (lane j of a row: ``B[2i + j % 2, j // 2]``): the layout
    ``vdpbf16ps`` reads, made once at compile time. None when its bytes
    are unknown."""
    key = constant.results[0]
    if key in cache:
        return cache[key]
    ctype = ir.RankedTensorType(constant.results[0].type)
    array = weights.value_of(constant.attributes["value"], ctype, bits=True)
    if array is None:
        return None
    panels, k, n = ctype.shape
    pairs = array.reshape(panels, k // 2, 2, n).transpose(0, 1, 3, 2).reshape(panels, k // 2, 2 * n)
    ptype = ir.RankedTensorType.get([panels, k // 2, 2 * n], ctype.element_type)
    name = weights.derived_name(constant.attributes["value"], "pairs")
    func = constant.parent
    while func.name != "func.func":
        func = func.parent
    with ir.InsertionPoint.at_block_begin(func.regions[0].blocks[0]), constant.location:
        value = arith.ConstantOp(ptype, weights.constant_attr(pairs, ptype, name)).result
    cache[key] = value
    return value


def _read_pairs(pairs: ir.Value, panel: ir.Value, k: ir.Value, n: int) -> list[ir.Value]:
    """Per zmm of columns, their 16 pairs read from the interleaved weight."""
    index = ir.IndexType.get()
    half = arith.divui(k, arith.constant(index, BF16_DOT_K))
    vtype = ir.VectorType.get([_LANES * BF16_DOT_K], ir.BF16Type.get())
    padding = arith.constant(ir.BF16Type.get(), ir.FloatAttr.get(ir.BF16Type.get(), 0.0))
    minor = ir.AffineMapAttr.get(ir.AffineMap.get_minor_identity(3, 1))
    in_bounds = ir.ArrayAttr.get([ir.BoolAttr.get(True)])
    return [
        vector.transfer_read(
            vtype, pairs, [panel, half, arith.constant(index, first * BF16_DOT_K)],
            minor, padding, in_bounds,
        )
        for first in range(0, n, _LANES)
    ]  # fmt: skip


def _weights(rhs: ir.Value, n: int, cache: dict) -> list[ir.Value]:
    """B's pairs per zmm: read from a pair-packed weight where B is one,
    else interleaved from B's two rows."""
    found = _packed_read(rhs, n)
    pairs = None if found is None else _pair_constant(found[0], cache)
    if found is None or pairs is None:
        return _weight_pairs(rhs, n)
    _, panel, k = found
    return _read_pairs(pairs, panel, k, n)


def _rewrite(contract: ir.Operation, replaced: ir.Operation, cache: dict) -> None:
    lhs, rhs, acc = contract.operands
    (m, n), _ = _shape_and_type(acc)
    with ir.InsertionPoint(replaced), replaced.location:
        columns_pairs = _weights(rhs, n, cache)
        result = acc
        for row in range(m):
            a = _row_pair(lhs, row)
            c_row = vector.extract(acc, [], [row])
            pieces = []
            for columns, w in zip(_chunks(n), columns_pairs, strict=True):
                lanes = [*columns] + [-1] * (_LANES - len(columns))
                pieces.append(_dot(_shuffle(c_row, lanes), a, w))
            result = vector.insert(_concat(pieces, n), result, [], [row])
    replaced.results[0].replace_all_uses_with(result)
    replaced.erase()


def bf16_dot_products(module: ir.Operation) -> int:
    """Rewrite every pair-dot-shaped bf16 contraction in ``module``; returns
    how many. The caller checks that the target has AVX512-BF16."""
    count = 0
    packed: dict = {}  # weight constant -> its pair-packed copy
    for contract in ops_matching(module, lambda op: op.name == "vector.contract"):
        replaced = _candidate(contract)
        if replaced is not None:
            _rewrite(contract, replaced, packed)
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
