"""``lowerline-report-failed-asserts``: a failed ``cf.assert`` reports its
message to the runtime and skips the work it guards, instead of aborting.

Why: upstream ``convert-cf-to-llvm`` lowers ``cf.assert`` to a call to
``abort()``, and compiled code runs inside the user's process (ctypes): an
out-of-range index given to an embedding, or torch-mlir's "only support cases
with fixed stride size" check of adaptive pooling, killed the whole Python
process (exit 134). Upstream has no option or pass that lowers ``cf.assert``
any other way.

Each ``cf.assert %ok, "msg"`` becomes an ``scf.if %ok`` holding the rest of
its block; the else branch calls ``lowerline_assert_failed(msg)``
(``runtime_support.c``: it keeps the first message of a call in an atomic
slot, which the runtime turns into ``lowerline.RuntimeCheckError`` after the
call) and yields zeros for the values the rest of the block defined. So the
guarded access (the load an index check protects) never runs with a bad
index, on any thread: the call returns, nothing jumps out of an OpenMP region.
The message carries the assert's location when it has one.

Before / after::

    cf.assert %ok, "index out of range"         %r = scf.if %ok -> (f32) {
    %v = memref.load %m[%i] : memref<8xf32>       %v = memref.load %m[%i]
    scf.yield %v : f32                             scf.yield %v : f32
                                                 } else {
                                                   %p = llvm.mlir.addressof @__lowerline_assert_0
                                                   func.call @lowerline_assert_failed(%p)
                                                   %z = arith.constant 0.0 : f32
                                                   scf.yield %z : f32
                                                 }
                                                 scf.yield %r : f32

**Where the message goes.** The failure must belong to the call, not the
library: calls running at the same time on other threads share the library,
and an assert fails on whichever OpenMP worker ran it, so a thread-local of
the caller cannot hold it. When every assert of the module sits in an entry
function with an arena (``lowerline.arena``, lowerline-plan-arena), each such
entry gets an 8-byte failure word past its planned buffers, at the offset
``lowerline.failure_record`` names (the arena grows by it; -1 on an entry
without a check): the else branch stores the message's address there with a
compare-and-swap from zero (``memref.generic_atomic_rmw``: the first failure
wins), and the caller zeroes the word before the call and reads it after.
Otherwise (an assert in a function without an arena: ``arena=False``, or a
function that is not an entry) every assert calls
``lowerline_assert_failed``, whose slot belongs to the library, and the
caller holds a lock on the library for the call's duration.

An assert whose block goes on to define values of other types than
integers, indices, floats and vectors of them (a memref, say) has no safe
stand-in value: it stays a ``cf.assert`` (an abort), with a refusal remark naming it.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, func, llvm, memref, scf

from lowerline.pipeline import protocol, remarks
from lowerline.pipeline.pass_api import Pass, ops_matching

FAILED = "lowerline_assert_failed"  # runtime_support.c
_GLOBAL_PREFIX = "__lowerline_assert_"
_WORD = 8  # the failure record: a message address (i64), 8-byte aligned


def _c_string_literal(text: str) -> tuple[str, int]:
    """``text`` NUL-terminated, as an MLIR string literal, and its byte count."""
    data = text.encode() + b"\0"
    return "".join(f"\\{b:02X}" for b in data), len(data)


def _message(assert_op: ir.Operation) -> str:
    text = ir.StringAttr(assert_op.attributes["msg"]).value
    # Innermost first: the library's line, then each caller up to the model's.
    frames = remarks.frames_of(assert_op.location)
    return f"{text} (at {', called from '.join(frames)})" if frames else text


def _element(t: ir.Type) -> ir.Type:
    return t.element_type if isinstance(t, ir.VectorType) else t


def _has_zero(t: ir.Type) -> bool:
    return isinstance(_element(t), ir.IntegerType | ir.IndexType | ir.FloatType)


def _zero(t: ir.Type) -> ir.Value:
    """A stand-in for a value the skipped work would have defined."""
    element = _element(t)
    scalar: ir.Attribute
    if isinstance(element, ir.FloatType):
        scalar = ir.FloatAttr.get(element, 0.0)
    else:
        scalar = ir.IntegerAttr.get(element, 0)
    value = ir.DenseElementsAttr.get_splat(t, scalar) if isinstance(t, ir.VectorType) else scalar
    return arith.ConstantOp(t, value).result


def _rest_of_block(assert_op: ir.Operation) -> list[ir.Operation]:
    """The ops after ``assert_op`` in its block, up to the terminator."""
    ops = list(assert_op.block.operations)
    return [o.operation for o in ops[_position(ops, assert_op) + 1 : -1]]


def _position(ops: list, op: ir.Operation) -> int:
    return next(i for i, o in enumerate(ops) if o.operation == op.operation)


def _inside(rest: list[ir.Operation]) -> set[ir.Operation]:
    """``rest`` and every op nested in it."""
    return {nested.operation for op in rest for nested in ops_matching(op, lambda _: True)}


def _escaping(rest: list[ir.Operation], inside: set[ir.Operation]) -> list[ir.Value]:
    """The results of ``rest`` used by an op outside it (the terminator)."""
    return [
        result
        for op in rest
        for result in op.results
        if any(use.owner.operation not in inside for use in result.uses)
    ]


@dataclass(frozen=True)
class ReportFailedAsserts(Pass):
    flag = "lowerline-report-failed-asserts"
    summary = "Turn cf.assert into a reported failure that skips the guarded work"
    anchor = "builtin.module"

    def run(self, op: ir.Operation) -> None:
        guarded = [a for a in ops_matching(op, lambda o: o.name == "cf.assert") if self._safe(a)]
        body = op.regions[0].blocks[0]
        records = _plan_records(body, guarded)
        if not guarded:
            return
        if records is None:
            self._declare(body)
        # Names no symbol has yet: a second run meets the first run's globals.
        taken = {_symbol(o) for o in body.operations}
        names = (f"{_GLOBAL_PREFIX}{i}" for i in itertools.count())
        for assert_op in guarded:
            name = next(n for n in names if n not in taken)
            self._rewrite(body, assert_op, name, records)

    def _safe(self, assert_op: ir.Operation) -> bool:
        """Whether every value the guarded work defines has a stand-in; if
        not, a refusal remark says why the assert stays."""
        rest = _rest_of_block(assert_op)
        for value in _escaping(rest, _inside(rest)):
            if not _has_zero(value.type):
                message = (
                    f"stays an abort: the work it guards defines a {value.type}, "
                    "with no safe stand-in"
                )
                remarks.publish([remarks.about(assert_op, self.flag, message, remarks.REFUSAL)])
                return False
        return True

    def _declare(self, body: ir.Block) -> None:
        if any(_symbol(o) == FAILED for o in body.operations):
            return
        with ir.InsertionPoint.at_block_begin(body):
            ptr = llvm.PointerType.get()
            declaration = func.FuncOp(FAILED, ir.FunctionType.get([ptr], []))
            declaration.sym_visibility = ir.StringAttr.get("private")

    def _rewrite(
        self,
        body: ir.Block,
        assert_op: ir.Operation,
        name: str,
        records: dict[ir.Operation, int] | None,
    ) -> None:
        rest = _rest_of_block(assert_op)
        inside = _inside(rest)
        escaping = _escaping(rest, inside)
        types = [v.type for v in escaping]
        self._message_global(body, name, _message(assert_op))
        condition = assert_op.operands[0]
        with assert_op.location, ir.InsertionPoint(assert_op):
            guard = scf.IfOp(condition, types, has_else=True)
        then_block = guard.then_block
        with assert_op.location, ir.InsertionPoint(then_block):
            terminator = scf.YieldOp(escaping)
        for moved in rest:
            moved.move_before(terminator)
        inside.add(terminator.operation)
        for value, result in zip(escaping, guard.results, strict=True):
            for use in list(value.uses):
                if use.owner.operation not in inside:
                    use.owner.operands[use.operand_number] = result
        with assert_op.location, ir.InsertionPoint(guard.else_block):
            pointer = llvm.AddressOfOp(llvm.PointerType.get(), name).result
            if records is None:
                func.CallOp([], FAILED, [pointer])
            else:
                entry = _function_of(assert_op)
                _record(entry.regions[0].blocks[0].arguments[-1], records[entry], pointer)
            scf.YieldOp([_zero(t) for t in types])
        assert_op.erase()

    def _message_global(self, body: ir.Block, name: str, text: str) -> None:
        literal, size = _c_string_literal(text)
        parsed = ir.Operation.parse(
            f'llvm.mlir.global internal constant @{name}("{literal}")'
            f" {{addr_space = 0 : i32}} : !llvm.array<{size} x i8>"
        )
        body.append(parsed)


def _symbol(op: ir.Operation) -> str | None:
    if "sym_name" not in op.attributes:
        return None
    return ir.StringAttr(op.attributes["sym_name"]).value


def _function_of(op: ir.Operation) -> ir.Operation:
    """The ``func.func`` holding ``op``."""
    parent = op.parent
    while parent.name != "func.func":
        parent = parent.parent
    return parent.operation


def _plan_records(body: ir.Block, guarded: list[ir.Operation]) -> dict[ir.Operation, int] | None:
    """The failure word's offset in the arena of each entry function (and
    ``lowerline.failure_record`` set on each), or None where an assert sits in
    a function without an arena: then every assert goes to the library's slot."""
    arenas = [o.operation for o in body.operations if protocol.ARENA.has(o.operation)]
    holders = {_function_of(a) for a in guarded}
    if any(not protocol.ARENA.has(f) for f in holders):
        return None
    records = {}
    for entry in arenas:
        known = protocol.FAILURE_RECORD.get(entry)
        offset = -1 if known is None else known
        if offset < 0 and entry in holders:  # a second run keeps the first's word
            planned, lower_bound = protocol.ARENA.require(entry)
            offset = -(-planned // _WORD) * _WORD
            protocol.ARENA.set(entry, [offset + _WORD, lower_bound])
        protocol.FAILURE_RECORD.set(entry, offset)
        records[entry] = offset
    return records


def _record(arena: ir.Value, offset: int, message: ir.Value) -> None:
    """Store ``message``'s address in the arena's failure word unless a
    failure of this call is there already (compare-and-swap from zero)."""
    i64 = ir.IntegerType.get_signless(64)
    address = llvm.PtrToIntOp(i64, message).result
    at = arith.ConstantOp(ir.IndexType.get(), offset).result
    word = memref.view(ir.MemRefType.get([], i64), arena, at, [])
    update = memref.GenericAtomicRMWOp(i64, word, [])
    current = update.regions[0].blocks.append(i64).arguments[0]
    with ir.InsertionPoint(update.regions[0].blocks[0]):
        zero = arith.ConstantOp(i64, 0).result
        free = arith.cmpi(arith.CmpIPredicate.eq, current, zero)
        memref.AtomicYieldOp(arith.select(free, address, current))
