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

A scan along the last dimension runs four rows per loop (independent chains
of combines hide each one's latency): element 0 stored, then a loop
carrying the running values in registers. A float32 cumsum reaches it
summed in float64 (``decompositions``: ATen's accumulator) between an
elementwise ``extf`` and ``truncf``; the scan then reads the float32 input
and stores rounded float32 itself, with no float64 copy of either.

Along an outer dimension (``cumsum(x, 0)``), with ``vector-bits`` and a
lane-wise combiner, each row of the last dimension combines the previous
output row with its input row in vectors (the columns past the last whole
vector one at a time)::

    scf.for %i ... {                                   // rows along the scan
      scf.if (%i == 0) { <copy input row 0 (or the accumulator)> }
      else {
        scf.for %c = 0 to <whole vectors> step <lanes> {
          %p = vector.transfer_read %out[%i - 1, %c]
          %x = vector.transfer_read %input[%i, %c]
          vector.transfer_write <combiner>(%p, %x), %out[%i, %c]

Otherwise (an i1 scan, a dynamic length along the last dimension) the scan
carries its output through a loop nest in row-major order, so
``output[i-1]`` is written before ``output[i]``. A sort is a stable bottom-up
merge sort per row (``ceil(log2 n)`` passes, each into a new tensor) with
torch's order: NaN after every number ascending, before every number
descending; its comparator must be one ``arith.cmpf`` / ``arith.cmpi`` of the
two keys (what torch-mlir emits), anything else is an error on the op.
A sort read only through slices of its first ``k <= 32`` along its dimension
(torch-mlir's topk) is a selection per row instead: each element in turn
enters the ``k`` kept (sorted) when it goes before the last of them, those
it goes strictly before shifting up one, so ties keep the stable sort's
order. A sort or selection along an outer dimension transposes its
operands to run along the last one (contiguous runs) and its results back.

With ``log-step-scans`` (the GPU path, whose mapping runs loops on the
host), an inclusive scan with an arith/math combiner is ``ceil(log2 n)``
elementwise ``linalg.generic`` steps instead (Hillis-Steele: step ``s``
combines each element with the one ``s`` before it), which become kernels.

A sort or scan is independent across the dimensions it does not run
along. With ``threads`` and enough work (``_STEPS_PER_THREAD`` a thread), an
``scf.forall`` splits one of them (the outermost static one long enough for
every thread, else the longest) into a chunk per thread; each thread sorts
or scans its slice and inserts it into the shared result
(``tensor.parallel_insert_slice``), which the CPU stages turn into OpenMP.
Each element is computed in the same order as on one thread. A chunk of the
last dimension for a vector scan is whole vectors. Upstream has neither op
on tensors (no ``linalg`` scan or sort), and the TMTensor ops' own
lowering is sequential loops.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from dataclasses import replace as dataclass_replace

from mlir import ir
from mlir.dialects import arith, linalg, scf, tensor, vector

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


@dataclass(frozen=True)
class _Scan:
    """A scan's dimension, kind and combiner; its operands come apart, so
    that each thread can scan a slice of them. ``lanes`` (0: none) is the
    vector width for scans along an outer dimension."""

    combiner: ir.Operation
    dim: int
    inclusive: bool
    lanes: int

    def form(self, source_type: ir.RankedTensorType) -> str:
        """How the scan runs: ``vectors`` (a running vector across the
        contiguous last dimension), ``rows`` (one running value per row
        along the last dimension) or ``elements`` (the general form, a
        select per element)."""
        last = source_type.rank - 1
        if self.dim != last and self.lanes:
            return "vectors"
        length = source_type.shape[self.dim]
        if self.dim == last and length not in (0, ir.ShapedType.get_dynamic_size()):
            return "rows"
        return "elements"

    def lower(
        self, source: ir.Value, init: ir.Value, accumulator: ir.Value, final: bool
    ) -> list[ir.Value]:
        """The scan's output and (with ``final``) its final value, else the
        accumulator unchanged."""
        uppers = [_dim(source, d) for d in range(ir.RankedTensorType(source.type).rank)]
        form = self.form(ir.RankedTensorType(source.type))
        scan = {"vectors": self._vectors, "rows": self._rows, "elements": self._elements}[form]
        output = scan(source, init, accumulator, uppers)
        if not final:
            return [output, accumulator]
        return [output, _scan_final(source, accumulator, self.dim, output, uppers)]

    def _elements(
        self, source: ir.Value, init: ir.Value, accumulator: ir.Value, uppers: list[ir.Value]
    ) -> ir.Value:
        # Row-major order: output[i-1] is written before output[i] is read.
        dim, zero, one = self.dim, _index(0), _index(1)

        def step(ivs: list[ir.Value], carried: list[ir.Value]) -> list[ir.Value]:
            (out,) = carried
            first = arith.cmpi(arith.CmpIPredicate.eq, ivs[dim], zero)
            # output[0] needs no previous value; the clamped index keeps the read in bounds.
            before = _with(ivs, dim, arith.select(first, zero, arith.subi(ivs[dim], one)))
            previous = tensor.extract(out, before)
            element = tensor.extract(source, ivs if self.inclusive else before)
            (combined,) = _inline(self.combiner, [previous, element])
            start = element if self.inclusive else tensor.extract(accumulator, _without(ivs, dim))
            return [tensor.insert(arith.select(first, start, combined), out, ivs)]

        return _loop_nest(uppers, [init], step)[0]

    def _rows(
        self, source: ir.Value, init: ir.Value, accumulator: ir.Value, uppers: list[ir.Value]
    ) -> ir.Value:
        """Along the last dimension: element 0 stored before the loop, the
        running value carried in a register instead of read back;
        ``_ROWS_AT_ONCE`` rows of the dimension before in one loop, whose
        running values are independent (a combine waits on the previous one
        of its own row only)."""
        shape = ir.RankedTensorType(source.type).shape
        if len(shape) == 1:
            return self._row_block(source, accumulator, init, [[]])
        across = shape[-2]

        def rows(ivs: list[ir.Value], carried: list[ir.Value]) -> list[ir.Value]:
            (out,) = carried
            spans = [(_index(0), uppers[-2], 1)]
            if across != ir.ShapedType.get_dynamic_size() and across >= _ROWS_AT_ONCE:
                whole = _index(across // _ROWS_AT_ONCE * _ROWS_AT_ONCE)
                spans = [(_index(0), whole, _ROWS_AT_ONCE), (whole, uppers[-2], 1)]
            for begin, stop, step in spans:
                loop = scf.ForOp(begin, stop, _index(step), [out])
                with ir.InsertionPoint(loop.body):
                    first = loop.induction_variable
                    at = [[*ivs, arith.addi(first, _index(r)) if r else first] for r in range(step)]
                    current = loop.inner_iter_args[0]
                    scf.YieldOp([self._row_block(source, accumulator, current, at)])
                out = loop.results[0]
            return [out]

        return _loop_nest(uppers[:-2], [init], rows)[0]

    def _row_block(
        self, source: ir.Value, accumulator: ir.Value, out: ir.Value, rows: list[list[ir.Value]]
    ) -> ir.Value:
        """``out`` with the rows at ``rows`` (indices of the other dimensions)
        scanned in one loop along the last dimension. The running values
        have the combiner's type: a narrower source is extended as read, a
        narrower output rounded as stored (``_narrow_ends``)."""
        length = ir.RankedTensorType(source.type).shape[self.dim]
        wide = self.combiner.regions[0].blocks[0].arguments[0].type
        narrow = ir.RankedTensorType(out.type).element_type
        zero = _index(0)
        firsts = [
            _float_as(tensor.extract(source, [*row, zero]), wide)
            if self.inclusive
            else tensor.extract(accumulator, row)
            for row in rows
        ]
        for row, first in zip(rows, firsts, strict=True):
            out = tensor.insert(_float_as(first, narrow), out, [*row, zero])
        loop = scf.ForOp(_index(1), _index(length), _index(1), [out, *firsts])
        with ir.InsertionPoint(loop.body):
            i = loop.induction_variable
            current, *running = loop.inner_iter_args
            at = i if self.inclusive else arith.subi(i, _index(1))
            values = []
            for row, previous in zip(rows, running, strict=True):
                element = _float_as(tensor.extract(source, [*row, at]), wide)
                (value,) = _inline(self.combiner, [previous, element])
                current = tensor.insert(_float_as(value, narrow), current, [*row, i])
                values.append(value)
            scf.YieldOp([current, *values])
        return loop.results[0]

    def _vectors(
        self, source: ir.Value, init: ir.Value, accumulator: ir.Value, uppers: list[ir.Value]
    ) -> ir.Value:
        """Along an outer dimension: each row of the last dimension combines
        the previous output row with its input row, in vectors of ``lanes``
        (then one column at a time for the rest)."""
        dim, lanes = self.dim, self.lanes
        width = uppers[-1]
        whole = arith.subi(width, arith.remui(width, _index(lanes)))  # folds when static
        spans = [(_index(0), whole, lanes), (whole, width, 0)]

        def start(out: ir.Value, at: list[ir.Value], lanes: int) -> ir.Value:
            del out
            if self.inclusive:
                return _read(source, at, lanes)
            return _read(accumulator, _without(at, dim), lanes)

        def combined(out: ir.Value, at: list[ir.Value], lanes: int) -> ir.Value:
            before = _with(at, dim, arith.subi(at[dim], _index(1)))
            previous = _read(out, before, lanes)
            element = _read(source, at if self.inclusive else before, lanes)
            if lanes:
                return _inline_on_vectors(self.combiner, [previous, element], lanes)
            return _inline(self.combiner, [previous, element])[0]

        def row(ivs: list[ir.Value], carried: list[ir.Value]) -> list[ir.Value]:
            (out,) = carried
            first = arith.cmpi(arith.CmpIPredicate.eq, ivs[dim], _index(0))
            branch = scf.IfOp(first, [out.type], has_else=True)
            with ir.InsertionPoint(branch.then_block):
                scf.YieldOp([_each_column(out, ivs, spans, start)])
            with ir.InsertionPoint(branch.else_block):
                scf.YieldOp([_each_column(out, ivs, spans, combined)])
            return [branch.results[0]]

        return _loop_nest(uppers[:-1], [init], row)[0]


def _not_log_step(op: ir.Operation, combiner: ir.Operation, dim: int) -> str:
    """Why the scan cannot be log-step elementwise ops; empty when it can."""
    if not ir.BoolAttr(op.attributes["inclusive"]).value:
        return "it is exclusive"
    if list(op.results[1].uses):
        return "its final value is used"
    if ir.RankedTensorType(op.operands[0].type).shape[dim] == ir.ShapedType.get_dynamic_size():
        return "it runs along a dynamic dimension"
    return _not_lanewise(combiner)


def _log_step_scan(source: ir.Value, dim: int, combiner: ir.Operation) -> ir.Value:
    """An inclusive scan as ``ceil(log2 n)`` elementwise ``linalg.generic``
    steps (Hillis-Steele): step ``s`` combines each element with the one
    ``s`` before it, which the GPU mapping runs as kernels where the loops
    of the other forms would run on the host. More combines than in order
    (an associative combiner: sums and products, reassociated)."""
    source_type = ir.RankedTensorType(source.type)
    rank = source_type.rank
    identity = ir.AffineMapAttr.get(ir.AffineMap.get_identity(rank))
    iterators = ir.ArrayAttr.get([ir.Attribute.parse("#linalg.iterator_type<parallel>")] * rank)
    value, shift = source, 1
    while shift < source_type.shape[dim]:
        step = linalg.GenericOp(
            [source_type],
            [value],
            [_empty_like(value)],
            ir.ArrayAttr.get([identity] * 2),
            iterators,
        )
        element = source_type.element_type
        block = step.regions[0].blocks.append(element, element)
        with ir.InsertionPoint(block):
            at = [linalg.IndexOp(d).result for d in range(rank)]
            late = arith.cmpi(arith.CmpIPredicate.uge, at[dim], _index(shift))
            # Clamped for the first ``shift`` elements, whose value stays.
            earlier = _with(
                at, dim, arith.select(late, arith.subi(at[dim], _index(shift)), at[dim])
            )
            (combined,) = _inline(combiner, [tensor.extract(value, earlier), block.arguments[0]])
            linalg.YieldOp([arith.select(late, combined, block.arguments[0])])
        value, shift = step.result, shift * 2
    return value


# Rows scanned together along the last dimension: four independent chains
# of combines hide the latency of each (an add or multiply takes about four
# cycles, and one row's next one waits on it).
_ROWS_AT_ONCE = 4


def _float_as(value: ir.Value, to: ir.Type) -> ir.Value:
    """``value`` extended or rounded to the float type ``to`` (unchanged when
    it has that type)."""
    if value.type == to:
        return value
    wider = ir.FloatType(to).width > ir.FloatType(value.type).width
    return arith.extf(to, value) if wider else arith.truncf(to, value)


def _only_op(generic: ir.Operation, name: str) -> bool:
    """Whether ``generic`` is an elementwise ``linalg.generic`` of one input
    whose body is only ``name`` of it."""
    if generic.name != "linalg.generic" or len(generic.operands) != 2:
        return False
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(generic.attributes["indexing_maps"])]
    if any(not m.is_permutation or m != ir.AffineMap.get_identity(m.n_dims) for m in maps):
        return False
    body = [o.operation for o in generic.regions[0].blocks[0].operations]
    block_input = generic.regions[0].blocks[0].arguments[0]
    return len(body) == 2 and body[0].name == name and list(body[0].operands) == [block_input]


def _narrow_ends(op: ir.Operation) -> tuple[ir.Value, ir.Operation] | None:
    """``(narrow source, rounding op)`` when a scan's source is a float
    tensor extended elementwise and its output is only rounded back
    elementwise (a float32 cumsum summed in float64, ``decompositions``):
    the scan can read the narrow source and store rounded values itself,
    keeping its running values wide, instead of a wide copy of each."""
    source = op.operands[0]
    if not isinstance(source.owner, ir.OpView) or list(op.results[1].uses):
        return None
    widen = source.owner.operation
    uses = list(op.results[0].uses)
    if not _only_op(widen, "arith.extf") or len(uses) != 1:
        return None
    narrow = uses[0].owner
    if not isinstance(narrow, ir.OpView) or not _only_op(narrow.operation, "arith.truncf"):
        return None
    return widen.operands[0], narrow.operation


ColumnValue = Callable[[ir.Value, list[ir.Value], int], ir.Value]


def _each_column(
    out: ir.Value,
    row: list[ir.Value],
    spans: list[tuple[ir.Value, ir.Value, int]],
    value: ColumnValue,
) -> ir.Value:
    """``out`` with ``value(out, at, lanes)`` stored at every column of the
    row at ``row``: each span ``[start, stop)`` in steps of ``lanes``
    (0: one scalar a step)."""
    for begin, stop, lanes in spans:
        loop = scf.ForOp(begin, stop, _index(max(lanes, 1)), [out])
        with ir.InsertionPoint(loop.body):
            current = loop.inner_iter_args[0]
            at = [*row, loop.induction_variable]
            scf.YieldOp([_write(value(current, at, lanes), current, at, lanes)])
        out = loop.results[0]
    return out


def _read(source: ir.Value, at: list[ir.Value], lanes: int) -> ir.Value:
    return _row_vector(source, at, lanes) if lanes else tensor.extract(source, at)


def _write(value: ir.Value, dest: ir.Value, at: list[ir.Value], lanes: int) -> ir.Value:
    return _store_row_vector(value, dest, at) if lanes else tensor.insert(value, dest, at)


def _scan_final(
    source: ir.Value, accumulator: ir.Value, dim: int, output: ir.Value, uppers: list[ir.Value]
) -> ir.Value:
    """The scan's second result as TMTensor defines it: the last output along
    the dimension, which only steps after the first store; so a dimension of
    0 or 1 leaves the accumulator's init (a dynamic one is taken as longer)."""
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
    return _not_vector_element(out_type.element_type)


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
    last = ir.RankedTensorType(original.type).rank - 1
    forall = scf.ForallOp([0], [threads], [1], shared_outs=[original])
    with ir.InsertionPoint(forall.body):
        (thread,) = forall.induction_variables
        (shared,) = forall.inner_iter_args
        first = arith.muli(thread, _index(per_thread))
        where = _Slice.of(shared, last, first, None, per_thread)
        done = rows.loops(where.extract(shared), (0, per_thread, first))
        with ir.InsertionPoint(forall.terminator().block):
            where.insert(done, shared)
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


def _sort_along(values: list[ir.Value], dim: int, before: Before) -> list[ir.Value]:
    """``values`` sorted by the first along ``dim``: merge passes of runs of
    1, 2, 4... (none for a length of 0 or 1)."""
    length = ir.RankedTensorType(values[0].type).shape[dim]
    width = 1
    while width < length:
        values = _merge_pass(values, dim, length, width, before)
        width *= 2
    return values


def _merge_pass(
    sources: list[ir.Value], dim: int, length: int, width: int, before: Before
) -> list[ir.Value]:
    """One bottom-up merge sort pass: runs of ``width`` (sorted) merged in
    pairs into new tensors, in every row along ``dim``."""
    shapes = [ir.RankedTensorType(s.type) for s in sources]
    dests = [_empty_like(s) for s in sources]
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


# The largest ``k`` a sort read only for its first ``k`` along the dimension
# (topk) is a selection for: a new element that enters shifts up to ``k``
# kept ones, which beats the merge sort's ``log2(n)`` passes while ``k`` is
# small; and the rows must be four times longer than ``k`` at least.
_SELECT_AT_MOST = 32


def _first_k_slices(op: ir.Operation, dim: int) -> tuple[int, list[ir.Operation]] | None:
    """``(k, slices)`` when every use of the sort's results is an
    ``extract_slice`` of its first ``k`` along ``dim`` (whole along the
    others), as torch-mlir's topk reads the sort; else None."""
    shape = list(ir.RankedTensorType(op.operands[0].type).shape)
    slices, sizes = [], set()
    for result in op.results:
        for use in result.uses:
            user = use.owner
            if not isinstance(user, ir.OpView) or user.operation.name != "tensor.extract_slice":
                return None
            offsets = list(ir.DenseI64ArrayAttr(user.attributes["static_offsets"]))
            strides = list(ir.DenseI64ArrayAttr(user.attributes["static_strides"]))
            size = list(ir.DenseI64ArrayAttr(user.attributes["static_sizes"]))
            others = [n for d, n in enumerate(size) if d != dim]
            if set(offsets) != {0} or set(strides) != {1} or others != _without(shape, dim):
                return None
            slices.append(user.operation)
            sizes.add(size[dim])
    if len(sizes) != 1:
        return None
    (k,) = sizes
    return (k, slices) if 0 < k <= _SELECT_AT_MOST and 4 * k <= shape[dim] else None


def _select_along(values: list[ir.Value], dim: int, k: int, before: Before) -> list[ir.Value]:
    """The first ``k`` of ``values`` sorted by the first along ``dim``, as
    the stable merge sort orders them, by insertion: each element in turn
    enters the ``k`` kept so far (sorted) when it goes before the last of
    them (or fewer are kept), the ones it goes strictly before shifting
    up one place, the last dropped."""
    keys_type = ir.RankedTensorType(values[0].type)
    length = keys_type.shape[dim]
    outs = [_empty_like(v, along=(dim, k)) for v in values]
    uppers = [_dim(values[0], d) for d in range(keys_type.rank) if d != dim]

    def row(ivs: list[ir.Value], carried: list[ir.Value]) -> list[ir.Value]:
        loop = scf.ForOp(_index(0), _index(length), _index(1), [*carried, _index(0)])
        with ir.InsertionPoint(loop.body):
            *kept, filled = loop.inner_iter_args
            new = [tensor.extract(v, _inserted(ivs, dim, loop.induction_variable)) for v in values]
            last = tensor.extract(kept[0], _inserted(ivs, dim, _index(k - 1)))
            full = arith.cmpi(arith.CmpIPredicate.eq, filled, _index(k))
            enters = arith.ori(arith.xori(full, _true()), before(new[0], last))
            branch = scf.IfOp(enters, [o.type for o in kept], has_else=True)
            with ir.InsertionPoint(branch.then_block):
                scf.YieldOp(_insert_kept(kept, new, ivs, dim, filled, k, before))
            with ir.InsertionPoint(branch.else_block):
                scf.YieldOp(kept)
            more = arith.minui(arith.addi(filled, _index(1)), _index(k))
            scf.YieldOp([*branch.results, more])
        return list(loop.results)[:-1]

    return _loop_nest(uppers, outs, row)


def _insert_kept(
    kept: list[ir.Value],
    new: list[ir.Value],
    ivs: list[ir.Value],
    dim: int,
    filled: ir.Value,
    k: int,
    before: Before,
) -> list[ir.Value]:
    """``kept`` with ``new`` inserted in order: from the last place used
    (``filled``, or ``k - 1`` when full) down, each kept element that
    ``new`` goes strictly before moves up one; ``new`` lands where that
    stops (place 0 when it never does)."""
    top = arith.minui(filled, _index(k - 1))
    one = _index(1)
    steps = scf.ForOp(_index(0), top, one, [*kept, _true()])
    with ir.InsertionPoint(steps.body):
        *current, moving = steps.inner_iter_args
        place = arith.subi(top, steps.induction_variable)
        below = _inserted(ivs, dim, arith.subi(place, one))
        previous = [tensor.extract(c, below) for c in current]
        shift = arith.andi(moving, before(new[0], previous[0]))
        at = _inserted(ivs, dim, place)
        # The place keeps its element once ``new`` has landed (never read
        # before then: the unused top place of a buffer not yet full).
        stays = [
            arith.select(moving, n, tensor.extract(c, at))
            for n, c in zip(new, current, strict=True)
        ]
        moved = [
            tensor.insert(arith.select(shift, p, s), c, at)
            for p, s, c in zip(previous, stays, current, strict=True)
        ]
        scf.YieldOp([*moved, shift])
    *done, moving = steps.results
    # An scf.if, not a select of tensors: bufferized in place, not copied.
    first = scf.IfOp(moving, [d.type for d in done], has_else=True)
    with ir.InsertionPoint(first.then_block):
        at_zero = _inserted(ivs, dim, _index(0))
        scf.YieldOp([tensor.insert(n, d, at_zero) for n, d in zip(new, done, strict=True)])
    with ir.InsertionPoint(first.else_block):
        scf.YieldOp(done)
    return list(first.results)


def _true() -> ir.Value:
    return arith.constant(ir.IntegerType.get_signless(1), 1)


# The least work worth a thread, in element steps (an element visited by a
# scan, or by one merge pass of a sort): some 30 microseconds of scalar code,
# so that small tensors stay on one thread and a fork-join (microseconds)
# stays a small share of a thread's time.
_STEPS_PER_THREAD = 1 << 15


@dataclass(frozen=True)
class _Chunks:
    """Slices of ``size`` along dimension ``dim`` of ``extent``, one per
    thread (the last one shorter when ``size`` does not divide ``extent``)."""

    dim: int
    extent: int
    size: int

    @property
    def count(self) -> int:
        return -(-self.extent // self.size)


def _plan_chunks(
    shape: Sequence[int], along: int, steps: int, threads: int, lanes: int
) -> _Chunks | None:
    """How a sort or scan along ``along``, independent across the other
    dimensions, splits among ``threads``: chunks of the outermost other
    static dimension long enough for every thread (contiguous blocks), else
    of the longest; ``None`` when ``steps`` is too little work for two. A
    chunk of the last dimension is whole vectors of ``lanes`` (0: any)."""
    usable = min(threads, steps // _STEPS_PER_THREAD)
    dynamic = ir.ShapedType.get_dynamic_size()
    others = [d for d, n in enumerate(shape) if d != along and n not in (dynamic, 0, 1)]
    if usable < 2 or not others:
        return None
    split = next((d for d in others if shape[d] >= usable), max(others, key=lambda d: shape[d]))
    align = lanes if split == len(shape) - 1 and lanes else 1
    parts = min(usable, shape[split] // align)
    if parts < 2:
        return None
    size = -(-shape[split] // parts)
    return _Chunks(split, shape[split], -(-size // align) * align)


def _static_elements(shape: Sequence[int]) -> int:
    """The element count, a dynamic dimension counted as 1 (it may be)."""
    count = 1
    for n in shape:
        count *= 1 if n == ir.ShapedType.get_dynamic_size() else n
    return count


@dataclass(frozen=True)
class _Slice:
    """Where one chunk lies in a tensor: its offsets, sizes and type, for
    ``tensor.extract_slice`` and ``tensor.parallel_insert_slice`` alike
    (a chunk of ``dim`` at offset ``first``, whole along the others)."""

    offsets: list[ir.Value]
    sizes: list[ir.Value]
    static_offsets: list[int]
    static_sizes: list[int]
    type: ir.RankedTensorType

    @staticmethod
    def of(
        whole: ir.Value, dim: int, first: ir.Value, size: ir.Value | None, static: int
    ) -> _Slice:
        """``size`` None: the chunk is ``static`` long."""
        whole_type = ir.RankedTensorType(whole.type)
        dynamic = ir.ShapedType.get_dynamic_size()
        static_sizes = list(whole_type.shape)
        static_sizes[dim] = static if size is None else dynamic
        sizes = [
            size if d == dim else tensor.dim(whole, _index(d))
            for d, n in enumerate(static_sizes)
            if n == dynamic
        ]
        static_offsets = [dynamic if d == dim else 0 for d in range(whole_type.rank)]
        sliced = ir.RankedTensorType.get(static_sizes, whole_type.element_type)
        return _Slice([first], sizes, static_offsets, static_sizes, sliced)

    def extract(self, whole: ir.Value) -> ir.Value:
        return tensor.extract_slice(
            self.type, whole, self.offsets, self.sizes, [],
            self.static_offsets, self.static_sizes, [1] * len(self.static_sizes),
        )  # fmt: skip

    def insert(self, piece: ir.Value, whole: ir.Value) -> None:
        tensor.parallel_insert_slice(
            piece, whole, self.offsets, self.sizes, [],
            self.static_offsets, self.static_sizes, [1] * len(self.static_sizes),
        )  # fmt: skip


Split = Callable[[list[ir.Value], list[ir.Value]], list[ir.Value]]


def _in_chunks(
    chunks: _Chunks,
    reads: list[tuple[ir.Value, int]],
    writes: list[tuple[ir.Value, int]],
    body: Split,
) -> list[ir.Value]:
    """An ``scf.forall`` over ``chunks``: ``body(read slices, write slices)``
    makes a chunk's results from its slices of ``reads`` and of ``writes``
    (each value with the dimension that ``chunks.dim`` is in it), inserted
    into the ``writes`` (the forall's shared outputs) where they came from."""
    forall = scf.ForallOp([0], [chunks.count], [1], shared_outs=[v for v, _ in writes])
    with ir.InsertionPoint(forall.body):
        (chunk,) = forall.induction_variables
        first = arith.muli(chunk, _index(chunks.size))
        size = None
        if chunks.extent % chunks.size:
            size = arith.minui(_index(chunks.size), arith.subi(_index(chunks.extent), first))

        def place(value: ir.Value, dim: int) -> _Slice:
            return _Slice.of(value, dim, first, size, chunks.size)

        read_slices = [place(v, d).extract(v) for v, d in reads]
        shared = list(forall.inner_iter_args)
        out_slices = [place(v, d) for v, (_, d) in zip(shared, writes, strict=True)]
        done = body(read_slices, [s.extract(v) for s, v in zip(out_slices, shared, strict=True)])
        with ir.InsertionPoint(forall.terminator().block):
            for piece, where, whole in zip(done, out_slices, shared, strict=True):
                where.insert(piece, whole)
    return list(forall.results)


def _not_vector_element(element: ir.Type) -> str:
    """Why vectors cannot hold ``element``; empty when they can."""
    if not isinstance(element, ir.FloatType | ir.IntegerType):
        return f"its elements ({element}) are not numbers"
    if isinstance(element, ir.IntegerType) and element.width < 8:
        return f"its elements ({element}) are narrower than a byte"
    return ""


def _threads_note(chunks: _Chunks | None) -> str:
    if chunks is None:
        return "one thread (too little work, or no other static dimension to split)"
    return f"{chunks.count} chunks of {chunks.size} along dimension {chunks.dim} among threads"


@dataclass(frozen=True)
class LowerTmTensor(Pass):
    flag = "lowerline-lower-tm-tensor"
    summary = "Lower torch-mlir's TMTensor ops (sort, scatter, scan stand-ins) to scf loops"
    anchor = "builtin.module"

    vector_bits: int = opt(
        0,
        "vector width in bits for scatters of whole rows (index_add, index_put of rows) "
        "and scans along an outer dimension; 0: scalar loops",
    )
    threads: int = opt(
        1,
        "threads that may share the columns of a row scatter's rows (wide rows only) "
        "and the independent rows of a large sort or scan",
    )
    log_step_scans: bool = opt(
        False,
        "inclusive scans with an arith/math combiner along a static dimension as "
        "ceil(log2 n) elementwise linalg steps (the GPU path: kernels, not host loops)",
    )
    explain: bool = opt(
        False, "say on stderr how each scatter, scan and sort runs (and why not faster)"
    )

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
        if op.name == TM_SCAN:
            return self._scan(op, combiner, remarks)
        if op.name == TM_SORT:
            return self._sort(op, combiner, remarks)
        if not self.vector_bits:
            return _lower_scatter(op, combiner)
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

    def _scan_lanes(self, op: ir.Operation, combiner: ir.Operation, dim: int) -> tuple[int, str]:
        """Vector lanes for a scan along ``dim`` (0: scalar) and why not."""
        source_type = ir.RankedTensorType(op.operands[0].type)
        if dim == source_type.rank - 1:
            return 0, "it runs along the contiguous dimension: one running value per row"
        if not self.vector_bits:
            return 0, "no vector width given"
        why = _not_lanewise(combiner) or _not_vector_element(source_type.element_type)
        if why:
            return 0, why
        return max(1, self.vector_bits // _element_bits(op.operands[0])), ""

    def _scan(
        self, op: ir.Operation, combiner: ir.Operation, remarks: list[Remark]
    ) -> list[ir.Value]:
        """A scan, split among threads by the other dimensions when large."""
        source, init, accumulator = op.operands
        dim = ir.IntegerAttr(op.attributes["dimension"]).value
        if self.log_step_scans and not _not_log_step(op, combiner, dim):
            remarks.append(about(op, self.flag, "scan as log-step elementwise ops"))
            return [_log_step_scan(source, dim, combiner), accumulator]
        lanes, why = self._scan_lanes(op, combiner, dim)
        scan = _Scan(combiner, dim, bool(ir.BoolAttr(op.attributes["inclusive"]).value), lanes)
        shape = ir.RankedTensorType(source.type).shape
        chunks = _plan_chunks(shape, dim, _static_elements(shape), self.threads, lanes)
        form = scan.form(ir.RankedTensorType(source.type))
        detail = f"vectors of {lanes}" if lanes else f"scalar: {why}"
        remarks.append(about(op, self.flag, f"scan as {form} ({detail}); {_threads_note(chunks)}"))
        final = bool(list(op.results[1].uses))
        ends = _narrow_ends(op) if form == "rows" else None
        if ends is not None:
            # The rounding op's result is the scan's; the wide output is left unused.
            source, rounded = ends
            init = _empty_like(source, ir.RankedTensorType(rounded.results[0].type).element_type)
        if chunks is None:
            results = scan.lower(source, init, accumulator, final)
        else:
            results = self._scan_in_chunks(scan, chunks, source, init, accumulator, final)
        if ends is None:
            return results
        ends[1].results[0].replace_all_uses_with(results[0])
        ends[1].erase()
        return list(op.operands[1:])

    def _scan_in_chunks(
        self,
        scan: _Scan,
        chunks: _Chunks,
        source: ir.Value,
        init: ir.Value,
        accumulator: ir.Value,
        final: bool,
    ) -> list[ir.Value]:
        """The scan split into ``chunks`` among threads."""
        # The accumulator lacks the scanned dimension; written when its final value is used.
        in_accumulator = (accumulator, chunks.dim - (chunks.dim > scan.dim))
        reads = [(source, chunks.dim)] + ([] if final else [in_accumulator])
        writes = [(init, chunks.dim)] + ([in_accumulator] if final else [])

        def body(read: list[ir.Value], write: list[ir.Value]) -> list[ir.Value]:
            accumulated = write[1] if final else read[1]
            return scan.lower(read[0], write[0], accumulated, final)[: len(writes)]

        results = _in_chunks(chunks, reads, writes, body)
        return results if final else [results[0], accumulator]

    def _sort(
        self, op: ir.Operation, combiner: ir.Operation, remarks: list[Remark]
    ) -> list[ir.Value]:
        """A stable merge sort per row (a selection when only the first ``k``
        are read), split among threads by the other dimensions when large.
        Along an outer dimension the operands are transposed to make it the
        last and the results back: a merge then reads and writes contiguous
        runs instead of elements a whole row apart."""
        dim = ir.IntegerAttr(op.attributes["dimension"]).value
        keys_type = ir.RankedTensorType(op.operands[0].type)
        length = keys_type.shape[dim]
        if length == ir.ShapedType.get_dynamic_size():
            op.location.emit_error(f"{op.name}: sorts along a dynamic dimension ({dim})")
            raise PassFailed()
        before = _sort_order(op, combiner)
        selection = _first_k_slices(op, dim)
        last = keys_type.rank - 1
        swap = dim != last and length > 1
        values = [_swapped(v, dim) if swap else v for v in op.operands]
        along = last if swap else dim
        if selection is None:
            results = self._merge_sort(op, values, along, before, remarks)
        else:
            results = self._select(op, values, along, selection[0], before, remarks)
        results = [_swapped(r, dim) if swap else r for r in results]
        if selection is None:
            return results
        # The slices read the selection; the sort's own results are left
        # unused (the operands stand in for them).
        by_result = dict(zip(op.results, results, strict=True))
        for piece in selection[1]:
            piece.results[0].replace_all_uses_with(by_result[piece.operands[0]])
            piece.erase()
        return list(op.operands)

    def _merge_sort(
        self,
        op: ir.Operation,
        values: list[ir.Value],
        dim: int,
        before: Before,
        remarks: list[Remark],
    ) -> list[ir.Value]:
        shape = ir.RankedTensorType(values[0].type).shape
        steps = _static_elements(shape) * max(shape[dim] - 1, 0).bit_length()
        chunks = _plan_chunks(shape, dim, steps, self.threads, 0)
        remarks.append(about(op, self.flag, f"merge sort; {_threads_note(chunks)}"))
        if chunks is None:
            return _sort_along(values, dim, before)
        return _in_chunks(
            chunks,
            [(v, chunks.dim) for v in values],
            [(_empty_like(v), chunks.dim) for v in values],
            lambda read, _: _sort_along(read, dim, before),
        )

    def _select(
        self,
        op: ir.Operation,
        values: list[ir.Value],
        dim: int,
        k: int,
        before: Before,
        remarks: list[Remark],
    ) -> list[ir.Value]:
        """The first ``k`` along ``dim`` of each row (topk)."""
        shape = ir.RankedTensorType(values[0].type).shape
        chunks = _plan_chunks(shape, dim, _static_elements(shape), self.threads, 0)
        remarks.append(about(op, self.flag, f"selection of the first {k}; {_threads_note(chunks)}"))
        if chunks is None:
            return _select_along(values, dim, k, before)
        return _in_chunks(
            chunks,
            [(v, chunks.dim) for v in values],
            [(_empty_like(v, along=(dim, k)), chunks.dim) for v in values],
            lambda read, _: _select_along(read, dim, k, before),
        )


def _swapped(value: ir.Value, dim: int) -> ir.Value:
    """``value`` with dimension ``dim`` and the last one swapped."""
    value_type = ir.RankedTensorType(value.type)
    order = list(range(value_type.rank))
    order[dim], order[-1] = order[-1], order[dim]
    dynamic = ir.ShapedType.get_dynamic_size()
    sizes: list[int | ir.Value] = [
        tensor.dim(value, _index(d)) if value_type.shape[d] == dynamic else value_type.shape[d]
        for d in order
    ]
    init = tensor.empty(sizes, value_type.element_type)
    return linalg.transpose(value, outs=[init], permutation=order).results[0]


def _empty_like(
    value: ir.Value, element: ir.Type | None = None, along: tuple[int, int] | None = None
) -> ir.Value:
    """An empty tensor shaped as ``value`` (but ``along = (dim, size)``
    long along ``dim``) of ``element``s (default: ``value``'s)."""
    value_type = ir.RankedTensorType(value.type)
    dynamic = ir.ShapedType.get_dynamic_size()
    sizes: list[int | ir.Value] = [
        tensor.dim(value, _index(d)) if n == dynamic else n for d, n in enumerate(value_type.shape)
    ]
    if along is not None:
        sizes[along[0]] = along[1]
    return tensor.empty(sizes, element or value_type.element_type)
