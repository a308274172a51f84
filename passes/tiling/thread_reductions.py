"""Reductions across the cores: which loop the threads split, and in what order.

``lowerline-tile-and-fuse`` splits an op's outermost parallel loop across
the cores. Two kinds of reductions have no such loop worth splitting:

- a long row with fewer rows than cores (``softmax`` of ``1x50257``, the
  sum of a ``1x393216`` row), and
- a reduction along the first (non-contiguous) axis of a narrow tensor
  (``4096x16`` summed over dim 0: 16 columns are less than a vector per core).

Both are split along a reduced loop instead, two-level, with upstream's
``transform.structured.tile_reduction_using_forall``::

    %r = linalg.generic {"parallel", "reduction"}     %p = fill tensor<1x2xf32> (identity)
           ins(%x : tensor<1x50257xf32>)         ->   scf.forall (%t) in (2)    // a half row each
                                                        %p[0, %t] = reduce its half row
                                                      %r = linalg.reduce %p dims [1]

Each thread's part keeps the op's tags, so it is then tiled and chunked
like any row (``reduction_chunks``: partial results in registers); the
combine step is a reduction over ``threads`` values per output element.

A first-axis reduction with enough columns keeps its column split, in whole
vector tiles (``column_split``), and every reduction whose contiguous axis
is parallel is tiled columns outside, reduced rows inside
(``interchange``): a register tile of columns accumulates row after row
in registers and is stored once, instead of a load, an add and a store of
the accumulators per row.

Upstream has the mechanisms (reduction tiling into a forall, loop
interchange in ``tile_using_for``) but no decision of when to use them.
"""

from __future__ import annotations

import numpy as np
from mlir import ir

from lowerline.cpu.tile_plan import lanes, vector_tile
from lowerline.passes.support.transform_scripts import ANY
from lowerline.passes.tiling.reduction_chunks import drop_constant_output_dims
from lowerline.pipeline.pass_api import ops_matching
from lowerline.pipeline.protocol import OP_TAG, VECTOR_SIZES
from lowerline.targets import CpuTarget

# Below this many elements waking the threads costs more than it saves (the
# vector groups' and the row kernels' threshold).
PARALLEL_MIN_ELEMENTS = 1 << 15


def worth_threads(shape: list[int], target: CpuTarget) -> bool:
    return target.cores >= 2 and int(np.prod(shape)) >= PARALLEL_MIN_ELEMENTS


def column_split(
    shape: list[int], iterators: list[str], target: CpuTarget, element_bytes: int
) -> tuple[list[int], int] | None:
    """(forall tile sizes, vector tile) splitting the innermost (contiguous)
    parallel loop of a reduction across the cores in whole vector tiles;
    None when a core would get less than a vector of columns."""
    last = len(shape) - 1
    cols = shape[last]
    share = -(-cols // target.cores)
    if iterators[last] != "parallel" or share < lanes(target, element_bytes):
        return None
    tile = vector_tile(cols, target, element_bytes)
    if tile >= cols:  # one tile would leave the other cores idle: a smaller one
        tile = vector_tile(share, target, element_bytes)
    sizes = [0] * len(shape)
    sizes[last] = -(-share // tile) * tile
    return sizes, tile


def interchange(iterators: list[str], tiles: list[int]) -> list[int]:
    """Loop order for ``tile_using_for``: the tiled parallel loops outside
    the reduction loops, so that the accumulators of a tile are invariant in
    the reduction loops (hoisted into registers); [] when it is already so."""
    order = [d for d, it in enumerate(iterators) if it == "parallel"]
    order += [d for d, it in enumerate(iterators) if it != "parallel"]
    tiled = [d for d in order if tiles[d]]
    in_place = [d for d in range(len(tiles)) if tiles[d]]
    return order if tiled != in_place else []


def splittable(op: ir.Operation) -> bool:
    """Whether upstream can split ``op``'s reduction across threads: one
    result, no ``linalg.index`` (the part's indices would start at 0)."""
    if op.name != "linalg.generic" or len(op.results) != 1:
        return False
    body = op.regions[0].blocks[0].operations
    return not any(o.operation.name == "linalg.index" for o in body)


def reduction_threads(
    op: ir.Operation, shape: list[int], iterators: list[str], covered: list[int], target: CpuTarget
) -> list[int]:
    """``num_threads`` for ``tile_reduction_using_forall``: the cores along
    the first reduced loop that has as many iterations and that the tiling
    steps through (``covered``: tile or chunk sizes, nonzero where a loop
    is made; a loop kept whole would be vectorized at its full static
    length); [] when no such loop exists or the op cannot be split."""
    if not worth_threads(shape, target) or not splittable(op):
        return []
    for dim, (size, kind) in enumerate(zip(shape, iterators, strict=True)):
        if kind == "reduction" and size >= target.cores and covered[dim]:
            # Upstream's reduction tiling asserts on constant output dims.
            if not drop_constant_output_dims(op):
                return []
            threads = [0] * len(shape)
            threads[dim] = target.cores
            return threads
    return []


def split_script(tag_match: str, threads: list[int], name: str) -> str:
    """Script lines splitting the op matched by ``tag_match`` (into ``%op``)
    across ``threads``: ``%part`` is a thread's part; the partial results'
    fill and the combine step are tagged ``{name}.partial`` for
    ``size_partials``."""
    listed = ", ".join(map(str, threads))
    return (
        tag_match + f"  %fill, %part, %merge, %threads = transform.structured."
        f"tile_reduction_using_forall %op by num_threads = [{listed}]"
        f" : ({ANY}) -> ({ANY}, {ANY}, {ANY}, {ANY})\n"
        f'  %partial_tag = transform.param.constant "{name}.partial" -> !transform.any_param\n'
        f'  transform.annotate %fill "{OP_TAG.name}" = %partial_tag'
        f" : {ANY}, !transform.any_param\n"
        f'  transform.annotate %merge "{OP_TAG.name}" = %partial_tag'
        f" : {ANY}, !transform.any_param\n"
    )


def size_partials(module: ir.Operation, name: str) -> None:
    """Vector sizes for the fill of the per-thread partial results and for
    their combine step: their whole (small) static iteration space."""
    for op in ops_matching(module, lambda o: OP_TAG.get(o) == f"{name}.partial"):
        if op.name == "linalg.fill":
            sizes = list(ir.RankedTensorType(op.results[0].type).shape)
        else:  # linalg.reduce: the partial results it reads
            sizes = list(ir.RankedTensorType(op.operands[0].type).shape)
        VECTOR_SIZES.set(op, sizes)
