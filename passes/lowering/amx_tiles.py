"""``lowerline-amx-tiles``: the int8 and bf16 contractions
lowerline-amx-matmul marked (``lowerline.amx_tiles``), once on buffers, as
loops of AMX tile ops (``amx.tile_load``, ``amx.tile_muli`` or
``amx.tile_mulf``, ``amx.tile_store``), which
``convert-vector-to-llvm{enable-amx}`` lowers to LLVM's AMX intrinsics; the
X86 backend then configures the tiles (``ldtilecfg``)::

    linalg.generic {lowerline.amx_tiles} ins(%a : M x K/4 x 4 xi8, %bp : K/4 x N x 4 xi8)
                                         outs(%c : MxNxi32)
  ->
    %a2 = memref.collapse_shape %a : M x K, %bp2 = memref.collapse_shape %bp : K/4 x 4N
    scf.forall over the blocks of up to 2x2 C tiles (16x16 i32 each):
      c[i][j] = amx.tile_load %c[...]                 // the fill or bias there
      for k in steps of 64 bytes:
        a[i] = amx.tile_load %a2[rows of i, k]         // 16 rows x 64 bytes
        b[j] = amx.tile_load %bp2[k / 4, 4 * cols of j] // 16 rows x 64 bytes
        c[i][j] = amx.tile_muli a[i], b[j], c[i][j]   // tdpbssd (bf16: tile_mulf, tdpbf16ps)
      amx.tile_store %c[...], c[i][j]

Eight tile registers: four accumulators, two A and two B tiles, each loaded
tile used twice. Every tile has one shape, 16 rows of 64 bytes, which is
why lowerline-amx-matmul pads M, N and K to whole tiles: LLVM
configures each tile register once per function (one ``ldtilecfg``), so a
register holds tiles of one shape only, and the edge tiles of a few
differently sized matmuls in one function ran out of the eight registers
(``llc``: "ran out of registers during register allocation"). The
accumulators start from what C holds (the fill or the bias) and the
requantize epilogue reads the stored i32 result.

Upstream has the tile ops and their LLVM lowering but no pass that tiles a
contraction on buffers for them (``convert-vector-to-amx`` takes a
``vector.contract`` of one tile's shape, in VNNI form, and emits one
tile's loads and stores around it). Refused (left as loops, remark):
buffers of dynamic layout, rows that are not contiguous (``tileloadd``
reads rows of bytes), sizes that are not whole tiles.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, memref, scf

from lowerline.passes.tiling.amx_matmul import TILE_BYTES, TILE_ROWS
from lowerline.pipeline.options import opt
from lowerline.pipeline.pass_api import Pass, ops_matching
from lowerline.pipeline.protocol import AMX_TILES
from lowerline.pipeline.remarks import DECISION, FALLBACK, about, publish

# C tiles per block along rows and columns (2 x 2 accumulators, 2 A, 2 B).
BLOCK = 2


@dataclass(frozen=True)
class _Segment:
    """``count`` blocks of ``tiles`` tiles along one dim, from ``start``."""

    start: int
    count: int
    tiles: int

    @property
    def step(self) -> int:
        return self.tiles * TILE_ROWS


def segments(extent: int) -> list[_Segment]:
    """Blocks of ``BLOCK`` tiles, then one of the tiles left (``extent`` is
    whole tiles): 80 -> two blocks of 2 tiles and one of 1."""
    tiles = extent // TILE_ROWS
    whole = tiles // BLOCK
    found = [_Segment(0, whole, BLOCK)] if whole else []
    if tiles % BLOCK:
        found.append(_Segment(whole * BLOCK * TILE_ROWS, 1, tiles % BLOCK))
    return found


def _index(value: int) -> ir.Value:
    return arith.constant(ir.IndexType.get(), value)


def _offset(base: ir.Value, extra: int, scale: int = 1) -> ir.Value:
    """``base * scale + extra`` as an index value."""
    scaled = base if scale == 1 else arith.muli(base, _index(scale))
    return scaled if extra == 0 else arith.addi(scaled, _index(extra))


def _tile(element: ir.Type) -> ir.Type:
    """A whole tile of ``element``: 16 rows of 64 bytes."""
    columns = TILE_BYTES // _size(element)
    return ir.Type.parse(f"!amx.tile<{TILE_ROWS}x{columns}x{element}>")


def _load(buffer: ir.Value, row: ir.Value, column: ir.Value) -> ir.Value:
    """The whole tile at ``buffer[row, column]`` (the bindings have no amx builders)."""
    element = ir.MemRefType(buffer.type).element_type
    return ir.Operation.create(
        "amx.tile_load",
        results=[_tile(element)],
        operands=[buffer, row, column],
        attributes={"operandSegmentSizes": ir.DenseI32ArrayAttr.get([1, 2, 0])},
    ).result


def _store(buffer: ir.Value, row: ir.Value, column: ir.Value, value: ir.Value) -> None:
    ir.Operation.create(
        "amx.tile_store",
        operands=[buffer, row, column, value],
        attributes={"operandSegmentSizes": ir.DenseI32ArrayAttr.get([1, 2, 1, 0])},
    )


def _size(element: ir.Type) -> int:
    """Bytes of an i8, bf16, i32 or f32 element."""
    if isinstance(element, ir.IntegerType):
        return ir.IntegerType(element).width // 8
    return ir.FloatType(element).width // 8


def _multiply(name: str, a: ir.Value, b: ir.Value, c: ir.Value) -> ir.Value:
    """``c + a * b`` by the tile product ``name`` (``_Operands.product``)."""
    return ir.Operation.create(name, results=[c.type], operands=[a, b, c]).result


@dataclass(frozen=True)
class _Operands:
    lhs: ir.Value  # M x K (i8 or bf16)
    packed: ir.Value  # K/g x gN: g elements of k per accumulator lane (4 i8, 2 bf16)
    out: ir.Value  # M x N (i32 or f32)
    group: int

    @property
    def depth(self) -> int:
        """Elements of k per tile row."""
        return TILE_BYTES // _size(ir.MemRefType(self.lhs.type).element_type)

    @property
    def product(self) -> str:
        """The tile product: over signed bytes ``tdpbssd``, over bf16 ``tdpbf16ps``."""
        integer = isinstance(ir.MemRefType(self.out.type).element_type, ir.IntegerType)
        return "amx.tile_muli" if integer else "amx.tile_mulf"


@dataclass(frozen=True)
class _Block:
    """``rows`` x ``columns`` C tiles from C's element (``row``, ``column``)."""

    row: ir.Value
    column: ir.Value
    rows: int
    columns: int

    def row_at(self, i: int) -> ir.Value:
        return _offset(self.row, i * TILE_ROWS)

    def column_at(self, j: int, scale: int = 1) -> ir.Value:
        return _offset(self.column, scale * j * TILE_ROWS, scale)

    @property
    def places(self) -> list[tuple[int, int]]:
        return [(i, j) for i in range(self.rows) for j in range(self.columns)]


def _k_step(ops: _Operands, block: _Block, k: ir.Value, acc: list) -> list:
    """The accumulators after the 64 bytes of k from element ``k``: each A
    and B tile loaded once, used by a row or a column of the block."""
    a_tiles = [_load(ops.lhs, block.row_at(i), k) for i in range(block.rows)]
    q = arith.divui(k, _index(ops.group))
    b_tiles = [_load(ops.packed, q, block.column_at(j, ops.group)) for j in range(block.columns)]
    return [
        _multiply(ops.product, a_tiles[i], b_tiles[j], c)
        for (i, j), c in zip(block.places, acc, strict=True)
    ]


def _block(ops: _Operands, block: _Block) -> None:
    """Load the block's accumulators, run the k loop on them, store them."""
    acc = [_load(ops.out, block.row_at(i), block.column_at(j)) for i, j in block.places]
    depth = ir.MemRefType(ops.lhs.type).shape[1]
    loop = scf.ForOp(_index(0), _index(depth), _index(ops.depth), acc)
    with ir.InsertionPoint(loop.body):
        scf.YieldOp(_k_step(ops, block, loop.induction_variable, list(loop.inner_iter_args)))
    for (i, j), value in zip(block.places, loop.results, strict=True):
        _store(ops.out, block.row_at(i), block.column_at(j), value)


def _blocks(rows: _Segment, columns: _Segment, body: Callable[[ir.Value, ir.Value], None]) -> None:
    """``body(i, j)`` at each block of ``rows`` x ``columns``: once, or in an
    ``scf.forall`` (the loops stage runs it on the threads, each with its
    own tile registers; Linux's AMX permission holds for every thread)."""
    if rows.count * columns.count == 1:
        body(_index(rows.start), _index(columns.start))
        return
    starts = [rows.start, columns.start]
    ends = [s.start + s.count * s.step for s in (rows, columns)]
    loop = scf.ForallOp(starts, ends, [rows.step, columns.step])
    with ir.InsertionPoint(loop.terminator()):
        body(*loop.induction_variables)


def _emit(ops: _Operands, m: int, n: int) -> None:
    for rows in segments(m):
        for columns in segments(n):
            shape = (rows.tiles, columns.tiles)

            def block(i: ir.Value, j: ir.Value, shape: tuple[int, int] = shape) -> None:
                _block(ops, _Block(i, j, *shape))

            _blocks(rows, columns, block)


def _strides(value: ir.Value) -> list[int] | None:
    """The static strides of a static buffer, or None."""
    mtype = value.type
    if not isinstance(mtype, ir.MemRefType) or not mtype.has_static_shape:
        return None
    strides, offset = ir.MemRefType(mtype).get_strides_and_offset()
    dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
    return None if dynamic in (*strides, offset) else strides


def _contiguous_rows(value: ir.Value) -> bool:
    """An A x B x g buffer whose last two dims are contiguous (its rows)."""
    strides = _strides(value)
    return strides is not None and strides[1:] == [ir.MemRefType(value.type).shape[2], 1]


def _collapsed(value: ir.Value) -> ir.Value:
    """An A x B x 4 buffer as A x 4B, its rows' stride kept."""
    mtype = ir.MemRefType(value.type)
    rows, groups, group = mtype.shape
    strides, offset = mtype.get_strides_and_offset()
    layout = ir.StridedLayoutAttr.get(offset, [strides[0], 1])
    identity = offset == 0 and strides[0] == groups * group
    flat = ir.MemRefType.get(
        [rows, groups * group], mtype.element_type, None if identity else layout
    )
    return memref.collapse_shape(flat, value, [[0], [1, 2]])


def _refusal(generic: ir.Operation) -> str | None:
    """Why ``generic`` cannot become tile loops, or None."""
    if generic.results or len(generic.operands) != 3:
        return "not on buffers"
    lhs, packed, out = generic.operands
    out_strides = _strides(out)
    if not (_contiguous_rows(lhs) and _contiguous_rows(packed)) or out_strides is None:
        return "a buffer of dynamic layout or whose rows are not contiguous"
    if out_strides[-1] != 1:
        return "an output whose innermost stride is not 1"
    m, n = ir.MemRefType(out.type).shape
    _, groups, group = ir.MemRefType(lhs.type).shape
    depth = groups * group * _size(ir.MemRefType(lhs.type).element_type)
    if m % TILE_ROWS or n % TILE_ROWS or depth % TILE_BYTES:
        return f"{m}x{n} ({depth} bytes of k) is not in whole 16x16 tiles of 64 bytes of k"
    return None


def _lower(generic: ir.Operation) -> None:
    """Replace ``generic`` by tile loops."""
    lhs, packed, out = generic.operands
    with ir.InsertionPoint(generic), generic.location:
        group = ir.MemRefType(lhs.type).shape[2]
        ops = _Operands(_collapsed(lhs), _collapsed(packed), out, group)
        m, n = ir.MemRefType(ops.out.type).shape
        _emit(ops, m, n)
    generic.erase()


# Exported by a library with tile code: lowerline.runtime.amx asks Linux for
# the AMX state (arch_prctl) before its first call when it finds it.
MARKER = "lowerline_uses_amx"
_MARKER_GLOBAL = f"llvm.mlir.global external constant @{MARKER}(1 : i8) : i8"


def _mark(module: ir.Operation) -> None:
    """Declare ``MARKER`` in ``module`` once."""
    body = module.regions[0].blocks[0]
    names = [op.attributes["sym_name"] for op in body.operations if "sym_name" in op.attributes]
    if any(ir.StringAttr(name).value == MARKER for name in names):
        return
    marker = ir.Operation.parse(_MARKER_GLOBAL, context=module.context)
    ir.InsertionPoint.at_block_begin(body).insert(marker)


@dataclass(frozen=True)
class AmxTiles(Pass):
    flag = "lowerline-amx-tiles"
    summary = "the AMX contractions of lowerline-amx-matmul, on buffers, as AMX tile loops"
    anchor = "builtin.module"

    explain: bool = opt(False, "print each contraction lowered or left as loops as remarks")

    def run(self, op: ir.Operation) -> None:
        remarks = []
        lowered = 0
        for generic in ops_matching(op, AMX_TILES.has):
            refusal = _refusal(generic)
            if refusal is not None:
                remarks.append(about(generic, self.flag, f"left as loops: {refusal}", FALLBACK))
                continue
            remarks.append(about(generic, self.flag, "on AMX tiles", DECISION))
            _lower(generic)
            lowered += 1
        if lowered:
            _mark(op)
        publish(remarks, self.explain)
