"""The largest size a dynamic dim of a tensor can take, from the function's
declared ranges (``lowerline.dynamic_ranges``: ``dynamic={"x": {0: (1, 64)}}``).

Tile planners decide on tensors, before bufferization: a forall over a
dynamic batch of at most 4 rows is never worth splitting over the cores,
whatever its rows would be worth at ``DYNAMIC_PLANNED``. A dim is followed
back through the ops that pass sizes on (a destination-style op's init, an
empty tensor's size operands, slices, casts, reshapes) to a function
argument's dim or index arithmetic on such sizes (``plan_arena.upper_bound``).
Upstream's ``ValueBoundsOpInterface`` answers this in C++; the Python
bindings do not expose it.
"""

from __future__ import annotations

import math

from mlir import ir

from lowerline.passes.bufferization.plan_arena import dim_maxima, upper_bound
from lowerline.passes.support.linalg_info import indexing_maps

_DYNAMIC = ir.ShapedType.get_dynamic_size()
_SAME_SHAPE = ("tensor.cast",)


def enclosing_function(op: ir.Operation) -> ir.Operation | None:
    current: ir.Operation | None = op
    while current is not None and current.name != "func.func":
        parent = current.parent
        current = parent.operation if parent is not None else None
    return current


def loop_maximum(op: ir.Operation, loop: int) -> int | None:
    """The largest trip count of loop ``loop`` of the linalg ``op``: the
    maximum of an operand dim it indexes alone; None when no range bounds it."""
    func = enclosing_function(op)
    maxima = dim_maxima(func) if func is not None else {}
    if not maxima:
        return None
    for operand, amap in zip(op.operands, indexing_maps(op), strict=False):
        if not isinstance(operand.type, ir.RankedTensorType):
            continue
        for position, expr in enumerate(amap.results):
            if isinstance(expr, ir.AffineDimExpr) and expr.position == loop:
                found = dim_maximum(operand, position, func, maxima)
                if found is not None:
                    return found
    return None


def dim_maximum(
    value: ir.Value, dim: int, func: ir.Operation, maxima: dict[tuple[int, int], int]
) -> int | None:
    """The largest size of dim ``dim`` of the tensor ``value``; None if unbounded."""
    size = ir.RankedTensorType(value.type).shape[dim]
    if size != _DYNAMIC:
        return size
    owner = value.owner
    if isinstance(owner, ir.Block):
        if owner.owner == func:
            return maxima.get((ir.BlockArgument(value).arg_number, dim))
        return None
    source = _size_source(owner, value, dim)
    if isinstance(source, ir.Value):
        return upper_bound(source, func, maxima)
    if source is None:
        return None
    parent, parent_dims = source
    bounds = [dim_maximum(parent, d, func, maxima) for d in parent_dims]
    if any(b is None for b in bounds):
        return None
    return math.prod(b for b in bounds if b is not None)


def dim_divisor(value: ir.Value, dim: int) -> int:
    """A constant that always divides dim ``dim`` of the tensor ``value``
    (its size where static; 1 where nothing better is known): a dynamic
    batch of images of 16 Winograd tiles each has ``16 * batch`` columns."""
    size = ir.RankedTensorType(value.type).shape[dim]
    if size != _DYNAMIC:
        return size
    owner = value.owner
    source = None if isinstance(owner, ir.Block) else _size_source(owner, value, dim)
    if isinstance(source, ir.Value):
        return index_divisor(source)
    if source is None:
        return 1
    parent, parent_dims = source
    return math.prod(dim_divisor(parent, d) for d in parent_dims)


def index_divisor(value: ir.Value) -> int:
    """A constant that always divides the index ``value``: the constant
    itself, or the product of its factors' divisors; 1 when unknown."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return 1
    if owner.name == "arith.constant":
        return abs(ir.IntegerAttr(owner.attributes["value"]).value) or 1
    if owner.name == "arith.muli":
        return index_divisor(owner.operands[0]) * index_divisor(owner.operands[1])
    if owner.name == "affine.apply":
        amap = ir.AffineMapAttr(owner.attributes["map"]).value
        if len(amap.results) == 1:
            return _expr_divisor(amap.results[0])
    return 1


def _expr_divisor(expr: ir.AffineExpr) -> int:
    """A constant dividing ``expr`` for any values of its dims and symbols."""
    if isinstance(expr, ir.AffineConstantExpr):
        return abs(expr.value) or 1
    if isinstance(expr, ir.AffineMulExpr):
        return _expr_divisor(expr.lhs) * _expr_divisor(expr.rhs)
    if isinstance(expr, ir.AffineAddExpr):
        return math.gcd(_expr_divisor(expr.lhs), _expr_divisor(expr.rhs))
    return 1


def _dynamic_position(sizes: list[int], dim: int) -> int:
    """Index of ``dim`` among the dynamic ones of ``sizes``."""
    return sum(1 for size in sizes[:dim] if size == _DYNAMIC)


def _size_source(
    owner: ir.Operation, value: ir.Value, dim: int
) -> ir.Value | tuple[ir.Value, list[int]] | None:
    """Where dynamic dim ``dim`` of ``value`` (a result of ``owner``) comes
    from: an index value, or dims of another tensor whose sizes multiply to
    it; None when not known."""
    result_type = ir.RankedTensorType(value.type)
    name = owner.name
    if name == "tensor.empty":
        return owner.operands[_dynamic_position(result_type.shape, dim)]
    if name.startswith("linalg.") and len(owner.results):
        # Destination style: result r has the shape of the r-th init.
        inits = list(owner.operands)[len(owner.operands) - len(owner.results) :]
        return inits[ir.OpResult(value).result_number], [dim]
    if name in _SAME_SHAPE:
        return owner.operands[0], [dim]
    if name == "tensor.extract_slice":
        # Operands: source, dynamic offsets, dynamic sizes, dynamic strides.
        offsets = ir.DenseI64ArrayAttr(owner.attributes["static_offsets"])
        first = 1 + sum(1 for o in offsets if o == _DYNAMIC)
        sizes = list(ir.DenseI64ArrayAttr(owner.attributes["static_sizes"]))
        if len(sizes) != result_type.rank:
            return None  # rank-reducing: the dims do not line up
        return owner.operands[first + _dynamic_position(sizes, dim)]
    if name == "tensor.collapse_shape":
        groups = [[ir.IntegerAttr(i).value for i in g] for g in owner.attributes["reassociation"]]
        return owner.operands[0], groups[dim]
    if name == "tensor.expand_shape":
        # Operands: source, then the dynamic sizes of the output shape.
        return owner.operands[1 + _dynamic_position(result_type.shape, dim)]
    return None
