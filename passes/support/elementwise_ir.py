"""Building scalar-or-vector arithmetic in passes that expand one op into many
(``lowerline-expand-bf16-truncf``, ``lowerline-approximate-exp``): the same
code builds the scalar and the vector form, constants splatted to the shape."""

from __future__ import annotations

from collections.abc import Callable

from mlir import ir
from mlir.dialects import arith


def element(t: ir.Type) -> ir.Type:
    """The element type of a vector type; a scalar type itself."""
    return t.element_type if isinstance(t, ir.VectorType) else t


def like(t: ir.Type, elem: ir.Type) -> ir.Type:
    """``elem``, or a vector of it shaped like ``t``."""
    if isinstance(t, ir.VectorType):
        return ir.VectorType.get(t.shape, elem, scalable=t.scalable_dims)
    return elem


def constant(t: ir.Type, value: int | float) -> ir.Value:
    """``value`` as a constant of type ``t`` (splatted when ``t`` is a vector)."""
    elem = element(t)
    if isinstance(elem, ir.IntegerType):
        scalar = ir.IntegerAttr.get(elem, value)
    else:
        scalar = ir.FloatAttr.get(elem, value)
    attr = ir.DenseElementsAttr.get_splat(t, scalar) if isinstance(t, ir.VectorType) else scalar
    return arith.ConstantOp(t, attr).result


def expand(op: ir.Operation, build: Callable[..., ir.Value]) -> None:
    """Replace the one-result ``op`` by ``build(*operands)``, built at
    ``op``'s place and location."""
    with ir.InsertionPoint(op), op.location:
        result = build(*op.operands)
    op.results[0].replace_all_uses_with(result)
    op.erase()
