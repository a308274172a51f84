"""``lowerline-winograd-conv``: 3x3 stride-1 convolutions as Winograd F(4x4, 3x3).

Why: a direct 3x3 convolution does 9 multiply-adds per output per input
channel, and lowerline's direct kernels already run near the FMA rate (a
ResNet basic block at 2 threads on the AMD EPYC host: 92% of the time in the
convolution register tiles, at ~117 GFLOP/s per core). Winograd's minimal
filtering algorithm F(4x4, 3x3) computes a 4x4 output tile from a 6x6 input
tile with 36 multiplies per input channel instead of 144: the multiplies
become 36 independent ``F x C`` by ``C x tiles`` matmuls, 4x fewer FLOPs,
plus two cheap linear transforms of the input and the output.

For ``out = conv_2d_nchw_fchw(in, w)`` this pass emits::

    U = G w G^T        36 x F x C   computed now (the filter is a constant)
    V = B^T d B        36 x C x T   scf.forall over (batch, tile row)
    M = U @ V          36 x F x T   a linalg.batch_matmul, tiled and vectorized
                                    by lowerline-tile-and-fuse like any matmul
    out = A^T M A      N x F x H x W  scf.forall over (batch, tile row),
                                    added to the init unless it is a zero fill
                                    (a bias broadcast), then the epilogue

(with fewer tiles T than a vector's lanes, a batch-1 8 x 8 output's 4, the
other way round: ``M^T = V^T @ U^T``, T x F, with V stored 36 x T x C and U
36 x C x F, so that the matmul's register tiles are vectors along the
filters, not along 4 tiles: cnn_avgpool/b1's 64 -> 128 at 8 x 8, 1 thread,
matmul 46 -> 13 us, output transform (strided reads of M) 3.6 -> 7.1
us; ``_Conv.tiles_first``)

with T = N x ceil(H/4) x S tiles, S = ceil(W/4) rounded up to whole vectors,
and T itself rounded up to whole vectors, the extra columns zeros (the extra
columns are never read back; an N of whole vectors keeps the matmul's
register tiles whole vectors and unmasked). A dynamic batch N
(``lowerline.compile(..., dynamic=...)``; H, W and the channels static)
rounds each image's columns instead, so T is N times a static number of
columns (whole vectors; a power of two below one): the transforms loop
over the N images the input has, and lowerline-tile-and-fuse tiles the
matmul's dynamic T in steps that divide it (``dim_divisor``), the tiles of
one image those of the static build.
Where 4 does not divide an output side, the last tiles hang over the edge:
they read zeros past the input's edge (an out-of-bounds read past the
right, a select below the bottom) and store only the rows and columns that
exist (a guarded row, a masked write).

V and M may get a few extra rows per plane (zero channels of V, zero
filters of U, at most an eighth more): their 36 planes are read (M, by the
output transform) and written (V, by the input transform) one line per plane
at a time, and planes a multiple of 4 KiB apart all fall into one L1 set
(8 ways for 36 lines: every access a miss). The CNN of ``bench/dynamic.py``
at batch 8, 1 thread: 36 planes of 32 x 128 floats, 16 KiB apart; padded to
33 and 17 rows, 275-300 us per call became about 210 us (CPU time, the same
in every process). The zero channels of V are zero-filled at each call: U's
columns there are zeros, but a NaN left in the arena would still poison
the products. A dynamic batch, whose planes' distance is known only at run
time, takes V and M as slices of larger buffers instead (``_spread_planes``):
an odd number of rows (17, 33) of an odd number of whole cache lines (the
columns rounded up at run time), so that the 36 planes lie in 36 different
L1 sets whatever the batch, and the matmul computes no padding rows. The
same CNN at batch 8, 1 thread, CPU time per kernel: input transform 96 ->
12 us, output transform 45 -> 22 us (the static build's padded planes: 40
and 30 us).

The two transforms are vector code that works along NCHW rows, vectorized
across the tiles of a tile row: a row of the input is read whole and
combined with the rows below it (B^T), then split into its six phases (every
4th column, ``vector.shuffle``) and combined again (B); the output transform
interleaves the four columns of its tiles back into rows. No transposes, no
gathers. A plane narrower than a cache line of tiles (a 14 x 14 output:
4 tiles, 16 bytes of each of the 36 planes' lines per tile row) is
transformed several tile rows per iteration, channel by channel, so that
each line of V and M is written or read whole before L1 evicts it, where
the batch still gives every core two iterations (``_input_group``; the
input transform of a 3x3 32 -> 48 convolution at 14 x 14, batch 8, 1
thread: 101 -> 22 us). When the convolution's only user is an elementwise
``linalg.generic`` that reads it element for element (batch norm, ReLU, a
residual add), its body is applied to each output row, cloned on vectors,
before the row is stored: the result is written once, into the epilogue's
destination (which lowerline-decompose-pad may have made the next
convolution's padded input).

Upstream has ``linalg.winograd_{filter,input,output}_transform`` and
``transform.structured.winograd_conv2d``, but only for NHWC/FHWC
convolutions (lowerline's come from torch as NCHW/FCHW), and their
decomposition computes each tile as 6x6 matmuls with constant matrices for
one channel at a time: vectors 6 wide at most. The filter transform there runs
on every call; here it is folded into the weights at compile time.

Rounding differs from the direct convolution (the transforms scale by up to
8 and 1/24): about 1e-6 relative on the ResNet block, well inside float32
model tolerances; ``CpuOptions.winograd=False`` keeps the direct kernels.

Candidates are refused (and keep the direct kernels) when the convolution is
not f32, strided, dilated, not 3x3, has dynamic shapes other than the
batch, weights whose bytes are unknown, or fewer than
``min-channels`` input or output channels: with few channels the transforms
cost more than the multiplies they save (one 3x3 convolution, 56x56, 2
threads, measured: 8 channels 59 us with Winograd against 40 us direct, 16
channels 105 against 134 us, 64 channels 500 against 1263 us).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from mlir import ir
from mlir.dialects import affine, arith, linalg, scf, tensor, vector

from lowerline import weights
from lowerline.cpu.tile_plan import lanes as vector_lanes
from lowerline.passes.support.conv_epilogue import (
    ConvFilter,
    Epilogue,
    apply_epilogue,
    constant_filter,
    find_epilogue,
    index,
    read_row,
    write_row,
    zero_init,
)
from lowerline.passes.support.ir_constants import constant_attr
from lowerline.passes.support.linalg_info import describe
from lowerline.passes.support.pass_options import cpu_target_option
from lowerline.passes.tiling.decompose_pad import fill_slice
from lowerline.passes.tiling.tile_and_fuse import all_ones
from lowerline.pipeline.options import opt
from lowerline.pipeline.pass_api import Pass, ops_matching, resolve_target
from lowerline.pipeline.remarks import REFUSAL, Remark, about, publish
from lowerline.targets import CpuTarget, cpu_target

# F(4x4, 3x3) with interpolation points 0, 1, -1, 2, -2 and infinity (Lavin & Gray).
BT = np.array(
    [
        [4, 0, -5, 0, 1, 0],
        [0, -4, -4, 1, 1, 0],
        [0, 4, -4, -1, 1, 0],
        [0, -2, -1, 2, 1, 0],
        [0, 2, -1, -2, 1, 0],
        [0, 4, 0, -5, 0, 1],
    ],
    dtype=np.float64,
)
G = np.array(
    [
        [1 / 4, 0, 0],
        [-1 / 6, -1 / 6, -1 / 6],
        [-1 / 6, 1 / 6, -1 / 6],
        [1 / 24, 1 / 12, 1 / 6],
        [1 / 24, -1 / 12, 1 / 6],
        [0, 0, 1],
    ]
)
AT = np.array(
    [
        [1, 1, 1, 1, 1, 0],
        [0, 1, -1, 2, -2, 0],
        [0, 1, 1, 4, 4, 0],
        [0, 1, -1, 8, -8, 1],
    ],
    dtype=np.float64,
)
TILE = 4  # output tile side (m)
ALPHA = 6  # input tile side (m + r - 1)
PLANES = ALPHA * ALPHA  # the planes of V and M: one matmul each
F32_BYTES = 4
# L1 data caches choose a line's set from the address bits below 4 KiB (64 sets
# of 64-byte lines: the 32 KiB 8-way and 48 KiB 12-way x86 L1Ds alike). Loads
# whose addresses differ by a multiple of 4 KiB compete for one set's ways.
SET_PERIOD = 4096
LINE = 64
# Planes per L1 set the output transform may keep live: half of 8 ways, the
# rest for its output rows and the epilogue's operands.
PLANES_PER_SET = 4
_DYNAMIC = ir.ShapedType.get_dynamic_size()


@dataclass
class _Conv(ConvFilter):  # a 3 x 3 filter
    batch: int  # _DYNAMIC for a dynamic batch (lowerline.compile(..., dynamic=...))
    height: int  # of the output
    width: int
    lanes: int  # f32 lanes of the target's vectors: tiles of a tile row per vector
    accumulate: bool  # the init is not a zero fill (a bias): add the result to it
    epilogue: Epilogue | None = None  # elementwise consumer applied to each output row
    cores: int = 1  # the target's: the input transform keeps a tile row group per core

    @property
    def tile_rows(self) -> int:
        """Tiles down the output; the last may hang over its bottom edge."""
        return -(-self.height // TILE)

    @property
    def tile_cols(self) -> int:
        """Tiles across the output; the last may hang over its right edge."""
        return -(-self.width // TILE)

    @property
    def tiles_first(self) -> bool:
        """Fewer tiles than a vector's lanes (a batch-1 8 x 8 output: 4): the
        matmuls are ``T x C`` by ``C x F`` (V and M stored tiles-major, U
        transposed), so that their register tiles are vectors along the
        filters; ``F x C`` by ``C x T`` would vectorize along the 4 tiles
        only (measured 4x below the FMA rate). Static batches only."""
        return not self.dynamic and self.tiles < self.lanes

    @property
    def product_rows(self) -> int:
        """Rows of each plane of M: the filters, plus zero filters that keep
        the planes off 4 KiB multiples (``spread_rows``); not for a dynamic
        batch, whose planes' distance is known only at run time (its M is a
        slice of a spread buffer, ``_spread_planes``)."""
        if self.dynamic or self.tiles_first:  # tiles-major planes: T x F, small
            return self.filters
        return spread_rows(self.filters, self.tiles * F32_BYTES)

    @property
    def transformed_rows(self) -> int:
        """Rows of each plane of V: the channels, plus zero channels that keep
        the planes off 4 KiB multiples (``spread_rows``); not for a dynamic
        batch (``product_rows``)."""
        if self.dynamic or self.tiles_first:
            return self.channels
        return spread_rows(self.channels, self.tiles * F32_BYTES)

    @property
    def row_stride(self) -> int:
        """Columns of T per tile row: the tiles of a row, rounded up to whole
        vectors (a matmul N of 14 x 14 = 196 has no tile of whole vectors; with
        rows of 16 it has 7 of 32). The extra columns hold copies of real
        tiles, never read back."""
        cols = self.tile_cols
        if cols >= self.lanes:
            return -(-cols // self.lanes) * self.lanes
        return 1 << (cols - 1).bit_length()

    @property
    def dynamic(self) -> bool:
        """The batch is dynamic: T is a whole number of ``image_columns`` per image."""
        return self.batch == _DYNAMIC

    @property
    def image_tiles(self) -> int:
        """Columns of T the input transform writes per image: every tile row, padded."""
        return self.tile_rows * self.row_stride

    @property
    def used_tiles(self) -> int:
        """Columns of T the input transform writes (a static batch)."""
        return self.batch * self.image_tiles

    @property
    def tiles(self) -> int:
        """The N dimension of the matmuls (a static batch): ``used_tiles``
        rounded up by ``_whole_vectors``. The extra columns are zeros, never
        read back."""
        return _whole_vectors(self.used_tiles, self.lanes)

    @property
    def image_columns(self) -> int:
        """Columns of T per image: ``image_tiles`` rounded up by
        ``_whole_vectors``, where every image starts (``image_step``). A
        dynamic batch rounds each image, not the batch (a batch of N images
        then has N times the columns of one, with no dynamic rounding), so
        its T is a multiple of whole vectors where one image's is, and the
        matmul's tiles over a batch of 1 are those of the static build."""
        return _whole_vectors(self.image_tiles, self.lanes)

    @property
    def image_step(self) -> int:
        """Columns of T from one image's first tile to the next's."""
        return self.image_columns if self.dynamic else self.image_tiles


def _whole_vectors(columns: int, lanes: int) -> int:
    """``columns`` rounded up to whole vectors (below one vector, to a power of
    two), so that the matmul's register tiles are whole vectors that divide N
    (one 20 x 20 image: 5 tile rows of 8 give 40, whose only register tile of
    17 to 32 columns is 20 lanes wide, split lane by lane by LLVM)."""
    if columns < lanes:
        return 1 << (columns - 1).bit_length()
    return -(-columns // lanes) * lanes


def crowding(stride: int, planes: int = PLANES) -> int:
    """The most of ``planes`` lines ``stride`` bytes apart that share an L1 set."""
    sets = [(plane * stride // LINE) % (SET_PERIOD // LINE) for plane in range(planes)]
    return max(sets.count(s) for s in sets)


def spread_rows(rows: int, row_bytes: int, planes: int = PLANES) -> int:
    """Rows per plane for a ``planes x rows x row_bytes`` buffer read one
    line per plane at a time (M in the output transform: 36 loads per tile
    row, one from each plane; V is written so in the input transform):
    ``rows`` plus the fewest extra rows (at most an eighth more, at least
    one) that leave at most ``PLANES_PER_SET`` planes in one L1 set, else
    the least crowded. With the planes a multiple of 4 KiB apart (32
    filters x 128 tiles x 4 bytes = 16 KiB: the CNN of ``bench/dynamic.py``
    at batch 8) all 36 compete for one set's 8 ways, and each access misses
    L1 though the next tile row reads the same lines again."""
    extras = range(max(1, rows // 8) + 1)
    for extra in extras:
        if crowding((rows + extra) * row_bytes, planes) <= PLANES_PER_SET:
            return rows + extra
    return rows + min(
        extras, key=lambda extra: (crowding((rows + extra) * row_bytes, planes), extra)
    )


def _plan(op: ir.Operation, min_channels: int, target: CpuTarget) -> _Conv | str:
    """The convolution to rewrite, or why it keeps the direct kernels."""
    types = [ir.RankedTensorType(v.type) for v in (*op.operands, op.results[0])]
    inp, flt, init, _ = types
    # Only the batch may be dynamic: the transforms' loops over it are the
    # only ones whose trip count is not a constant.
    if not (flt.has_static_shape and all(_DYNAMIC not in t.shape[1:] for t in types)):
        return "dynamic shapes other than the batch"
    if (inp.shape[0] == _DYNAMIC) != (init.shape[0] == _DYNAMIC):
        return "a batch dynamic in the input or the output only"
    if any(str(t.element_type) != "f32" for t in types):
        return "not f32"
    if not (all_ones(op, "strides") and all_ones(op, "dilations")):
        return "strided or dilated"
    n, f, oh, ow = init.shape
    if list(flt.shape[2:]) != [3, 3]:
        return f"a {flt.shape[2]}x{flt.shape[3]} window (F(4x4, 3x3) needs 3x3)"
    if min(f, flt.shape[1]) < min_channels:
        return f"{flt.shape[1]} -> {f} channels: below min-channels={min_channels}"
    array = constant_filter(op)
    if array is None:
        return "the filter is not a constant with known bytes"
    accumulate = not zero_init(op.operands[2])
    lanes = vector_lanes(target, 4)
    return _Conv(op, array, n, oh, ow, lanes, accumulate, find_epilogue(op), target.cores)


# -- vector code ------------------------------------------------------------------


def _splat(value: float, vtype: ir.VectorType) -> ir.Value:
    attr = ir.DenseElementsAttr.get_splat(vtype, ir.FloatAttr.get(vtype.element_type, value))
    return arith.ConstantOp(vtype, attr).result


def _combine(coefficients: np.ndarray, vectors: list[ir.Value]) -> ir.Value:
    """sum(k * v), with the small integer coefficients of the transforms:
    zeros skipped, +-1 as additions, the others as FMAs."""
    result = None
    for k, v in zip(coefficients.tolist(), vectors, strict=True):
        if k == 0:
            continue
        vtype = ir.VectorType(v.type)
        if result is None:
            result = v if k == 1 else arith.negf(v) if k == -1 else arith.mulf(_splat(k, vtype), v)
        elif k == 1:
            result = arith.addf(result, v)
        elif k == -1:
            result = arith.subf(result, v)
        else:
            result = vector.fma(_splat(k, vtype), v, result)
    return result


def _phase(row: ir.Value, phase: int, tiles: int, lanes: int) -> ir.Value:
    """Elements ``phase``, ``phase + 4``, ... of ``row``: one column of each of
    ``tiles`` tiles, then copies of the first tile's, ``lanes`` in all."""
    which = [t if t < tiles else 0 for t in range(lanes)]
    return vector.shuffle(row, row, [phase + TILE * t for t in which])


def _interleave(columns: list[ir.Value], tiles: int) -> ir.Value:
    """The row ``c0[0] c1[0] c2[0] c3[0] c0[1] ...`` of the first ``tiles``
    lanes of four column vectors."""
    lanes = ir.VectorType(columns[0].type).shape[0]
    pairs = [
        vector.shuffle(a, b, [i for t in range(tiles) for i in (t, lanes + t)])
        for a, b in (columns[:2], columns[2:])
    ]
    mask = [k + 2 * t for t in range(tiles) for k in (0, 1, 2 * tiles, 2 * tiles + 1)]
    return vector.shuffle(*pairs, mask)


def _chunks(conv: _Conv) -> list[tuple[int, int, int]]:
    """(first tile, tiles, lanes) of each vector along a tile row; only the
    last can have fewer tiles than lanes."""
    stride = conv.row_stride
    width = min(conv.lanes, stride)
    return [(x, min(width, conv.tile_cols - x), width) for x in range(0, conv.tile_cols, width)]


def _first_tile(conv: _Conv, n: ir.Value, ty: ir.Value) -> ir.Value:
    """Index of tile (n, ty, 0) in the T dimension: n * image step + ty * stride."""
    image = arith.muli(n, index(conv.image_step))
    return arith.addi(image, arith.muli(ty, index(conv.row_stride)))


def _mixed(values: list[int | ir.Value]) -> tuple[list[int], list[ir.Value]]:
    """Static offsets or sizes (dynamic ones marked) and the dynamic values."""
    static = [_DYNAMIC if isinstance(v, ir.Value) else v for v in values]
    return static, [v for v in values if isinstance(v, ir.Value)]


def _forall(
    conv: _Conv,
    dest: ir.Value,
    images: ir.Value | int,
    count: int,
    slice_at,
    body,
    group: int = 1,
) -> ir.Value:
    """``scf.forall (n, ty)`` over the tile rows of ``conv``, ``group`` tile
    rows per iteration. Each iteration takes the slice ``slice_at(n, top,
    t0)`` = (offsets, sizes) of ``dest`` (``top`` = 4 ty, the first output
    row; ``t0`` the first tile), updates it in an ``scf.for`` over ``count``
    channels with ``body(n, top, t0, channel, slice, k) -> slice`` for
    each tile row of the group in turn (``k``: its place in the group; ``top``
    its first output row; ``t0`` stays the group's first tile) and writes it
    back. ``images``: the batch (a value
    where it is dynamic)."""
    steps = conv.tile_rows // group
    loop = scf.ForallOp([0, 0], [images, steps], [1, 1], shared_outs=[dest])
    with ir.InsertionPoint(loop.body):
        n, step = loop.induction_variables
        shared = loop.inner_iter_args[0]
        ty = arith.muli(step, index(group)) if group > 1 else step
        t0 = _first_tile(conv, n, ty)
        top = arith.muli(ty, index(TILE))
        offsets, sizes = slice_at(n, top, t0)
        static, dynamic = _mixed(offsets)
        static_sizes, dynamic_sizes = _mixed(sizes)
        ones = [1] * len(sizes)
        element = ir.RankedTensorType(dest.type).element_type
        part_type = ir.RankedTensorType.get(static_sizes, element)
        part = tensor.ExtractSliceOp(
            part_type, shared, dynamic, dynamic_sizes, [], static, static_sizes, ones
        )
        channels = scf.ForOp(index(0), index(count), index(1), iter_args=[part.result])
        with ir.InsertionPoint(channels.body):
            c, part = channels.induction_variable, channels.inner_iter_args[0]
            if group == 1:
                updated = body(n, top, t0, c, part, index(0))
            else:
                updated = _tile_rows_loop(group, ty, part, lambda r, p, k: body(n, r, t0, c, p, k))
            scf.YieldOp([updated])
        with ir.InsertionPoint(loop.terminator().block):
            tensor.parallel_insert_slice(
                channels.results[0], shared, dynamic, dynamic_sizes, [], static, static_sizes, ones
            )
    return loop.results[0]


def _tile_rows_loop(group: int, ty: ir.Value, part: ir.Value, body) -> ir.Value:
    """``part`` updated by ``body(top, part, k)`` for the ``group`` tile rows
    ``ty + k`` (``top``: their first output row), in an ``scf.for`` (the body
    is large: not unrolled)."""
    rows = scf.ForOp(index(0), index(group), index(1), iter_args=[part])
    with ir.InsertionPoint(rows.body):
        k = rows.induction_variable
        top = arith.muli(arith.addi(ty, k), index(TILE))
        scf.YieldOp([body(top, rows.inner_iter_args[0], k)])
    return rows.results[0]


def _input_row(
    conv: _Conv, padded: ir.Value, nc: list[ir.Value], top: ir.Value, i: int, col: int, width: int
) -> ir.Value:
    """``width`` elements of input row ``top + i`` from column ``col``. A last
    tile that hangs over the output's right or bottom edge reads zeros past the
    input's: those lanes feed only outputs that are not stored, but must be
    finite (and small: the transforms would round the valid outputs worse)."""
    rows, cols = conv.height + 2, conv.width + 2  # the input's sides
    inside = col + width <= cols
    row = arith.addi(top, index(i))
    if TILE * (conv.tile_rows - 1) + i < rows:  # within the input in every tile row
        return read_row(padded, [*nc, row, index(col)], width, inside)
    last = index(rows - 1)
    value = read_row(padded, [*nc, arith.minui(row, last), index(col)], width, inside)
    below = arith.cmpi(arith.CmpIPredicate.ugt, row, last)
    return arith.select(below, _splat(0.0, ir.VectorType(value.type)), value)


def _columns(conv: _Conv, images: ir.Value | int) -> ir.Value | int:
    """The N dimension of the matmuls: ``tiles``, or for a dynamic batch of
    ``images``, that many times ``image_columns``."""
    if not conv.dynamic:
        return conv.tiles
    assert isinstance(images, ir.Value)
    return arith.muli(images, index(conv.image_columns))


# Floats per cache line: a dynamic batch's plane rows are whole lines apart.
LINE_FLOATS = LINE // F32_BYTES


def _spread_planes(rows: int, columns: ir.Value) -> ir.Value:
    """A ``PLANES x rows x columns`` tensor for V or M of a dynamic batch: a
    slice of a buffer with an odd number of rows (``rows | 1``) of an odd
    number of whole cache lines (``columns`` rounded up, computed at run
    time), so that its planes lie an odd number of lines apart and no two
    of the 36 share an L1 set (64 sets). ``columns`` is 16 x batch in the
    CNN of ``bench/dynamic.py``: with rows of exactly ``columns``, a batch
    of 8 put the planes 8 KiB apart (one L1 set), and the transforms that
    touch one line per plane at a time ran 2-3x slower than the static
    build's, whose planes ``spread_rows`` pads at compile time. The matmul
    reads and writes the slice only: its K and M stay the real channels and
    filters, its N the real columns; the padding is never touched."""
    # Lines per row: ceil(columns / LINE_FLOATS), made odd (2 floor(lines / 2) + 1).
    lines = ir.AffineExpr.get_ceil_div(ir.AffineSymbolExpr.get(0), LINE_FLOATS)
    odd = ir.AffineExpr.get_floor_div(lines, 2) * (2 * LINE_FLOATS) + LINE_FLOATS
    stride = affine.apply(ir.AffineMap.get(0, 1, [odd]), [columns])
    f32 = ir.F32Type.get()
    whole = tensor.empty([PLANES, rows | 1, stride], f32)
    part = ir.RankedTensorType.get([PLANES, rows, _DYNAMIC], f32)
    sizes = [PLANES, rows, _DYNAMIC]
    return tensor.ExtractSliceOp(part, whole, [], [columns], [], [0, 0, 0], sizes, [1, 1, 1]).result


def _input_group(conv: _Conv) -> int:
    """Tile rows per iteration of the input transform. Each tile row writes
    ``row_stride`` columns of a line of each of V's 36 planes per channel; a
    narrow plane's tile row (4 tiles of a 14 x 14 output: 16 bytes) leaves
    the rest of the line to other iterations, so between two writes to a
    line the other 35 planes' lines of every channel pass through L1 and
    each partial write misses (measured: the input transform of a 3x3
    32 -> 48 convolution at 14 x 14 took 101 us at batch 8 against 2.5 us at
    batch 1, 40x for 8x the work). Tile rows that share V's lines are
    transformed in one iteration, channel by channel, while the iterations
    left (a static batch) still give every core two; otherwise one."""
    if conv.dynamic or conv.row_stride >= LINE_FLOATS:
        return 1
    best = 1
    for group in range(2, LINE_FLOATS // conv.row_stride + 1):
        steps, rest = divmod(conv.tile_rows, group)
        if not rest and conv.batch * steps >= 2 * conv.cores:
            best = group
    return best


def _output_group(conv: _Conv) -> int:
    """Tile rows per iteration of the output transform: as for the input
    transform (``_input_group``), whose reads of M's lines are the output
    transform's writes of V's, by the same reasoning."""
    return _input_group(conv)


def _input_transform(conv: _Conv, padded: ir.Value, images: ir.Value | int) -> ir.Value:
    """V[6 xi + nu, c, t] = (B^T d_t B)[xi, nu] for every tile t and channel c."""
    columns = _columns(conv, images)
    if conv.dynamic:
        empty = _spread_planes(conv.channels, columns)
    else:
        shape = [PLANES, conv.transformed_rows, columns]
        if conv.tiles_first:
            shape = [PLANES, columns, conv.transformed_rows]
        empty = tensor.empty(shape, ir.F32Type.get())

    group = _input_group(conv)

    def slice_at(n, top, t0):
        if conv.tiles_first:
            return [0, t0, 0], [ALPHA * ALPHA, group * conv.row_stride, conv.channels]
        return [0, 0, t0], [ALPHA * ALPHA, conv.channels, group * conv.row_stride]

    def body(n, top, t0, c, part, k):
        column = arith.muli(k, index(conv.row_stride))
        for x0, tiles, lanes in _chunks(conv):
            width = TILE * tiles + 2
            rows = [
                _input_row(conv, padded, [n, c], top, i, TILE * x0, width) for i in range(ALPHA)
            ]
            for xi in range(ALPHA):
                mixed = _combine(BT[xi], rows)  # B^T along the height, whole rows
                phases = [_phase(mixed, j, tiles, lanes) for j in range(ALPHA)]
                for nu in range(ALPHA):
                    value = _combine(BT[nu], phases)  # B along the width, per tile
                    at = arith.addi(column, index(x0))
                    plane = index(xi * ALPHA + nu)
                    if conv.tiles_first:
                        part = write_row(value, part, [plane, at, c], across=True)
                    else:
                        part = write_row(value, part, [plane, c, at])
        return part

    transformed = _forall(conv, empty, images, conv.channels, slice_at, body, group)
    if conv.dynamic:
        return _zero_image_tails(conv, transformed, images)
    return _zero_padding(conv, transformed)


def _zero_padding(conv: _Conv, transformed: ir.Value) -> ir.Value:
    """Zeros in V where nothing was transformed: the columns past the last
    tile row (``_Conv.tiles``) and the padding channels
    (``_Conv.transformed_rows``). What is left there is whatever the buffer
    held: denormals slow the FMAs that read them, and a NaN times U's zero
    columns is still NaN."""
    zero = arith.ConstantOp(ir.F32Type.get(), 0.0).result
    rows, extra = conv.transformed_rows, conv.tiles - conv.used_tiles
    if conv.tiles_first:  # no padding channels (transformed_rows)
        if extra:
            sizes = [PLANES, extra, conv.channels]
            transformed = fill_slice(transformed, zero, [0, conv.used_tiles, 0], sizes)
        return transformed
    if extra:
        transformed = fill_slice(transformed, zero, [0, 0, conv.used_tiles], [PLANES, rows, extra])
    if rows > conv.channels:
        sizes = [PLANES, rows - conv.channels, conv.tiles]
        transformed = fill_slice(transformed, zero, [0, conv.channels, 0], sizes)
    return transformed


def _zero_image_tails(conv: _Conv, transformed: ir.Value, images: ir.Value | int) -> ir.Value:
    """``_zero_padding`` for a dynamic batch: zeros in the columns past each
    image's last tile row (``image_columns``), in a loop over the images."""
    extra = conv.image_columns - conv.image_tiles
    if not extra:
        return transformed
    sizes = [ALPHA * ALPHA, conv.channels, extra]
    zeros = _splat_tensor(0.0, ir.RankedTensorType.get(sizes, ir.F32Type.get()))
    loop = scf.ForallOp([0], [images], [1], shared_outs=[transformed])
    with ir.InsertionPoint(loop.body):
        (n,) = loop.induction_variables
        start = arith.addi(arith.muli(n, index(conv.image_columns)), index(conv.image_tiles))
        with ir.InsertionPoint(loop.terminator().block):
            tensor.parallel_insert_slice(
                zeros, loop.inner_iter_args[0], [start], [], [], [0, 0, _DYNAMIC], sizes, [1, 1, 1]
            )
    return loop.results[0]


def _splat_tensor(value: float, ttype: ir.RankedTensorType) -> ir.Value:
    attr = ir.DenseElementsAttr.get_splat(ttype, ir.FloatAttr.get(ttype.element_type, value))
    return arith.ConstantOp(ttype, attr).result


def _output_transform(
    conv: _Conv, products: ir.Value, init: ir.Value, images: ir.Value | int
) -> ir.Value:
    """out[n, f, 4 ty + a, 4 tx + b] = (A^T M_t A)[a, b] for tile t = (n, ty, tx),
    added to ``init`` where it is not a zero fill (a bias broadcast), then the
    fused epilogue, if any, applied to each row; written into the epilogue's
    destination, else into ``init`` or a new tensor."""
    epilogue = conv.epilogue
    if epilogue is not None:
        dest = epilogue.op.operands[len(epilogue.op.operands) - 1]
    elif conv.accumulate:
        dest = init
    else:
        shape = [images, conv.filters, conv.height, conv.width]
        dest = tensor.empty(shape, ir.F32Type.get())
    # Output rows of the last tile row (all 4 unless it hangs over the bottom).
    last_rows = conv.height - TILE * (conv.tile_rows - 1)

    group = _output_group(conv)

    def slice_at(n, top, t0):
        rows = TILE * group
        if last_rows < TILE:
            rows = arith.minui(index(rows), arith.subi(index(conv.height), top))
        return [n, 0, top, 0], [1, conv.filters, rows, conv.width]

    def body(n, top, t0, f, part, k):
        first = arith.addi(t0, arith.muli(k, index(conv.row_stride)))  # this tile row's
        above = arith.muli(k, index(TILE))  # output rows of the group above this tile row
        for x0, tiles, lanes in _chunks(conv):
            t = arith.addi(first, index(x0))
            inside = TILE * (x0 + tiles) <= conv.width  # else lanes past the edge are dropped
            m = [
                [_product(conv, products, xi * ALPHA + nu, f, t, lanes) for nu in range(ALPHA)]
                for xi in range(ALPHA)
            ]
            for a in range(TILE):
                mixed = [_combine(AT[a], [m[xi][nu] for xi in range(ALPHA)]) for nu in range(ALPHA)]
                columns = [_combine(AT[b], mixed) for b in range(TILE)]
                row = _interleave(columns, tiles)
                at = [index(0), f, arith.addi(above, index(a)), index(TILE * x0)]  # in the slice
                where = [n, f, arith.addi(top, index(a)), index(TILE * x0)]  # in the tensor
                store = functools.partial(
                    _store, conv, init, f, row=row, at=at, where=where, inside=inside
                )
                if a < last_rows:
                    part = store(part)
                else:  # a row past the bottom edge in the last tile row
                    below = arith.cmpi(arith.CmpIPredicate.ult, where[2], index(conv.height))
                    part = _if(below, part, store)
        return part

    return _forall(conv, dest, images, conv.filters, slice_at, body, group)


def _product(
    conv: _Conv, products: ir.Value, plane: int, f: ir.Value, t: ir.Value, lanes: int
) -> ir.Value:
    """``lanes`` tiles of M from tile ``t``, for filter ``f``."""
    if conv.tiles_first:
        return read_row(products, [index(plane), t, f], lanes, across=True)
    return read_row(products, [index(plane), f, t], lanes)


def _store(
    conv: _Conv,
    init: ir.Value,
    f: ir.Value,
    part: ir.Value,
    *,
    row: ir.Value,
    at: list[ir.Value],
    where: list[ir.Value],
    inside: bool,
) -> ir.Value:
    """Write output ``row`` at ``at`` of the tile row's slice ``part`` (``where``
    in the whole output), after adding the init and applying the epilogue."""
    count = ir.VectorType(row.type).shape[0]
    if conv.accumulate:
        # The destination holds the init, unless an epilogue brought its own.
        if conv.epilogue is None:
            previous = read_row(part, at, count, inside)
        else:
            previous = read_row(init, where, count, inside)
        row = arith.addf(previous, row)
    if conv.epilogue is not None:
        row = apply_epilogue(conv.epilogue, row, where, f, inside)
    return write_row(row, part, at, inside)


def _if(condition: ir.Value, part: ir.Value, then) -> ir.Value:
    """``then(part)`` where ``condition`` holds, else ``part``."""
    branch = scf.IfOp(condition, [part.type], has_else=True)
    with ir.InsertionPoint(branch.then_block):
        scf.YieldOp([then(part)])
    with ir.InsertionPoint(branch.else_block):
        scf.YieldOp([part])
    return branch.results[0]


def _filter_transform(conv: _Conv) -> ir.Value:
    """U[6 xi + nu, f, c] = (G w[f, c] G^T)[xi, nu], as a constant."""
    u = np.einsum("xi,fcij,yj->xyfc", G, conv.filter.astype(np.float64), G)
    u = u.reshape(ALPHA * ALPHA, conv.filters, conv.channels).astype(np.float32)
    # Zero filters and channels past the real ones: the planes of M and V
    # padded (_Conv.product_rows, _Conv.transformed_rows).
    u = np.pad(
        u,
        [(0, 0), (0, conv.product_rows - conv.filters), (0, conv.transformed_rows - conv.channels)],
    )
    if conv.tiles_first:  # C x F planes: the matmuls' B
        u = np.ascontiguousarray(u.transpose(0, 2, 1))
    utype = ir.RankedTensorType.get(list(u.shape), ir.F32Type.get())
    name = weights.derived_name(constant_attr(conv.op.operands[1]), "winograd")
    return arith.ConstantOp(utype, weights.constant_attr(u, utype, name)).result


def _rewrite(conv: _Conv) -> None:
    op = conv.op
    init = op.operands[2].owner  # a zero fill: erased below when no longer used
    with ir.InsertionPoint(op), op.location:
        images = tensor.dim(op.operands[0], index(0)) if conv.dynamic else conv.batch
        transformed = _input_transform(conv, op.operands[0], images)
        columns = _columns(conv, images)
        if conv.dynamic:
            products_init = _spread_planes(conv.filters, columns)
        else:
            shape = [PLANES, conv.product_rows, columns]
            if conv.tiles_first:
                shape = [PLANES, columns, conv.product_rows]
            products_init = tensor.empty(shape, ir.F32Type.get())
        zero = arith.ConstantOp(ir.F32Type.get(), 0.0).result
        acc = linalg.fill(zero, outs=[products_init])
        operands = [_filter_transform(conv), transformed]
        if conv.tiles_first:
            operands.reverse()
        products = linalg.batch_matmul(*operands, outs=[acc])
    # A fused epilogue's operands (a batch-norm scale computed after the
    # convolution) are all defined before the epilogue: build the output there.
    last = conv.epilogue.op if conv.epilogue is not None else op
    with ir.InsertionPoint(last), op.location:
        result = _output_transform(conv, products, op.operands[2], images)
    last.results[0].replace_all_uses_with(result)
    if conv.epilogue is not None:
        last.erase()
    op.erase()
    if not conv.accumulate and not list(init.results[0].uses):
        init.erase()


def _remark(conv: ir.Operation, plan: _Conv | str) -> Remark:
    """The rewrite planned for ``conv``, or why it keeps the direct kernels."""
    if isinstance(plan, str):
        return about(conv, WinogradConv.flag, f"not rewritten as Winograd: {plan}", REFUSAL)
    rows, inner = plan.product_rows, plan.transformed_rows
    padded = ""
    if (rows, inner) != (plan.filters, plan.channels):
        padded = f", planes padded from {plan.filters}x{plan.channels} (off 4 KiB multiples)"
    fused = f", epilogue {describe(plan.epilogue.op)} fused" if plan.epilogue else ""
    # A dynamic batch: the columns (and the work) of one image.
    columns = plan.image_columns if plan.dynamic else plan.tiles
    flops = 2 * PLANES * rows * inner * columns
    shown, per = (f"{columns} x batch", " per image") if plan.dynamic else (str(columns), "")
    shapes = f"{rows}x{inner} by {inner}x{shown}"
    if plan.tiles_first:
        shapes = f"{shown}x{inner} by {inner}x{rows} (tiles first)"
    return about(
        conv,
        WinogradConv.flag,
        f"rewritten as Winograd F(4x4, 3x3): 36 x {shapes} matmuls "
        f"({flops / 1e6:.1f} MFLOP{per}){padded}{fused}",
    )


@dataclass(frozen=True)
class WinogradConv(Pass):
    flag = "lowerline-winograd-conv"
    summary = "3x3 stride-1 NCHW convolutions as Winograd F(4x4, 3x3): transforms + batch_matmul"
    anchor = "func.func"

    target: str = cpu_target_option()
    min_channels: int = opt(
        16, "smallest input and output channel count rewritten (fewer: the transforms cost more)"
    )
    explain: bool = opt(
        False, "print each convolution rewritten or refused, and why, to stderr as remarks"
    )

    def run(self, op: ir.Operation) -> None:
        convs = ops_matching(op, lambda o: o.name == "linalg.conv_2d_nchw_fchw")
        target = resolve_target(cpu_target, self.target, op)
        plans = [(conv, _plan(conv, self.min_channels, target)) for conv in convs]
        publish([_remark(conv, plan) for conv, plan in plans], self.explain)
        for _, plan in plans:
            if not isinstance(plan, str):
                _rewrite(plan)
