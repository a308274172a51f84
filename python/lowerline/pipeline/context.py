"""Creating MLIR contexts the same way everywhere."""

from __future__ import annotations

from mlir import ir

from lowerline import dialects


def make_context(allow_unregistered: bool = False) -> ir.Context:
    """A context with every upstream dialect (the wheel registers them all)
    and lowerline's own (``lowerline.dialects``, verified through IRDL)."""
    context = ir.Context()
    context.allow_unregistered_dialects = allow_unregistered
    context.load_all_available_dialects()
    dialects.load(context)
    return context
