"""``lowerline-expand-dynamic-reshapes``: a ``tensor.reshape`` whose shape
is a ``tensor.from_elements`` of the source's own sizes becomes a
``tensor.expand_shape`` or ``tensor.collapse_shape``.

Why: torch-mlir lowers a ``view`` with a dynamic size (attention's
``(batch * heads, seq, seq) <-> (batch, heads, seq, seq)`` around the
softmax over a dynamic sequence) to ``tensor.reshape`` with a shape tensor
built at run time. That bufferizes to ``memref.reshape`` of a freshly
``memref.alloc``'d buffer and a ``memref<4xi64>`` for the shape, which
``lowerline-plan-arena`` cannot place (it plans allocations and the views
of ``expand_shape`` / ``collapse_shape``), so every call allocates and
frees them. When each group of dims has a known product, the reshape is
one of the two structured ones, with its dynamic sizes as index values::

    %s = tensor.from_elements %c2, %c4, %n, %n : tensor<4xi64>
    %r = tensor.reshape %x(%s) : (tensor<8x?x?xf32>, tensor<4xi64>) -> tensor<2x4x?x?xf32>
  ->
    %r = tensor.expand_shape %x [[0, 1], [2], [3]] output_shape [2, 4, %m, %m]

The grouping must be proved, not guessed: a dynamic source dim pairs with
a dynamic result dim only when both sizes are the same value (the
``from_elements`` entry, through ``index_cast``, against the source's size
traced to its ``tensor.empty`` or ``expand_shape``); static dims pair by
equal products; unit dims join a neighbouring group. Anything else (two
unknown sizes, a product that would need division) is left as it is.

Upstream MLIR's canonicalizations fold a ``tensor.reshape`` only when it
is the identity or its shape is constant; none derives a reassociation
from a shape built of dynamic values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

from mlir import ir
from mlir.dialects import arith, tensor

from lowerline.passes.graph.fold_identity_extracts import size_value
from lowerline.passes.support.ir_constants import int_constant
from lowerline.pipeline.pass_api import Pass, ops_matching

_DYNAMIC = ir.ShapedType.get_dynamic_size()
_CASTS = ("arith.index_cast", "arith.index_castui")

# A dim's size: a constant, or the SSA value it is known to equal.
Size: TypeAlias = int | ir.Value


def _strip_casts(value: ir.Value) -> ir.Value:
    """``value`` with integer <-> index casts looked through: the same number."""
    while not isinstance(value.owner, ir.Block) and value.owner.name in _CASTS:
        value = value.owner.operands[0]
    return value


def _shape_entry(value: ir.Value) -> Size:
    constant = int_constant(value)
    return constant if constant is not None else _strip_casts(value)


def _source_sizes(source: ir.Value) -> list[Size] | None:
    shaped = ir.RankedTensorType(source.type)
    sizes: list[Size] = []
    for dim in range(shaped.rank):
        if not shaped.is_dynamic_dim(dim):
            sizes.append(shaped.get_dim_size(dim))
            continue
        value = size_value(source, dim)
        if value is None:
            return None
        sizes.append(_shape_entry(value))
    return sizes


def _result_sizes(reshape: ir.Operation, shape: ir.Operation) -> list[Size]:
    shaped = ir.RankedTensorType(reshape.results[0].type)
    entries = [_shape_entry(value) for value in shape.operands]
    return [
        entries[dim] if shaped.is_dynamic_dim(dim) else shaped.get_dim_size(dim)
        for dim in range(shaped.rank)
    ]


def _unit(size: Size) -> bool:
    return isinstance(size, int) and size == 1


def _take_static(product: int, many: list[Size], start: int) -> int | None:
    """The end of the run of constant sizes from ``start`` whose product is
    ``product`` (at least one dim), or None."""
    end, total = start, 1
    while end < len(many) and isinstance(many[end], int) and (total < product or end == start):
        total *= many[end]
        end += 1
    return end if total == product and end > start else None


def _take_dynamic(size: ir.Value, many: list[Size], start: int) -> int | None:
    """The end of unit dims then one dim of exactly ``size``, or None."""
    end = start
    while end < len(many) and _unit(many[end]):
        end += 1
    if end < len(many) and not isinstance(many[end], int) and many[end] == size:
        return end + 1
    return None


def reassociation(few: list[Size], many: list[Size]) -> list[list[int]] | None:
    """Groups of ``many``'s dims, one per dim of ``few``, each with the
    same size as its ``few`` dim; trailing unit dims join the last group.
    None when no grouping is proved."""
    if not few or len(many) < len(few):
        return None
    groups: list[list[int]] = []
    start = 0
    for size in few:
        if isinstance(size, int):
            end = _take_static(size, many, start)
        else:
            end = _take_dynamic(size, many, start)
        if end is None:
            return None
        groups.append(list(range(start, end)))
        start = end
    if not all(_unit(size) for size in many[start:]):
        return None
    groups[-1].extend(range(start, len(many)))
    return groups


def _reassociation_attr(groups: list[list[int]]) -> ir.ArrayAttr:
    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get(
        [ir.ArrayAttr.get([ir.IntegerAttr.get(i64, d) for d in group]) for group in groups]
    )


def _as_index(value: ir.Value) -> ir.Value:
    if isinstance(value.type, ir.IndexType):
        return value
    return arith.index_cast(ir.IndexType.get(), value)


def _expand(reshape: ir.Operation, groups: list[list[int]], sizes: list[Size]) -> ir.Value:
    result = ir.RankedTensorType(reshape.results[0].type)
    dynamic = [
        _as_index(size) if isinstance(size, ir.Value) else arith.constant(ir.IndexType.get(), size)
        for dim, size in enumerate(sizes)
        if result.is_dynamic_dim(dim)
    ]
    return tensor.expand_shape(
        result, reshape.operands[0], _reassociation_attr(groups), dynamic, result.shape
    )


def _collapse(reshape: ir.Operation, groups: list[list[int]]) -> ir.Value:
    source = ir.RankedTensorType(reshape.operands[0].type)
    result = ir.RankedTensorType(reshape.results[0].type)
    shape = []
    for group in groups:
        dims = [source.get_dim_size(d) for d in group]
        product = 1
        for size in dims:
            product = _DYNAMIC if _DYNAMIC in (product, size) else product * size
        shape.append(product)
    collapsed_type = ir.RankedTensorType.get(shape, result.element_type, result.encoding)
    groups_attr = _reassociation_attr(groups)
    collapsed = tensor.collapse_shape(collapsed_type, reshape.operands[0], groups_attr)
    # A size the reshape's type left dynamic but the groups know: cast back.
    return collapsed if collapsed_type == result else tensor.cast(result, collapsed)


def rewrite(reshape: ir.Operation) -> bool:
    """Replace ``reshape`` by an expand or collapse when its grouping is
    proved; whether it was."""
    shape = reshape.operands[1].owner
    if isinstance(shape, ir.Block) or shape.name != "tensor.from_elements":
        return False
    if not isinstance(reshape.operands[0].type, ir.RankedTensorType):
        return False
    source = _source_sizes(reshape.operands[0])
    result = _result_sizes(reshape, shape)
    if source is None or len(source) == len(result):
        return False
    with ir.InsertionPoint(reshape), reshape.location:
        if len(result) > len(source):
            groups = reassociation(source, result)
            value = _expand(reshape, groups, result) if groups is not None else None
        else:
            groups = reassociation(result, source)
            value = _collapse(reshape, groups) if groups is not None else None
    if value is None:
        return False
    reshape.results[0].replace_all_uses_with(value)
    reshape.erase()
    return True


@dataclass(frozen=True)
class ExpandDynamicReshapes(Pass):
    flag = "lowerline-expand-dynamic-reshapes"
    summary = "Turn tensor.reshape of a from_elements shape into expand_shape / collapse_shape"
    anchor = "func.func"

    def run(self, op: ir.Operation) -> None:
        for reshape in ops_matching(op, lambda o: o.name == "tensor.reshape"):
            rewrite(reshape)
