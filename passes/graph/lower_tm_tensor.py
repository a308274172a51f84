"""``lowerline-lower-tm-tensor``: torch-mlir's TMTensor ops (sort, scatter,
scan), as the import worker hands them over, become scf loops over tensors.

Why: torch-mlir lowers ``aten.sort`` / ``argsort`` / ``topk``, ``scatter``,
``scatter_add``, ``scatter_reduce``, ``index_put``, ``max_unpool``,
``cumprod`` and ``masked_scatter`` to its own TMTensor dialect, which upstream
MLIR does not have; torch-mlir's own lowering of it (``tm-tensor-to-loops``)
runs on buffers in torch-mlir's MLIR, which must not meet ours. The import
worker replaces each op by a stand-in declared in ``dialects/lowerline.irdl.mlir``
(``lowerline.tm_sort`` / ``tm_scatter`` / ``tm_scan``) whose combiner region
is outlined into a private function; this pass lowers the stand-ins with
TMTensor's semantics (torch-mlir ``TMTensorOps.cpp``) and erases the
combiners::

    %r = "lowerline.tm_scatter"(%updates, %indices, %original)
           {combiner = @c, dimension_map = array<i64: 0>, unique_indices = false}
  ->
    %r = scf.for %n ... iter_args(%out = %original) {     // every update, in order
      %i = tensor.extract %indices[%n, %c0]  ...          // its destination
      %u = tensor.extract %updates[%n, ...]
      scf.if (%i in bounds) {
        %o = tensor.extract %out[%i, ...]
        %v = <the combiner's body>(%u, %o)
        tensor.insert %v into %out[%i, ...]
      } else { %out }

A scan carries its output through a loop nest in row-major order, so
``output[i-1]`` is written before ``output[i]``. A sort is a stable bottom-up
merge sort per row (``ceil(log2 n)`` passes, each into a new tensor) with
torch's order: NaN after every number ascending, before every number
descending; its comparator must be one ``arith.cmpf`` / ``arith.cmpi`` of the
two keys (what torch-mlir emits), anything else is an error on the op.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, scf, tensor

from lowerline.dialects import TM_SCAN, TM_SCATTER, TM_SORT
from lowerline.pipeline.pass_api import Pass, PassFailed, ops_matching

STAND_INS = (TM_SCAN, TM_SCATTER, TM_SORT)

Body = Callable[[list[ir.Value], list[ir.Value]], list[ir.Value]]


def _index(value: int) -> ir.Value:
    return arith.constant(ir.IndexType.get(), value)


def _dim(value: ir.Value, dim: int) -> ir.Value:
    size = ir.RankedTensorType(value.type).shape[dim]
    return (
        _index(size) if size != ir.ShapedType.get_dynamic_size() else tensor.dim(value, _index(dim))
    )


def _loop_nest(uppers: Sequence[ir.Value], inits: list[ir.Value], body: Body) -> list[ir.Value]:
    """``body(ivs, carried) -> carried`` inside ``scf.for`` loops from 0 to
    each of ``uppers``, outermost first; the loops' results."""
    if not uppers:
        return body([], inits)
    loop = scf.ForOp(_index(0), uppers[0], _index(1), inits)
    with ir.InsertionPoint(loop.body):

        def inner(ivs: list[ir.Value], carried: list[ir.Value]) -> list[ir.Value]:
            return body([loop.induction_variable, *ivs], carried)

        scf.YieldOp(_loop_nest(uppers[1:], list(loop.inner_iter_args), inner))
    return list(loop.results)


def _combiner(op: ir.Operation, symbols: ir.SymbolTable) -> ir.Operation:
    """The private function ``op``'s ``combiner`` names: its region, outlined."""
    name = ir.FlatSymbolRefAttr(op.attributes["combiner"]).value
    found = symbols[name].operation if name in symbols else None
    if found is None or found.name != "func.func" or not found.regions[0].blocks:
        op.location.emit_error(f"{op.name}: combiner @{name} is not a function in this module")
        raise PassFailed()
    return found


def _inline(combiner: ir.Operation, args: Sequence[ir.Value]) -> list[ir.Value]:
    """The combiner's body cloned at the insertion point on ``args``; the
    values it returns."""
    block = combiner.regions[0].blocks[0]
    mapping = dict(zip(block.arguments, args, strict=True))
    ops = [op.operation for op in block.operations]
    for op in ops[:-1]:
        clone = op.clone()
        for number, operand in enumerate(clone.operands):
            if operand in mapping:
                clone.operands[number] = mapping[operand]
        mapping.update(zip(op.results, clone.results, strict=True))
    return [mapping.get(value, value) for value in ops[-1].operands]


def _check_combiner(op: ir.Operation, combiner: ir.Operation) -> None:
    """Combiners are straight-line code: nested regions are not remapped."""
    for child in combiner.regions[0].blocks[0].operations:
        if child.operation.regions:
            op.location.emit_error(
                f"{op.name}: its combiner holds '{child.operation.name}', an op with "
                "regions; lowerline-lower-tm-tensor inlines straight-line combiners only"
            )
            raise PassFailed()


def _with(ivs: Sequence[ir.Value], dim: int, value: ir.Value) -> list[ir.Value]:
    return [value if d == dim else iv for d, iv in enumerate(ivs)]


def _inserted(ivs: Sequence[ir.Value], dim: int, value: ir.Value) -> list[ir.Value]:
    """A full index from the indices of the other dimensions and ``value`` at ``dim``."""
    return [*ivs[:dim], value, *ivs[dim:]]


def _without(ivs: Sequence[ir.Value], dim: int) -> list[ir.Value]:
    return [iv for d, iv in enumerate(ivs) if d != dim]


def _lower_scan(op: ir.Operation, combiner: ir.Operation) -> list[ir.Value]:
    source, init, accumulator = op.operands
    dim = ir.IntegerAttr(op.attributes["dimension"]).value
    inclusive = bool(ir.BoolAttr(op.attributes["inclusive"]).value)
    rank = ir.RankedTensorType(source.type).rank
    uppers = [_dim(source, d) for d in range(rank)]
    zero, one = _index(0), _index(1)

    def step(ivs: list[ir.Value], carried: list[ir.Value]) -> list[ir.Value]:
        (out,) = carried
        first = arith.cmpi(arith.CmpIPredicate.eq, ivs[dim], zero)
        # output[0] needs no previous value; the clamped index keeps the read in bounds.
        before = _with(ivs, dim, arith.select(first, zero, arith.subi(ivs[dim], one)))
        previous = tensor.extract(out, before)
        element = tensor.extract(source, ivs if inclusive else before)
        (combined,) = _inline(combiner, [previous, element])
        start = element if inclusive else tensor.extract(accumulator, _without(ivs, dim))
        return [tensor.insert(arith.select(first, start, combined), out, ivs)]

    (output,) = _loop_nest(uppers, [init], step)
    if not list(op.results[1].uses):
        return [output, accumulator]
    return [output, _scan_final(op, output, uppers)]


def _scan_final(op: ir.Operation, output: ir.Value, uppers: list[ir.Value]) -> ir.Value:
    """The scan's second result as TMTensor defines it: the last output along
    the dimension, which only steps after the first store; so a dimension of
    0 or 1 leaves the accumulator's init (a dynamic one is taken as longer)."""
    source, _, accumulator = op.operands
    dim = ir.IntegerAttr(op.attributes["dimension"]).value
    if ir.RankedTensorType(source.type).shape[dim] in (0, 1):
        return accumulator
    last = arith.subi(uppers[dim], _index(1))

    def store(ivs: list[ir.Value], carried: list[ir.Value]) -> list[ir.Value]:
        value = tensor.extract(output, _inserted(ivs, dim, last))
        return [tensor.insert(value, carried[0], ivs)]

    return _loop_nest(_without(uppers, dim), [accumulator], store)[0]


def _as_index(value: ir.Value) -> ir.Value:
    return arith.index_cast(ir.IndexType.get(), value)


def _lower_scatter(op: ir.Operation, combiner: ir.Operation) -> list[ir.Value]:
    updates, indices, original = op.operands
    dimension_map = list(ir.DenseI64ArrayAttr(op.attributes["dimension_map"]))
    update_rank = ir.RankedTensorType(updates.type).rank
    rank = ir.RankedTensorType(original.type).rank
    extents = [_dim(original, d) for d in range(rank)]
    zero = _index(0)

    def from_end(where: ir.Value, d: int) -> ir.Value:
        # torch's index_put counts a negative index from the end, and
        # torch-mlir passes its indices through as they are (the indices of
        # a valid scatter are never negative).
        negative = arith.cmpi(arith.CmpIPredicate.slt, where, zero)
        return arith.select(negative, arith.addi(where, extents[d]), where)

    def apply(ivs: list[ir.Value], carried: list[ir.Value]) -> list[ir.Value]:
        (out,) = carried
        # The update's trailing coordinates address the last dimensions; the
        # index columns add to (or set) the mapped ones.
        starts: list[ir.Value | None] = [None] * rank
        offset = rank - (update_rank - 1)
        for k, iv in enumerate(ivs[1:]):
            starts[offset + k] = iv
        for column, d in enumerate(dimension_map):
            where = from_end(_as_index(tensor.extract(indices, [ivs[0], _index(column)])), d)
            current = starts[d]
            starts[d] = where if current is None else arith.addi(where, current)
        at = [zero if s is None else s for s in starts]
        update = tensor.extract(updates, ivs)
        return [
            _update_in_bounds(out, at, extents, lambda old: _inline(combiner, [update, old])[0])
        ]

    uppers = [_dim(updates, d) for d in range(update_rank)]
    return _loop_nest(uppers, [original], apply)


def _update_in_bounds(
    out: ir.Value,
    at: list[ir.Value],
    extents: list[ir.Value],
    combine: Callable[[ir.Value], ir.Value],
) -> ir.Value:
    """``out`` with ``combine(out[at])`` at ``at``, or unchanged when ``at``
    is outside it.

    torch raises on an out-of-range index; compiled code cannot, and must not
    read or write outside the tensor: such an update is dropped.
    """
    branch = scf.IfOp(_in_bounds(at, extents), [out.type], has_else=True)
    with ir.InsertionPoint(branch.then_block):
        value = combine(tensor.extract(out, at))
        scf.YieldOp([tensor.insert(value, out, at)])
    with ir.InsertionPoint(branch.else_block):
        scf.YieldOp([out])
    return branch.results[0]


def _in_bounds(at: list[ir.Value], extents: list[ir.Value]) -> ir.Value:
    inside = arith.constant(ir.IntegerType.get_signless(1), 1)
    for where, extent in zip(at, extents, strict=True):
        # One unsigned compare: a negative index is a huge unsigned one.
        below = arith.cmpi(arith.CmpIPredicate.ult, where, extent)
        inside = arith.andi(inside, below)
    return inside


# The comparator relations of torch-mlir's sorts: ascending (a < b, a <= b)
# or descending, for floats and for signed or unsigned integers.
_FLOAT_ORDER = {"olt": True, "ole": True, "ult": True, "ule": True}
_FLOAT_ORDER |= {"ogt": False, "oge": False, "ugt": False, "uge": False}
_INT_ORDER = {"slt": (True, "s"), "sle": (True, "s"), "sgt": (False, "s"), "sge": (False, "s")}
_INT_ORDER |= {"ult": (True, "u"), "ule": (True, "u"), "ugt": (False, "u"), "uge": (False, "u")}

Before = Callable[[ir.Value, ir.Value], ir.Value]


def _predicate_name(compare: ir.Operation) -> str:
    enum = arith.CmpFPredicate if compare.name == "arith.cmpf" else arith.CmpIPredicate
    return enum(ir.IntegerAttr(compare.attributes["predicate"]).value).name.lower()


def _sort_order(op: ir.Operation, combiner: ir.Operation) -> Before:
    """``before(b, a)``: whether key ``b`` goes strictly before key ``a``
    (an element moves ahead of an earlier one only then: a stable sort)."""
    block = combiner.regions[0].blocks[0]
    body = [child.operation for child in block.operations]
    keys = list(block.arguments)[:2]
    compare = body[0]
    known = (
        len(body) == 2
        and compare.name in ("arith.cmpf", "arith.cmpi")
        and list(body[1].operands) == [compare.result]
        and {keys.index(v) if v in keys else -1 for v in compare.operands} == {0, 1}
    )
    if not known:
        op.location.emit_error(
            f"{op.name}: its comparator is not one arith.cmpf/cmpi of the two keys; "
            "lowerline-lower-tm-tensor sorts by torch's orders only"
        )
        raise PassFailed()
    name = _predicate_name(compare)
    swapped = keys.index(compare.operands[0]) == 1
    if compare.name == "arith.cmpf":
        ascending = _FLOAT_ORDER.get(name)
        if ascending is None:
            return _unknown_order(op, name)
        return _float_before(ascending != swapped)
    if name not in _INT_ORDER:
        return _unknown_order(op, name)
    ascending, signedness = _INT_ORDER[name]
    return _int_before(ascending != swapped, signedness)


def _unknown_order(op: ir.Operation, name: str) -> Before:
    op.location.emit_error(f"{op.name}: comparator predicate '{name}' is not an order")
    raise PassFailed()


def _float_before(ascending: bool) -> Before:
    """torch's float order: NaN is greater than every number."""
    strict = arith.CmpFPredicate.OLT if ascending else arith.CmpFPredicate.OGT

    def before(b: ir.Value, a: ir.Value) -> ir.Value:
        first, second = (a, b) if ascending else (b, a)
        # The NaN goes last ascending, first descending: it is the greater one.
        nan_order = arith.andi(
            arith.cmpf(arith.CmpFPredicate.UNO, first, first),
            arith.cmpf(arith.CmpFPredicate.ORD, second, second),
        )
        return arith.ori(arith.cmpf(strict, b, a), nan_order)

    return before


def _int_before(ascending: bool, signedness: str) -> Before:
    names = {(True, "s"): "slt", (True, "u"): "ult", (False, "s"): "sgt", (False, "u"): "ugt"}
    predicate = getattr(arith.CmpIPredicate, names[ascending, signedness])
    return lambda b, a: arith.cmpi(predicate, b, a)


def _lower_sort(op: ir.Operation, combiner: ir.Operation) -> list[ir.Value]:
    dim = ir.IntegerAttr(op.attributes["dimension"]).value
    keys_type = ir.RankedTensorType(op.operands[0].type)
    length = keys_type.shape[dim]
    if length == ir.ShapedType.get_dynamic_size():
        op.location.emit_error(f"{op.name}: sorts along a dynamic dimension ({dim})")
        raise PassFailed()
    before = _sort_order(op, combiner)
    current = list(op.operands)
    width = 1
    while width < length:
        current = _merge_pass(current, dim, length, width, before)
        width *= 2
    return current


def _merge_pass(
    sources: list[ir.Value], dim: int, length: int, width: int, before: Before
) -> list[ir.Value]:
    """One bottom-up merge sort pass: runs of ``width`` (sorted) merged in
    pairs into new tensors, in every row along ``dim``."""
    shapes = [ir.RankedTensorType(s.type) for s in sources]
    dests = [tensor.empty(t.shape, t.element_type) for t in shapes]
    uppers = [_dim(sources[0], d) for d in range(shapes[0].rank) if d != dim]
    end = _index(length)

    def row(ivs: list[ir.Value], carried: list[ir.Value]) -> list[ir.Value]:
        runs = scf.ForOp(_index(0), end, _index(2 * width), carried)
        with ir.InsertionPoint(runs.body):
            low = runs.induction_variable
            middle = arith.minui(arith.addi(low, _index(width)), end)
            high = arith.minui(arith.addi(low, _index(2 * width)), end)
            merge = scf.ForOp(low, high, _index(1), [low, middle, *runs.inner_iter_args])
            with ir.InsertionPoint(merge.body):
                left, right, *out = merge.inner_iter_args
                # Both reads clamped into their runs; the flags say which is real.
                left_at = _inserted(ivs, dim, arith.minui(left, arith.subi(middle, _index(1))))
                right_at = _inserted(ivs, dim, arith.minui(right, arith.subi(high, _index(1))))
                a, b = tensor.extract(sources[0], left_at), tensor.extract(sources[0], right_at)
                left_done = arith.cmpi(arith.CmpIPredicate.uge, left, middle)
                right_open = arith.cmpi(arith.CmpIPredicate.ult, right, high)
                take_right = arith.andi(right_open, arith.ori(left_done, before(b, a)))
                placed = [
                    tensor.insert(
                        arith.select(
                            take_right, tensor.extract(s, right_at), tensor.extract(s, left_at)
                        ),
                        o,
                        _inserted(ivs, dim, merge.induction_variable),
                    )
                    for s, o in zip(sources, out, strict=True)
                ]
                one = _index(1)
                scf.YieldOp(
                    [
                        arith.select(take_right, left, arith.addi(left, one)),
                        arith.select(take_right, arith.addi(right, one), right),
                        *placed,
                    ]
                )
            scf.YieldOp(list(merge.results)[2:])
        return list(runs.results)

    return _loop_nest(uppers, dests, row)


_LOWERINGS = {
    TM_SCAN: _lower_scan,
    TM_SCATTER: _lower_scatter,
    TM_SORT: _lower_sort,
}


@dataclass(frozen=True)
class LowerTmTensor(Pass):
    flag = "lowerline-lower-tm-tensor"
    summary = "Lower torch-mlir's TMTensor ops (sort, scatter, scan stand-ins) to scf loops"
    anchor = "builtin.module"

    def run(self, op: ir.Operation) -> None:
        stand_ins = ops_matching(op, lambda o: o.name in STAND_INS)
        if not stand_ins:
            return
        symbols = ir.SymbolTable(op)
        pairs = [(stand_in, _combiner(stand_in, symbols)) for stand_in in stand_ins]
        for stand_in, combiner in pairs:
            _check_combiner(stand_in, combiner)
        for stand_in, combiner in pairs:
            with ir.InsertionPoint(stand_in), stand_in.location:
                results = _LOWERINGS[stand_in.name](stand_in, combiner)
            for old, new in zip(stand_in.results, results, strict=True):
                old.replace_all_uses_with(new)
            stand_in.erase()
        # Every stand-in is gone: nothing refers to the combiners any more.
        names = {ir.StringAttr(c.attributes["sym_name"]).value: c for _, c in pairs}
        for combiner in names.values():
            combiner.erase()
