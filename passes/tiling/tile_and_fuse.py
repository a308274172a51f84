"""``lowerline-tile-and-fuse``: target-driven tiling and fusion on tensors.

What it decides (the mechanisms are upstream's transform dialect):

- **Fusion groups.** Each contraction (``linalg.matmul``,
  ``linalg.batch_matmul``) is a root. Its ``linalg.fill`` init is fused as a
  producer (a fill that CSE shared between roots is first cloned per root),
  and the chain of elementwise consumers that read the root's result
  element for element (bias, activations, residual adds) is fused into
  the same nest, down to the register tile: the epilogue runs on the
  accumulators before they are stored. A consumer is refused when fusing
  would recompute or spill: it reads the result through a non-identity map
  (transposed, broadcast, reduced across the tile), the result has other
  users, or the shapes differ.
- **Tile sizes per level** from the target description
  (``lowerline.cpu.tile_plan``): a parallel ``scf.forall`` tile sized for the
  caches and the cores, an ``mr x nr`` register tile sized for the vector
  registers, and a k loop of rank-1 updates (of 4-deep updates for an
  i8 x i8 -> i32 matmul on a target with VNNI, which lowerline-vectorize
  makes ``vpdpbusd``; an i8 x i8 -> i32 stride-1 convolution, or a strided
  1x1 one, likewise steps 4 input channels where their count is a multiple
  of 4). A convolution
  whose output channels the register tile does not divide (a prime count:
  ``lowerline.cpu.tile_plan.channel_tile``) has the channels left over
  peeled and computed one at a time (``_peel_partial_channels``).
- **Window nests.** Poolings (``linalg.pooling_nchw_max/sum``, 1-D too) and
  depthwise, grouped, strided or dilated convolutions are roots as well: a
  forall over (batch, channel blocks, row blocks), register tiles of
  channels x output rows x output columns (whole vectors, the partial
  column tile peeled; several rows of one channel for poolings and
  depthwise convolutions, ``lowerline.cpu.tile_plan.window_tiles``),
  the window and input-channel loops of step 1, each step rewritten into an
  elementwise ``linalg.generic`` (``lowerline.passes.tiling.window_tiles``).
  A strided row's kw loop is not tiled: its taps are one step, which
  ``lowerline-vectorize`` serves with one read per input row
  (``row_tap_loop``).
  The fill or the bias broadcast of the init and the elementwise epilogue
  are fused like a matmul's (a stride-1 convolution's bias broadcast too).
- **Every other linalg op** (elementwise, reductions such as softmax and
  layernorm rows, fills, transposes) is tiled to vector-sized rows (a
  transpose that moves the innermost dim, NCHW <-> NHWC, to square blocks
  transposed in registers where a block of 16 or 8 divides both dims); a
  row that is not a whole number of vector tiles has its partial last tile
  peeled, so the full tiles are unmasked (``_peel_columns``). A
  reduction along a long innermost axis is reduced in chunks of a few
  vectors with partial results in registers
  (``lowerline.passes.tiling.reduction_chunks``): no vector is longer than
  the target's registers allow, whatever the row's length. A reduction
  along an outer axis is tiled columns outside, rows inside; one whose
  parallel loops cannot feed the cores (a long single row, a narrow
  first-axis sum) is split across them along a reduced loop
  (``lowerline.passes.tiling.thread_reductions``).

- **Dynamic dims** (``lowerline.compile(..., dynamic=...)``). A matmul
  whose only dynamic dims are M and the batch is planned for
  ``DYNAMIC_ROWS_PLANNED`` rows, its fill and epilogue fused as for a static
  one: full ``mr``-row register tiles, then the remaining rows in one static
  piece of their count, the small ones widened along N (``dynamic_rows_script``);
  a dynamic batch is tiled by 1. A (batch) matmul with a dynamic N or K
  (attention's ``QK^T`` and ``softmax(QK^T) V`` over a dynamic sequence) is
  planned for ``DYNAMIC_PLANNED`` along each dynamic dim (a dynamic N known
  to be a multiple of whole vectors, ``dim_divisor``, for that multiple:
  lowerline-winograd-conv's T over a dynamic batch): its full register
  tiles are static and the partial last column tile peeled (masked); a
  dynamic M's partial last row tile is run as static pieces of halving
  powers of two (``dynamic_rows_script``, not widened: their column tiles
  are masked), not as a masked ``mr``-row tile (17 rows: the last row was
  an 8-row tile, 8x its FMAs); k and the batch step by 1 anyway; its
  epilogue is not fused
  (upstream's fusion into a forall over those dims fails). Convolutions and
  window nests with a dynamic batch, and elementwise ops and row reductions
  over dynamic outer rows, are tiled by 1 along those dims, so every tile is
  static; a vector group's forall over ``ceildiv(rows, tile)`` row tiles
  spreads many rows over the cores, unless the declared range's maximum
  (``loop_maximum``) leaves too few rows for threads. A dynamic innermost dim is tiled in
  vectors, the partial last tile peeled and run in masked steps of one
  register, or, reduced (softmax over a dynamic sequence), in chunks of one
  register (``reduction_chunks``) on one thread: a short row (17 keys) is
  then a whole vector and a masked one, not one masked tile of four; a
  division by a row's reduction over such a row (softmax's ``exp / sum``)
  multiplies by its reciprocal, one division per row
  (``_multiply_by_row_reciprocals``, as a static row kernel does); an op
  with another dynamic reduced dim stays loops, with a remark.

The tiled ops keep ``lowerline.vector_sizes`` (and ``lowerline.contract``
on contractions) for ``lowerline-vectorize``; ``lowerline-pack-weights`` may
run in between.

Each group is applied as its own transform sequence: a group the transform
ops cannot handle stays as it was (it becomes loops later) and a remark
says why, instead of failing the compile.

Every decision is published as a remark (``lowerline.pipeline.remarks``):
each fusion group with its tile sizes, estimated FLOPs and bytes moved on its
root, each refused fusion on the refused op, and each op left as loops with
the reason; ``explain`` prints them to stderr.

Upstream has the mechanisms (``transform.structured.tile_using_forall``,
``tile_using_for``, ``fuse_into_containing_op``) but no pass that picks
roots, fusions and tile sizes for a target: that is this pass.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
from mlir import ir
from mlir.dialects import linalg

from lowerline.cpu.tile_plan import (
    BF16_DOT_K,
    INT8_DOT_K,
    ConvTiles,
    MatmulTiles,
    bf16_dot_lanes,
    conv_tiles,
    elementwise_tile,
    int8_dot_lanes,
    lanes,
    matmul_tiles,
    reduction_chunk,
    vector_tile,
    window_tiles,
)
from lowerline.passes.support.dim_bounds import dim_divisor, loop_maximum
from lowerline.passes.support.linalg_info import indexing_maps as _maps
from lowerline.passes.support.linalg_info import iterator_kinds as _iterators
from lowerline.passes.support.linalg_info import loop_sizes, static_loop_sizes
from lowerline.passes.support.pass_options import cpu_target_option
from lowerline.passes.support.transform_scripts import ANY, apply_script, canonicalize, peel
from lowerline.passes.tiling.conv_tiles import unit_window_conv_to_matmul
from lowerline.passes.tiling.reduction_chunks import (
    drop_constant_output_dims,
    reduction_chunks,
    split_rows,
)
from lowerline.passes.tiling.row_kernels import (
    RowKernel,
    apply_row_kernel,
    find_row_kernel,
    multiply_by_reciprocals,
)
from lowerline.passes.tiling.thread_reductions import (
    PARALLEL_MIN_ELEMENTS,
    column_split,
    interchange,
    reduction_threads,
    size_partials,
    split_script,
    worth_threads,
)
from lowerline.passes.tiling.window_tiles import (
    plane_chunks,
    row_tap_loop,
    unit_window_to_generic,
)
from lowerline.pipeline.options import opt
from lowerline.pipeline.pass_api import (
    Pass,
    defined_functions,
    ops_matching,
    resolve_target,
)
from lowerline.pipeline.protocol import (
    AMX_TILES,
    CONTRACT,
    EXACT_ROWS,
    LAST,
    OP_TAG,
    VECTOR_SIZES,
    Attr,
)
from lowerline.pipeline.remarks import DECISION, FALLBACK, REFUSAL, Remark, about, publish
from lowerline.targets import CpuTarget, cpu_target

_ELEMENT_BYTES = {"f32": 4, "f64": 8, "i8": 1}
_CONTRACTIONS = ("linalg.matmul", "linalg.batch_matmul")
_CONVOLUTIONS = ("linalg.conv_2d_nchw_fchw",)
# Ops computed as elementwise steps over their window (lowerline.passes.tiling.window_tiles);
# strided and dilated linalg.conv_2d_nchw_fchw too.
_WINDOWS = (
    "linalg.pooling_nchw_max",
    "linalg.pooling_nchw_sum",
    "linalg.depthwise_conv_2d_nchw_chw",
    "linalg.conv_2d_ngchw_gfchw",
    "linalg.pooling_ncw_max",
    "linalg.pooling_ncw_sum",
    "linalg.depthwise_conv_1d_ncw_cw",
    "linalg.conv_1d_ncw_fcw",
)
_ROOTS = _CONTRACTIONS + _CONVOLUTIONS + _WINDOWS


def tensor_type(value: ir.Value) -> ir.RankedTensorType | None:
    if isinstance(value.type, ir.RankedTensorType) and value.type.has_static_shape:
        return ir.RankedTensorType(value.type)
    return None


def ranked_type(value: ir.Value) -> ir.RankedTensorType | None:
    """The value's tensor type, dynamic dims allowed."""
    if isinstance(value.type, ir.RankedTensorType):
        return ir.RankedTensorType(value.type)
    return None


# The size a matmul plan assumes for a dynamic M, N or K (lowerline.compile(...,
# dynamic=...)): enough for a parallel tile per core of whole register tiles.
# The tiles cover any M: the rows a full register tile leaves run as static
# pieces (dynamic_rows_script).
DYNAMIC_ROWS_PLANNED = 64
# The tiles cover any size: the partial last ones are peeled (masked).
DYNAMIC_PLANNED = 64
_DYNAMIC = ir.ShapedType.get_dynamic_size()


def is_linalg(op: ir.Operation) -> bool:
    # tensor.pad is left to bufferization (a copy into a filled buffer): the
    # vectorized pad (row tiles, masked reads) drops the low padding of the
    # row (measured: wrong results; upstream 22 vectorizer).
    return op.name.startswith("linalg.") and op.name != "linalg.yield"


class TilePlan(Protocol):
    """What every planner's tile sizes can do for the group that holds them."""

    def describe(self) -> str: ...


@dataclass
class Group:
    """One tiled nest: a root, its fused producers and consumers."""

    name: str
    kind: str  # "matmul" | "batch_matmul" | "vector"
    root: ir.Operation
    fill: ir.Operation | None = None
    consumers: list[ir.Operation] = field(default_factory=list)
    tiles: TilePlan | None = None  # CPU: MatmulTiles or ConvTiles; GPU: ContractionTiles
    # Tile sizes over the root's result dims (parallel tile, register tile) and
    # over its whole iteration space for the reduction loops.
    par: list[int] = field(default_factory=list)
    reg: list[int] = field(default_factory=list)
    red: list[int] = field(default_factory=list)
    vector_tiles: list[int] = field(default_factory=list)
    # A row reduction split into chunks of the innermost axis (tile sizes over
    # the iteration space); [] when the row is reduced in one vector.
    chunks: list[int] = field(default_factory=list)
    # A reduction split across the cores along a reduced loop
    # (``tile_reduction_using_forall``'s num_threads); [] when it is not.
    threads: list[int] = field(default_factory=list)
    # The vector tiles' loop order (``tile_using_for``'s interchange); [] for dim order.
    order: list[int] = field(default_factory=list)
    # A dynamic innermost dim: its partial last tile (or chunk) in masked
    # vectors of this many elements; 0: one masked tile.
    tail_vector: int = 0
    flops: int = 0
    bytes_moved: int = 0
    refused: list[Remark] = field(default_factory=list)
    failure: str | None = None
    # A and B are function arguments or constants (no producer to recompute).
    inputs_are_leaves: bool = False
    # A matmul whose M is its only dynamic dim but the batch: tiled by
    # dynamic_rows_script (static row pieces, epilogue fused).
    row_pieces: bool = False
    # A batch matmul, convolution or window nest whose batch is dynamic (tiled
    # by 1: static tiles; its script resolves the tensor.dims fusion reads).
    dynamic_batch: bool = False
    # A matmul with a dynamic N or K whose M (N) is dynamic: its partial row
    # (column) tiles are peeled.
    dynamic_rows: bool = False
    dynamic_columns: bool = False
    pass_flag: str = "lowerline-tile-and-fuse"  # the pass whose remarks these are
    # Conv and window groups: the dim of ``reg`` (the output's, or the
    # root's loops in window_script) that runs over the output channels.
    channel_dim: int = 1
    row: RowKernel | None = None  # kind "row": the ops fused into one loop over rows
    # Filled before the ops are transformed (and possibly erased): for the
    # remarks, made afterwards. The root's first.
    members_text: str = ""
    seen: list[Remark] = field(default_factory=list)

    def freeze_text(self) -> None:
        members = (["fill"] if self.fill else []) + [c.name for c in self.consumers]
        self.members_text = ", ".join(members) or "nothing"
        ops = [self.root, self.fill, *self.consumers]
        self.seen = [about(op, self.pass_flag, "") for op in ops if op is not None]

    def refuse(self, op: ir.Operation, reason: str) -> None:
        """Record that ``op`` stays out of this nest, and why."""
        self.refused.append(about(op, self.pass_flag, reason, REFUSAL))

    def remark(self, message: str, kind: str = DECISION) -> Remark:
        """A remark on the root (as it was before the transform)."""
        return dataclasses.replace(self.seen[0], message=message, kind=kind)

    def fallbacks(self, why: str) -> list[Remark]:
        """Every op of a group whose transform failed: all stay as loops."""
        message = f"left as loops: {self.name} was not transformed: {why}"
        return [dataclasses.replace(op, message=message, kind=FALLBACK) for op in self.seen]

    @property
    def plan(self) -> TilePlan:
        """The tile sizes of a root group (vector groups have none)."""
        if self.tiles is None:
            raise ValueError(f"{self.name} is a {self.kind} group: it has no tile plan")
        return self.tiles

    @property
    def cpu_plan(self) -> MatmulTiles | ConvTiles:
        """The CPU planner's sizes of a matmul or convolution group."""
        if not isinstance(self.tiles, MatmulTiles | ConvTiles):
            raise ValueError(f"{self.name} has no CPU matmul or convolution tiles")
        return self.tiles

    @property
    def conv_plan(self) -> ConvTiles:
        if not isinstance(self.tiles, ConvTiles):
            raise ValueError(f"{self.name} has no convolution tiles")
        return self.tiles

    @property
    def last(self) -> ir.Operation:
        return self.consumers[-1] if self.consumers else self.root


@dataclass
class Plan:
    target: CpuTarget
    groups: list[Group] = field(default_factory=list)
    skipped: list[Remark] = field(default_factory=list)

    def remarks(self, module: ir.Operation) -> list[Remark]:
        """The target (on the module), then each group's decision, refusals and
        failure, then the ops no group took."""
        t = self.target
        found = [
            about(
                module,
                TileAndFuse.flag,
                f"target {t.name} ({t.cpu}, {t.vector_bits}-bit vectors, "
                f"L1 {t.l1d_bytes >> 10} KiB, L2 {t.l2_bytes >> 10} KiB, {t.cores} cores)",
            )
        ]
        for g in self.groups:
            found += [g.remark(_decision(g)), *g.refused]
            if g.failure:
                found += g.fallbacks(g.failure)
        return found + self.skipped


def _decision(g: Group) -> str:
    """What was planned for ``g``: its kind, the fused ops and the tile sizes."""
    if g.row is not None:
        return g.row.text
    if g.kind == "vector":
        threads = f", parallel tile {g.par}" if g.par else ""
        chunks = f", reduced in chunks {g.chunks}" if g.chunks else ""
        split = f", reduction split across threads {g.threads}" if g.threads else ""
        order = f", loop order {g.order}" if g.order else ""
        return f"{g.name}: vector tile {g.vector_tiles}{threads}{split}{order}{chunks}"
    return (
        f"{g.name}: {g.kind}; fused {g.members_text}; tiles: {g.plan.describe()}; "
        f"{g.flops / 1e6:.2f} MFLOP, {g.bytes_moved / 1e6:.2f} MB moved"
    )


def element_bytes(op: ir.Operation) -> int | None:
    if _is_integer_contraction(op):
        return 4  # tiled as the i32 accumulator (lowerline-fold-qdq-matmul's matmuls)
    types = {
        str(ir.ShapedType(v.type).element_type if isinstance(v.type, ir.ShapedType) else v.type)
        for v in [*op.operands, *op.results]
    }
    if len(types) != 1:
        return None
    return _ELEMENT_BYTES.get(types.pop())


def _is_integer_contraction(op: ir.Operation) -> bool:
    """An i8 x i8 -> i32 named contraction or convolution (the QDQ folds')."""
    if op.name not in _ROOTS:
        return False
    types = [str(ir.ShapedType(v.type).element_type) for v in op.operands]
    return types == ["i8", "i8", "i32"]


def _planning_bytes(op: ir.Operation) -> int | None:
    """``element_bytes`` for the CPU's tile plans: a bf16/f16 contraction
    (lowerline-fold-extf-into-contractions') is tiled as its f32
    accumulator. (The GPU plans count its 16-bit operands in shared memory.)"""
    return 4 if _is_half_contraction(op) else element_bytes(op)


def _is_half_contraction(op: ir.Operation) -> bool:
    """A bf16 x bf16 -> f32 or f16 x f16 -> f32 named contraction or
    convolution (torch-mlir's convolutions of bf16 models are)."""
    if op.name not in _ROOTS:
        return False
    types = [str(ir.ShapedType(v.type).element_type) for v in op.operands]
    return types in (["bf16", "bf16", "f32"], ["f16", "f16", "f32"])


def _consumer_refusal(current: ir.Operation, user: ir.Operation) -> str | None:
    """Why ``user`` cannot join the nest of ``current``; None when it can."""
    if user.name != "linalg.generic":
        return "not an elementwise linalg.generic"
    if any(it != "parallel" for it in _iterators(user)):
        return "it reduces across the tile: fusing would need the whole row"
    result_type = ranked_type(current.results[0])
    if result_type is None:
        return "the nest's result is not a tensor"
    if ranked_type(user.results[0]) != ir.RankedTensorType.get(
        result_type.shape, ir.RankedTensorType(user.results[0].type).element_type
    ):
        return "it has another shape: it would recompute or spill"
    maps = _maps(user)
    rank = len(result_type.shape)
    identity = ir.AffineMap.get_identity(rank)
    for index, operand in enumerate(user.operands):
        if operand == current.results[0] and maps[index] != identity:
            return f"it reads the result through {maps[index]}: it would recompute"
    if maps[-1] != identity:
        return f"it writes through {maps[-1]}"
    return None


# Users that end a consumer chain without a refusal: the result leaves the
# nest as it is (returned, reshaped, written into a padded buffer).
_CHAIN_ENDS = ("func.return", "tensor.expand_shape", "tensor.collapse_shape", "tensor.insert_slice")


def _consumer_chain(group: Group) -> list[ir.Operation]:
    chain: list[ir.Operation] = []
    current = group.root
    while True:
        uses = list(current.results[0].uses)
        if len(uses) != 1:
            if len(uses) > 1:
                group.refuse(
                    current,
                    f"no consumer fused into {group.name}: the result has {len(uses)} users "
                    "and must be stored anyway",
                )
            return chain
        user = uses[0].owner
        if user.name in _CHAIN_ENDS:
            return chain
        reason = _consumer_refusal(current, user)
        if reason:
            group.refuse(user, f"not fused into {group.name}: {reason}")
            return chain
        chain.append(user)
        current = user


def _is_leaf(value: ir.Value) -> bool:
    """A function argument, a constant or the result of a loop that is
    already tiled code (lowerline-winograd-conv's transforms): nothing
    ``structured.fuse`` could pull in and recompute."""
    owner = value.owner
    return isinstance(owner, ir.Block) or owner.name in ("arith.constant", "scf.forall")


def _contraction_group(op: ir.Operation, name: str, target: CpuTarget) -> Group | str:
    eb = _planning_bytes(op)
    if eb is None:
        return "mixed or unsupported element types"
    out = ranked_type(op.results[0])
    lhs = ranked_type(op.operands[0])
    rhs = ranked_type(op.operands[1])
    if out is None or lhs is None or rhs is None:
        return "dynamic shapes"
    dims = linalg.infer_contraction_dimensions(op)
    if dims is None or len(dims.m) != 1 or len(dims.n) != 1 or len(dims.k) != 1:
        return "not a single m/n/k contraction"
    *batch, m, n = out.shape
    k = lhs.shape[-1]
    group = Group(name, "batch_matmul" if batch else "matmul", op)
    # A dynamic batch is tiled by 1 like a static one: its tiles are static.
    group.dynamic_batch = _DYNAMIC in batch
    peeled = _DYNAMIC in (n, k, *rhs.shape[-2:])
    if peeled:
        # Dynamic dims are planned at DYNAMIC_PLANNED: every tile is static
        # but the partial last ones, which are peeled (rows, columns) or are
        # steps of 1 (k, batch); the estimates below are for the planned sizes.
        b = int(np.prod([_planned(d) for d in batch]))
        m, n, k = _planned(m), _column_step(op, n, target, eb) or _planned(n), _planned(k)
        group.dynamic_rows = out.shape[-2] == _DYNAMIC
        group.dynamic_columns = out.shape[-1] == _DYNAMIC
        t = matmul_tiles(target, m, n, k, eb, batch=b)
        masked = t.masked or group.dynamic_rows or group.dynamic_columns
        t = group.tiles = dataclasses.replace(t, kr=_k_step(op, target), masked=masked)
    else:
        # Dynamic rows: the partial row tiles are peeled into static pieces
        # (dynamic_rows_script), not masked.
        group.row_pieces = m == _DYNAMIC
        b = int(np.prod([1 if d == _DYNAMIC else d for d in batch]))  # per batch entry
        m = DYNAMIC_ROWS_PLANNED if group.row_pieces else m
        t = matmul_tiles(target, m, n, k, eb, batch=b)
        t = group.tiles = dataclasses.replace(t, kr=_k_step(op, target))
    lead = [1] * len(batch)
    group.par, group.reg = [*lead, t.mc, t.nc], [*lead, t.mr, t.nr]
    group.red = [0] * (len(batch) + 2) + [t.kr]
    group.inputs_are_leaves = all(_is_leaf(v) for v in op.operands[:-1])
    fused_producers_and_consumers(group)
    if peeled and group.consumers:
        # Fusing the epilogue into a forall over a dynamic N fails upstream
        # (fuse_into_containing_op: "could not find next producer to fuse"):
        # the epilogue is a vector group of its own, over rows of 1.
        for consumer in group.consumers:
            group.refuse(consumer, f"not fused into {group.name}: its shape is dynamic")
        group.consumers = []
    group.flops = 2 * b * m * n * k
    group.bytes_moved = eb * b * (m * k + k * n + m * n)
    return group


def _column_step(op: ir.Operation, n: int, target: CpuTarget, eb: int) -> int | None:
    """A dynamic N planned as the whole vectors it is always a multiple of
    (``dim_divisor``: the Winograd tiles of one image of a dynamic batch),
    so that its column tiles divide it: every tile is a full one, none of
    them masked (planned at ``DYNAMIC_PLANNED``, a batch of one image of 16
    columns ran as one masked 32-column tile). None where N is static or no
    such multiple is known."""
    if n != _DYNAMIC:
        return None
    step = dim_divisor(op.results[0], ir.RankedTensorType(op.results[0].type).rank - 1)
    return step if step > 1 and step % lanes(target, eb) == 0 else None


def _planned(size: int) -> int:
    """A dim's size for the tile plan: a dynamic one counts as DYNAMIC_PLANNED."""
    return DYNAMIC_PLANNED if size == _DYNAMIC else size


def _k_step(op: ir.Operation, target: CpuTarget, k: int | None = None) -> int:
    """Steps of k per register tile: 4 for an i8 x i8 -> i32 matmul on a
    target with an int8 dot product (lowerline-vectorize turns the 4-deep
    contraction into ``vpdpbusd``), else 1 (outer products). A convolution's
    k (its input channels, ``k``) must be a multiple of 4: its tiles become
    matmuls only with whole steps. An integer batch matmul steps 4 too (its
    tiles, a batch of one, are matmul tiles to the ``vpdpbusd`` rewrite); a
    float one steps 1.
    A bf16 x bf16 -> f32 matmul steps 2 on a target with AVX512-BF16
    (``vdpbf16ps``, lowerline.passes.tiling.bf16_dot); a bf16 convolution
    steps 1 (outer products of its operands widened to f32)."""
    if op.name == "linalg.batch_matmul" and not _is_integer_contraction(op):
        return 1
    if op.name == "linalg.matmul" and _is_bf16_contraction(op) and bf16_dot_lanes(target):
        return BF16_DOT_K if k is None or k % BF16_DOT_K == 0 else 1
    if not _is_integer_contraction(op) or not int8_dot_lanes(target):
        return 1
    return INT8_DOT_K if k is None or k % INT8_DOT_K == 0 else 1


def _is_bf16_contraction(op: ir.Operation) -> bool:
    return _is_half_contraction(op) and str(ir.ShapedType(op.operands[0].type).element_type) == (
        "bf16"
    )


def fused_producers_and_consumers(group: Group) -> None:
    op = group.root
    init = op.operands[-1]
    if isinstance(init, ir.OpResult) and init.owner.name == "linalg.fill":
        if len(list(init.uses)) == 1:
            group.fill = init.owner
        else:
            group.refuse(init.owner, f"not fused into {group.name}: the fill has other users")
    group.consumers = _consumer_chain(group)


def all_ones(op: ir.Operation, name: str) -> bool:
    return name not in op.attributes or all(
        int(v) == 1 for v in ir.DenseIntElementsAttr(op.attributes[name])
    )


def _conv_group(op: ir.Operation, name: str, target: CpuTarget) -> Group | str:
    eb = _planning_bytes(op)
    if eb is None:
        return "mixed or unsupported element types"
    out, inp, flt = (ranked_type(v) for v in (op.results[0], op.operands[0], op.operands[1]))
    if out is None or inp is None or flt is None or not _static_but_batch(out, inp, flt):
        return "dynamic shapes"
    n, f, oh, ow = out.shape
    n = 1 if n == _DYNAMIC else n  # a dynamic batch: the estimates are per image
    c, kh, kw = flt.shape[1:]
    strided_dot = (kh, kw) == (1, 1) and _k_step(op, target, c) == INT8_DOT_K
    if not all_ones(op, "dilations") or not (all_ones(op, "strides") or strided_dot):
        return "strided or dilated convolution (only stride 1, dilation 1 is tiled)"
    group = Group(name, "conv", op)
    group.dynamic_batch = out.shape[0] == _DYNAMIC
    t = conv_tiles(target, f, oh, ow, eb)
    t = group.tiles = dataclasses.replace(t, kr=_k_step(op, target, c))
    group.par, group.reg = [1, t.fc, t.ohc, 0], [1, t.mr, 1, t.nr]
    group.red = [0, 0, 0, 0, t.kr, 1, 1]
    fused_producers_and_consumers(group)
    _fuse_bias_broadcast(group)
    group.flops = 2 * n * f * oh * ow * c * kh * kw
    image = int(np.prod(inp.shape[1:])) * (inp.shape[0] if inp.shape[0] != _DYNAMIC else 1)
    group.bytes_moved = eb * (image + int(np.prod(flt.shape)) + n * f * oh * ow)
    return group


def _static_but_batch(*types: ir.RankedTensorType) -> bool:
    """Every dim static but the first (the batch, which the nests tile by 1:
    every tile is static whatever the batch)."""
    return all(_DYNAMIC not in t.shape[1:] for t in types)


def _root_builder(op: ir.Operation) -> Callable[[ir.Operation, str, CpuTarget], Group | str]:
    """The planner of a root: stride-1 convolutions are rank-1 updates, other
    convolutions and poolings elementwise window steps."""
    if op.name in _WINDOWS:
        return _window_group
    if op.name in _CONVOLUTIONS:
        dense = all_ones(op, "strides") and all_ones(op, "dilations")
        return _conv_group if dense else _strided_conv_group
    return _contraction_group


def _strided_conv_group(op: ir.Operation, name: str, target: CpuTarget) -> Group | str:
    """A strided (not dilated) 1x1 i8 x i8 -> i32 convolution whose input
    channels step 4 deep on the target's int8 dot product, and whose output
    rows fill the dot product's i32 lanes, is planned like a stride-1 one:
    its register tiles (one output row) read a strided input row as the B
    of a 4-deep matmul tile (``vpdpbusd``; the strided read deinterleaved
    by lowerline-vectorize). Measured 0.77-0.91x the window nest's CPU time
    for a 1x1/2 64 -> 128 at 56 x 56, 28 output columns
    (bench/int8-strided-conv-ab.md); with 14 output columns 0.97-1.09x, with
    7 1.14-1.21x (a tile of one row leaves lanes idle), so narrower rows stay
    window nests. A larger window stays a window nest: its 4-deep tiles
    measured 1.03-2.07x slower (3x3/2 at 56 x 56 and 28 x 28, the filter's 4
    channels of a tap read 9 bytes apart at every step). Any other strided
    or dilated convolution is a window nest, whose steps are one channel
    deep."""
    flt, out = ranked_type(op.operands[1]), ranked_type(op.results[0])
    dense_dot = (
        op.name == "linalg.conv_2d_nchw_fchw"
        and all_ones(op, "dilations")
        and flt is not None
        and out is not None
        and out.shape[-1] >= int8_dot_lanes(target)
        and list(flt.shape[2:]) == [1, 1]
        and flt.shape[1] != _DYNAMIC
        and _k_step(op, target, flt.shape[1]) == INT8_DOT_K
    )
    return (_conv_group if dense_dot else _window_group)(op, name, target)


def _window_group(op: ir.Operation, name: str, target: CpuTarget) -> Group | str:
    """A pooling or depthwise, grouped, strided or dilated convolution: a
    forall over (batch, channel blocks, row blocks), register tiles of
    channels x output columns, the window (and input channel) loops of 1;
    the fill or bias broadcast and the elementwise epilogue fused."""
    eb = _planning_bytes(op)  # a bf16 depthwise convolution accumulates in f32
    if eb is None:
        return "mixed or unsupported element types"
    out = ranked_type(op.results[0])
    loops = loop_sizes(op)
    operands = [t for t in map(ranked_type, op.operands) if t is not None]
    if out is None or loops is None or len(operands) != len(op.operands):
        return "dynamic shapes"
    if not _static_but_batch(out, *operands):
        return "dynamic shapes other than the batch"
    # A dynamic batch (tiled by 1): the estimates below are per image.
    loops = [1 if size == _DYNAMIC else size for size in loops]
    # [..., channels, (rows,) columns]: 1-D ops have no rows.
    rows = 0 if "_1d_" in op.name or "_ncw_" in op.name else 1
    *lead, c = out.shape[: out.rank - 1 - rows]
    oh, ow = out.shape[-1 - rows] if rows else 1, out.shape[-1]
    group = Group(name, "window", op, channel_dim=len(lead))
    group.dynamic_batch = _DYNAMIC in out.shape
    shared = _input_shared_by_channels(op, len(lead))
    # A strided row's horizontal taps: one step, one read of the row. Not
    # for a dense or grouped convolution: its row read serves all the tile's
    # channels, so loads are few, and a shared read's taps past its first
    # register take two permutes each (measured: ResNet's 7x7 stride-2 stem
    # 1.20 -> 1.28 of ONNX Runtime, 1.7x the shuffles per FMA).
    tap = None if shared else row_tap_loop(op)
    row_taps = (loops[tap[0]], tap[1]) if tap else (1, 1)
    t = group.tiles = window_tiles(target, c, oh, ow, eb, shared, row_taps)
    ones = [1] * len(lead)
    group.par = [*ones, t.fc, *[t.ohc] * rows, 0]
    group.reg = [*ones, t.mr, *[t.rows] * rows, t.nr]
    group.red = [0] * out.rank + [1] * (len(loops) - out.rank)
    if tap:
        group.red[tap[0]] = 0  # the taps: one step, unrolled
    # Vector sizes over the root's loops, for its tiles' generics (the root
    # itself is gone by then).
    group.vector_tiles = loop_order(op, group.reg, fill=1)
    fused_producers_and_consumers(group)
    _fuse_bias_broadcast(group)
    group.flops = 2 * int(np.prod(loops))
    sizes = [[1 if d == _DYNAMIC else d for d in t.shape] for t in operands]
    group.bytes_moved = eb * sum(int(np.prod(shape)) for shape in sizes)
    return group


def _input_shared_by_channels(op: ir.Operation, channel: int) -> bool:
    """The input (operand 0) does not follow the loop of result dim
    ``channel``: every channel of a register tile reads the same input row
    (a dense or grouped convolution, not a pooling or depthwise one)."""
    maps = _maps(op)
    loop = ir.AffineDimExpr(maps[-1].results[channel]).position
    return not any(_uses_dim(expr, loop) for expr in maps[0].results)


def _uses_dim(expr: ir.AffineExpr, dim: int) -> bool:
    if isinstance(expr, ir.AffineDimExpr):
        return expr.position == dim
    if isinstance(expr, ir.AffineBinaryExpr):
        return _uses_dim(expr.lhs, dim) or _uses_dim(expr.rhs, dim)
    return False


def _fuse_bias_broadcast(group: Group) -> None:
    """A convolution's bias broadcast into its init joins the nest like a
    fill: the accumulators start from the bias vectors."""
    init = group.root.operands[-1]
    if group.fill is not None or not isinstance(init, ir.OpResult):
        return
    if init.owner.name == "linalg.broadcast" and len(list(init.uses)) == 1:
        group.fill = init.owner


def _iteration_shape(op: ir.Operation) -> list[int] | None:
    """Static loop bounds of a linalg op; None when some are unknown."""
    if op.name != "linalg.generic":
        ttype = tensor_type(op.results[0])
        return list(ttype.shape) if ttype else None  # fill, copy, transpose: the result
    if any(tensor_type(operand) is None for operand in op.operands):
        return None  # a scalar or dynamic operand
    shape = static_loop_sizes(op)
    return shape if shape and all(shape) else None


_EMPTY = "an empty tensor: nothing to compute"


def has_empty_tensor(op: ir.Operation) -> bool:
    """An operand or result with a zero-size dimension (K = 0, no channels, batch 0)."""
    values = [*op.operands, *op.results]
    return any(0 in t.shape for t in map(tensor_type, values) if t is not None)


def _without_tiles(op: ir.Operation) -> str:
    """Why ``op`` has no loops to tile (``_iteration_shape`` found none): the
    refusal names the case, so that a fallback list can tell a one-element
    op from a dynamic one."""
    result = tensor_type(op.results[0])
    if result is not None and result.rank == 0:
        return "a 0-d result (one element): no loops to tile"
    if has_empty_tensor(op):
        return _EMPTY
    if any(not isinstance(v.type, ir.ShapedType) for v in op.operands):
        return "a scalar (not tensor) operand: not planned"
    return "dynamic shapes"


# A broadcast left alone (a bias broadcast no window nest took) is a vector
# group over its result like a copy.
_VECTOR_OPS = (
    "linalg.fill",
    "linalg.copy",
    "linalg.transpose",
    "linalg.broadcast",
    "linalg.generic",
)


def _dynamic_rows_shape(op: ir.Operation) -> list[int] | str:
    """The loop sizes of an op with dynamic dims (``lowerline.compile(...,
    dynamic=...)``): outer parallel ones counted as 1 (tiled by 1, their
    tiles are static), a dynamic innermost dim kept dynamic (tiled in
    vectors, the partial last one peeled, or reduced in chunks). Else why
    it is not tiled."""
    if not op.results or any(ranked_type(r) is None for r in op.results):
        return "no tensor result"
    sizes = loop_sizes(op)
    if sizes is None or not sizes:
        return "dynamic shapes"
    iterators = _iterators(op) if op.name == "linalg.generic" else ["parallel"] * len(sizes)
    outer = [i for i, size in enumerate(sizes[:-1]) if size == _DYNAMIC]
    if any(iterators[i] != "parallel" for i in outer):
        return "dynamic shapes other than outer parallel dims and the innermost dim"
    return [1 if i in outer else size for i, size in enumerate(sizes)]


def _vector_group(op: ir.Operation, name: str, target: CpuTarget) -> Group | str:
    # A dynamic result, or a dynamic operand (a row reduced to a static
    # result: layer norm's statistics over a dynamic innermost dim).
    dynamic_rows = bool(op.results) and any(_is_dynamic(v) for v in [*op.results, *op.operands])
    if dynamic_rows and op.name in _VECTOR_OPS:
        found = _dynamic_rows_shape(op)
        if isinstance(found, str):
            return found
        shape: list[int] | None = found
    elif not op.results or any(tensor_type(r) is None for r in op.results):
        return "no static tensor result"
    else:
        shape = _iteration_shape(op)
    eb = element_bytes(op) or 4
    if op.name not in _VECTOR_OPS:
        return "not an elementwise, reduction, fill, copy, transpose or broadcast op"
    if has_empty_tensor(op):
        return _EMPTY
    if not shape:
        return _without_tiles(op)
    iterators = _iterators(op) if op.name == "linalg.generic" else ["parallel"] * len(shape)
    tiles = [1] * len(shape)
    last = len(shape) - 1
    if iterators[last] == "parallel":
        tile = vector_tile if "reduction" in iterators else elementwise_tile
        tiles[last] = tile(_planned(shape[last]), target, eb)
        # Reductions over outer dims stay whole vectors along the inner one.
        _transpose_block(op, shape, tiles)
    else:
        # Row reductions (softmax, layernorm): one row at a time.
        tiles = [1 if it == "parallel" else 0 for it in iterators]
    group = Group(name, "vector", op, vector_tiles=tiles)
    if _DYNAMIC in shape:
        # A dynamic innermost dim: rows of 1 on one thread, the row in
        # vectors (its partial last one peeled) or reduced in chunks.
        # Reduced in chunks of one register: a dynamic row may be short
        # (attention over 17 keys), and a chunk of several vectors would
        # run it all as the masked partial last chunk, its partial results
        # in memory (measured: the encoder at 17 keys 1.15x slower than with
        # one register). A long row's adds then wait on each other's latency.
        group.chunks = _dynamic_row_chunks(op, iterators, lanes(target, eb))
        if not group.chunks and iterators[last] != "parallel":
            return _NO_CHUNKS
        group.tail_vector = _tail_vector(tiles, target, eb)
        _multiply_by_row_reciprocals(op)
        return group
    if dynamic_rows:
        group.par = _dynamic_parallel_rows(op, shape, target)
    else:
        group.par = _parallel_rows(shape, iterators, target)
    reduces = "reduction" in iterators
    if reduces and group.par and group.par[last]:
        # Columns across the cores: in whole vector tiles, or (fewer columns
        # than a vector per core) not at all: the rows are split instead.
        split = column_split(shape, iterators, target, eb)
        group.par = split[0] if split else []
        tiles[last] = split[1] if split else tiles[last]
    group.order = interchange(iterators, tiles) if reduces else []
    chunk = reduction_chunk(target, eb)
    group.chunks = reduction_chunks(op, shape, iterators, chunk) or plane_chunks(
        op, shape, iterators, lanes(target, eb), chunk
    )
    if reduces and not group.par and not dynamic_rows:
        group.threads = reduction_threads(op, shape, iterators, group.chunks or tiles, target)
    return group


_VIEWS = ("tensor.expand_shape", "tensor.collapse_shape", "tensor.cast")


def _through_views(value: ir.Value) -> ir.Operation | None:
    """The op that computes ``value``, looking through reshapes and casts."""
    owner = value.owner
    while not isinstance(owner, ir.Block) and owner.name in _VIEWS:
        owner = owner.operands[0].owner
    return None if isinstance(owner, ir.Block) else owner


def _multiply_by_row_reciprocals(op: ir.Operation) -> int:
    """An elementwise op over a dynamic row that divides by a row's
    reduction (softmax's ``exp / sum``) multiplies by its reciprocal, as a
    static row kernel's last op does (``multiply_by_reciprocals``): one
    division per row, hoisted out of the row's vector loop, instead of one
    per vector. Only divisors that a reduction computed: a user's division
    by another tensor keeps its exact rounding. Returns the count."""
    if op.name != "linalg.generic" or any(it != "parallel" for it in _iterators(op)):
        return 0
    inputs = len(op.operands) - len(op.results)
    body = op.regions[0].blocks[0]
    for inner in body.operations:
        if inner.name != "arith.divf":
            continue
        divisor = inner.operands[1]
        if not isinstance(divisor, ir.BlockArgument) or divisor.arg_number >= inputs:
            return 0
        producer = _through_views(op.operands[divisor.arg_number])
        if producer is None or not is_linalg(producer):
            return 0
        if "reduction" not in _iterators(producer):
            return 0
    return multiply_by_reciprocals(op, len(_iterators(op)) - 1)


def _tail_vector(tiles: list[int], target: CpuTarget, eb: int) -> int:
    """The vectors a dynamic innermost dim's partial last tile of
    ``tiles[-1]`` elements is split into (``Group.tail_vector``): one
    register's lanes, where the tile holds several (a row of 17 then runs
    two register-wide steps, not a 64-lane masked tile); 0 for a reduced
    innermost dim (its chunks are one register already)."""
    vector = lanes(target, eb)
    return vector if tiles[-1] > vector else 0


# Sides of the square tiles of a transpose that moves the innermost dim, largest first.
TRANSPOSE_BLOCKS = (16, 8)


def _transpose_block(op: ir.Operation, shape: list[int], tiles: list[int]) -> None:
    """A transpose that moves the input's innermost dim (NCHW <-> NHWC) in
    square blocks: rows of the input read whole, transposed in registers
    (``vector.transpose``, shuffles), written as rows of the output, instead
    of a strided gather of single elements per output vector. Only blocks
    that divide both dims: a masked partial block is read element by element.
    A dynamic innermost output dim (attention's ``K^T`` over a dynamic
    sequence) takes blocks too (``_blocks_dynamic_dim``)."""
    if op.name != "linalg.transpose":
        return
    permutation = list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))
    last = len(permutation) - 1
    moved = permutation.index(last)
    if moved == last or shape[moved] == _DYNAMIC:
        return
    for block in TRANSPOSE_BLOCKS:
        if shape[moved] % block == 0 and _blocks_dynamic_dim(shape[last], block):
            tiles[moved] = tiles[last] = block
            return


def _blocks_dynamic_dim(size: int, block: int) -> bool:
    """Whether a transpose's output innermost dim of ``size`` is tiled in
    square blocks of ``block``: a static one that the block divides, or a
    dynamic one. A dynamic dim's full blocks are static (its partial last
    block is peeled, ``_peel_columns``), so only that last block is read
    element by element, where without blocks every element is (measured,
    lowerline-time-kernels, the ``2x4x16x?`` key transpose of an encoder
    on a loaded host: 1.5 -> 0.9 us at sequence 17; whole blocks alone
    cost about what gathers do: 1.35 -> 1.5 us at 64, 2.6 at 128 both)."""
    return size == _DYNAMIC or size % block == 0


def _dynamic_parallel_rows(op: ir.Operation, shape: list[int], target: CpuTarget) -> list[int]:
    """forall tile sizes over the first dynamic (outer parallel) loop of an
    op over dynamic rows: ``ceildiv(rows, tile)`` tiles, each with enough
    rows to hold a core's share of the work static ops are split at
    (``PARALLEL_MIN_ELEMENTS``), so that few rows stay one tile on one
    thread and many are spread over the cores. [] for one core, and where
    the declared range's maximum (``loop_maximum``) leaves the rows too few
    to be worth threads or never more than one tile."""
    sizes = loop_sizes(op)
    if target.cores < 2 or sizes is None or _DYNAMIC not in sizes:
        return []
    dim = sizes.index(_DYNAMIC)
    per_row = int(np.prod(shape))  # the dynamic loops counted as 1
    tile = max(1, -(-PARALLEL_MIN_ELEMENTS // (target.cores * per_row)))
    most = loop_maximum(op, dim)
    if most is not None and (most <= tile or not worth_threads([most, per_row], target)):
        return []
    found = [0] * len(shape)
    found[dim] = tile
    return found


def _is_dynamic(value: ir.Value) -> bool:
    found = ranked_type(value)
    return found is not None and not found.has_static_shape


_NO_CHUNKS = "a reduction along a dynamic innermost dim that cannot be split into chunks"


def _dynamic_row_chunks(op: ir.Operation, iterators: list[str], chunk: int) -> list[int]:
    """Chunks of a reduction along a dynamic innermost dim (softmax's max and
    sum over a dynamic sequence): only outer reduced dims of size 1 are
    stepped; [] for a parallel innermost dim or an output that cannot be
    made a projection of the loops."""
    if iterators[-1] != "reduction" or "reduction" in iterators[:-1]:
        return []
    if op.name != "linalg.generic" or not drop_constant_output_dims(op):
        return []
    return [0] * (len(iterators) - 1) + [chunk]


def _parallel_rows(shape: list[int], iterators: list[str], target: CpuTarget) -> list[int]:
    """forall tile sizes splitting the outermost parallel loop over the cores;
    [] (no forall) for one core or a small op."""
    if not worth_threads(shape, target):
        return []
    for dim, (size, kind) in enumerate(zip(shape, iterators, strict=True)):
        if kind == "parallel" and size >= target.cores:
            sizes = [0] * len(shape)
            sizes[dim] = -(-size // target.cores)
            return sizes
    return []


def unshare_root_fills(func: ir.Operation) -> None:
    """Give every root whose init is a fill shared with other ops (CSE merges
    equal fills: the two convolutions of a ResNet block) a fill of its own,
    so that each can fuse it into its register tiles (zero accumulators)
    instead of reading back a zero-filled buffer. A fill left without users
    is erased."""
    fills = [
        op.operation
        for op in func.regions[0].blocks[0].operations
        if op.operation.name == "linalg.fill" and len(list(op.operation.results[0].uses)) > 1
    ]
    for fill in fills:
        for use in list(fill.results[0].uses):
            root = use.owner
            if root.name in _ROOTS and use.operand_number == len(root.operands) - 1:
                dest = fill.operands[1]
                with ir.InsertionPoint(root):
                    if not isinstance(dest.owner, ir.Block) and dest.owner.name == "tensor.empty":
                        # An empty of its own: the fill is fused into the register
                        # tiles, where a destination shared with the epilogue's
                        # would make bufferization copy every tile.
                        dest = dest.owner.clone().results[0]
                    clone = fill.clone()
                clone.operands[1] = dest
                root.operands[use.operand_number] = clone.results[0]
        if not list(fill.results[0].uses):
            fill.erase()


# Ops on tensors only (no memory effects): erasable once nothing reads them.
_PURE_TENSOR_OPS = (
    "tensor.empty",
    "tensor.extract_slice",
    "tensor.insert_slice",
    "tensor.pad",
    "bufferization.alloc_tensor",
)


def erase_dead_tensor_ops(func: ir.Operation) -> None:
    """Erase the function's tensor ops whose results nothing reads (a pad
    whose reader a rewrite replaced, after lowerline-decompose-pad made it
    fills and a copy into slices of a buffer). Planned, such an op got a
    group of its own, and an earlier group's script (its canonicalization)
    erased it before that group's own script was built: the script read a
    root that was gone. Users come after their producers in the block, so
    one sweep from the end erases whole dead chains."""
    block = func.regions[0].blocks[0]
    for op in reversed([o.operation for o in block.operations]):
        # A linalg op with results works on tensors (on memrefs it has none).
        if not (is_linalg(op) or op.name in _PURE_TENSOR_OPS) or not op.results:
            continue
        if not any(list(r.uses) for r in op.results):
            op.erase()


def plan_function(func: ir.Operation, target: CpuTarget, plan: Plan, counter: list[int]) -> None:
    erase_dead_tensor_ops(func)
    unshare_root_fills(func)
    # AMX contractions become tiles on buffers (lowerline-amx-tiles).
    ops = [
        op.operation
        for op in func.regions[0].blocks[0].operations
        if is_linalg(op.operation) and not AMX_TILES.has(op.operation)
    ]
    taken: list[ir.Operation] = []
    for op in ops:
        if op.name not in _ROOTS:
            continue
        if has_empty_tensor(op):
            # No iteration to plan (and tile sizes would divide by the size):
            # its loops run zero times; a fill and epilogue get groups of their own.
            _add_group(plan, op, _EMPTY, counter)
            continue
        build = _root_builder(op)
        found = _add_group(plan, op, build(op, f"g{counter[0]}", target), counter)
        if found:
            _drop_taken_consumers(found, taken)
            taken.extend(x for x in [found.root, found.fill, *found.consumers] if x is not None)
    taken += _plan_row_kernels(ops, taken, target, plan, counter)
    for op in ops:
        if op.name not in _ROOTS and not any(op == t for t in taken):
            _add_group(plan, op, _vector_group(op, f"g{counter[0]}", target), counter)


def _drop_taken_consumers(group: Group, taken: list[ir.Operation]) -> None:
    """End the group's epilogue before an op an earlier nest fused (an add
    of two convolutions' results, a ResNet block's projection shortcut)."""
    for index, consumer in enumerate(group.consumers):
        if any(consumer == t for t in taken):
            group.refuse(consumer, f"not fused into {group.name}: another nest fused it")
            group.consumers = group.consumers[:index]
            return


def _plan_row_kernels(
    ops: list[ir.Operation],
    taken: list[ir.Operation],
    target: CpuTarget,
    plan: Plan,
    counter: list[int],
) -> list[ir.Operation]:
    """Groups for the row kernels (lowerline.passes.tiling.row_kernels),
    last ops first; returns their members."""
    members: list[ir.Operation] = []
    for index in reversed(range(len(ops))):
        if any(ops[index] == t for t in [*taken, *members]):
            continue
        kernel = find_row_kernel(ops, index, [*taken, *members], target)
        if kernel is None:
            continue
        kernel.name = f"g{counter[0]}"
        group = Group(kernel.name, "row", kernel.last, consumers=kernel.members[:-1], row=kernel)
        _add_group(plan, kernel.last, group, counter)
        members += kernel.members
    return members


def _add_group(
    plan: Plan, op: ir.Operation, found: Group | str, counter: list[int]
) -> Group | None:
    """Record a planned group, or why ``op`` gets none."""
    if isinstance(found, str):
        plan.skipped.append(about(op, TileAndFuse.flag, f"left as loops: {found}", FALLBACK))
        return None
    counter[0] += 1
    plan.groups.append(found)
    return found


def ints(values: list[int]) -> str:
    return "[" + ", ".join(map(str, values)) + "]"


def match(var: str, tag: str, where: str = "%root", attr: Attr[str] = OP_TAG) -> str:
    return (
        f"  {var} = transform.structured.match attributes{{{attr.entry(tag)}}} in {where}"
        f" : ({ANY}) -> {ANY}\n"
    )


def _tile_for(
    var: str, target: str, sizes: list[int], extra: str = "", op: str = "tile_using_for"
) -> str:
    """``tile_using_for`` (or ``fuse``: tiling that also fuses producers) of
    ``target``; the loops are ``{var}_loop`` or ``{var}_loops#i``."""
    loops = sum(1 for s in sizes if s)
    outs = ", ".join([ANY] * (loops + 1))
    names = f"{var}, {var}_loops:{loops}" if loops > 1 else f"{var}, {var}_loop"
    if loops == 0:
        return f"  {var} = transform.cast {target} : {ANY} to {ANY}\n"
    return (
        f"  {names} = transform.structured.{op} {target} "
        f"tile_sizes {ints(sizes)}{extra} : ({ANY}) -> ({outs})\n"
    )


def fuse_into(
    ops: list[ir.Operation], container: str, prefix: str, scope: str, resolve: str = ""
) -> str:
    """fuse_into_containing_op for each op (consumers first, then producers),
    matched inside ``scope`` (the copies outside it are dead by then).
    ``resolve`` (script lines, e.g. ``_RESOLVE_DIMS``) runs after each op is
    fused: a fused op of a dynamic shape reads its loop bounds through
    ``tensor.dim`` of its init, a use of the next producer that is not a
    slice, which fusion would serve by cloning that producer whole."""
    text = ""
    for index, op in enumerate(ops):
        var = f"%{prefix}{index}"
        text += match(var, _tag_of(op), scope)
        text += (
            f"  {var}_fused, {var}_into = transform.structured."
            f"fuse_into_containing_op {var} into {container} : ({ANY}, {ANY}) -> ({ANY}, {ANY})\n"
        ) + resolve
    return text


def nest_members(g: Group) -> list[ir.Operation]:
    """The ops fused into the group's forall after its last op, outermost
    first: the consumers before the last, the root, the fill."""
    inner = [*reversed(g.consumers[:-1]), g.root] if g.consumers else []
    if g.fill:
        inner.append(g.fill)
    return inner


def forall_over_last(g: Group, mapping: str = "") -> str:
    """Script lines tiling the group's last op into ``%forall`` over its
    parallel tiles (``g.par``), with an optional ``(mapping = ...)``."""
    mapped = f" (mapping = {mapping})" if mapping else ""
    return match("%last", g.name, attr=LAST) + (
        f"  %tiled, %forall = transform.structured.tile_using_forall %last tile_sizes "
        f"{ints(g.par)}{mapped} : ({ANY}) -> ({ANY}, {ANY})\n"
    )


def contraction_script(
    g: Group, fill_reg: list[int] | None = None, columns: int | None = None
) -> str:
    """forall over parallel tiles; in each, a loop nest over register tiles
    holding the fill, the root (reduction loops of step 1: rank-1 updates) and
    the consumers, so the epilogue runs on the accumulators before they are
    stored."""
    if g.row_pieces or g.dynamic_rows:
        # A dynamic M: static row pieces, also where N or K is dynamic too.
        return dynamic_rows_script(g)
    inner = nest_members(g)
    text = forall_over_last(g)
    resolve = _RESOLVE_DIMS if g.dynamic_batch else ""
    if g.dynamic_batch:
        text = _FUNCS + text + _RESOLVE_DIMS
    text += fuse_into(inner, "%forall", "p", "%root", resolve)
    text += match("%inlast", g.name, "%forall", attr=LAST)
    rank = len(g.reg)
    sizes = g.reg if g.consumers else g.reg + [0] * (len(g.red) - rank)
    fill_in_registers = g.fill and not g.consumers and g.inputs_are_leaves
    if fill_in_registers:
        # Tile and fuse the fill through the loops' destination: each register
        # tile starts from zero vectors instead of reading back a zero-filled C
        # (a memset pass over C per call). structured.fuse also pulls in the
        # producers of A and B: only where those are arguments or constants.
        text += _tile_for("%reg", "%inlast", sizes, op="fuse")
    else:
        text += _tile_for("%reg", "%inlast", sizes)
    loops = sum(1 for s in sizes if s)
    innermost = f"%reg_loops#{loops - 1}" if loops > 1 else "%reg_loop"
    if g.consumers:
        text += fuse_into(inner, innermost, "q", "%forall")
    elif g.fill and not fill_in_registers:
        # The fill is the register loops' init, not read inside them: tile it alone.
        text += match("%fillin", f"{g.name}.fill", "%forall")
        text += _tile_for("%fillreg", "%fillin", g.reg if fill_reg is None else fill_reg)
    scope = innermost
    # The loop over output columns: the innermost unless ``columns`` says
    # which register loop it is.
    column_loop = innermost if columns is None or loops == 1 else f"%reg_loops#{columns}"
    left = g.kind in ("conv", "window") and g.conv_plan.channels_left
    if left:
        channel_loop = sum(1 for s in sizes[: g.channel_dim] if s)
        text += _peel_partial_channels(g, f"%reg_loops#{channel_loop}", len(sizes))
        column_loop, scope = "%full_ch_cols", "%forall"
    if g.kind in ("conv", "window") and g.conv_plan.masked:
        # Peel the partial column tile: the full tiles get static shapes, so
        # their accumulators stay in registers (masked ones are not hoisted).
        text += f"  %inner = transform.cast {column_loop} : {ANY} to {ANY}\n"
        text += peel("%inner", "%full", "%partial")
        if left:
            text += peel("%part_ch_cols", "%part_full", "%part_partial")
        scope = "%forall"
        # The copies fused into the register loops are dead: drop them first.
        text += f"  transform.apply_dce to %forall : {ANY}\n"
        # The full tile's one iteration is folded away and its tensor.cast to
        # the loop's dynamic tile type folded into the convolution: else the
        # k loops carry a dynamic tile and its accumulators are not hoisted
        # (measured: a load and a store per FMA).
        text += canonicalize("%forall")
        text += _split_conv_tail(g)
    elif left:
        text += canonicalize("%forall")
    elif g.kind in ("matmul", "batch_matmul") and g.cpu_plan.masked and loops >= 2:
        text += _peel_partial_matmul_tiles(g, f"%reg_loops#{loops - 2}", column_loop)
        scope = "%forall"
    text += match("%mm", f"{g.name}.root", scope)
    text += _tile_for("%k", "%mm", g.red)
    return text


def _peel_partial_channels(g: Group, channel_loop: str, rank: int) -> str:
    """Peel the partial channel tile of a convolution whose register tile's
    channels ``mr`` do not divide its output channels (``channels_left``:
    53 in tiles of 13 leaves 1): the full tiles keep a static ``mr``; the
    channels left (in the last parallel tile) are tiled one at a time,
    static too (a tile of a dynamic channel count would be masked and not
    become a matmul). Defines ``%full_ch_cols`` and ``%part_ch_cols``, the
    column loops of both parts, for the column peel."""
    text = f"  %channels = transform.cast {channel_loop} : {ANY} to {ANY}\n"
    text += peel("%channels", "%full_ch", "%part_ch")
    sizes = [0] * rank
    sizes[g.channel_dim] = 1
    text += _FUNCS + _tile_level(g, "%part_ch", sizes, "%one")
    # The dynamic copies the one-channel tiles replaced are dead.
    text += f"  transform.apply_dce to %forall : {ANY}\n"
    text += match("%full_ch_last", g.name, "%full_ch", attr=LAST)
    text += match("%part_ch_last", g.name, "%part_ch", attr=LAST)
    # The column loop encloses a full tile directly; a one-channel tile,
    # through its channel loop.
    return text + (
        f"  %full_ch_cols = transform.get_parent_op %full_ch_last"
        f' {{op_name = "scf.for"}} : ({ANY}) -> {ANY}\n'
        f"  %part_ch_cols = transform.get_parent_op %part_ch_last"
        f' {{op_name = "scf.for", nth_parent = 2}} : ({ANY}) -> {ANY}\n'
    )


def _peel_partial_matmul_tiles(g: Group, row_loop: str, column_loop: str) -> str:
    """Peel the partial register tiles of a matmul whose parallel tile the
    register tile does not divide (196 columns in tiles of 32, 197 rows in
    tiles of 8): the full tiles get static shapes, so their accumulators are
    hoisted out of the k loop into registers; only the partial ones are
    masked (measured: a masked tile loads and stores its accumulators at
    every step of k)."""
    rows, columns = g.par[-2:]
    mr, nr = g.reg[-2:]
    text = ""
    # The inner loop first: peeling the outer one clones what it holds.
    if columns % nr or g.dynamic_columns:
        text += f"  %inner = transform.cast {column_loop} : {ANY} to {ANY}\n"
        text += peel("%inner", "%full_columns", "%partial_columns")
    if rows % mr or g.dynamic_rows:
        text += f"  %outer = transform.cast {row_loop} : {ANY} to {ANY}\n"
        text += peel("%outer", "%full_rows", "%partial_rows")
    # The copies fused into the loops are dead; the full tiles' one-iteration
    # folds and casts to the loops' dynamic tile types are folded away.
    text += f"  transform.apply_dce to %forall : {ANY}\n"
    return text + canonicalize("%forall")


# Script text: every tensor.dim of a linalg result read through its operands
# (its init's sizes). Tiling over a dynamic dim bounds its loops with a
# tensor.dim of the tiled op's operand, the result of the producer about to
# be fused: fuse_into_containing_op then finds no producer it may move into
# the loop ("could not find next producer to fuse into container").
_FUNCS = f'  %funcs = transform.structured.match ops{{["func.func"]}} in %root : ({ANY}) -> {ANY}\n'
_RESOLVE_DIMS = f"""  transform.apply_patterns to %funcs {{
    transform.apply_patterns.memref.resolve_ranked_shaped_type_result_dims
  }} : {ANY}
"""


def dynamic_rows_script(g: Group) -> str:
    """contraction_script for a matmul whose M is dynamic: a forall over
    ``ceildiv(M, mc)`` row tiles with the fill and the epilogue fused; in
    each, full ``mr``-row register tiles, then the remaining rows (fewer
    than ``mr``) in one static piece of their count (``mr = 8``: one of 7,
    6, ..., 1 rows), their columns widened to keep the register tile's
    accumulator count (``row_piece_widths``). Every register tile has a
    static shape: its accumulators stay in registers through the k loop and
    no masks are needed (a masked tile loads and stores its accumulators at
    every step of k: measured 4x slower than static at batch 1). With a
    dynamic N too (attention's ``QK^T``), each level's partial last column
    tile is peeled and masked (``_column_tiles``) and the pieces are not
    widened; ``lowerline-vectorize`` gives a piece's rows their own count."""
    text = _FUNCS + forall_over_last(g) + _RESOLVE_DIMS
    text += fuse_into(nest_members(g), "%forall", "p", "%root")
    mr, nr = g.reg[-2:]
    if mr == 1:
        text += _column_tiles(g, "%forall", nr, "%cols")
    else:
        text += _row_tiles(g, "%forall", mr, "%rows")
        text += _peel_static("%rows_loop", "%full_rows", "%rest0")
        text += _column_tiles(g, "%full_rows", nr, "%cols")
        scope, left = "%rest0", mr
        for index, (rows, width) in enumerate(row_piece_widths(g)):
            # The rows left (fewer than ``left``) tiled once by ``left``: one
            # iteration, whose row count min(left, rows - i) is one value
            # the piece's peeling simplifies against. Against the enclosing
            # loop's index it does not: the piece would stay dynamic, masked.
            text += _row_tiles(g, scope, left, f"%left{index}")
            text += _row_tiles(g, f"%left{index}_loop", rows, f"%piece{index}")
            loop = f"%piece{index}_loop"
            if rows > 1:
                # At most one piece of ``rows`` fits: the rest is smaller.
                text += _peel_static(loop, f"%whole{index}", f"%rest{index + 1}")
                loop, scope = f"%whole{index}", f"%rest{index + 1}"
            text += _column_tiles(g, loop, width, f"%pcols{index}")
            if rows & (rows - 1):
                text += _exact_rows(loop, f"%exact{index}")
            left = rows
    if g.fill and not g.consumers and not _fill_in_registers(g):
        # The fill is the row loops' init, not read inside them: rows of 1, static.
        text += match("%fillin", f"{g.name}.fill", "%forall")
        text += _tile_for("%fillreg", "%fillin", [0] * (len(g.reg) - 2) + [1, nr])
    # The copies fused into the loops are dead; the pieces' one-iteration
    # loops fold, their tiles' sizes static.
    text += f"  transform.apply_dce to %forall : {ANY}\n" + canonicalize("%forall")
    text += match("%mm", f"{g.name}.root", "%forall")
    return text + _tile_for("%k", "%mm", g.red)


def _exact_rows(loop: str, var: str) -> str:
    """Mark the tiles in ``loop``, a row piece of a row count that is not a
    power of two, to be vectorized at that count (``EXACT_ROWS``): their rows
    are whole vectors, so 7 rows need no 8th masked one."""
    return (
        f"  {var} = transform.structured.match interface{{LinalgOp}} in {loop} : ({ANY}) -> {ANY}\n"
        f'  transform.annotate {var} "{EXACT_ROWS.name}" : {ANY}\n'
    )


def _peel_static(loop: str, first: str, rest: str) -> str:
    """``peel`` of a row loop, its full iterations' tiles then given their
    static types: else fusing into their column loops meets a dynamic slice
    of a static tile and falls back to recomputing the whole producer."""
    return peel(loop, first, rest) + canonicalize(first)


def _fill_in_registers(g: Group) -> bool:
    """The fill is tiled with the root's register tiles (``structured.fuse``
    through the loops' destination): each tile starts from zero vectors. Only
    where that fusion pulls in nothing else (A and B are leaves)."""
    return bool(g.fill) and not g.consumers and g.inputs_are_leaves


def row_piece_widths(g: Group) -> list[tuple[int, int]]:
    """(rows, columns) of the static register tiles that cover a dynamic
    remainder of fewer than ``mr`` rows: one piece of each height below
    ``mr``, largest first, so that a remainder of r rows runs exactly one
    piece, of r rows, which reads B once (halving powers of two ran 7 rows as
    4 + 2 + 1, three passes over B: 2x the static time at batch 7). Each
    piece has ``mr / rows`` times the columns where they divide the parallel
    tile (as many accumulators as a full tile: a 1-row piece of 2 vectors
    would wait on each FMA's latency), except from ``mr / 2`` rows up: those
    keep the register tile's width, at least half its accumulators, and so
    read its packed B (``lowerline-pack-weights``; measured, MLP 256-512-10
    at batch 4, 1 thread: 1.45-1.5x the static time as a 4x64 piece on the
    unpacked B, 1.0x as 4x32 on the packed one)."""
    mr, nr = g.reg[-2:]
    columns = g.par[-1]
    if g.dynamic_columns:
        # With a dynamic N (attention's QK^T) the pieces halve in powers of
        # two and keep the tile's width: widened, a piece's masked partial
        # column tile would be wider too, and lowerline-vectorize gives only
        # power-of-two row counts their own size next to a masked dim.
        return [(1 << b, nr) for b in reversed(range(mr.bit_length())) if 1 << b < mr]
    return [
        (rows, nr if 2 * rows >= mr else _widened(nr, columns, mr // rows))
        for rows in range(mr - 1, 0, -1)
    ]


def _widened(nr: int, columns: int, most: int) -> int:
    """The widest ``nr * 2**j`` up to ``nr * most`` that divides ``columns``
    (``nr`` itself a power of two): a power-of-two count of register widths
    (LLVM splits a 96-lane vector lane by lane: measured 2x slower than
    static on the encoder's 2-row remainders)."""
    width = nr
    if nr & (nr - 1):  # not whole power-of-two vectors (10 columns): kept
        return nr
    while width * 2 <= nr * most and columns % (width * 2) == 0:
        width *= 2
    return width


def _level_sizes(g: Group, rows: int, columns: int) -> list[int]:
    """Tile sizes over the nest's last op's loops: ``rows`` x ``columns``
    (0: untiled), its batch dims (already 1 in the forall) and k untiled."""
    sizes = [0] * (len(g.reg) - 2) + [rows, columns]
    return sizes if g.consumers else sizes + [0] * (len(g.red) - len(g.reg))


def _tile_level(g: Group, scope: str, sizes: list[int], var: str) -> str:
    """The nest's last op in ``scope`` tiled by ``sizes`` into ``{var}_loop``,
    the other members fused into it."""
    text = match(f"{var}_last", g.name, scope, attr=LAST)
    if _fill_in_registers(g):
        return text + _tile_for(var, f"{var}_last", sizes, op="fuse")
    text += _tile_for(var, f"{var}_last", sizes) + _RESOLVE_DIMS
    if not g.consumers:
        return text
    return text + fuse_into(nest_members(g), f"{var}_loop", var[1:], scope)


def _row_tiles(g: Group, scope: str, rows: int, var: str) -> str:
    return _tile_level(g, scope, _level_sizes(g, rows, 0), var)


def _column_tiles(g: Group, scope: str, width: int, var: str) -> str:
    """Register tiles of ``width`` columns; a partial last one (the parallel
    tile's columns not a multiple of ``width``, or dynamic) peeled off, masked."""
    text = _tile_level(g, scope, _level_sizes(g, 0, width), var)
    if g.par[-1] % width == 0 and not g.dynamic_columns:
        return text
    return text + peel(f"{var}_loop", f"{var}_full", f"{var}_partial")


def loop_order(op: ir.Operation, sizes: list[int], fill: int = 0) -> list[int]:
    """Tile sizes over ``op``'s result dims as sizes over its loops (the
    loops no result dim follows get ``fill``)."""
    maps = _maps(op)
    found = [fill] * maps[-1].n_dims
    for size, expr in zip(sizes, maps[-1].results, strict=True):
        found[ir.AffineDimExpr(expr).position] = size
    return found


def window_script(g: Group) -> str:
    """contraction_script with the tiles in the order of the loops they tile:
    without consumers the nest's last op is the root, whose loops need not
    follow its result dims (a depthwise convolution's are n, oh, ow, c)."""
    if g.consumers:
        return contraction_script(g)
    reg = loop_order(g.root, g.reg)
    # The column loop (of the last result dim) need not be the innermost.
    column = loop_order(g.root, [0] * (len(g.reg) - 1) + [1]).index(1)
    channel = loop_order(g.root, [int(d == g.channel_dim) for d in range(len(g.reg))]).index(1)
    ordered = dataclasses.replace(g, par=loop_order(g.root, g.par), reg=reg, channel_dim=channel)
    return contraction_script(ordered, fill_reg=g.reg, columns=sum(1 for s in reg[:column] if s))


def _split_conv_tail(g: Group) -> str:
    """Tile the peeled partial column tile into its power-of-two pieces
    (``ConvTiles.tail``), each then peeled to a static width of its own."""
    plan = g.conv_plan
    if not plan.tail:
        return ""
    out = ir.RankedTensorType(g.root.results[0].type)
    tail_type = f"tensor<1x{plan.mr}x1x{sum(plan.tail)}x{out.element_type}>"
    text = (
        f'  %tail0 = transform.structured.match ops{{["{g.root.name}"]}} '
        f"filter_result_type = {tail_type} in %forall : ({ANY}) -> {ANY}\n"
    )
    for index, size in enumerate(plan.tail[:-1]):
        text += (
            f"  %piece{index}, %pieces{index} = transform.structured.tile_using_for "
            f"%tail{index} tile_sizes [0, 0, 0, {size}] : ({ANY}) -> ({ANY}, {ANY})\n"
        )
        text += peel(f"%pieces{index}", f"%first{index}", f"%rest{index}")
        text += (
            f'  %tail{index + 1} = transform.structured.match ops{{["{g.root.name}"]}} '
            f"in %rest{index} : ({ANY}) -> {ANY}\n"
        )
    # The pieces' one-iteration loops folded, their widths static.
    return text + canonicalize("%forall")


def vector_script(g: Group) -> str:
    """Rows of vector tiles; for a large op, a forall over the cores first
    (or, for a reduction, its reduced loop split across them)."""
    text = match("%op", f"{g.name}.root")
    order = f" interchange = {ints(g.order)}" if g.order else ""
    if g.threads:
        text = split_script(text, g.threads, g.name)
        text += _tile_for("%t", "%part", g.vector_tiles, order)
    elif g.par:
        text += (
            f"  %rows, %forall = transform.structured.tile_using_forall %op tile_sizes "
            f"{ints(g.par)} : ({ANY}) -> ({ANY}, {ANY})\n"
        )
        text += _tile_for("%t", "%rows", g.vector_tiles, order)
    else:
        text += _tile_for("%t", "%op", g.vector_tiles, order)
    return text + _peel_columns(g)


def _peel_columns(g: Group) -> str:
    """Script lines peeling the partial last column tile: the full tiles
    are unmasked; '' when the tiles divide. A reduction tiled columns
    outside (``g.order``) would select its lanes at every row; an
    elementwise op over static rows that are not whole tiles ran every tile
    as a masked step (exp of 64x50257 on one thread: 3.4-3.9 ms of CPU
    time masked, 0.6-0.8 ms peeled, eager 2.1 ms)."""
    shape = loop_sizes(g.root) or []
    last = len(shape) - 1
    tile = g.vector_tiles[last] if shape else 0
    dynamic = bool(shape) and shape[last] == _DYNAMIC
    ragged = dynamic or (bool(shape) and bool(tile) and shape[last] % tile != 0)
    if not tile or not ragged:
        return ""
    loops = [d for d in (g.order or range(len(shape))) if g.vector_tiles[d]]
    handle = "%t_loop" if len(loops) == 1 else f"%t_loops#{loops.index(last)}"
    text = f"  %columns = transform.cast {handle} : {ANY} to {ANY}\n"
    text += peel("%columns", "%full_columns", "%last_columns")
    if not dynamic:
        return text
    # The full tiles' sizes fold to the constant tile: static, unmasked.
    text += canonicalize("%full_columns")
    if not g.tail_vector:
        return text
    vectors = [1] * last + [g.tail_vector]
    return text + _vectors_of_tail("%last_columns", g.root.name, vectors, "%tv")


def _vectors_of_tail(tail: str, name: str, vectors: list[int], prefix: str) -> str:
    """Script text: the ``name`` op in the peeled partial last tile ``tail``
    of a dynamic innermost dim (fewer elements than a tile, a count known
    at run time) tiled by ``vectors`` along that dim, each piece a masked
    vector of one register. Else the tail is one masked tile of several
    vectors: a row of 17 in tiles of 64 runs four vectors' work for two.
    The pieces are not peeled in turn: the peeling's bound simplification
    does not see through the tail's own dynamic size (its pieces stayed
    dynamic), and a masked register-wide step costs about an unmasked one
    (AVX-512 masked loads and stores)."""
    sizes = [0] * (len(vectors) - 1) + [vectors[-1]]
    return (
        f'  {prefix}_op = transform.structured.match ops{{["{name}"]}} in {tail}'
        f" : ({ANY}) -> {ANY}\n"
        f"  {prefix}_tiled, {prefix}_loop = transform.structured.tile_using_for {prefix}_op "
        f"tile_sizes {ints(sizes)} : ({ANY}) -> ({ANY}, {ANY})\n"
        f"  {prefix}_sizes = transform.param.constant {VECTOR_SIZES.kind.text(vectors)}"
        " -> !transform.any_param\n"
        f'  transform.annotate {prefix}_tiled "{VECTOR_SIZES.name}" = {prefix}_sizes'
        f" : {ANY}, !transform.any_param\n"
    )


def _script(group: Group) -> str:
    if group.kind == "vector":
        return vector_script(group)
    if group.kind == "window":
        return window_script(group)
    return contraction_script(group)


def _tag_of(op: ir.Operation) -> str:
    return OP_TAG.require(op)


def _vector_sizes(group: Group, op: ir.Operation) -> list[int]:
    if group.kind == "vector":
        found = _iteration_shape(op) or _dynamic_rows_shape(op)
        if not isinstance(found, list):
            raise ValueError(f"{group.name}: a vector group of an op without static loops")
        shape = found
        tiles = zip(group.vector_tiles, shape, strict=True)
        # A dynamic reduced row: its chunks (split_rows) carry their own sizes.
        sizes = [size if tile == 0 else tile for tile, size in tiles]
        return [group.chunks[d] if s == _DYNAMIC else s for d, s in enumerate(sizes)]
    if op == group.root:
        return group.reg + [max(1, r) for r in group.red[len(group.reg) :]]
    return list(group.reg)


def _tag(group: Group) -> None:
    if group.row is not None:
        group.row.tag()
        return
    for op in [group.root, group.fill, *group.consumers]:
        if op is not None:
            VECTOR_SIZES.set(op, _vector_sizes(group, op))
    if group.kind != "vector":
        CONTRACT.set(group.root, True)
    tag_members(group)
    if group.kind != "vector":
        LAST.set(group.last, group.name)


def tag_members(group: Group) -> None:
    """Name the root, fill and consumers for the group's script (OP_TAG)."""
    OP_TAG.set(group.root, f"{group.name}.root")
    if group.fill is not None:
        OP_TAG.set(group.fill, f"{group.name}.fill")
    for index, consumer in enumerate(group.consumers):
        OP_TAG.set(consumer, f"{group.name}.c{index}")


def _drop_copies_read_for_sizes(module: ir.Operation, group: Group) -> None:
    """Erase the group's ops that only ``tensor.dim`` still reads: tiling
    over a dynamic dim reads the sizes of the ops it fused, which keeps their
    untiled originals alive. A destination-style op's result has its init's
    sizes, so the dims read the init instead (what canonicalization's
    dim-of-destination pattern does, needed here before the tiles are
    rewritten)."""
    prefix = f"{group.name}."

    def read_for_sizes_only(op: ir.Operation) -> bool:
        tag = OP_TAG.get(op)
        if tag is None or not tag.startswith(prefix) or len(op.results) != 1:
            return False
        uses = list(op.results[0].uses)
        return bool(uses) and all(use.owner.name == "tensor.dim" for use in uses)

    for op in ops_matching(module, read_for_sizes_only):
        for use in list(op.results[0].uses):
            use.owner.operands[0] = op.operands[len(op.operands) - 1]
        op.erase()


def _root_tiles(module: ir.Operation, group: Group) -> list[ir.Operation]:
    """The tiles of the group's root still in use (fused copies left behind have none)."""
    tag = f"{group.name}.root"
    name = group.seen[0].op  # the root's handle may be stale: its tiles replaced it

    def live_tile(op: ir.Operation) -> bool:
        tagged = op.name == name and OP_TAG.get(op) == tag
        return tagged and bool(list(op.results[0].uses))

    return ops_matching(module, live_tile)


def _windows_to_generics(module: ir.Operation, group: Group) -> str | None:
    """The group's window register tiles as elementwise generics
    (lowerline.passes.tiling.window_tiles), vectorized at the register tile
    along the loops they keep."""
    sizes = group.vector_tiles

    def mark(generic: ir.Operation, kept: list[int]) -> None:
        VECTOR_SIZES.set(generic, [sizes[d] for d in kept])

    tiles = _root_tiles(module, group)
    if not tiles:
        return "no register tile of it was found after tiling"
    left = [t for t in tiles if not unit_window_to_generic(t, mark)]
    if left:
        return f"{len(left)} window tile(s) were not elementwise after tiling"
    return None


def _convs_to_matmuls(module: ir.Operation, group: Group) -> str | None:
    """The group's conv register tiles as matmul tiles (lowerline.passes.tiling.conv_tiles)."""
    tiles = _root_tiles(module, group)
    t = group.conv_plan

    def mark(matmul: ir.Operation) -> None:
        VECTOR_SIZES.set(matmul, [t.mr, t.nr, t.kr])
        CONTRACT.set(matmul, True)

    left = [c for c in tiles if not unit_window_conv_to_matmul(c, mark)]
    if left:
        return f"{len(left)} convolution tile(s) did not have a unit window"
    return None


def _apply_vector_or_root(module: ir.Operation, group: Group) -> str | None:
    """Apply the group's script; a reduction that upstream cannot split
    across threads (a combiner without a known identity) is tiled on one
    thread instead (the split fails before it changes anything)."""
    failure = apply_script(module, _script(group))
    if group.threads and failure:
        group.threads = []
        failure = apply_script(module, _script(group))
    if group.threads:
        size_partials(module, group.name)
    return failure


def strip_tags(module: ir.Operation) -> None:
    def visit(op: ir.Operation) -> ir.WalkResult:
        OP_TAG.remove(op)  # the vector tags stay for lowerline-vectorize
        LAST.remove(op)
        return ir.WalkResult.ADVANCE

    module.walk(visit)


@dataclass(frozen=True)
class TileAndFuse(Pass):
    flag = "lowerline-tile-and-fuse"
    summary = "Tile, fuse and vectorize linalg ops on tensors with tile sizes from the target"
    anchor = "builtin.module"

    target: str = cpu_target_option()
    explain: bool = opt(
        False, "print the fusion groups, tile sizes and refusals to stderr as remarks"
    )

    def run(self, op: ir.Operation) -> None:
        target = resolve_target(cpu_target, self.target, op)
        plan = Plan(target)
        counter = [0]
        for func in defined_functions(op):
            plan_function(func, target, plan, counter)
        for group in plan.groups:
            group.freeze_text()
            _tag(group)
        for group in plan.groups:
            if group.row is not None:
                group.failure = apply_row_kernel(op, group.row, target)
                continue
            group.failure = _apply_vector_or_root(op, group)
            if group.chunks and not group.failure:
                failure = split_rows(op, f"{group.name}.root", group.chunks)
                if failure:
                    group.failure = (
                        f"its reduction was not split into vector-sized chunks: {failure}"
                    )
            if group.kind in ("conv", "window") and not group.failure:
                _drop_copies_read_for_sizes(op, group)
            if group.kind == "conv" and not group.failure:
                group.failure = _convs_to_matmuls(op, group)
            if group.kind == "window" and not group.failure:
                group.failure = _windows_to_generics(op, group)
        strip_tags(op)
        publish(plan.remarks(op), self.explain)
