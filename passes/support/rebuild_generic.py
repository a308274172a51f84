"""Rebuilding a ``linalg.generic`` on other operands (or maps), its body moved over.

Shared by the graph passes that change the shapes a generic works on
(``lowerline-collapse-broadcast-batch-matmul``, ``-pointwise-conv-rows``):
the Python bindings cannot change an op's result types in place.
"""

from __future__ import annotations

from collections.abc import Callable

from mlir import ir
from mlir.dialects import linalg

# Attributes a rebuilt generic sets itself.
_STRUCTURE = ("indexing_maps", "iterator_types", "operandSegmentSizes")


def rebuild_generic(
    op: ir.Operation,
    operands: list[ir.Value],
    maps: list[ir.AffineMap],
    iterators: list[str],
) -> ir.Value:
    """A new generic (at the insertion point) computing ``op``'s body over
    ``operands`` (inputs then the one init) through ``maps``; ``op``'s body
    moves into it, so ``op`` must be erased afterwards. Its other attributes
    are kept. Returns the new result."""
    n_in = len(operands) - 1
    rebuilt = linalg.GenericOp(
        [operands[-1].type],
        operands[:n_in],
        operands[n_in:],
        ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps]),
        ir.ArrayAttr.get([ir.Attribute.parse(f"#linalg.iterator_type<{k}>") for k in iterators]),
    )
    for named in list(op.attributes):
        key = named if isinstance(named, str) else named.name
        if key not in _STRUCTURE:
            rebuilt.attributes[key] = op.attributes[key]
    old = op.regions[0].blocks[0]
    block = rebuilt.regions[0].blocks.append(
        *[a.type for a in old.arguments], arg_locs=[a.location for a in old.arguments]
    )
    for arg, new_arg in zip(old.arguments, block.arguments, strict=True):
        arg.replace_all_uses_with(new_arg)
    for body_op in list(old.operations):
        block.append(body_op.operation)
    return rebuilt.results[0]


def has_index_op(op: ir.Operation) -> bool:
    """Whether the body reads its loop indices (``linalg.index``): a rebuild
    over other loops would change what it computes."""
    return any(o.operation.name == "linalg.index" for o in op.regions[0].blocks[0].operations)


def single_user_chain(
    root: ir.Operation, joins: Callable[[ir.Operation], bool]
) -> list[ir.Operation]:
    """The ops reading ``root``'s result one after the other, each the only
    user of the one before, while ``joins`` accepts them."""
    chain: list[ir.Operation] = []
    current = root
    while True:
        uses = list(current.results[0].uses)
        if len(uses) != 1 or not joins(uses[0].owner):
            return chain
        current = uses[0].owner
        chain.append(current)


def replace_chain(
    root: ir.Operation,
    chain: list[ir.Operation],
    value: ir.Value,
    rebuild: Callable[[ir.Operation, ir.Value, ir.Value], ir.Value],
    restore: Callable[[ir.Value], ir.Value],
) -> None:
    """Replace ``root`` (already rebuilt as ``value``) and its ``chain``:
    each chain op is rebuilt by ``rebuild(op, old input, new input)`` at its
    place, the last new result ``restore``d to the old result's type for
    the users after the chain; the old ops are erased."""
    replaced = root.results[0]
    for op in chain:
        with ir.InsertionPoint(op), op.location:
            value = rebuild(op, replaced, value)
        replaced = op.results[0]
    last = chain[-1] if chain else root
    with ir.InsertionPoint(last), last.location:
        restored = restore(value)
    last.results[0].replace_all_uses_with(restored)
    for op in [*reversed(chain), root]:
        op.erase()
