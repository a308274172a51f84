"""A long row's mean and variance in blocks, merged with Chan's formula.

torch gives a variance (``var``, layer, group and instance norm) as two
reductions over the row: the sum (of ``x - p``, ``p`` a pilot: the row's
first element), then the sum of squared differences from the mean the sum
gives. In a row kernel (``row_kernels``) each is a sweep, and on a row
longer than L2 the second reads it from memory again. Here (rows longer
than half of L2, ``min_row_elements``) both are computed block by block,
each block small enough to stay in L1 between its two passes: the block's
sum and mean ``m_b``, then, over the block again from L1 in one sweep,
``q_b = sum(d^2)`` and ``e_b = sum(d)`` with
``d = x - p - m_b`` (``e_b`` corrects ``m_b`` and ``q_b`` for the rounding
of the float32 sum: the corrected two-pass algorithm of Chan, Golub and
LeVeque). The blocks are merged one after the other, in f64 (a few scalar
operations per block), with Chan's parallel formula::

    n = n_a + n_b
    delta = m_b - mean_a
    mean = mean_a + delta * n_b / n
    M2 = M2_a + q_b + delta^2 * n_a * n_b / n

so the row is read once from memory for both statistics. A single long row
(``parts`` > 1) has its blocks split into equal runs of whole blocks, one
per core, in an ``scf.forall``: each run's state is reduced on its own and
the runs are merged by the same formula in their order after the loop (the
blocks the runs leave and the partial last block follow on one thread).
Each block is two
passes, so the precision is at least that of the two-pass scheme (a
one-pass ``sum(x^2) - sum(x)^2 / n`` or a sampled pilot mean loses digits
on a row with a large offset; both were measured at 6e-4). Everything is
kept relative to the pilot, so that the block means and their differences
keep their digits on a row far from 0.

The graph's second reduction is a sum of squares about the per-row value
``c`` it reads. Where ``c`` is the graph's mean (``p + sum / n``), the
reduction is given as ``M2``: the squares about the row's mean, not about
its float32 rounding (at a mean of 1e4 an ulp is 1e-3, and
``n * (c - mean)^2`` was 20x the error of eager's variance). Else it is
given exactly as ``M2 + n * (mean - c)^2``.

Upstream's reduction tiling splits a reduction only with its own combiner
(an ``arith`` op applied per element); Chan's merge of (count, mean, M2)
triples is not one, so the block loop is made here, an ``scf.for`` over the
row's blocks on tensors whose block reductions are ordinary linalg
reductions, chunked and vectorized like every row reduction.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from mlir import ir
from mlir.dialects import arith, linalg, math, scf, tensor

from lowerline.passes.support.linalg_info import indexing_maps, iterator_kinds, static_loop_sizes
from lowerline.pipeline.protocol import OP_TAG
from lowerline.targets import CpuTarget

# The block's share of L1: the block is read twice, and the row's other
# streams (the output being written) pass through L1 meanwhile.
_L1_SHARE = 4


@dataclass
class Moments:
    """The two reductions of one row's variance, inside the row loop."""

    total: ir.Operation  # sum(x - pilot), or sum(x)
    squares: ir.Operation  # sum((x - c)^2)
    x: ir.Value  # the row both read
    c: ir.Value  # the per-row value ``squares`` subtracts
    c_is_mean: bool  # c = pilot + sum(x - pilot) / n

    @property
    def pilot(self) -> ir.Value | None:
        return self.total.operands[1] if len(_args(self.total)) == 3 else None


def block_elements(target: CpuTarget, element_bytes: int, chunk: int) -> int:
    """Elements of a block: a whole number of reduction chunks filling the
    L1 share."""
    fit = target.l1d_bytes // (_L1_SHARE * element_bytes)
    return max(chunk, fit // chunk * chunk)


def min_row_elements(target: CpuTarget, element_bytes: int, block: int) -> int:
    """The shortest row worth blocks: two blocks, and more than half of L2.
    A row that L2 keeps between the two sweeps is read from memory once
    either way, and the blocks' merges and horizontal sums cost time: at one
    thread (CPU time, loaded machine) var of 16x4096 went from 12.0 to 16.5
    us and of 64x50257 from 815 to 989 us with blocks."""
    return max(2 * block, target.l2_bytes // (2 * element_bytes))


def _body(op: ir.Operation) -> list[ir.Operation]:
    return [o.operation for o in op.regions[0].blocks[0].operations]


def _args(op: ir.Operation) -> list[ir.BlockArgument]:
    return list(op.regions[0].blocks[0].arguments)


def _is(value: ir.Value, name: str) -> ir.Operation | None:
    if isinstance(value, ir.OpResult) and value.owner.name == name:
        return value.owner
    return None


def _accumulates(op: ir.Operation) -> ir.Value | None:
    """The term ``op``'s body adds to its accumulator (``yield t + acc``)."""
    body = _body(op)
    acc = _args(op)[-1]
    add = _is(body[-1].operands[0], "arith.addf") if body[-1].operands else None
    if add is None or len(list(add.results[0].uses)) != 1:
        return None
    a, b = add.operands
    if b == acc:
        return a
    return b if a == acc else None


def _sum_of(op: ir.Operation) -> bool:
    """Whether ``op`` is ``sum(x)`` of its one input, or ``sum(x - p)`` of
    its two (torch's variance subtracts a pilot ``p``, the row's first
    element, so that the sum of a row far from 0 keeps its digits)."""
    args, body = _args(op), _body(op)
    term = _accumulates(op)
    if term is None:
        return False
    if len(args) == 2:
        return len(body) == 2 and term == args[0]
    shift = _is(term, "arith.subf")
    return (
        len(args) == 3 and len(body) == 3 and shift is not None and list(shift.operands) == args[:2]
    )


def _squared_difference(op: ir.Operation) -> bool:
    """Whether ``op`` is ``sum((x - c)^2)`` of its inputs (x, c), and nothing
    else: the difference squared by one multiply of two equal differences."""
    args = _args(op)
    if len(args) != 3:
        return False
    term = _accumulates(op)
    product = _is(term, "arith.mulf") if term is not None else None
    if product is None:
        return False
    diffs = [_is(v, "arith.subf") for v in product.operands]
    if any(d is None or list(d.operands) != args[:2] for d in diffs):
        return False
    # The subtraction(s), the multiply, the add and the yield.
    return len(_body(op)) == 4 + (diffs[0] != diffs[1])


def _row_read(op: ir.Operation, index: int) -> bool:
    """Whether ``op`` reads input ``index`` once per element of the row: its
    map is a projection in loop order, and every loop it leaves out or
    that is parallel has one iteration (the row loop tiled the rows to 1)."""
    sizes = static_loop_sizes(op)
    if sizes is None:
        return False
    dims = [e.position for e in indexing_maps(op)[index].results if isinstance(e, ir.AffineDimExpr)]
    if len(dims) != len(indexing_maps(op)[index].results) or dims != sorted(set(dims)):
        return False
    kinds = iterator_kinds(op)
    return all(sizes[d] == 1 for d in range(len(sizes)) if d not in dims or kinds[d] == "parallel")


def _single(value: ir.Value) -> bool:
    shaped = (
        ir.RankedTensorType(value.type) if isinstance(value.type, ir.RankedTensorType) else None
    )
    return shaped is not None and shaped.has_static_shape and int(np.prod(shaped.shape)) == 1


def find_moments(ops: list[ir.Operation], min_elements: int) -> Moments | None:
    """The (sum, sum of squared differences) pair among ``ops`` (a row
    loop's fused members) reading the same row of at least
    ``min_elements`` f32/f64 elements; None when there is none."""
    totals = [op for op in ops if op.name == "linalg.generic" and _sum_of(op)]
    for squares in ops:
        if squares.name != "linalg.generic" or not _squared_difference(squares):
            continue
        x, c = squares.operands[0], squares.operands[1]
        if not isinstance(ir.RankedTensorType(x.type).element_type, ir.F32Type | ir.F64Type):
            continue
        if not _row_read(squares, 0) or not _single(c) or not _single(squares.results[0]):
            continue
        if int(np.prod(ir.RankedTensorType(x.type).shape)) < min_elements:
            continue
        for total in totals:
            if total.operands[0] != x or not _row_read(total, 0) or not _single(total.results[0]):
                continue
            if len(_args(total)) == 3 and not _single(total.operands[1]):
                continue
            if total.operation.is_before_in_block(squares):
                length = int(np.prod(ir.RankedTensorType(x.type).shape))
                return Moments(total, squares, x, c, _mean_of(c, total, length))
    return None


def _float_constant(value: ir.Value) -> float | None:
    owner = _is(value, "arith.constant")
    if owner is None or not isinstance(owner.attributes["value"], ir.FloatAttr):
        return None
    return ir.FloatAttr(owner.attributes["value"]).value


def _scaled(value: ir.Value, arg: ir.Value, length: int) -> bool:
    """Whether ``value`` is ``arg / length`` (or ``arg * (1 / length)``)."""
    op = _is(value, "arith.divf") or _is(value, "arith.mulf")
    if op is None or op.operands[0] != arg:
        return False
    factor = _float_constant(op.operands[1])
    if factor is None:
        return False
    if op.name == "arith.divf":
        return factor == float(length)
    return abs(factor * length - 1.0) < 1e-6


def _mean_of(c: ir.Value, total: ir.Operation, length: int) -> bool:
    """Whether ``c`` is the row's mean as the graph computes it from
    ``total``: ``sum / n``, or ``pilot + sum(x - pilot) / n``, one
    elementwise generic between them."""
    op = c.owner if isinstance(c, ir.OpResult) else None
    if op is None or op.name != "linalg.generic":
        return False
    args, body = _args(op), _body(op)
    inputs = list(op.operands)[: len(args) - 1]
    if not any(v == total.results[0] for v in inputs):
        return False
    arg_sum = args[next(i for i, v in enumerate(inputs) if v == total.results[0])]
    result = body[-1].operands[0]
    if len(_args(total)) == 2:
        return len(inputs) == 1 and len(body) == 2 and _scaled(result, arg_sum, length)
    add = _is(result, "arith.addf")
    pilot = total.operands[1]
    if add is None or len(inputs) != 2 or len(body) != 3:
        return False
    arg_pilot = (
        args[next(i for i, v in enumerate(inputs) if v == pilot)] if pilot in inputs else None
    )
    a, b = add.operands
    return arg_pilot is not None and (
        (a == arg_pilot and _scaled(b, arg_sum, length))
        or (b == arg_pilot and _scaled(a, arg_sum, length))
    )


@dataclass
class _State:
    total: ir.Value  # the sum of the blocks so far
    mean: ir.Value
    m2: ir.Value


def _index(value: int) -> ir.Value:
    return arith.constant(ir.IndexType.get(), value)


def _scalar(t: ir.Type, value: float) -> ir.Value:
    return arith.constant(t, ir.FloatAttr.get(t, value))


def _flat_row(x: ir.Value) -> ir.Value:
    """``x`` (unit dims, then the row's dims) as ``1 x N``."""
    shape = list(ir.RankedTensorType(x.type).shape)
    lead = max(1, next(i for i, s in enumerate(shape) if s != 1))  # a long row has one
    if lead == 1 and len(shape) == 2:
        return x
    groups = [list(range(lead)), list(range(lead, len(shape)))]
    i64 = ir.IntegerType.get_signless(64)
    reassociation = ir.ArrayAttr.get(
        [ir.ArrayAttr.get([ir.IntegerAttr.get(i64, d) for d in g]) for g in groups]
    )
    flat = ir.RankedTensorType.get(
        [1, int(np.prod(shape))], ir.RankedTensorType(x.type).element_type
    )
    return tensor.collapse_shape(flat, x, reassociation)


def _reduction(
    inputs: list[ir.Value], element: ir.Type, body: Callable[..., ir.Value], tag: str
) -> ir.Value:
    """``linalg.generic`` reducing ``1 x B`` inputs (and ``1``-element
    statistics) to a ``tensor<1>``, started from 0, ``body(args) -> term``."""
    one = ir.RankedTensorType.get([1], element)
    init = linalg.fill(_scalar(element, 0.0), outs=[tensor.empty([1], element)])
    OP_TAG.set(init.owner, f"{tag}.fill")
    row = ir.AffineMap.get(2, 0, [ir.AffineDimExpr.get(0), ir.AffineDimExpr.get(1)])
    stat = ir.AffineMap.get(2, 0, [ir.AffineDimExpr.get(0)])
    maps = [row if ir.RankedTensorType(v.type).rank == 2 else stat for v in inputs] + [stat]
    op = linalg.GenericOp(
        [one],
        inputs,
        [init],
        ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps]),
        ir.ArrayAttr.get(
            [ir.Attribute.parse(f"#linalg.iterator_type<{k}>") for k in ("parallel", "reduction")]
        ),
    )
    block = op.regions[0].blocks.append(*[element] * (len(inputs) + 1))
    with ir.InsertionPoint(block):
        args = list(block.arguments)
        linalg.YieldOp([arith.addf(body(*args[:-1]), args[-1])])
    OP_TAG.set(op.operation, tag)
    return op.results[0]


def _extract(value: ir.Value) -> ir.Value:
    rank = ir.RankedTensorType(value.type).rank
    return tensor.extract(value, [_index(0)] * rank)


@dataclass
class _Row:
    """The row as ``1 x N`` and its pilot ``p`` (a scalar and a
    ``tensor<1>``): every block works on ``x - p``, so that its mean and the
    differences of the block means keep their digits on a row far from 0
    (a mean of 1e4 in float32 is rounded by 5e-4)."""

    values: ir.Value
    pilot: ir.Value
    pilot_tensor: ir.Value


def _stat(value: ir.Value) -> ir.Value:
    return tensor.from_elements(ir.RankedTensorType.get([1], value.type), [value])


def _block(
    row: _Row, offset: ir.Value, size: int, before: ir.Value, state: _State, tag: str
) -> _State:
    """Reduce the block ``row[0, offset : offset + size]`` in two passes and
    merge it into ``state`` (``before`` elements so far, as a float)."""
    element = ir.RankedTensorType(row.values.type).element_type
    block_type = ir.RankedTensorType.get([1, size], element)
    dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
    block = tensor.extract_slice(
        block_type, row.values, [offset], [], [], [0, dynamic], [1, size], [1, 1]
    )
    n_b = _scalar(element, float(size))
    inputs = [block, row.pilot_tensor]
    total = _extract(_reduction(inputs, element, arith.subf, f"{tag}.sum"))
    mean = arith.divf(total, n_b)  # of x - p

    def square(a: ir.Value, p: ir.Value, m: ir.Value) -> ir.Value:
        d = arith.subf(arith.subf(a, p), m)
        return arith.mulf(d, d)

    def deviation(a: ir.Value, p: ir.Value, m: ir.Value) -> ir.Value:
        return arith.subf(arith.subf(a, p), m)

    # The second pass also sums the deviations (one sweep with the squares,
    # lowerline-fuse-row-sweeps): they correct the block's mean and M2 for
    # the rounding of its float32 sum (the corrected two-pass algorithm of
    # Chan, Golub and LeVeque). Without it, rows whose blocks have unlike
    # means merged with a 5e-4 error in each block's mean at 1e4.
    stats = [*inputs, _stat(mean)]
    q = _extract(_reduction(stats, element, square, f"{tag}.m2"))
    dev = _extract(_reduction(stats, element, deviation, f"{tag}.dev"))
    # The merge in f64: once per block, and the running M2 of a long row
    # would otherwise lose an f32 rounding per block.
    f64 = ir.F64Type.get()
    n_b, dev = _scalar(f64, float(size)), _wide(dev)
    block_mean = arith.addf(_wide(mean), arith.divf(dev, n_b))
    q = arith.subf(_wide(q), arith.divf(arith.mulf(dev, dev), n_b))
    total = arith.mulf(block_mean, n_b)
    return _chan(state, before, n_b, _State(total, block_mean, q))


def _chan(state: _State, before: ir.Value, n_b: ir.Value, part: _State) -> _State:
    """Chan's merge of ``part`` (``n_b`` elements) into ``state`` (``before``
    elements), in f64."""
    n = arith.addf(before, n_b)
    delta = arith.subf(part.mean, state.mean)
    merged_mean = arith.addf(state.mean, arith.mulf(delta, arith.divf(n_b, n)))
    weight = arith.divf(arith.mulf(before, n_b), n)
    merged_m2 = arith.addf(
        arith.addf(state.m2, part.m2), arith.mulf(arith.mulf(delta, delta), weight)
    )
    return _State(arith.addf(state.total, part.total), merged_mean, merged_m2)


def _wide(value: ir.Value) -> ir.Value:
    f64 = ir.F64Type.get()
    return value if value.type == f64 else arith.extf(f64, value)


def _narrow(value: ir.Value, element: ir.Type) -> ir.Value:
    return value if value.type == element else arith.truncf(element, value)


def _block_loop(
    row: _Row, start: ir.Value | None, begin: int, end: int, block: int, state: _State, tag: str
) -> _State:
    """``state`` (of the elements from ``start`` to ``start + begin``) with
    the full blocks from ``start + begin`` to ``start + end`` merged in
    (``start`` None: 0)."""
    f64 = ir.F64Type.get()
    loop = scf.ForOp(_index(begin), _index(end), _index(block), [state.total, state.mean, state.m2])
    with ir.InsertionPoint(loop.body):
        offset = loop.induction_variable
        i64 = arith.index_cast(ir.IntegerType.get_signless(64), offset)
        before = arith.sitofp(f64, i64)
        inner = _State(*loop.inner_iter_args)
        at = offset if start is None else arith.addi(start, offset)
        merged = _block(row, at, block, before, inner, tag)
        scf.YieldOp([merged.total, merged.mean, merged.m2])
    return _State(*loop.results)


def _parts(row: _Row, part_blocks: int, block: int, parts: int, tag: str) -> _State:
    """The state of the row's first ``parts * part_blocks`` blocks: an
    ``scf.forall`` over ``parts`` runs of ``part_blocks`` blocks, each run's
    (sum, mean, M2) reduced on its own, then merged in the runs' order.
    The split is by runs fixed here, never by the threads that run them: a
    team of any size computes the same bits."""
    f64 = ir.F64Type.get()
    zero = _scalar(f64, 0.0)
    states = tensor.empty([parts, 3], f64)
    run = part_blocks * block
    loop = scf.ForallOp([0], [parts], [1], shared_outs=[states])
    with ir.InsertionPoint(loop.body):
        (p,) = loop.induction_variables
        start = arith.muli(p, _index(run))
        state = _block_loop(row, start, 0, run, block, _State(zero, zero, zero), tag)
        values = tensor.from_elements(
            ir.RankedTensorType.get([1, 3], f64), [state.total, state.mean, state.m2]
        )
        with ir.InsertionPoint(loop.terminator().block):
            dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
            tensor.parallel_insert_slice(
                values, loop.inner_iter_args[0], [p], [], [], [dynamic, 0], [1, 3], [1, 1]
            )
    state = _State(zero, zero, zero)
    n_b = _scalar(f64, float(run))
    for index in range(parts):
        read = [tensor.extract(loop.results[0], [_index(index), _index(k)]) for k in range(3)]
        state = _chan(state, _scalar(f64, float(index * run)), n_b, _State(*read))
    return state


def _blocks(row: _Row, block: int, tag: str, parts: int = 1) -> _State:
    """The whole row's state, all of ``x - p``: a loop over its full
    blocks (``parts`` > 1: most of them in ``_parts``, split across the
    threads), then the partial last block; in f64."""
    element = ir.F64Type.get()
    length = ir.RankedTensorType(row.values.type).shape[1]
    full = length // block
    zero = _scalar(element, 0.0)
    state = _State(zero, zero, zero)
    done = 0
    if parts > 1 and full >= parts:
        state = _parts(row, full // parts, block, parts, f"{tag}.part")
        done = full // parts * parts
    if full > done:
        state = _block_loop(row, None, done * block, full * block, block, state, f"{tag}.full")
    tail = length - full * block
    if tail:
        before = _scalar(element, float(full * block))
        state = _block(row, _index(full * block), tail, before, state, f"{tag}.tail")
    return state


def _own_pilot(row: ir.Value) -> ir.Value:
    """The row's first element where it is finite, else 0 (torch's pilot)."""
    first = tensor.extract(row, [_index(0), _index(0)])
    element = first.type
    finite = arith.cmpf(arith.CmpFPredicate.OLT, math.absf(first), _scalar(element, float("inf")))
    return arith.select(finite, first, _scalar(element, 0.0))


def _replace(op: ir.Operation, value: ir.Value) -> None:
    """Replace ``op``'s one-element result by its init's element + ``value``."""
    init = op.operands[len(op.operands) - 1]
    rank = ir.RankedTensorType(init.type).rank
    zeros = [_index(0)] * rank
    start = tensor.extract(init, zeros)
    result = tensor.insert(arith.addf(start, value), init, zeros)
    op.results[0].replace_all_uses_with(result)


def merge_moments(moments: Moments, block: int, tag: str, parts: int = 1) -> None:
    """Replace the two reductions of ``moments`` by the block loop (before
    the sum) and the exact sum of squares about ``c`` (where it was);
    ``parts`` > 1: the blocks split into that many runs across the threads."""
    total, squares = moments.total, moments.squares
    element = ir.RankedTensorType(moments.x.type).element_type
    with ir.InsertionPoint(total), total.location:
        values = _flat_row(moments.x)
        pilot = _own_pilot(values) if moments.pilot is None else _extract(moments.pilot)
        row = _Row(values, pilot, _stat(pilot))
        state = _blocks(row, block, tag, parts)
        f64 = ir.F64Type.get()
        length = _scalar(f64, float(ir.RankedTensorType(values.type).shape[1]))
        total_sum = state.total
        if moments.pilot is None:  # the graph's sum is of x itself
            total_sum = arith.addf(total_sum, arith.mulf(length, _wide(pilot)))
        _replace(total, _narrow(total_sum, element))
    with ir.InsertionPoint(squares), squares.location:
        m2 = state.m2
        if not moments.c_is_mean:
            mean = arith.addf(_wide(pilot), state.mean)
            offset = arith.subf(mean, _wide(_extract(moments.c)))
            m2 = arith.addf(m2, arith.mulf(length, arith.mulf(offset, offset)))
        _replace(squares, _narrow(m2, element))
    squares.erase()
    total.erase()
