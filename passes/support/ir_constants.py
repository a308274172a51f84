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
