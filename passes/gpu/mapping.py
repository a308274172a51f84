"""Reading the gpu dialect's mapping and address-space attributes structurally.

The bindings have no classes for ``#gpu.block<...>``, ``#gpu.thread<...>``
or ``#gpu.address_space<...>``. Matching their printed text would also
match any attribute that merely mentions the word; instead a mapping entry is
recognized by its TypeID (one per C++ attribute class, shared by every
context), taken once from a parsed reference, and an address space by
equality with the uniqued attribute in the same context.
"""

from __future__ import annotations

from functools import cache

from mlir import ir

# One reference attribute per processor kind a forall may be mapped to.
_KINDS = {
    "block": "#gpu.block<x>",
    "thread": "#gpu.thread<x>",
    "warp": "#gpu.warp<x>",
    "lane": "#gpu.lane<x>",
}
# NVVM's number for workgroup (shared) memory, which promotion uses.
WORKGROUP_SPACE = 3


@cache
def _typeid(kind: str) -> ir.TypeID:
    # Parsed in the caller's context; the TypeID does not depend on it.
    return ir.Attribute.parse(_KINDS[kind]).typeid


def mapped_to(op: ir.Operation, kind: str) -> bool:
    """Whether ``op`` is an ``scf.forall`` mapped to ``#gpu.<kind>`` ids."""
    if op.name != "scf.forall" or "mapping" not in op.attributes:
        return False
    mapping = op.attributes["mapping"]
    if not isinstance(mapping, ir.ArrayAttr):
        return False
    return any(entry.typeid == _typeid(kind) for entry in mapping)


def is_workgroup(space: ir.Attribute | None) -> bool:
    """Workgroup memory: NVVM's address space 3, or the gpu dialect's name for it."""
    if space is None:
        return False
    if isinstance(space, ir.IntegerAttr):
        return space.value == WORKGROUP_SPACE
    return space == ir.Attribute.parse("#gpu.address_space<workgroup>", space.context)
