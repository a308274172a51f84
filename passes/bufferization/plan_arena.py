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
   space, and those directly in the body of an outermost ``scf.forall``
   (per-tile scratch, see "Per-thread slots"). A buffer of dynamic size
   is a candidate when each dynamic size has a known maximum (see "Dynamic
   sizes"). Allocations nested in sequential loops (``buffer-loop-hoisting``
   already moved out the loop-invariant ones: what is left depends on the
   iteration) or in a nested ``scf.forall``, and dynamically shaped ones
   without a maximum, stay as they are, and each is reported (a refusal
   remark; ``explain`` prints them).
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
   lower bound]``: the arena's size, per-thread slots included (the caller
   passes at least that many bytes, 64-byte aligned: all a call needs) and
   the most bytes of planned buffers live at one point (no plan is smaller;
   slots counted as below). It gets them even when nothing was planned
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

**Per-thread slots.** The body of a parallel tile loop (``scf.forall``, an
OpenMP worksharing loop after the loops stage) allocates its scratch once
per tile, on whichever thread runs the tile: the allocations of a ResNet
basic block's convolution tiles were 52 ``malloc`` calls per call. Each
outermost forall body's candidates are planned like the entry block's, into
one slot (``S`` bytes, its placed size rounded to the alignment); the
arena reserves ``threads x S`` bytes for the loop, live at the entry-block
op that holds it, and a tile's buffers are views at ``offset + tid x S``.
The thread count is the ``threads`` option, fixed when compiling: the CPU
pipeline passes the count it gives ``convert-scf-to-openmp{num-threads}``,
whose ``omp.parallel num_threads(N)`` never makes a team larger, so the
thread number ``tid`` (``omp_get_thread_num``, called with an ``llvm.call``
in the body: nothing upstream gives a thread number at the scf level, and a
``func.call`` declaration would get a C wrapper from
``llvm-request-c-wrappers``; ``lowerline-hoist-thread-number`` moves it to
the top of the OpenMP region after the conversion) is below it.
``buffer-loop-hoisting`` does not move an allocation out of an
``scf.forall`` (an allocation scope), and rightly: its tiles run at once.
With ``threads=1`` the loops run
sequentially (``scf-forall-to-for``): one slot, no call. With ``threads=0``
(a runtime without OpenMP thread numbers: MLIR's async runtime) the scratch
stays allocated per tile. Sizing at compile time keeps the arena one fixed
size per specialization (the exported workspace, ``NAME_WORKSPACE_BYTES``,
is a constant); a call on fewer threads leaves slots unused.

The lower bound counts the slots honestly: ``threads x`` the most bytes of
a tile's scratch live at one point of its body, at the loop's position. No
plan that gives each thread memory of its own needs less, as every thread
may be in that point of a tile at once.

**Dynamic sizes.** A library compiled for a range of input sizes
(``lowerline.compile(..., dynamic=...)``) allocates buffers whose sizes
follow the inputs' dims. The import worker writes the ranges on the entry
function (``lowerline.dynamic_ranges``: argument, dim, min, max); a dynamic
size that is ``memref.dim`` of such an argument, a constant, or index
arithmetic of those (``muli``, ``addi``, ``max``/``min``, division by a
constant) has a maximum, and the buffer is planned at the size it has at
the maxima: the arena stays one fixed size, and the view
(``memref.view`` with the alloc's dynamic sizes) has the call's actual
size. Without a range (or through an op this pass does not bound) the
buffer stays an allocation per call, reported.

Boolean buffers take one byte per element: ``lowerline-widen-i1-memrefs``
later retypes them (and their views) to ``i8``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from mlir import ir
from mlir.dialects import arith, llvm, memref

from lowerline.passes.support.memref_views import VIEW_OPS
from lowerline.pipeline import protocol, remarks
from lowerline.pipeline.options import opt
from lowerline.pipeline.pass_api import Pass, defined_functions, ops_matching

ALIGNMENT = protocol.ARENA_ALIGNMENT
# The OpenMP runtime's thread number within the current team (libomp).
THREAD_NUMBER = "omp_get_thread_num"

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
        "memref.store",  # as the value stored (operand 0): the buffer itself is stored
    }
)


def _escapes(user: ir.Operation, operand: int) -> bool:
    """Whether ``user`` hands its ``operand`` on (a store into the buffer does not)."""
    if user.name == "memref.store":
        return operand == 0
    return user.name in _ESCAPES


@dataclass
class Buffer:
    """One planned region of the arena: a ``memref.alloc``'s buffer, or the
    per-thread slots of a parallel loop (``op`` is then the ``scf.forall``).
    Its live range (positions in its block, inclusive), its size and, once
    placed, its offset; ``need`` is what the lower bound counts of it."""

    op: ir.Operation
    start: int
    end: int
    size: int
    alignment: int
    deallocs: list[ir.Operation] = field(default_factory=list)
    offset: int = -1
    need: int = -1  # -1: the size

    def __post_init__(self) -> None:
        if self.need < 0:
            self.need = self.size

    def overlaps(self, other: Buffer) -> bool:
        return self.start <= other.end and other.start <= self.end


@dataclass
class ThreadSlots:
    """A parallel loop's scratch: its body's buffers planned in one slot of
    ``slot`` bytes, and the arena region holding a slot per thread."""

    forall: ir.Operation
    buffers: list[Buffer]
    slot: int
    region: Buffer


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


def _block_ancestor(op: ir.Operation, block_parent: ir.Operation) -> ir.Operation:
    """The op of ``block_parent``'s entry block that holds ``op``."""
    while op.parent.operation != block_parent:
        op = op.parent.operation
    return op


def _uses(value: ir.Value) -> Iterator[tuple[ir.Operation, int]]:
    for use in value.uses:
        yield use.owner.operation, use.operand_number


def _live_range(
    alloc: ir.Operation, holder: ir.Operation, position: dict[ir.Operation, int]
) -> tuple[int, list[ir.Operation]] | None:
    """The position of the last use of ``alloc``'s buffer through any view
    (in the entry block of ``holder``, which holds ``alloc``), and its
    deallocations; None if the buffer escapes."""
    end = position[alloc]
    deallocs: list[ir.Operation] = []
    pending = [alloc.result]
    while pending:
        value = pending.pop()
        for user, operand in _uses(value):
            if user.name == "memref.dealloc":
                deallocs.append(user)
                continue
            if _escapes(user, operand):
                return None
            memref_results = [r for r in user.results if isinstance(r.type, ir.MemRefType)]
            if memref_results and (user.name not in VIEW_OPS or operand != 0):
                return None  # a new memref from the buffer that is not a view of it
            pending.extend(memref_results)
            end = max(end, position[_block_ancestor(user, holder)])
    return end, deallocs


def dim_maxima(func: ir.Operation) -> dict[tuple[int, int], int]:
    """``{(argument, dim): max}`` from ``func``'s ``lowerline.dynamic_ranges``."""
    flat = protocol.DYNAMIC_RANGES.get(func, [])
    assert flat is not None
    return {(flat[i], flat[i + 1]): flat[i + 3] for i in range(0, len(flat) - 3, 4)}


def _constant_index(value: ir.Value) -> int | None:
    owner = value.owner
    if isinstance(owner, ir.Block) or owner.name != "arith.constant":
        return None
    attr = owner.attributes["value"]
    return ir.IntegerAttr(attr).value if isinstance(attr, ir.IntegerAttr) else None


# Index arithmetic whose result is at most the op applied to its operands'
# maxima (operands >= 0: sizes), with a constant divisor for the divisions.
_MONOTONE: dict[str, Callable[[int, int], int]] = {
    "arith.muli": lambda a, b: a * b,
    "arith.addi": lambda a, b: a + b,
    "arith.maxui": max,
    "arith.maxsi": max,
    "arith.minui": min,
    "arith.minsi": min,
}
_DIVISIONS: dict[str, Callable[[int, int], int]] = {
    "arith.divui": lambda a, b: a // b,
    "arith.divsi": lambda a, b: a // b,
    "arith.ceildivui": lambda a, b: -(-a // b),
    "arith.ceildivsi": lambda a, b: -(-a // b),
}


def _monotone_max(expr: ir.AffineExpr, dims: list[int], symbols: list[int]) -> int | None:
    """The value of ``expr`` at its dims' and symbols' maxima, where ``expr``
    never decreases as they grow (sums, products with a constant >= 0,
    divisions by a constant > 0); None otherwise (``mod``, a negative factor)."""
    if isinstance(expr, ir.AffineConstantExpr):
        return expr.value
    if isinstance(expr, ir.AffineDimExpr):
        return dims[expr.position]
    if isinstance(expr, ir.AffineSymbolExpr):
        return symbols[expr.position]
    if not isinstance(expr, ir.AffineBinaryExpr):
        return None
    lhs, rhs = _monotone_max(expr.lhs, dims, symbols), _monotone_max(expr.rhs, dims, symbols)
    if lhs is None or rhs is None:
        return None
    if isinstance(expr, ir.AffineAddExpr):
        return lhs + rhs
    # A product or quotient is monotone only by a constant (of the right sign).
    constant = expr.rhs.value if isinstance(expr.rhs, ir.AffineConstantExpr) else None
    if isinstance(expr, ir.AffineMulExpr) and constant is not None and constant >= 0:
        return lhs * rhs
    if isinstance(expr, ir.AffineFloorDivExpr) and constant is not None and constant > 0:
        return lhs // rhs
    if isinstance(expr, ir.AffineCeilDivExpr) and constant is not None and constant > 0:
        return -(-lhs // rhs)
    return None


def _affine_max(apply: ir.Operation, func: ir.Operation, maxima: dict) -> int | None:
    """The largest result of an ``affine.apply`` of bounded operands."""
    amap = ir.AffineMapAttr(apply.attributes["map"]).value
    bounds = [upper_bound(v, func, maxima) for v in apply.operands]
    if any(b is None or b < 0 for b in bounds):
        return None
    known = [b for b in bounds if b is not None]
    dims, symbols = known[: amap.n_dims], known[amap.n_dims :]
    return _monotone_max(amap.results[0], dims, symbols)


def upper_bound(
    value: ir.Value, func: ir.Operation, maxima: dict[tuple[int, int], int]
) -> int | None:
    """The largest value an index ``value`` of ``func`` takes: a constant, the
    size of an argument's dim with a range, or index arithmetic of those; None
    when no bound is known."""
    constant = _constant_index(value)
    if constant is not None:
        return constant
    owner = value.owner
    if isinstance(owner, ir.Block):
        return None
    operands = list(owner.operands)
    if owner.name in ("memref.dim", "tensor.dim"):
        source, dim = operands[0], _constant_index(operands[1])
        if isinstance(source.owner, ir.Block) and source.owner.owner == func:
            argument = ir.BlockArgument(source).arg_number
            return maxima.get((argument, dim)) if dim is not None else None
        return None
    if owner.name == "affine.apply":
        return _affine_max(owner, func, maxima)
    if owner.name in _MONOTONE or owner.name in _DIVISIONS:
        return _arith_max(owner, func, maxima)
    return None


def _arith_max(op: ir.Operation, func: ir.Operation, maxima: dict) -> int | None:
    """The largest result of index arithmetic (``_MONOTONE``, ``_DIVISIONS``)."""
    lhs, rhs = list(op.operands)
    top = upper_bound(lhs, func, maxima)
    if op.name in _DIVISIONS:
        divisor = _constant_index(rhs)
        if top is None or divisor is None or divisor <= 0:
            return None
        return _DIVISIONS[op.name](top, divisor)
    other = upper_bound(rhs, func, maxima)
    if top is None or other is None or top < 0 or other < 0:
        return None
    return _MONOTONE[op.name](top, other)


def max_bytes(
    alloc: ir.Operation, func: ir.Operation, maxima: dict[tuple[int, int], int]
) -> int | None:
    """The bytes of ``alloc``'s buffer at its dynamic sizes' maxima (its own
    size when static); None if it is not plannable or a size has no bound."""
    t = ir.MemRefType(alloc.result.type)
    identity = t.affine_map == ir.AffineMap.get_identity(t.rank)
    width = element_bytes(t.element_type)
    if t.memory_space is not None or not identity or width is None:
        return None
    # memref.alloc's operands: the dynamic sizes, in order (no symbols: identity layout).
    dynamic = iter(alloc.operands)
    count = width
    for dim in t.shape:
        if dim == ir.ShapedType.get_dynamic_size():
            dim = upper_bound(next(dynamic), func, maxima)
            if dim is None:
                return None
        count *= dim
    return count


def _candidate(
    op: ir.Operation, func: ir.Operation, maxima: dict[tuple[int, int], int]
) -> tuple[int, int] | None:
    """(bytes, alignment) of a plannable ``memref.alloc``, else None."""
    if op.name != "memref.alloc":
        return None
    size = max_bytes(op, func, maxima)
    if size is None:
        return None
    alignment = ALIGNMENT
    if "alignment" in op.attributes:
        alignment = max(alignment, ir.IntegerAttr(op.attributes["alignment"]).value)
    return size, alignment


def live_buffers(holder: ir.Operation, func: ir.Operation | None = None) -> list[Buffer]:
    """The plannable allocations of the entry block of ``holder`` (a function
    or a parallel loop of the function ``func``) with their live ranges."""
    func = holder if func is None else func
    maxima = dim_maxima(func)
    ops = [op.operation for op in holder.regions[0].blocks[0].operations]
    position = {op: index for index, op in enumerate(ops)}
    buffers = []
    for op in ops:
        sized = _candidate(op, func, maxima)
        if sized is None:
            continue
        found = _live_range(op, holder, position)
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
        [(b.start, b.need) for b in buffers] + [(b.end + 1, -b.need) for b in buffers],
        key=lambda event: (event[0], event[1]),  # frees before allocations at one position
    )
    live = most = 0
    for _, change in events:
        live += change
        most = max(most, live)
    return most


def outermost_foralls(func: ir.Operation) -> list[ir.Operation]:
    """The ``scf.forall``s of ``func`` that no other one holds."""

    def outermost(op: ir.Operation) -> bool:
        parent = op.parent
        while parent is not None and parent.operation != func:
            if parent.operation.name == "scf.forall":
                return False
            parent = parent.operation.parent
        return True

    return [op for op in ops_matching(func, lambda o: o.name == "scf.forall") if outermost(op)]


def thread_slots(
    forall: ir.Operation, threads: int, position: int, func: ir.Operation
) -> ThreadSlots | None:
    """``forall``'s body buffers planned in one slot, and the region of
    ``threads`` slots at entry-block ``position``; None if it has none."""
    buffers = live_buffers(forall, func)
    if not buffers:
        return None
    # Slots start at multiples of the largest alignment inside them.
    alignment = max(b.alignment for b in buffers)
    slot = _round_up(place(buffers), alignment)
    need = threads * lower_bound(buffers)
    region = Buffer(forall, position, position, threads * slot, alignment, need=need)
    return ThreadSlots(forall, buffers, slot, region)


def append_arena(func: ir.Operation) -> ir.Value:
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


def _index(value: int) -> ir.Value:
    return arith.constant(ir.IndexType.get(), value)


def view_in_arena(buffer: Buffer, arena: ir.Value, base: ir.Value | int = 0) -> None:
    """``buffer``'s alloc as a view of ``arena`` at its offset after ``base``
    (a thread's slot, known when compiling or not)."""
    alloc = buffer.op
    with ir.InsertionPoint(alloc), alloc.location:
        if isinstance(base, int):
            offset = _index(base + buffer.offset)
        else:
            offset = arith.addi(base, _index(buffer.offset))
        # A dynamic size's view has the call's actual size, within the planned maximum.
        view = memref.view(alloc.result.type, arena, offset, list(alloc.operands))
    alloc.result.replace_all_uses_with(view)
    for dealloc in buffer.deallocs:
        dealloc.erase()
    alloc.erase()


def _declare_thread_number(module: ir.Operation) -> None:
    """``llvm.func @omp_get_thread_num() -> i32``, once."""
    body = module.regions[0].blocks[0]
    for op in body.operations:
        if op.operation.name == "llvm.func" and (
            ir.StringAttr(op.operation.attributes["sym_name"]).value == THREAD_NUMBER
        ):
            return
    with ir.InsertionPoint.at_block_begin(body), module.location:
        llvm.LLVMFuncOp(THREAD_NUMBER, ir.TypeAttr.get(ir.Type.parse("!llvm.func<i32 ()>")))


def _slot_base(slots: ThreadSlots, threads: int) -> ir.Value | int:
    """This thread's slot, ``offset + tid x slot``: computed at the top of the
    loop body, or the region's offset for a single thread."""
    if threads == 1:
        return slots.region.offset
    body = slots.forall.regions[0].blocks[0]
    with ir.InsertionPoint.at_block_begin(body), slots.forall.location:
        i32 = ir.IntegerType.get_signless(32)
        number = llvm.call(i32, [], [], [], callee=ir.FlatSymbolRefAttr.get(THREAD_NUMBER))
        tid = arith.index_cast(ir.IndexType.get(), number)
        start = arith.muli(tid, _index(slots.slot))
        return arith.addi(start, _index(slots.region.offset))


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


def _why_unplanned(alloc: ir.Operation, func: ir.Operation, threads: int) -> str:
    """Why ``alloc`` (left after planning) is not in the arena."""
    if max_bytes(alloc, func, dim_maxima(func)) is None:
        if ir.MemRefType(alloc.result.type).has_static_shape:
            return "its type is not an identity-layout buffer of the default memory space"
        return (
            "its size is dynamic and has no known maximum (no range in "
            f"{protocol.DYNAMIC_RANGES.name} bounds it)"
        )
    foralls = 0
    parent = alloc.parent.operation
    while parent != func:
        foralls += parent.name == "scf.forall"
        parent = parent.parent.operation
    if foralls and threads == 0:
        return "it is in a parallel loop and the thread count is not known (threads=0)"
    if foralls > 1:
        return "it is in a nested parallel loop"
    holder = alloc.parent.operation
    if holder != func and holder.name != "scf.forall":
        return "it is in a sequential loop or a branch and depends on it"
    return "it escapes (returned, yielded, passed to a call or not viewed)"


@dataclass(frozen=True)
class PlanArena(Pass):
    flag = "lowerline-plan-arena"
    summary = "Place an entry function's static buffers in one arena argument, reusing memory"
    anchor = "builtin.module"

    threads: int = opt(
        0,
        "the most threads a parallel loop (scf.forall) runs on: its scratch gets a slot "
        "per thread in the arena (1: loops run sequentially, one slot; 0: not planned, "
        "allocated per tile)",
    )
    explain: bool = opt(
        False, "print each allocation left to malloc at every call, and why, as remarks"
    )

    def run(self, op: ir.Operation) -> None:
        called = _called_symbols(op)
        for func in defined_functions(op):
            if _is_entry(func, called) and not protocol.ARENA.has(func):
                self._plan(op, func)

    def _plan(self, module: ir.Operation, func: ir.Operation) -> None:
        buffers = live_buffers(func)
        slots = self._thread_slots(func)
        regions = buffers + [s.region for s in slots]
        size = place(regions)
        arena = append_arena(func)
        for buffer in buffers:
            view_in_arena(buffer, arena)
        if slots and self.threads > 1:
            _declare_thread_number(module)
        for loop in slots:
            base = _slot_base(loop, self.threads)
            for buffer in loop.buffers:
                view_in_arena(buffer, arena, base)
        protocol.ARENA.set(func, [size, lower_bound(regions)])
        self._report(func)

    def _thread_slots(self, func: ir.Operation) -> list[ThreadSlots]:
        if self.threads < 1:
            return []
        ops = [op.operation for op in func.regions[0].blocks[0].operations]
        position = {op: index for index, op in enumerate(ops)}
        found = [
            thread_slots(forall, self.threads, position[_block_ancestor(forall, func)], func)
            for forall in outermost_foralls(func)
        ]
        return [s for s in found if s is not None]

    def _report(self, func: ir.Operation) -> None:
        """A refusal remark for each allocation a call still makes."""
        left = ops_matching(func, lambda o: o.name == "memref.alloc")
        remarks.publish(
            [
                remarks.about(
                    alloc,
                    self.flag,
                    "left to malloc at every call: " + _why_unplanned(alloc, func, self.threads),
                    remarks.REFUSAL,
                )
                for alloc in left
            ],
            self.explain,
        )
