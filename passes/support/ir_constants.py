"""What an ``arith.constant`` holds, read from the value it defines.

Shared by the passes and analyses that fold on constants (splat reads, OpenMP
trip counts, GPU alignment and launch sizes), so each reads them the same way.
"""

from __future__ import annotations

from mlir import ir


def constant_attr(value: ir.Value) -> ir.Attribute | None:
    """The ``value`` attribute of the ``arith.constant`` defining ``value``."""
    owner = value.owner.operation if isinstance(value, ir.OpResult) else None
    if owner is None or owner.name != "arith.constant":
        return None
    return owner.attributes["value"]


def int_constant(value: ir.Value) -> int | None:
    """The integer (or index) constant ``value`` is, or None."""
    attr = constant_attr(value)
    return ir.IntegerAttr(attr).value if isinstance(attr, ir.IntegerAttr) else None


def reads_with_zero_padding(value: ir.Value) -> bool:
    """``value`` is a ``vector.transfer_read`` (possibly inside a ``vector.mask``)
    whose padding is an integer 0 or a float 0.0: lanes past the tensor read
    as zeros, which a masked dot product may then multiply."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return False
    if owner.name == "vector.mask":
        inner = owner.regions[0].blocks[0].operations[0]
        owner = inner if inner.name == "vector.transfer_read" else owner
    if owner.name != "vector.transfer_read":
        return False
    padding = constant_attr(owner.opview.padding)
    if isinstance(padding, ir.IntegerAttr):
        return ir.IntegerAttr(padding).value == 0
    return isinstance(padding, ir.FloatAttr) and ir.FloatAttr(padding).value == 0.0
