"""``lowerline-drop-dead-results``: results of a linalg.generic that nothing
reads are removed, with the body ops that only computed them.

Why: torch-mlir lowers ``amax``, ``logsumexp`` and softmax's row maximum
through ``aten.max.dim``: one reduction computing the maximum and its index
(a compare and a select into an i64 accumulator per element). Nothing reads
the index, but a reduction with two results does not vectorize (upstream 22:
"Attempted to vectorize, but failed"), so every softmax of the benchmark's
encoder layer stayed scalar loops (a 1x4x128x128 row maximum: 333 us against
10 us in eager torch, measured here). Without the index it is a plain max
reduction, tiled to rows and vectorized like layernorm's::

    %r:2 = linalg.generic ... outs(%max0, %index0) {
      %i = linalg.index 3          %m = arith.maximumf %in, %out
      %c = arith.cmpf ogt, ...     %s = arith.select %c, %i, %out_index
      linalg.yield %m, %s }
    use(%r#0)
  ->
    %r = linalg.generic ... outs(%max0) {
      %m = arith.maximumf %in, %out
      linalg.yield %m }

A result is dropped when it has no uses and its init argument is read only by
the body ops that compute it alone; those ops (pure: arith, math, index,
affine.apply, linalg.index) go with it. Upstream canonicalization removes
unused inputs and outputs whose init the body never reads, but not these
(its ``removeOutputs`` is off there), and no pass exposes the rest.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import linalg

from lowerline.pipeline.pass_api import Pass, ops_matching

# Body ops without side effects: safe to erase once nothing reads them.
_PURE = ("arith.", "math.", "index.", "affine.apply", "linalg.index")
# Attributes the rebuilt op sets itself.
_STRUCTURE = ("indexing_maps", "iterator_types", "operandSegmentSizes")


def _is_yield_of(use: ir.OpOperand, terminator: ir.Operation, index: int) -> bool:
    return use.owner == terminator and use.operand_number == index


def _dead_ops(generic: ir.Operation, index: int) -> list[ir.Operation] | None:
    """The body ops that compute only result ``index``, in block order; None
    when the result is read, or its init argument feeds other results too."""
    if list(generic.results[index].uses):
        return None
    block = generic.regions[0].blocks[0]
    ops = [op.operation for op in block.operations]
    terminator = ops[-1]
    dead: set[ir.Operation] = set()

    def only_dead_users(value: ir.Value) -> bool:
        return all(_is_yield_of(u, terminator, index) or u.owner in dead for u in value.uses)

    for op in reversed(ops[:-1]):
        if op.name.startswith(_PURE) and op.results and all(map(only_dead_users, op.results)):
            dead.add(op)
    init = block.arguments[len(generic.operands) - len(generic.results) + index]
    if not only_dead_users(init):
        return None
    return [op for op in ops if op in dead]


def _without_result(generic: ir.Operation, index: int, dead: list[ir.Operation]) -> None:
    """Rebuild ``generic`` without result ``index`` (and its init), moving its
    body over minus ``dead``."""
    n_in = len(generic.operands) - len(generic.results)
    keep = [i for i in range(len(generic.results)) if i != index]
    maps = list(ir.ArrayAttr(generic.attributes["indexing_maps"]))
    operands = list(generic.operands)
    with ir.InsertionPoint(generic), generic.location:
        rebuilt = linalg.GenericOp(
            [generic.results[i].type for i in keep],
            operands[:n_in],
            [operands[n_in + i] for i in keep],
            ir.ArrayAttr.get(maps[:n_in] + [maps[n_in + i] for i in keep]),
            generic.attributes["iterator_types"],
        )
    for name in list(generic.attributes):
        key = name if isinstance(name, str) else name.name
        if key not in _STRUCTURE:
            rebuilt.attributes[key] = generic.attributes[key]
    old = generic.regions[0].blocks[0]
    args = [a for position, a in enumerate(old.arguments) if position != n_in + index]
    block = rebuilt.regions[0].blocks.append(
        *[a.type for a in args], arg_locs=[a.location for a in args]
    )
    for arg, new_arg in zip(args, block.arguments, strict=True):
        arg.replace_all_uses_with(new_arg)
    terminator = list(old.operations)[-1].operation
    yielded = [v for position, v in enumerate(terminator.operands) if position != index]
    location = terminator.location
    terminator.erase()
    for op in reversed(dead):
        op.erase()
    for op in list(old.operations):
        block.append(op.operation)
    with ir.InsertionPoint(block), location:
        linalg.YieldOp(yielded)
    for position, i in enumerate(keep):
        generic.results[i].replace_all_uses_with(rebuilt.results[position])
    generic.erase()


def drop_dead_results(generic: ir.Operation) -> bool:
    """Drop one dead result of ``generic``; whether one was dropped (the op is
    then erased: look for more on its replacement)."""
    if len(generic.results) < 2:
        return False  # a generic without results is dead as a whole: canonicalize's job
    for index in range(len(generic.results)):
        dead = _dead_ops(generic, index)
        if dead is not None:
            _without_result(generic, index, dead)
            return True
    return False


@dataclass(frozen=True)
class DropDeadResults(Pass):
    flag = "lowerline-drop-dead-results"
    summary = "Remove linalg.generic results nothing reads, with the body ops computing them"
    anchor = "func.func"

    def run(self, op: ir.Operation) -> None:
        changed = True
        while changed:
            generics = ops_matching(op, lambda o: o.name == "linalg.generic")
            changed = any([drop_dead_results(g) for g in generics])
