"""Row kernels: normalizations and softmax as one loop over rows.

Layer norm, RMS norm, group and instance norm, softmax, log-softmax, var
and logsumexp reach linalg as row reductions (max, sum, sum of squares)
followed by an elementwise op that reads the row again with the row's
statistics. Tiled op by op, each is a sweep over the whole tensor: at
64x50257 every sweep reads 12.8 MB from memory. Here the last op is tiled
to one row per iteration of an ``scf.forall`` and every op it reads from
(the reductions, the statistics, the fills, an ``exp`` both softmax
passes read) is fused into that loop with upstream's
``transform.structured.fuse_into_containing_op``::

    %max = linalg.generic {reduction} ins(%x) ...       scf.forall (%i) in (64) {
    %sum = linalg.generic {reduction} ins(%x, %max)  ->    %m = reduce row %i of %x
    %y = linalg.generic {parallel} ins(%x, %max, %sum)     %s = reduce row %i of %x, %m
                                                           %y_i = elementwise row %i
                                                         }

so each row is read from memory once and again from cache, and the rows
are split across the threads. Inside the loop, the wide elementwise ops are
tiled into vectors along the row (at most four per step,
``elementwise_tile``, the partial last tile peeled) and the reductions into
register-sized chunks (``reduction_chunks``; a plane of several reduced dims
a line at a time, ``plane_chunks``), so no vector depends on the row's
length. A division of the last op by a row statistic (softmax's sum) is a
multiply by its reciprocal, computed once per row.
A small kernel (or one core) gets an ``scf.for`` over the rows instead.

An elementwise member read by a row reduction and by the last op
(softmax's ``exp(x - max)``) is also computed inside the reduction and
tiled in the reduction's chunks (``compute_shared_producers_in_reductions``):
the two chunk loops are then independent, and ``lowerline-fuse-row-sweeps``
makes them one sweep that writes the exps while it sums them. Split across
threads, the member writes them straight into the output row and the last
op rescales that row in place (``rescale_in_place``): no row buffer per
thread, and the scale sweep reads and writes one row.

A variance over a row longer than half of L2 (its sum and its sum of
squared differences) is computed in blocks merged by Chan's formula
(``row_moments``): one sweep from memory for both statistics.

One such row with fewer rows than cores (group norm with one group, layer
norm of a batch of one) would run on one core in a loop over rows, and op
by op it takes three sweeps (sum, squares, normalization). Instead the
kernel is split within the row (``RowKernel.split``): its blocks in one run
per core (an ``scf.forall``), each run's (sum, mean, M2) merged after it in
the runs' order, and the normalization in equal static pieces of the row
(``_split_last_op``): two sweeps, both across the cores. The split is by
runs fixed at compile time, never by thread: any team size gives the same
bits.

What is a row kernel: an all-parallel ``linalg.generic`` (the last op), and
the linalg ops before it whose results only the kernel reads, as long as
each has the kernel's rows as its leading dims; at least one of them must
reduce along its innermost (contiguous) axis. The rows are the dims through
which the last op reads its statistics.

Upstream has the mechanisms (tiling, fusion into a containing loop,
reduction tiling) and no pass that recognizes such a group.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from mlir import ir
from mlir.dialects import arith, linalg

from lowerline.cpu.tile_plan import elementwise_tile, lanes, reduction_chunk
from lowerline.passes.graph.fuse_elementwise import fusable_producer, fuse
from lowerline.passes.support.linalg_info import indexing_maps, iterator_kinds, static_loop_sizes
from lowerline.passes.support.transform_scripts import ANY, apply_script, peel
from lowerline.passes.tiling.reduction_chunks import reduction_chunks, split_rows
from lowerline.passes.tiling.row_moments import (
    block_elements,
    find_moments,
    merge_moments,
    min_row_elements,
)
from lowerline.passes.tiling.thread_reductions import PARALLEL_MIN_ELEMENTS
from lowerline.passes.tiling.window_tiles import plane_chunks
from lowerline.pipeline.pass_api import ops_matching
from lowerline.pipeline.protocol import OP_TAG, VECTOR_SIZES
from lowerline.targets import CpuTarget

_MEMBER_OPS = ("linalg.generic", "linalg.fill")
_ELEMENT_BYTES = {"f64": 8, "f32": 4, "f16": 2, "bf16": 2}


@dataclass
class RowKernel:
    """The ops of one row kernel, producers before consumers, the last op last."""

    name: str
    members: list[ir.Operation]
    rows: int  # leading dims of the last op that are rows
    parallel: bool
    # One long row (fewer rows than cores): its moments' blocks and its
    # last op are split across this many threads within the row (else 1).
    split: int = 1
    text: str = ""  # what describe() says, fixed before the ops are rewritten
    # Members tiled in reduction chunks, not elementwise tiles: each is also
    # computed by a reduction, whose chunk loop its own loop joins.
    chunked: set[int] = field(default_factory=set)  # indices into members

    @property
    def last(self) -> ir.Operation:
        return self.members[-1]

    def tag(self) -> None:
        shape = _shape(self.last)
        where = "rows split across threads" if self.parallel else "one thread"
        if self.split > 1:
            where = f"one row split across {self.split} threads"
        self.text = (
            f"{self.name}: row kernel of {len(self.members)} ops over {shape[: self.rows]} "
            f"rows of {shape[self.rows :] or [1]} ({where})"
        )
        for index, op in enumerate(self.members):
            OP_TAG.set(op, f"{self.name}.m{index}")


def _shape(op: ir.Operation) -> list[int]:
    return list(ir.RankedTensorType(op.results[0].type).shape)


def _static(op: ir.Operation) -> bool:
    values = [*op.operands, *op.results]
    return all(
        not isinstance(v.type, ir.ShapedType) or ir.ShapedType(v.type).has_static_shape
        for v in values
    ) and all(isinstance(r.type, ir.RankedTensorType) for r in op.results)


def _row_reduction(op: ir.Operation) -> bool:
    return op.name == "linalg.generic" and iterator_kinds(op)[-1] == "reduction"


def _row_dims(last: ir.Operation, members: list[ir.Operation]) -> int | None:
    """How many leading dims of ``last`` are rows: those through which it
    reads a member's result with the fewest dims (the statistics); None when
    they are not a leading run of dims."""
    inputs = len(last.operands) - len(last.results)
    maps = indexing_maps(last)
    read: list[list[int]] = []
    for index in range(inputs):
        value = last.operands[index]
        if isinstance(value, ir.OpResult) and any(value.owner == m for m in members):
            dims = [e.position for e in maps[index].results if isinstance(e, ir.AffineDimExpr)]
            read.append(dims)
    if not read:
        return None
    dims = min(read, key=len)
    if not dims or dims != list(range(len(dims))):
        return None
    return len(dims)


def _collect(last: ir.Operation, before: list[ir.Operation], taken: list[ir.Operation]) -> list:
    """``last`` and the ops of ``before`` (block order) whose results only
    the kernel reads, producers first."""
    members = [last]
    for op in reversed(before):
        if op.name not in _MEMBER_OPS or any(op == t for t in taken) or not _static(op):
            continue
        users = [use.owner for result in op.results for use in result.uses]
        if users and all(any(u == m for m in members) for u in users):
            members.insert(0, op)
    return members


def find_row_kernel(
    block_ops: list[ir.Operation], index: int, taken: list[ir.Operation], target: CpuTarget
) -> RowKernel | None:
    """The row kernel ending at ``block_ops[index]``, or None."""
    last = block_ops[index]
    if last.name != "linalg.generic" or len(last.results) != 1 or not _static(last):
        return None
    if any(kind != "parallel" for kind in iterator_kinds(last)):
        return None
    members = _collect(last, block_ops[:index], taken)
    rows = _row_dims(last, members)
    if rows is None:
        return None
    lead = _shape(last)[:rows]
    members = [m for m in members if m == last or _shape(m)[:rows] == lead]
    # Members whose users were dropped with the rest would be recomputed per row.
    members = _collect(last, [m for m in members if m != last], taken)
    reductions = [m for m in members if _row_reduction(m)]
    if not reductions or not all(unit_loops_possible(m) for m in reductions):
        return None
    elements = int(np.prod(static_loop_sizes(last) or [0]))
    widest = max(int(np.prod(static_loop_sizes(m) or [0])) for m in members)
    large = target.cores >= 2 and max(elements, widest) >= PARALLEL_MIN_ELEMENTS
    if large and int(np.prod(lead)) < target.cores:
        # Fewer rows than cores: one loop over rows would run on one core.
        # One long row with a variance: its blocks and its last op are split
        # within the row (two sweeps, Chan's merge). Else op by op, each
        # reduction is split along its row across the cores
        # (lowerline.passes.tiling.thread_reductions) and each elementwise
        # op along its columns; a long row is read again from L2, not memory.
        if not _one_long_row_of_moments(members, lead, target):
            return None
        return RowKernel("", members, rows, False, split=target.cores)
    return RowKernel("", members, rows, large)


def _one_long_row_of_moments(
    members: list[ir.Operation], lead: list[int], target: CpuTarget
) -> bool:
    """Whether the kernel is one row (``lead`` all ones) whose variance
    ``row_moments`` computes in blocks, split within the row: longer than
    ``split_row_elements``."""
    if int(np.prod(lead)) != 1:
        return False
    eb = _ELEMENT_BYTES.get(str(ir.RankedTensorType(members[-1].results[0].type).element_type), 4)
    return find_moments(members, split_row_elements(target, eb)) is not None


def split_row_elements(target: CpuTarget, element_bytes: int) -> int:
    """The shortest single row split within the row: Chan's blocks, and
    more than the cores' L2 caches hold in halves. Op by op, each core
    sweeps its share of the row three times, and a share that its L2 keeps
    is read from memory once: a group norm of one 2 x 65536 group (half of
    a 1 MiB L2) took 1.17x the op-by-op time split within the row (1
    thread, CPU time, loaded machine)."""
    block = block_elements(target, element_bytes, reduction_chunk(target, element_bytes))
    halves = target.cores * target.l2_bytes // (2 * element_bytes)
    return max(min_row_elements(target, element_bytes, block), target.cores * block, halves + 1)


def _fuse_script(kernel: RowKernel) -> str:
    last = f"{kernel.name}.m{len(kernel.members) - 1}"
    sizes = [1] * kernel.rows + [0] * (len(_shape(kernel.last)) - kernel.rows)
    text = _match("%last", last, "%root")
    listed = ", ".join(map(str, sizes))
    if kernel.parallel:
        text += (
            f"  %tiled, %loop = transform.structured.tile_using_forall %last tile_sizes "
            f"[{listed}] : ({ANY}) -> ({ANY}, {ANY})\n"
        )
    else:
        # (forall_to_for takes only bufferized foralls.) The producers are
        # fused into the innermost loop, where the row's slices are taken.
        loops = ", ".join([ANY] * kernel.rows)
        text += (
            f"  %tiled, %loops:{kernel.rows} = transform.structured.tile_using_for %last "
            f"tile_sizes [{listed}] : ({ANY}) -> ({ANY}, {loops})\n"
            f"  %loop = transform.cast %loops#{kernel.rows - 1} : {ANY} to {ANY}\n"
        )
    # Consumers first: each fusion creates the slices its producers are
    # fused through. Upstream fuses a producer through one slice: CSE first
    # merges the equal slices of two users (the mean that the variance and
    # the normalization read), else the second would read a whole copy
    # computed before the loop.
    container = "%loop"
    for index in reversed(range(len(kernel.members) - 1)):
        var = f"%p{index}"
        text += f"  transform.apply_cse to {container} : {ANY}\n"
        text += _match(var, f"{kernel.name}.m{index}", "%root")
        text += (
            f"  {var}_fused, %loop{index} = transform.structured.fuse_into_containing_op "
            f"{var} into {container} : ({ANY}, {ANY}) -> ({ANY}, {ANY})\n"
        )
        container = f"%loop{index}"
    return text


def _match(var: str, tag: str, where: str) -> str:
    return (
        f"  {var} = transform.structured.match attributes{{{OP_TAG.entry(tag)}}} in {where}"
        f" : ({ANY}) -> {ANY}\n"
    )


def _erase_dead_copies(module: ir.Operation, prefix: str) -> None:
    """The members fused into the loop leave their originals without users."""
    while True:  # erasing a consumer can leave its producer without users
        dead = ops_matching(
            module,
            lambda o: (
                (OP_TAG.get(o) or "").startswith(prefix)
                and not any(list(r.uses) for r in o.results)
            ),
        )
        if not dead:
            return
        for op in reversed(dead):
            op.erase()


def _plan_tiles(
    op: ir.Operation, target: CpuTarget, chunked: bool = False
) -> tuple[list[int], list[int], list[int]]:
    """(tile sizes, vector sizes, reduction chunks) of a member inside the
    row loop: wide elementwise ops in vectors along their innermost dim
    (``chunked``: in reduction chunks), reductions whole (then split into
    chunks), small ops as they are."""
    shape = static_loop_sizes(op) if op.name == "linalg.generic" else _shape(op)
    if not shape:
        return [], [], []
    iterators = iterator_kinds(op) if op.name == "linalg.generic" else ["parallel"] * len(shape)
    eb = _ELEMENT_BYTES.get(str(ir.RankedTensorType(op.results[0].type).element_type), 4)
    if iterators[-1] == "parallel":
        tile = elementwise_tile(shape[-1], target, eb)
        if chunked:
            tile = reduction_chunk(target, eb)
        if all(s == 1 for s in shape[:-1]) and shape[-1] <= tile:
            return [], shape, []
        tiles = [1] * (len(shape) - 1) + [tile]
        return tiles, [1] * (len(shape) - 1) + [min(tile, shape[-1])], []
    sizes = [1 if it == "parallel" else s for it, s in zip(iterators, shape, strict=True)]
    tiles = [1 if it == "parallel" else 0 for it in iterators]
    if all(t == 1 or s == 1 for t, s in zip(tiles, shape, strict=True) if t):
        tiles = []
    # A row of several reduced dims (instance and group norm over H x W)
    # whose innermost dim fits one chunk: reduced a line at a time, as
    # lowerline-tile-and-fuse does for global pooling; else the whole plane
    # would be one vector (vector<3136xf32> for 56 x 56: 1.6x eager's time).
    chunk = reduction_chunk(target, eb)
    chunks = reduction_chunks(op, shape, iterators, chunk) or plane_chunks(
        op, shape, iterators, lanes(target, eb), chunk
    )
    return tiles, sizes, chunks


def _tile_script(tag: str, tiles: list[int], ragged: bool = False) -> str:
    """Tile the op tagged ``tag``; ``ragged``: the innermost tile does not
    divide its dim, and that loop is peeled: the full tiles are static
    (unmasked, no size computed per step), the partial last one is one
    masked step after the loop."""
    loops = sum(1 for t in tiles if t)
    outs = ", ".join([ANY] * (loops + 1))
    text = _match("%op", tag, "%root") + (
        f"  %t:{loops + 1} = transform.structured.tile_using_for %op "
        f"tile_sizes [{', '.join(map(str, tiles))}] : ({ANY}) -> ({outs})\n"
    )
    if not ragged:
        return text
    text += f"  %inner = transform.cast %t#{loops} : {ANY} to {ANY}\n"
    return text + peel("%inner", "%full", "%partial")


def _partial_last_tile(op: ir.Operation, tiles: list[int]) -> bool:
    """Whether the innermost tile leaves a partial last tile (to peel)."""
    shape = static_loop_sizes(op) if op.name == "linalg.generic" else _shape(op)
    if not shape or not tiles[-1]:
        return False
    return shape[-1] % tiles[-1] != 0


def unit_loops_possible(op: ir.Operation) -> bool:
    """Whether ``unit_loops_for_constant_outputs`` can rewrite ``op``: one
    result, no ``linalg.index`` (its loops would move), and every constant
    index it writes is 0 into a unit dim."""
    if len(op.results) != 1 or any(
        o.operation.name == "linalg.index" for o in op.regions[0].blocks[0].operations
    ):
        return False
    out = indexing_maps(op)[-1]
    shape = _shape(op)
    return all(
        shape[i] == 1 and ir.AffineConstantExpr(e).value == 0
        for i, e in enumerate(out.results)
        if isinstance(e, ir.AffineConstantExpr)
    )


def unit_loops_for_constant_outputs(op: ir.Operation) -> bool:
    """Give a reduction that writes a kept unit dim (``(d0, d1) -> (d0, 0)``:
    layer norm's ``mean(-1, keepdim=True)``) a unit parallel loop for it
    instead: ``(d0, d1, d2) -> (d1, d0)``. Upstream's tiling derives a
    producer's tile from its result tile only through a projected
    permutation, so the constant keeps the reduction from being fused by
    rows (it would be computed whole in every row). False when ``op`` has
    several results or reads ``linalg.index`` (its loops would move)."""
    if not unit_loops_possible(op):
        return False
    maps = indexing_maps(op)
    out = maps[-1]
    constants = [i for i, e in enumerate(out.results) if isinstance(e, ir.AffineConstantExpr)]
    if not constants:
        return True
    k = len(constants)
    n = out.n_dims + k
    # Old loop d becomes loop d + k; the new unit loops come first.
    shift = ir.AffineMap.get(n, 0, [ir.AffineDimExpr.get(d + k) for d in range(out.n_dims)])
    shifted = [ir.AffineMap.get(n, 0, [e.compose(shift) for e in m.results]) for m in maps[:-1]]
    new_out = [
        ir.AffineDimExpr.get(constants.index(i)) if i in constants else e.compose(shift)
        for i, e in enumerate(out.results)
    ]
    maps = [*shifted, ir.AffineMap.get(n, 0, new_out)]
    op.attributes["indexing_maps"] = ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps])
    iterators = list(ir.ArrayAttr(op.attributes["iterator_types"]))
    parallel = ir.Attribute.parse("#linalg.iterator_type<parallel>")
    op.attributes["iterator_types"] = ir.ArrayAttr.get([parallel] * k + iterators)
    return True


def unshare_empty_inits(op: ir.Operation) -> None:
    """Give ``op`` a ``tensor.empty`` init of its own where CSE made it share
    one (softmax's ``exp`` and its last op): fused by rows, both would write
    slices of one buffer, and bufferization would copy the row into a
    temporary before every ``exp`` row."""
    inputs = len(op.operands) - len(op.results)
    for index in range(inputs, len(op.operands)):
        init = op.operands[index]
        if not isinstance(init, ir.OpResult) or init.owner.name != "tensor.empty":
            continue
        if len(list(init.uses)) > 1:
            with ir.InsertionPoint(op):
                op.operands[index] = init.owner.clone().results[0]


def _row_statistic(op: ir.Operation, value: ir.Value, rows: int) -> bool:
    """Whether ``value`` is a block argument of ``op``'s body bound to an
    input read through the row dims only (one value per row)."""
    if not isinstance(value, ir.BlockArgument):
        return False
    index = value.arg_number
    if index >= len(op.operands) - len(op.results):
        return False
    read = indexing_maps(op)[index]
    dims = [e for e in read.results if not isinstance(e, ir.AffineConstantExpr)]
    return all(isinstance(e, ir.AffineDimExpr) and e.position < rows for e in dims)


def multiply_by_reciprocals(op: ir.Operation, rows: int) -> int:
    """Rewrite ``x / s`` in the last op's body, ``s`` a row statistic
    (softmax's sum), as ``x * (1 / s)``: the division becomes one per row
    once the vector loop's invariant ``1 / s`` is hoisted, and a multiply
    per element (a 16-lane ``vdivps`` costs several multiplies). ATen's
    softmax kernels do the same (``x * (1 / sum)``); the result differs
    from a true division by at most one rounding. Only f32 and f64: in a
    16-bit type the rounded reciprocal would cost a whole bf16 ulp. Returns
    the count."""
    count = 0
    for inner in list(op.regions[0].blocks[0].operations):
        if inner.name != "arith.divf" or not _row_statistic(op, inner.operands[1], rows):
            continue
        if not isinstance(inner.operands[1].type, ir.F32Type | ir.F64Type):
            continue
        with ir.InsertionPoint(inner), inner.location:
            t = inner.operands[1].type
            one = arith.constant(t, ir.FloatAttr.get(t, 1.0))
            product = arith.mulf(inner.operands[0], arith.divf(one, inner.operands[1]))
        inner.results[0].replace_all_uses_with(product)
        inner.erase()
        count += 1
    return count


def _wide_row(op: ir.Operation, target: CpuTarget) -> bool:
    """Whether ``op``'s row is longer than one reduction chunk (its
    reduction is split into a loop of chunks)."""
    sizes = static_loop_sizes(op)
    if not sizes:
        return False
    eb = _ELEMENT_BYTES.get(str(ir.RankedTensorType(op.results[0].type).element_type), 4)
    return sizes[-1] > reduction_chunk(target, eb)


def compute_shared_producers_in_reductions(kernel: RowKernel, target: CpuTarget) -> int:
    """Fuse an elementwise member that both a row reduction and the last op
    read (softmax's ``exp(x - max)``: summed, then divided by the sum) into
    the reduction, which then reads the member's inputs (``x``, the max).
    The member and the reduction no longer depend on each other, and their
    chunk loops, tiled alike (``kernel.chunked``), become one sweep over
    the row (``lowerline-fuse-row-sweeps``; CSE then computes the ``exp``
    once): the member's results are written while they are summed, as
    ATen's softmax does (max; exp and sum; scale: three sweeps, not four).
    Only rows wider than a chunk: a shorter one is a single vector step.
    Returns how many were fused."""
    count = 0
    for position, op in enumerate(kernel.members):
        if not _row_reduction(op) or not _wide_row(op, target):
            continue
        for index in range(len(op.operands) - len(op.results)):
            producer = fusable_producer(op, index, repeat=True)
            if producer is None or not any(producer == m for m in kernel.members):
                continue
            users = [use.owner for use in producer.results[0].uses]
            if not any(u == kernel.last for u in users):
                continue
            kernel.members[position] = op = fuse(producer, op, index)
            kernel.chunked.add(next(i for i, m in enumerate(kernel.members) if m == producer))
            count += 1
            break
    return count


def _identity_read(op: ir.Operation, index: int) -> bool:
    """Whether ``op`` reads operand ``index`` through its output's map."""
    maps = indexing_maps(op)
    return maps[index] == maps[-1]


def _in_place_operand(kernel: RowKernel) -> int | None:
    """The input of the last op that it can update in place: written by a
    chunked member (softmax's ``exp``, computed in the sum's sweep) read
    by nothing else, of the last op's type, read at the output's index;
    the last op's own init is a ``tensor.empty`` it never reads."""
    last = kernel.last
    inputs = len(last.operands) - 1
    init = last.operands[inputs]
    if not isinstance(init, ir.OpResult) or init.owner.name != "tensor.empty":
        return None
    if list(last.regions[0].blocks[0].arguments[inputs].uses):
        return None
    chunked = [kernel.members[i] for i in kernel.chunked]
    for index in range(inputs):
        value = last.operands[index]
        if not isinstance(value, ir.OpResult) or not any(value.owner == m for m in chunked):
            continue
        member = value.owner
        if len(member.results) != 1 or value.type != last.results[0].type:
            continue
        users = [use.owner for use in value.uses]
        if len(users) == 1 and _identity_read(last, index):
            return index
    return None


def rescale_in_place(kernel: RowKernel) -> bool:
    """Write a chunked member (softmax's ``exp``) into the last op's output
    and let the last op rescale it there::

        %e = generic ins(%x, %max) outs(%row_buffer)      %e = generic ins(%x, %max) outs(%out)
        %y = generic ins(%e, %sum) outs(%out)         ->  %y = generic ins(%sum) outs(%e)
               { %a * (1 / %s) }                                 { %o * (1 / %s) }

    Bufferized, the member writes the output rows and the last op scales
    them in place: no row buffer per thread, and the scale sweep reads and
    writes one row instead of reading one and writing another (ATen's
    softmax does the same). False when no member qualifies."""
    index = _in_place_operand(kernel)
    if index is None:
        return False
    last = kernel.last
    member = last.operands[index].owner
    inputs = len(last.operands) - 1
    member.operands[len(member.operands) - 1] = last.operands[inputs]
    maps = indexing_maps(last)
    kept = [i for i in range(inputs) if i != index]
    operands = [last.operands[i] for i in kept] + [member.results[0]]
    with ir.InsertionPoint(last), last.location:
        rebuilt = _rebuild_without_input(last, index, operands, [maps[i] for i in kept] + maps[-1:])
    last.results[0].replace_all_uses_with(rebuilt.results[0])
    last.erase()
    kernel.members[-1] = rebuilt
    return True


def _rebuild_without_input(
    op: ir.Operation, index: int, operands: list[ir.Value], maps: list[ir.AffineMap]
) -> ir.Operation:
    """``op`` on ``operands`` (its inputs but ``index``, then the new init),
    its body moved over, where input ``index`` is now the init's argument."""
    rebuilt = linalg.GenericOp(
        [op.results[0].type],
        operands[:-1],
        operands[-1:],
        ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps]),
        op.attributes["iterator_types"],
    )
    for named in list(op.attributes):
        key = named if isinstance(named, str) else named.name
        if key not in ("indexing_maps", "iterator_types", "operandSegmentSizes"):
            rebuilt.attributes[key] = op.attributes[key]
    old = op.regions[0].blocks[0]
    args = [a for i, a in enumerate(old.arguments) if i != index][:-1]
    block = rebuilt.regions[0].blocks.append(*[a.type for a in [*args, old.arguments[index]]])
    for arg, new_arg in zip([*args, old.arguments[index]], block.arguments, strict=True):
        arg.replace_all_uses_with(new_arg)
    for body_op in list(old.operations):
        block.append(body_op.operation)
    return rebuilt.operation


def apply_row_kernel(module: ir.Operation, kernel: RowKernel, target: CpuTarget) -> str | None:
    """Fuse ``kernel`` into one loop over its rows, then tile and chunk each
    member for the vectorizer; None on success, else why not."""
    multiply_by_reciprocals(kernel.last, kernel.rows)
    compute_shared_producers_in_reductions(kernel, target)
    if kernel.parallel:
        # Upstream fuses a producer through the loop's destination only into
        # an scf.forall; in an scf.for over the rows the member would be
        # computed whole before the loop.
        rescale_in_place(kernel)
    for op in kernel.members:
        if _row_reduction(op) and not unit_loops_for_constant_outputs(op):
            return f"{op.name} writes a constant index that is not a unit dim"
        unshare_empty_inits(op)
    failure = apply_script(module, _fuse_script(kernel))
    if failure:
        return failure
    _erase_dead_copies(module, f"{kernel.name}.m")
    failure = _merge_long_row_moments(module, kernel, target)
    if failure:
        return failure
    for index in range(len(kernel.members)):
        member = f"{kernel.name}.m{index}"
        # A producer fused into one of two users keeps its original for the
        # other: each copy gets a tag of its own.
        for copy, op in enumerate(_tagged(module, member)):
            chunked = index in kernel.chunked
            tag = f"{member}.{copy}"
            if kernel.split > 1 and index == len(kernel.members) - 1:
                failure = _split_last_op(module, op, tag, kernel.rows, kernel.split)
                if failure:
                    return f"{op.name} of the row kernel, split across threads: {failure}"
                tiled = _tagged(module, tag)  # empty where no dim divides
                op = tiled[0] if tiled else op
            failure = _tile_member(module, op, tag, target, chunked)
            if failure:
                return f"{op.name} of the row kernel: {failure}"
    return None


def _split_dim(sizes: list[int], rows: int, parts: int) -> int | None:
    """The outermost dim past the rows that ``parts`` divides; None when
    there is none (the last op then runs on one thread)."""
    return next((d for d in range(rows, len(sizes)) if sizes[d] % parts == 0), None)


def _split_last_op(
    module: ir.Operation, op: ir.Operation, tag: str, rows: int, parts: int
) -> str | None:
    """Tile the last op of a split row (the normalization) by an
    ``scf.forall`` into ``parts`` equal static pieces of its row, so that
    each thread writes its share and each piece (tagged ``tag``) is then
    tiled in vectors like a whole row; None on success or when no dim
    divides evenly (left whole, on one thread), else why not."""
    sizes = static_loop_sizes(op) or []
    dim = _split_dim(sizes, rows, parts)
    if dim is None:
        return None
    OP_TAG.set(op, tag)
    tiles = [0] * len(sizes)
    tiles[dim] = sizes[dim] // parts
    return apply_script(
        module,
        _match("%op", tag, "%root")
        + (
            f"  %tiled, %loop = transform.structured.tile_using_forall %op tile_sizes "
            f"[{', '.join(map(str, tiles))}] : ({ANY}) -> ({ANY}, {ANY})\n"
        ),
    )


def _merge_long_row_moments(
    module: ir.Operation, kernel: RowKernel, target: CpuTarget
) -> str | None:
    """A variance over a row longer than half of L2: its sum and its sum of
    squares in one sweep of blocks merged by Chan's formula
    (``row_moments``); the block reductions are then chunked like the
    members. None on success or when there is none."""
    members = [
        op for i in range(len(kernel.members)) for op in _tagged(module, f"{kernel.name}.m{i}")
    ]
    if not members:
        return None
    eb = _ELEMENT_BYTES.get(str(ir.RankedTensorType(members[-1].results[0].type).element_type), 4)
    block = block_elements(target, eb, reduction_chunk(target, eb))
    moments = find_moments(members, min_row_elements(target, eb, block))
    if moments is None:
        return None
    prefix = f"{kernel.name}.moments"
    merge_moments(moments, block, prefix, kernel.split)
    kernel.text += f"; variance in blocks of {block} merged by Chan's formula"
    for number, op in enumerate(
        ops_matching(module, lambda o: (OP_TAG.get(o) or "").startswith(prefix))
    ):
        failure = _tile_member(module, op, f"{prefix}.{number}", target, False)
        if failure:
            return f"{op.name} of the row moments: {failure}"
    return None


def _tagged(module: ir.Operation, tag: str) -> list[ir.Operation]:
    return ops_matching(module, lambda o: OP_TAG.get(o) == tag)


def _tile_member(
    module: ir.Operation, op: ir.Operation, tag: str, target: CpuTarget, chunked: bool
) -> str | None:
    """Tile one member inside the row loop (vectors along the row, reduction
    chunks) and give it its vector sizes; None on success."""
    OP_TAG.set(op, tag)
    tiles, sizes, chunks = _plan_tiles(op, target, chunked)
    if sizes:
        VECTOR_SIZES.set(op, sizes)
    if tiles:
        ragged = chunks == [] and _partial_last_tile(op, tiles)
        failure = apply_script(module, _tile_script(tag, tiles, ragged))
        if failure:
            return failure
    return split_rows(module, tag, chunks) if chunks else None
