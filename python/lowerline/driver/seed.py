"""Random numbers: torch-mlir's generator, seeded by the caller at each call.

torch-mlir lowers every random op (``rand``, ``randn``, ``randint``,
``bernoulli``, ``normal_``, ``uniform_``, ``dropout`` and ``rrelu`` in
training mode, ...) to ``aten.uniform``: a ``linalg.generic`` computing the
counter-based "squares" generator (Widynski 2020) on each element's linear
index, keyed by ``torch_c.get_next_seed()``, which loads
``ml_program.global @global_seed``, advances it by an LCG step and stores it
back. Left so, every library starts from seed 0 (each fresh compile gives
the same numbers, ``torch.manual_seed`` changes nothing) and calls share the
global (a data race between threads). Two changes, at parse time in the
compile worker (the IR is torch-mlir's, before any stage):

* ``bind_seed``: the global becomes a trailing ``tensor<i64>`` argument of
  ``@main``; each load reads the value last stored (the argument at first)
  and the stores go. ``lowerline.compile`` draws the argument at each call
  from torch's default generator (``api._argument``).
* samples are rounded down, never up: the generator computes
  ``from + u * (to - from)`` in f64 and ``truncf`` rounds it to nearest, so a
  float32 ``rand`` gave exactly 1.0 about once in 2**25 samples (``rand`` is
  ``[0, 1)``, and ``bernoulli(1.0)`` then gave a 0). Each ``truncf`` that
  depends on the seed is followed by a step to the next float below where it
  rounded up. Only the generator's bodies depend on the seed.
"""

from __future__ import annotations

from collections.abc import Iterator

from mlir import ir
from mlir.dialects import arith

from lowerline.pipeline.lowerer import LoweringError

SEED_GLOBAL = "global_seed"


def _symbol(op: ir.Operation, name: str) -> str:
    return ir.FlatSymbolRefAttr(op.attributes[name]).value


def _names_seed(op: ir.Operation) -> bool:
    return op.name.startswith("ml_program.global_") and _symbol(op, "global") == SEED_GLOBAL


def _seed_global(module: ir.Module) -> ir.Operation | None:
    for op in module.body.operations:
        op = op.operation
        name = op.attributes["sym_name"] if op.name == "ml_program.global" else None
        if name is not None and ir.StringAttr(name).value == SEED_GLOBAL:
            return op
    return None


def bind_seed(module: ir.Module, func: ir.Operation) -> bool:
    """Make ``@global_seed`` a trailing argument of ``func`` (@main) and
    round the samples it keys down; returns whether ``func`` took the
    argument (no random op: nothing changes). Call inside the module's context."""
    seed_global = _seed_global(module)
    if seed_global is None:
        return False
    entry = func.regions[0].blocks[0]
    with seed_global.location:
        seed_type = ir.RankedTensorType.get([], ir.IntegerType.get_signless(64))
        seed = entry.add_argument(seed_type, seed_global.location)
    current: ir.Value = seed
    for op in list(entry.operations):
        op = op.operation
        if not _names_seed(op):
            continue
        if op.name == "ml_program.global_load":
            op.results[0].replace_all_uses_with(current)
        else:  # global_store: later loads read what it stored
            current = op.operands[0]
        op.erase()
    if _seed_used(module):
        raise LoweringError(f"@{SEED_GLOBAL} is used outside the body of @main", [])
    seed_global.erase()
    ftype = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    new_type = ir.FunctionType.get([a.type for a in entry.arguments], ftype.results)
    func.attributes["function_type"] = ir.TypeAttr.get(new_type)
    for truncf in list(_seeded_truncfs(seed)):
        _round_down(truncf)
    return True


def _seed_used(module: ir.Module) -> bool:
    """Whether an op still names the seed global (in a region, another function)."""
    found = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if _names_seed(op):
            found.append(op)
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return bool(found)


def _seeded_truncfs(seed: ir.Value) -> Iterator[ir.Operation]:
    """Every ``arith.truncf`` whose operand depends on ``seed``: the values
    reachable along uses, into the regions that capture them (a generic's
    body) but not out of them (a yield has no results)."""
    seen: set[ir.Operation] = set()
    pending = [seed]
    while pending:
        value = pending.pop()
        for use in value.uses:
            owner = use.owner
            if owner in seen:
                continue
            seen.add(owner)
            if owner.name == "arith.truncf":
                yield owner
            pending.extend(owner.results)


def _round_down(truncf: ir.Operation) -> None:
    """Replace ``truncf`` (round to nearest) by a truncation that never
    rounds up: where the nearest float is above the f64 value, the next
    float below it (one unit less in magnitude for a positive float, one more
    for a negative one, the smallest negative subnormal below 0)."""
    value = truncf.operands[0]
    ftype = truncf.results[0].type
    width = ir.FloatType(ftype).width
    itype = ir.IntegerType.get_signless(width)
    with ir.InsertionPoint(truncf), truncf.location:
        near = arith.truncf(ftype, value)
        above = arith.cmpf(arith.CmpFPredicate.OGT, arith.extf(value.type, near), value)
        bits = arith.bitcast(itype, near)
        one = arith.constant(itype, 1)
        zero = arith.constant(ftype, 0.0)
        # -0x1p-149 for f32: the sign bit and the lowest mantissa bit.
        below_zero = arith.constant(itype, 1 - (1 << (width - 1)))
        positive = arith.cmpf(arith.CmpFPredicate.OGT, near, zero)
        is_zero = arith.cmpf(arith.CmpFPredicate.OEQ, near, zero)
        negative_down = arith.select(is_zero, below_zero, arith.addi(bits, one))
        down = arith.select(positive, arith.subi(bits, one), negative_down)
        result = arith.select(above, arith.bitcast(ftype, down), near)
    truncf.results[0].replace_all_uses_with(result)
    truncf.erase()
