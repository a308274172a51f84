"""``lowerline-plan-arena``: one arena per call for an entry function's buffers.

Why: every intermediate buffer of the bufferized IR is a ``memref.alloc``,
which the llvm stage lowers to a call into ``malloc`` (``runtime_support.c``):
a MobileNet block made 174 allocations per call. Upstream MLIR has no static
memory planner. ``buffer-hoisting`` and ``buffer-loop-hoisting`` move
allocations up to a dominating block or out of loops but keep them as
allocations; ``promote-buffers-to-stack`` turns small ones into
``memref.alloca``, which puts tensor-sized buffers on the stack and plans no
reuse; ``optimize-allocation-liveness`` moves each ``dealloc`` right after the
last use so that ``malloc`` may reuse the memory, at run time and at the cost
of a call each. None assigns offsets in one buffer whose size is known when
compiling.

This pass does, on every public function with a body that no call in the
module refers to (an entry point: its signature may change):

1. **Candidates**: the ``memref.alloc``s directly in the entry block whose
   type has a static shape, the identity layout and the default memory
   space. Allocations nested in regions (the per-tile scratch of an
   ``scf.forall`` body, a loop's buffers) and dynamically shaped ones stay
   as they are: a parallel body's buffer is per thread, and a loop's may be
   live in several iterations at once.
2. **Live range** of each, in positions of the entry block: from the
   allocation to the last op that uses it or a view of it (``subview``,
   ``cast``, ``expand_shape``... transitively; a use inside a region counts
   at the entry-block op that holds it). Deallocations do not extend it and
   are erased. A buffer that escapes (returned, yielded, passed to a call,
   stored, or used by an op that makes a new memref from it that is not a
   view) is left as it is.
3. **Offsets**: greedy by size (largest first, ties by start), each buffer
   at the lowest offset, a multiple of 64 bytes (or of the allocation's own
   alignment if larger), that does not overlap a placed buffer whose live
   range overlaps its own.
4. **Rewrite**: a trailing ``memref<?xi8>`` argument (the arena) is appended
   to the function, each planned ``memref.alloc`` becomes ``memref.view``
   of it at its offset. The function gets ``lowerline.arena = [bytes,
   lower bound]``: the arena's size (the caller passes at least that many
   bytes, 64-byte aligned) and the most bytes of planned buffers live at one
   point (no plan is smaller). It gets them even when nothing was planned
   (size 0), so that every entry function has the argument.

Before::

    func.func @main(%x: memref<8xf32>, %out: memref<8xf32>) {
      %a = memref.alloc() : memref<8xf32>
      (uses of %a)
      memref.dealloc %a : memref<8xf32>
      %b = memref.alloc() : memref<8xf32>
      ...

After (%b reuses %a's bytes)::

    func.func @main(%x: memref<8xf32>, %out: memref<8xf32>, %arena: memref<?xi8>)
        attributes {lowerline.arena = array<i64: 32, 32>} {
      %c0 = arith.constant 0 : index
      %a = memref.view %arena[%c0][] : memref<?xi8> to memref<8xf32>
      (uses of %a)
      %c0_1 = arith.constant 0 : index
      %b = memref.view %arena[%c0_1][] : memref<?xi8> to memref<8xf32>
      ...

Boolean buffers take one byte per element: ``lowerline-widen-i1-memrefs``
later retypes them (and their views) to ``i8``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from mlir import ir
from mlir.dialects import arith, memref

from lowerline.passes.support.memref_views import VIEW_OPS
from lowerline.pipeline import protocol
from lowerline.pipeline.pass_api import Pass, defined_functions

ALIGNMENT = protocol.ARENA_ALIGNMENT

# Ops that hand a value on to somewhere this pass does not follow.
_ESCAPES = frozenset(
    {
        "func.return",
        "func.call",
        "func.call_indirect",
        "scf.yield",
        "scf.condition",
        "cf.br",
        "cf.cond_br",
        "cf.switch",
        "memref.store",  # only of a memref of memrefs: stores the buffer itself
    }
)


@dataclass
class Buffer:
    """One planned allocation: its live range (entry-block positions,
    inclusive), its size and, once placed, its offset in the arena."""

    alloc: ir.Operation
    start: int
    end: int
    size: int
    alignment: int
    deallocs: list[ir.Operation] = field(default_factory=list)
    offset: int = -1

    def overlaps(self, other: Buffer) -> bool:
        return self.start <= other.end and other.start <= self.end


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def element_bytes(t: ir.Type) -> int | None:
    """Bytes per element in memory, or None for a type this pass does not size.
    i1 takes a byte (see the module docstring)."""
    if isinstance(t, ir.IndexType):
        return 8  # the targets are 64-bit
    if isinstance(t, ir.ComplexType):
        part = element_bytes(t.element_type)
        return None if part is None else 2 * part
    if isinstance(t, ir.IntegerType | ir.FloatType):
        return _round_up(t.width, 8) // 8
    return None


def static_bytes(t: ir.MemRefType) -> int | None:
    """The bytes of a plannable buffer type, None if it is not one."""
    identity = t.affine_map == ir.AffineMap.get_identity(t.rank)
    if not t.has_static_shape or t.memory_space is not None or not identity:
        return None
    width = element_bytes(t.element_type)
    if width is None:
        return None
    count = 1
    for dim in t.shape:
        count *= dim
    return count * width


def _block_ancestor(op: ir.Operation, block_parent: ir.Operation) -> ir.Operation:
    """The op of ``block_parent``'s entry block that holds ``op``."""
    while op.parent.operation != block_parent:
        op = op.parent.operation
    return op


def _uses(value: ir.Value) -> Iterator[tuple[ir.Operation, int]]:
    for use in value.uses:
        yield use.owner.operation, use.operand_number


def _live_range(
    alloc: ir.Operation, func: ir.Operation, position: dict[ir.Operation, int]
) -> tuple[int, list[ir.Operation]] | None:
    """The position of the last use of ``alloc``'s buffer through any view,
    and its deallocations; None if the buffer escapes."""
    end = position[alloc]
    deallocs: list[ir.Operation] = []
    pending = [alloc.result]
    while pending:
        value = pending.pop()
        for user, operand in _uses(value):
            if user.name == "memref.dealloc":
                deallocs.append(user)
                continue
            if user.name in _ESCAPES:
                return None
            memref_results = [r for r in user.results if isinstance(r.type, ir.MemRefType)]
            if memref_results and (user.name not in VIEW_OPS or operand != 0):
                return None  # a new memref from the buffer that is not a view of it
            pending.extend(memref_results)
            end = max(end, position[_block_ancestor(user, func)])
    return end, deallocs


def _candidate(op: ir.Operation) -> tuple[int, int] | None:
    """(bytes, alignment) of a plannable ``memref.alloc``, else None."""
    if op.name != "memref.alloc":
        return None
    size = static_bytes(ir.MemRefType(op.result.type))
    if size is None:
        return None
    alignment = ALIGNMENT
    if "alignment" in op.attributes:
        alignment = max(alignment, ir.IntegerAttr(op.attributes["alignment"]).value)
    return size, alignment


def live_buffers(func: ir.Operation) -> list[Buffer]:
    """The plannable allocations of ``func``'s entry block with their live ranges."""
    ops = [op.operation for op in func.regions[0].blocks[0].operations]
    position = {op: index for index, op in enumerate(ops)}
    buffers = []
    for op in ops:
        sized = _candidate(op)
        if sized is None:
            continue
        found = _live_range(op, func, position)
        if found is None:
            continue
        end, deallocs = found
        buffers.append(Buffer(op, position[op], end, sized[0], sized[1], deallocs))
    return buffers


def place(buffers: list[Buffer]) -> int:
    """Give every buffer an offset (greedy by size, first fit); the arena's size."""
    placed: list[Buffer] = []
    for buffer in sorted(buffers, key=lambda b: (-b.size, b.start)):
        busy = sorted((b.offset, b.offset + b.size) for b in placed if b.overlaps(buffer))
        offset = 0
        for begin, end in busy:
            if offset + buffer.size <= begin:
                break
            offset = max(offset, _round_up(end, buffer.alignment))
        buffer.offset = offset
        placed.append(buffer)
    return max((b.offset + b.size for b in buffers), default=0)


def lower_bound(buffers: list[Buffer]) -> int:
    """The most bytes live at one position: what any plan needs at least."""
    events = sorted(
        [(b.start, b.size) for b in buffers] + [(b.end + 1, -b.size) for b in buffers],
        key=lambda event: (event[0], event[1]),  # frees before allocations at one position
    )
    live = most = 0
    for _, change in events:
        live += change
        most = max(most, live)
    return most


def _append_arena(func: ir.Operation) -> ir.Value:
    """Add the trailing ``memref<?xi8>`` argument to ``func``; return it."""
    arena_type = ir.MemRefType.get(
        [ir.ShapedType.get_dynamic_size()], ir.IntegerType.get_signless(8)
    )
    block = func.regions[0].blocks[0]
    arena = block.add_argument(arena_type, func.location)
    ftype = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    func.attributes["function_type"] = ir.TypeAttr.get(
        ir.FunctionType.get([*ftype.inputs, arena_type], ftype.results)
    )
    if "arg_attrs" in func.attributes:  # one dictionary per argument
        attrs = list(ir.ArrayAttr(func.attributes["arg_attrs"]))
        func.attributes["arg_attrs"] = ir.ArrayAttr.get([*attrs, ir.DictAttr.get({})])
    return arena


def _rewrite(buffer: Buffer, arena: ir.Value) -> None:
    alloc = buffer.alloc
    with ir.InsertionPoint(alloc), alloc.location:
        offset = arith.constant(ir.IndexType.get(), buffer.offset)
        view = memref.view(alloc.result.type, arena, offset, [])
    alloc.result.replace_all_uses_with(view)
    for dealloc in buffer.deallocs:
        dealloc.erase()
    alloc.erase()


def _called_symbols(module: ir.Operation) -> set[str]:
    called: set[str] = set()

    def visit(op: ir.Operation) -> ir.WalkResult:
        callee = op.attributes.get("callee", None)
        if isinstance(callee, ir.FlatSymbolRefAttr):
            called.add(callee.value)
        return ir.WalkResult.ADVANCE

    module.walk(visit)
    return called


def _is_entry(func: ir.Operation, called: set[str]) -> bool:
    visibility = func.attributes.get("sym_visibility", None)
    if visibility is not None and ir.StringAttr(visibility).value != "public":
        return False
    return ir.StringAttr(func.attributes["sym_name"]).value not in called


@dataclass(frozen=True)
class PlanArena(Pass):
    flag = "lowerline-plan-arena"
    summary = "Place an entry function's static buffers in one arena argument, reusing memory"
    anchor = "builtin.module"

    def run(self, op: ir.Operation) -> None:
        called = _called_symbols(op)
        for func in defined_functions(op):
            if _is_entry(func, called) and not protocol.ARENA.has(func):
                self._plan(func)

    def _plan(self, func: ir.Operation) -> None:
        buffers = live_buffers(func)
        size = place(buffers)
        arena = _append_arena(func)
        for buffer in buffers:
            _rewrite(buffer, arena)
        protocol.ARENA.set(func, [size, lower_bound(buffers)])
