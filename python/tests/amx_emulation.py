"""AMX tile ops rewritten as scalar loops over buffers, so that code
lowerline-amx-tiles produced runs (slowly) on a CPU without AMX: its
offsets, strides and packing are then checked against numpy on any x86 or
AArch64 machine, not only where the CI host happens to have AMX.

Each tile becomes a buffer of its shape: ``amx.tile_load`` copies rows of
the source into it, ``amx.tile_muli`` accumulates into the accumulator's
buffer in place (lowerline-amx-tiles uses every accumulator value once),
``amx.tile_store`` copies it back; loop-carried tiles carry the buffers.
The dot product is the instruction's: ``C[m, n] += sum_k A[m, k] *
B[k // g, g n + k % g]``, over signed bytes with g = 4 (``tdpbssd``) or
bf16 with g = 2 into f32 (``tdpbf16ps``, whose sums may round in another
order).
"""

from __future__ import annotations

from collections.abc import Callable

from mlir import ir
from mlir.dialects import arith, memref, scf


def _index(value: int) -> ir.Value:
    return arith.constant(ir.IndexType.get(), value)


def _loops(sizes: list[int], body: Callable[[list[ir.Value]], None]) -> None:
    """``body(indices)`` inside a nest of ``scf.for`` over ``sizes``."""
    if not sizes:
        body([])
        return
    loop = scf.ForOp(_index(0), _index(sizes[0]), _index(1))
    with ir.InsertionPoint(loop.body):
        _loops(sizes[1:], lambda inner: body([loop.induction_variable, *inner]))
        scf.YieldOp([])


def _buffer_type(tile: ir.Type) -> ir.MemRefType:
    text = str(tile)  # !amx.tile<16x64xi8>
    shape, element = text[len("!amx.tile<") : -1].rsplit("x", 1)
    rows, columns = (int(s) for s in shape.split("x"))
    return ir.MemRefType.get([rows, columns], ir.Type.parse(element))


def _copy(
    source: ir.Value,
    source_at: list[ir.Value],
    target: ir.Value,
    target_at: list[ir.Value],
    shape: list[int],
) -> None:
    """``target[target_at + (r, c)] = source[source_at + (r, c)]`` over ``shape``."""

    def body(rc: list[ir.Value]) -> None:
        src = [arith.addi(a, b) for a, b in zip(source_at, rc, strict=True)]
        dst = [arith.addi(a, b) for a, b in zip(target_at, rc, strict=True)]
        memref.store(memref.load(source, src), target, dst)

    _loops(shape, body)


def _load(op: ir.Operation) -> None:
    buffer_type = _buffer_type(op.results[0].type)
    base, row, column = op.operands
    buffer = memref.alloc(buffer_type, [], [])
    zero = _index(0)
    _copy(base, [row, column], buffer, [zero, zero], list(buffer_type.shape))
    op.results[0].replace_all_uses_with(buffer)


def _store(op: ir.Operation) -> None:
    base, row, column, value = op.operands
    zero = _index(0)
    _copy(value, [zero, zero], base, [row, column], list(ir.MemRefType(value.type).shape))


def _multiply(op: ir.Operation) -> None:
    a, b, acc = op.operands
    rows, depth = ir.MemRefType(a.type).shape
    columns = ir.MemRefType(acc.type).shape[1]
    wide = ir.MemRefType(acc.type).element_type
    integer = isinstance(wide, ir.IntegerType)
    group = 4 if integer else 2  # elements of k per accumulator lane
    extend = arith.extsi if integer else arith.extf
    multiply, add = (arith.muli, arith.addi) if integer else (arith.mulf, arith.addf)

    def body(mnk: list[ir.Value]) -> None:
        m, n, k = mnk
        g = _index(group)
        b_at = [arith.divui(k, g), arith.addi(arith.muli(n, g), arith.remui(k, g))]
        x = extend(wide, memref.load(a, [m, k]))
        y = extend(wide, memref.load(b, b_at))
        memref.store(add(memref.load(acc, [m, n]), multiply(x, y)), acc, [m, n])

    _loops([rows, columns, depth], body)
    op.results[0].replace_all_uses_with(acc)


_REWRITES = {
    "amx.tile_load": _load,
    "amx.tile_store": _store,
    "amx.tile_muli": _multiply,
    "amx.tile_mulf": _multiply,
}


def _retype_loops(module: ir.Operation) -> None:
    """Loop-carried tiles (``scf.for`` iter_args and results) as buffers."""
    loops: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "scf.for":
            loops.append(op)
        return ir.WalkResult.ADVANCE

    module.walk(visit)
    for loop in loops:
        values = [*loop.regions[0].blocks[0].arguments, *loop.results]
        for value in values:
            if str(value.type).startswith("!amx.tile<"):
                value.set_type(_buffer_type(value.type))


def emulate_tiles(module: ir.Operation) -> int:
    """Rewrite every AMX tile op of ``module``; returns how many."""
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name in _REWRITES:
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.walk(visit)
    with module.context, ir.Location.unknown():
        _retype_loops(module)
    for op in found:
        with ir.InsertionPoint(op), op.location:
            _REWRITES[op.name](op)
        op.erase()
    return len(found)
