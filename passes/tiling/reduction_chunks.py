"""Row reductions along the innermost axis, in chunks of vector size.

lowerline-tile-and-fuse tiles a reduction to one row at a time; a row reduced
in one step would be vectorized as one vector as long as the row (a
393,216-wide softmax row became ``vector<393216xf32>`` and ``llc`` ran for
over 15 minutes). Here the row is split along its innermost (contiguous)
axis with upstream's ``transform.structured.tile_reduction_using_for``::

    %r = linalg.generic {iterator_types = ["parallel", "reduction"]}
           ins(%row : tensor<1x4096xf32>) outs(%acc : tensor<1xf32>)

becomes a fill of ``tensor<1x64xf32>`` partial results, an ``scf.for`` over
the row whose body adds one ``1x64`` chunk into them elementwise, and a
``linalg.reduce`` merging the 64 partial results into ``%acc``. A row that
the chunk does not divide has its loop peeled (``transform.loop.peel``):
the full chunks are unmasked and keep their partial results in registers,
the partial last chunk is one masked step. All three
carry ``lowerline.vector_sizes = [1, 64]``: lowerline-vectorize keeps the
partial results in registers across the loop and reduces them horizontally
once per row. The chunk (``lowerline.cpu.tile_plan.reduction_chunk``) is a
few of the target's vectors, so every vector is bounded by the target's
registers, not by the shape.

Upstream's reduction tiling asserts on an output map with a constant result
(``(d0, d1) -> (d0, 0)``: a reduction kept as a unit dim, softmax's row
maximum); such an output is first collapsed to its non-unit dims
(``drop_constant_output_dims``), a mechanism upstream has only as a
pattern set over a whole function (``fold_unit_extent_dims``), which would
rewrite every op around it.

Precision: each of the chunk's lanes sums every 64th element and the lanes
are added at the end, a pairwise-like order that is no worse than the
sequential sum it replaces. Variance is computed the way the graph gives it
(torch decomposes ``var``/layer norm into a mean, then a sum of squared
differences: two passes), each pass chunked like this.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, tensor

from lowerline.passes.support.linalg_info import indexing_maps, static_loop_sizes
from lowerline.passes.support.transform_scripts import ANY, apply_script, peel
from lowerline.pipeline.pass_api import ops_matching
from lowerline.pipeline.protocol import OP_TAG, VECTOR_SIZES, Attr


def reduction_chunks(
    op: ir.Operation, shape: list[int], iterators: list[str], chunk: int
) -> list[int]:
    """Tile sizes splitting ``op``'s innermost reduction into chunks of
    ``chunk`` elements (the other reduction dims step by 1, the row's
    parallel dims are already tiled to 1); [] when the innermost dim is
    parallel, the row fits in one chunk, or an output cannot be made a
    projection of the loops (then the row stays whole)."""
    if op.name != "linalg.generic" or iterators[-1] != "reduction" or shape[-1] <= chunk:
        return []
    if not drop_constant_output_dims(op):
        return []
    return [0 if it == "parallel" else 1 for it in iterators[:-1]] + [chunk]


def drop_constant_output_dims(op: ir.Operation) -> bool:
    """Rewrite ``op``'s outputs indexed by constant (unit) dims into outputs
    without those dims: the init is collapsed before the op, the result
    expanded back after it. False (and ``op`` untouched) when an output
    cannot be (a non-zero constant, a non-unit or dynamic dropped dim); kept
    dims may be dynamic. An output with every dim constant (a whole-tensor
    reduction kept as ``1x1``, torch's variance) becomes a 0-d tensor."""
    maps = indexing_maps(op)
    inputs = len(op.operands) - len(op.results)
    plans: list[list[int] | None] = []
    for index, result in enumerate(op.results):
        out_map = maps[inputs + index]
        rtype = ir.RankedTensorType(result.type)
        kept = [
            i for i, e in enumerate(out_map.results) if not isinstance(e, ir.AffineConstantExpr)
        ]
        if len(kept) == len(out_map.results):
            plans.append(None)
            continue
        dropped = [i for i in range(rtype.rank) if i not in kept]
        if any(rtype.shape[i] != 1 for i in dropped):
            return False
        if any(ir.AffineConstantExpr(out_map.results[i]).value != 0 for i in dropped):
            return False
        plans.append(kept)
    for index, plan in enumerate(plans):
        if plan is not None:
            maps[inputs + index] = _collapse_output(op, index, maps[inputs + index], plan)
    op.attributes["indexing_maps"] = ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps])
    return True


def _reassociation(rank: int, kept: list[int]) -> list[list[int]]:
    """Groups of dims for collapse/expand: each kept dim with the unit dims
    that follow it (unit dims before the first kept one join the first);
    none when no dim is kept (to and from a 0-d tensor)."""
    if not kept:
        return []
    groups: list[list[int]] = []
    for dim in range(rank):
        if dim in kept or not groups:
            groups.append([dim])
        else:
            groups[-1].append(dim)
    if groups and groups[0][0] not in kept:  # leading unit dims: merge into the next group
        lead = groups.pop(0)
        groups[0] = lead + groups[0]
    return groups


def _collapse_output(
    op: ir.Operation, index: int, out_map: ir.AffineMap, kept: list[int]
) -> ir.AffineMap:
    result = op.results[index]
    rtype = ir.RankedTensorType(result.type)
    groups = _reassociation(rtype.rank, kept)
    reassociation = ir.ArrayAttr.get(
        [
            ir.ArrayAttr.get([ir.IntegerAttr.get(ir.IntegerType.get_signless(64), d) for d in g])
            for g in groups
        ]
    )
    small = ir.RankedTensorType.get([rtype.shape[i] for i in kept], rtype.element_type)
    init_operand = len(op.operands) - len(op.results) + index
    with ir.InsertionPoint(op), op.location:
        init = tensor.collapse_shape(small, op.operands[init_operand], reassociation)
    op.operands[init_operand] = init
    result.set_type(small)
    with ir.InsertionPoint.after(op), op.location:
        # The expanded result's dynamic sizes: the kept dims' (of the init,
        # which the result has; a dim of the result would be replaced below).
        sizes = [
            tensor.dim(init, arith.constant(ir.IndexType.get(), position))
            for position, i in enumerate(kept)
            if rtype.is_dynamic_dim(i)
        ]
        expanded = tensor.expand_shape(rtype, result, reassociation, sizes, list(rtype.shape))
    result.replace_all_uses_except(expanded, expanded.owner.operation)
    return ir.AffineMap.get(out_map.n_dims, out_map.n_symbols, [out_map.results[i] for i in kept])


def _script(tag: str, chunks: list[int], attr: Attr[str] = OP_TAG, ragged: bool = False) -> str:
    sizes = [1] * (len(chunks) - 1) + [chunks[-1]]
    text = (
        f"  %row = transform.structured.match attributes{{{attr.entry(tag)}}} in %root"
        f" : ({ANY}) -> {ANY}\n"
        f"  %fill, %part, %merge, %chunks = transform.structured.tile_reduction_using_for %row "
        f"by tile_sizes = [{', '.join(map(str, chunks))}]"
        f" : ({ANY}) -> ({ANY}, {ANY}, {ANY}, {ANY})\n"
        f"  %sizes = transform.param.constant {VECTOR_SIZES.kind.text(sizes)}"
        " -> !transform.any_param\n"
    )
    for handle in ("%fill", "%part", "%merge"):
        text += (
            f'  transform.annotate {handle} "{VECTOR_SIZES.name}" = %sizes'
            f" : {ANY}, !transform.any_param\n"
        )
    if ragged:
        # The full chunks get static slices: unmasked, and their partial sums
        # are hoisted into registers (with a masked chunk on every step they
        # went through memory, a store and a load per step); the partial last
        # chunk is one masked step after the loop.
        # The chunk loop is the innermost (outer reduction dims step by 1).
        text += (
            f'  %step = transform.get_parent_op %part {{op_name = "scf.for"}} : ({ANY}) -> {ANY}\n'
        )
        text += peel("%step", "%full", "%tail")
    return text


def split_rows(module: ir.Operation, tag: str, chunks: list[int]) -> str | None:
    """Split the row-tiled reductions tagged ``tag`` into chunks; None on
    success. Where upstream cannot split one (a reduction with several
    results, e.g. argmax), it loses its vector sizes and becomes scalar
    loops: a vector as long as the row is never made. Returns why."""
    rows = ops_matching(module, lambda o: OP_TAG.get(o) == tag)
    sizes = [static_loop_sizes(row) for row in rows]
    # A thread's part of a row split across the cores has a dynamic length.
    ragged = any(size is None or size[-1] % chunks[-1] for size in sizes)
    failure = apply_script(module, _script(tag, chunks, ragged=ragged))
    if not failure:
        return None
    for row in ops_matching(module, lambda o: OP_TAG.get(o) == tag):
        VECTOR_SIZES.remove(row)
    return failure
