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

With ``vector-bits`` (the CPU stages pass the target's), a scatter of whole
rows (``index_add``, ``index_put`` of rows, the sums of an embedding bag:
indices into the leading dimensions, each update a whole row of the rest,
a combiner of arith/math ops only) combines a row per update with vectors;
the index is checked once per row, the updates still applied in order::

    scf.for %n ... iter_args(%out = %original) {
      %i = <the row index of update %n, from the end when negative>
      scf.if (%i in bounds) {
        scf.for %c = 0 to <whole vectors> step <lanes> {         // then one shorter
          %u = vector.transfer_read %updates[%n, %c]
          %o = vector.transfer_read %out[%i, %c]
          vector.transfer_write <the combiner on vectors>(%u, %o), %out[%i, %c]

Updates may repeat an index, so they cannot be split among threads; the
columns can: with ``threads`` and rows wide enough (256 bytes a thread), an
``scf.forall`` gives each thread a slice of columns of every row, to which
it applies every update in order, so each element is combined in the same
order as on one thread; the columns left over follow in one more loop. Any
other scatter (one element per update: ``scatter_add``, ``scatter_reduce``;
a combiner with a call) stays scalar loops, with a remark saying why
(``explain`` prints it). Upstream has no scatter on tensors to lower to
(``tensor.scatter`` has no lowering), and the vectorizer only vectorizes
linalg ops, which a scatter with repeated indices is not.

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
from dataclasses import replace as dataclass_replace

from mlir import ir
from mlir.dialects import arith, scf, tensor, vector

from lowerline.dialects import TM_SCAN, TM_SCATTER, TM_SORT
from lowerline.pipeline.options import opt
from lowerline.pipeline.pass_api import Pass, PassFailed, ops_matching
from lowerline.pipeline.remarks import FALLBACK, Remark, about, publish

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


def _from_end(where: ir.Value, extent: ir.Value) -> ir.Value:
    """torch's index_put counts a negative index from the end, and torch-mlir
    passes its indices through as they are (the indices of a valid scatter
    are never negative)."""
    negative = arith.cmpi(arith.CmpIPredicate.slt, where, _index(0))
    return arith.select(negative, arith.addi(where, extent), where)


def _destination(indices: ir.Value, n: ir.Value, column: int, extent: ir.Value) -> ir.Value:
    """Update ``n``'s index in ``column``, as an index counted from the start."""
    return _from_end(_as_index(tensor.extract(indices, [n, _index(column)])), extent)


def _lower_scatter(op: ir.Operation, combiner: ir.Operation) -> list[ir.Value]:
    updates, indices, original = op.operands
    dimension_map = list(ir.DenseI64ArrayAttr(op.attributes["dimension_map"]))
    update_rank = ir.RankedTensorType(updates.type).rank
    rank = ir.RankedTensorType(original.type).rank
    extents = [_dim(original, d) for d in range(rank)]
    zero = _index(0)

    def apply(ivs: list[ir.Value], carried: list[ir.Value]) -> list[ir.Value]:
        (out,) = carried
        # The update's trailing coordinates address the last dimensions; the
        # index columns add to (or set) the mapped ones.
        starts: list[ir.Value | None] = [None] * rank
        offset = rank - (update_rank - 1)
        for k, iv in enumerate(ivs[1:]):
            starts[offset + k] = iv
        for column, d in enumerate(dimension_map):
            where = _destination(indices, ivs[0], column, extents[d])
            current = starts[d]
            starts[d] = where if current is None else arith.addi(where, current)
        at = [zero if s is None else s for s in starts]
        update = tensor.extract(updates, ivs)
        return [
            _update_in_bounds(out, at, extents, lambda old: _inline(combiner, [update, old])[0])
        ]

    uppers = [_dim(updates, d) for d in range(update_rank)]
    return _loop_nest(uppers, [original], apply)


# Combiner ops that apply to vectors lane by lane: arith and math ops are
# elementwise-mappable; an arith.constant becomes a splat.
_LANEWISE_DIALECTS = ("arith", "math")

# The least of a row each thread of a threaded row scatter owns, in bytes:
# four 64-byte cache lines, so that threads rarely share a line and each
# thread's vector loop runs several steps per update.
_BYTES_PER_THREAD = 256


def _is_scalar(value_type: ir.Type) -> bool:
    return isinstance(value_type, ir.FloatType | ir.IntegerType | ir.IndexType)


def _not_lanewise(combiner: ir.Operation) -> str:
    """Why the combiner cannot run on vectors lane by lane; empty when it can."""
    for child in list(combiner.regions[0].blocks[0].operations)[:-1]:
        inner = child.operation
        if inner.name.split(".")[0] not in _LANEWISE_DIALECTS:
            return f"its combiner holds '{inner.name}', not an elementwise arith/math op"
        if not all(_is_scalar(r.type) for r in inner.results):
            return f"its combiner's '{inner.name}' does not make a scalar"
    return ""


def _not_row_scatter(op: ir.Operation) -> str:
    """Why the scatter does not combine whole rows of the output at leading
    indices (``index_add``, ``index_put`` of rows); empty when it does."""
    updates, _, original = op.operands
    update_type = ir.RankedTensorType(updates.type)
    out_type = ir.RankedTensorType(original.type)
    dimension_map = list(ir.DenseI64ArrayAttr(op.attributes["dimension_map"]))
    leading = len(dimension_map)
    if dimension_map != list(range(leading)):
        return f"its indices address dimensions {dimension_map}, not the leading ones"
    overlap = _overlap(op)
    rows = list(update_type.shape[1 + max(overlap, 0) :])
    if overlap < 0 or not rows or rows != list(out_type.shape[leading:]):
        return "each update is one element, not a whole row of the output"
    # Update dimensions over indexed ones (torch-mlir's index_put writes an
    # update as [n, 1, row]) must have one coordinate: the index alone.
    if any(size != 1 for size in update_type.shape[1 : 1 + overlap]):
        return "its updates span several rows along an indexed dimension"
    if ir.ShapedType.get_dynamic_size() in rows:
        return "its rows have a dynamic size"
    element = out_type.element_type
    if not isinstance(element, ir.FloatType | ir.IntegerType):
        return f"its elements ({element}) are not numbers"
    if isinstance(element, ir.IntegerType) and element.width < 8:
        return f"its elements ({element}) are narrower than a byte"
    return ""


def _overlap(op: ir.Operation) -> int:
    """How many of the update's trailing dimensions lie over indexed ones:
    its coordinates address the output's last dimensions (negative: the
    update leaves unindexed dimensions at 0)."""
    updates, _, original = op.operands
    leading = len(ir.DenseI64ArrayAttr(op.attributes["dimension_map"]))
    rank = ir.RankedTensorType(original.type).rank
    return leading - (rank - (ir.RankedTensorType(updates.type).rank - 1))


def _element_bits(value: ir.Value) -> int:
    element = ir.RankedTensorType(value.type).element_type
    assert isinstance(element, ir.FloatType | ir.IntegerType)  # _not_row_scatter checked
    return element.width


def _inline_on_vectors(combiner: ir.Operation, args: Sequence[ir.Value], lanes: int) -> ir.Value:
    """The combiner's body on vectors of ``lanes`` at the insertion point
    (checked by ``_not_lanewise``): each op made again with vector types."""
    block = combiner.regions[0].blocks[0]
    mapping = dict(zip(block.arguments, args, strict=True))
    ops = [child.operation for child in block.operations]
    for inner in ops[:-1]:
        types = [ir.VectorType.get([lanes], r.type) for r in inner.results]
        if inner.name == "arith.constant":
            splat = ir.DenseElementsAttr.get_splat(types[0], inner.attributes["value"])
            mapping[inner.results[0]] = arith.constant(types[0], splat)
            continue
        made = ir.Operation.create(
            inner.name,
            results=types,
            operands=[mapping[v] for v in inner.operands],
            attributes={name: inner.attributes[name] for name in inner.attributes},
        )
        mapping.update(zip(inner.results, made.results, strict=True))
    return mapping[ops[-1].operands[0]]


def _row_vector(source: ir.Value, at: list[ir.Value], lanes: int) -> ir.Value:
    """``lanes`` elements of ``source`` along its last dimension from ``at``."""
    element = ir.RankedTensorType(source.type).element_type
    zero = 0.0 if isinstance(element, ir.FloatType) else 0
    return vector.transfer_read(
        ir.VectorType.get([lanes], element),
        source,
        at,
        ir.AffineMapAttr.get(ir.AffineMap.get_minor_identity(len(at), 1)),
        arith.constant(element, zero),  # never read: the row holds the lanes
        ir.ArrayAttr.get([ir.BoolAttr.get(True)]),
    )


def _store_row_vector(value: ir.Value, dest: ir.Value, at: list[ir.Value]) -> ir.Value:
    return vector.transfer_write(
        dest.type,
        value,
        dest,
        at,
        ir.AffineMapAttr.get(ir.AffineMap.get_minor_identity(len(at), 1)),
        ir.ArrayAttr.get([ir.BoolAttr.get(True)]),
    )


# Columns [start, stop) of a row, and where they start in the updates when
# the output is a thread's slice (None: the same columns).
Columns = tuple[int, int, "ir.Value | None"]


@dataclass(frozen=True)
class _Rows:
    """A row scatter's operands and how its rows are combined: the update
    at ``[n, m...]`` (a row) onto ``out[indices[n]..., m...]``."""

    updates: ir.Value
    indices: ir.Value
    combiner: ir.Operation
    extents: list[ir.Value]  # the output's leading (indexed) dimensions
    overlap: int  # update dimensions over indexed ones (each of size 1)
    lanes: int

    def combine(
        self, out: ir.Value, row: list[ir.Value], at: list[ir.Value], columns: Columns
    ) -> ir.Value:
        """``out`` with the columns ``[start, stop)`` of the update row at
        ``row`` combined into its row at ``at``: vectors of ``lanes``, then a
        shorter one for the rest."""
        start, stop, shift = columns
        full = (stop - start) // self.lanes * self.lanes
        if full:
            loop = scf.ForOp(_index(start), _index(start + full), _index(self.lanes), [out])
            with ir.InsertionPoint(loop.body):
                step = self._vector(
                    loop.inner_iter_args[0], row, at, loop.induction_variable, shift
                )
                scf.YieldOp([step])
            out = loop.results[0]
        if start + full < stop:
            tail = dataclass_replace(self, lanes=stop - start - full)
            out = tail._vector(out, row, at, _index(start + full), shift)
        return out

    def _vector(
        self,
        out: ir.Value,
        row: list[ir.Value],
        at: list[ir.Value],
        column: ir.Value,
        shift: ir.Value | None,
    ) -> ir.Value:
        # A thread's slice of the output starts at column ``shift`` of the updates.
        update_column = column if shift is None else arith.addi(column, shift)
        update = _row_vector(self.updates, [*row, update_column], self.lanes)
        old = _row_vector(out, [*at, column], self.lanes)
        value = _inline_on_vectors(self.combiner, [update, old], self.lanes)
        return _store_row_vector(value, out, [*at, column])

    def loops(self, out: ir.Value, columns: Columns) -> ir.Value:
        """``out`` with the columns ``columns`` of every update row combined,
        in order; a row at an index outside ``out`` is dropped."""
        update_rank = ir.RankedTensorType(self.updates.type).rank
        uppers = [_dim(self.updates, d) for d in range(update_rank - 1)]

        def apply(ivs: list[ir.Value], carried: list[ir.Value]) -> list[ir.Value]:
            (current,) = carried
            lead = [
                _destination(self.indices, ivs[0], column, extent)
                for column, extent in enumerate(self.extents)
            ]
            branch = scf.IfOp(_in_bounds(lead, self.extents), [current.type], has_else=True)
            with ir.InsertionPoint(branch.then_block):
                at = [*lead, *ivs[1 + self.overlap :]]
                scf.YieldOp([self.combine(current, ivs, at, columns)])
            with ir.InsertionPoint(branch.else_block):
                scf.YieldOp([current])
            return [branch.results[0]]

        return _loop_nest(uppers, [out], apply)[0]


def _lower_row_scatter(
    op: ir.Operation, combiner: ir.Operation, lanes: int, threads: int
) -> list[ir.Value]:
    """A row scatter as loops over the updates whose body combines a whole
    row with vectors; with ``threads > 1``, the row's columns split among
    threads first (each thread applies every update, in order, to its own
    columns), the columns left over after them in one more loop."""
    updates, indices, original = op.operands
    leading = len(ir.DenseI64ArrayAttr(op.attributes["dimension_map"]))
    extents = [_dim(original, d) for d in range(leading)]
    rows = _Rows(updates, indices, combiner, extents, _overlap(op), lanes)
    width = ir.RankedTensorType(original.type).shape[-1]
    per_thread = width // threads // lanes * lanes
    out, start = original, 0
    if threads > 1:
        out, start = _threaded_rows(rows, original, threads, per_thread), threads * per_thread
    if start < width:
        out = rows.loops(out, (start, width, None))
    return [out]


def _row_threads(op: ir.Operation, lanes: int, threads: int) -> int:
    """How many threads share a row scatter's columns: as many as get at
    least ``_BYTES_PER_THREAD`` of a row in whole vectors, at most ``threads``."""
    _, _, original = op.operands
    width = ir.RankedTensorType(original.type).shape[-1]
    least = max(lanes, _BYTES_PER_THREAD * 8 // _element_bits(original))
    return max(1, min(threads, width // least))


def _threaded_rows(rows: _Rows, original: ir.Value, threads: int, per_thread: int) -> ir.Value:
    """``scf.forall`` over ``threads``: thread ``t`` combines the columns
    ``[t * per_thread, (t + 1) * per_thread)`` of every row, in update order,
    in its slice of the output."""
    out_type = ir.RankedTensorType(original.type)
    rank = out_type.rank
    dynamic = ir.ShapedType.get_dynamic_size()
    sizes = [*out_type.shape[:-1], per_thread]
    dynamic_sizes = [tensor.dim(original, _index(d)) for d in range(rank) if sizes[d] == dynamic]
    slice_type = ir.RankedTensorType.get(sizes, out_type.element_type)
    offsets = [0] * (rank - 1) + [dynamic]
    forall = scf.ForallOp([0], [threads], [1], shared_outs=[original])
    with ir.InsertionPoint(forall.body):
        (thread,) = forall.induction_variables
        (shared,) = forall.inner_iter_args
        first = arith.muli(thread, _index(per_thread))
        piece = tensor.extract_slice(
            slice_type, shared, [first], dynamic_sizes, [], offsets, sizes, [1] * rank
        )
        done = rows.loops(piece, (0, per_thread, first))
        with ir.InsertionPoint(forall.terminator().block):
            tensor.parallel_insert_slice(
                done, shared, [first], dynamic_sizes, [], offsets, sizes, [1] * rank
            )
    return forall.results[0]


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

    vector_bits: int = opt(
        0,
        "vector width in bits for scatters of whole rows (index_add, index_put of rows): "
        "each row combined with vectors; 0: every scatter as scalar loops",
    )
    threads: int = opt(
        1, "threads that may share the columns of a row scatter's rows (wide rows only)"
    )
    explain: bool = opt(False, "list the scatters left as scalar loops (and why) on stderr")

    def run(self, op: ir.Operation) -> None:
        stand_ins = ops_matching(op, lambda o: o.name in STAND_INS)
        if not stand_ins:
            return
        symbols = ir.SymbolTable(op)
        pairs = [(stand_in, _combiner(stand_in, symbols)) for stand_in in stand_ins]
        for stand_in, combiner in pairs:
            _check_combiner(stand_in, combiner)
        remarks: list[Remark] = []
        for stand_in, combiner in pairs:
            with ir.InsertionPoint(stand_in), stand_in.location:
                results = self._lower(stand_in, combiner, remarks)
            for old, new in zip(stand_in.results, results, strict=True):
                old.replace_all_uses_with(new)
            stand_in.erase()
        # Every stand-in is gone: nothing refers to the combiners any more.
        names = {ir.StringAttr(c.attributes["sym_name"]).value: c for _, c in pairs}
        for combiner in names.values():
            combiner.erase()
        publish(remarks, self.explain)

    def _lower(
        self, op: ir.Operation, combiner: ir.Operation, remarks: list[Remark]
    ) -> list[ir.Value]:
        if op.name != TM_SCATTER or not self.vector_bits:
            return _LOWERINGS[op.name](op, combiner)
        why = _not_row_scatter(op) or _not_lanewise(combiner)
        if why:
            message = f"left as scalar loops: not vectorized: {why}"
            remarks.append(about(op, self.flag, message, FALLBACK))
            return _lower_scatter(op, combiner)
        lanes = max(1, self.vector_bits // _element_bits(op.operands[2]))
        threads = _row_threads(op, lanes, self.threads)
        message = f"rows combined as vectors of {lanes}, columns split among {threads} thread(s)"
        remarks.append(about(op, self.flag, message))
        return _lower_row_scatter(op, combiner, lanes, threads)
