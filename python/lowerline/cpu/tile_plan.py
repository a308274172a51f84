"""The cost model behind ``lowerline-tile-and-fuse``: tile sizes from a target.

Every decision here is a function of the target description (vector width,
register count, cache sizes) and the op's static shape, so two targets give
two plans (lit-tested). The numbers follow the usual CPU GEMM blocking: an
``mr x nr`` register tile of accumulators fed by one broadcast and ``nr /
lanes`` vector loads per step of k; ``mc x k`` of A in half of L2; ``nc`` so
that the outer (parallel) tiles give every core work.
"""

from __future__ import annotations

from dataclasses import dataclass

from lowerline.targets import CpuTarget


def vector_registers(target: CpuTarget) -> int:
    """Architectural vector registers, from the target's data (32 with
    AVX-512 or on AArch64, 16 with AVX2)."""
    return target.vector_registers


def lanes(target: CpuTarget, element_bytes: int) -> int:
    return max(1, target.vector_bits // (8 * element_bytes))


def int8_dot_lanes(target: CpuTarget) -> int:
    """i32 lanes of the target's int8 dot-product instruction
    (``vpdpbusd`` on zmm: 16; ``sdot`` on a NEON register: 4), or 0 without
    one that lowerline emits. AVX-VNNI (ymm only) is not emitted yet."""
    if not target.vnni:
        return 0
    if target.arch == "aarch64":
        return lanes(target, 4)
    return 16 if target.arch == "x86_64" and target.vector_bits >= 512 else 0


# Bytes of k one int8 dot-product step reduces per i32 lane (vpdpbusd: 4).
INT8_DOT_K = 4


def bf16_dot_lanes(target: CpuTarget) -> int:
    """f32 lanes of the target's bf16 pair dot product (``vdpbf16ps`` on
    zmm: 16, AVX512-BF16), or 0 without it: bf16 operands are then widened
    to f32 and multiplied with FMAs. On a target with AMX, matmuls with
    constant weights take AMX bf16 tiles instead (lowerline-amx-matmul)."""
    x86 = target.triple.startswith("x86_64")
    return 16 if x86 and target.bf16 and target.vector_bits >= 512 else 0


# bf16 elements of k one vdpbf16ps step reduces per f32 lane.
BF16_DOT_K = 2


def largest_divisor(n: int, limit: int, multiple_of: int = 1) -> int:
    """The largest divisor of ``n`` that is <= ``limit`` and a multiple of
    ``multiple_of``; 0 when there is none."""
    for d in range(min(n, limit), 0, -1):
        if n % d == 0 and d % multiple_of == 0:
            return d
    return 0


def _tile(n: int, limit: int, step: int, whole: bool = False) -> tuple[int, bool]:
    """A tile size for a dimension of ``n``: a divisor when a good one exists
    (no partial tiles), else ``limit`` rounded to ``step`` (partial tiles, which
    the vectorizer masks). ``whole``: only multiples of ``step`` (a register
    tile's width in vector lanes). Returns (size, divides)."""
    if n <= limit and (not whole or n % step == 0):
        return n, True
    exact = largest_divisor(n, limit, step) or (0 if whole else largest_divisor(n, limit))
    if exact * 2 > limit:
        return exact, True
    size = max(step, limit // step * step)
    return size, n % size == 0


@dataclass(frozen=True)
class MatmulTiles:
    """Tile sizes per level for C[m, n] += A[m, k] B[k, n]."""

    mc: int  # rows of a parallel (outer) tile
    nc: int  # columns of a parallel tile
    mr: int  # register tile rows
    nr: int  # register tile columns (a multiple of the vector lanes)
    masked: bool  # the register tile does not divide the shape
    kr: int = 1  # steps of k per register tile (INT8_DOT_K / BF16_DOT_K for dot products)

    def describe(self) -> str:
        mask = ", masked" if self.masked else ""
        registers = f"registers {self.mr}x{self.nr}{mask}"
        return f"parallel {self.mc}x{self.nc}, {registers}, k loop of {self.kr}"


def matmul_tiles(
    target: CpuTarget, m: int, n: int, k: int, element_bytes: int = 4, batch: int = 1
) -> MatmulTiles:
    """Tiles of a matmul, or of each of ``batch`` matmuls (a batch matmul:
    its batch entries are parallel tiles already)."""
    vl = lanes(target, element_bytes)
    regs = vector_registers(target)
    # Two vectors of B per k step when n allows, one broadcast register, the rest accumulators.
    nr_vectors = 2 if n >= 2 * vl else 1
    mr_limit = max(1, (regs - nr_vectors - 2) // nr_vectors)
    mr_limit = min(mr_limit, 8) if regs >= 32 else min(mr_limit, 6)
    # nr: whole vectors, a masked partial tile where n has no such divisor.
    # A divisor of another width (N = 196 gave 28) makes vectors LLVM splits
    # lane by lane when they cross loop iterations: measured 14x slower than
    # eager on a 128x384x196 linear, against 0.9x with 32 columns masked.
    if m == 1:  # a row vector: use the registers along n instead
        nr, nr_divides = _row_vector_nr(n, vl, regs // 2)
    elif n >= vl:
        nr, nr_divides = _tile(n, nr_vectors * vl, vl, whole=True)
    else:
        nr, nr_divides = n, True
    mr, mr_divides = _tile(m, mr_limit, 1)
    # mc: an mc x k block of A in half of L2, in whole register tiles (the
    # k x nr panel of B a register tile streams is reused across those rows).
    mc_limit = max(mr, min(256, target.l2_bytes // 2 // (k * element_bytes)) // mr * mr)
    mc = largest_divisor(m, mc_limit, mr) or m
    # nc: a multiple of nr; small enough that every core gets a tile.
    nc_limit = max(nr, 256 // nr * nr)
    nc = largest_divisor(n, nc_limit, nr) or n
    # Halved only while it still divides n: a partial parallel tile makes
    # every register tile of it dynamic, hence masked (65 columns gave 32).
    row_tiles = batch * (m // mc)
    while row_tiles * (n // nc) < target.cores and nc > nr and n % (nc // 2) == 0:
        if (nc // 2) % nr:
            break
        nc //= 2
    nc = _balanced_nc(row_tiles, n, nc, nr, target.cores)
    # Columns that split into no whole register tiles (196): rows instead.
    while batch * (m // mc) * (n // nc) < target.cores and (mc // 2) % mr == 0:
        if mc // 2 < mr or m % (mc // 2):
            break
        mc //= 2
    mc = _balanced_mc(batch * (n // nc), m, mc, mr, target.cores)
    return MatmulTiles(mc, nc, mr, nr, masked=not (mr_divides and nr_divides))


# A row vector's register tile splits n into independent accumulator chains:
# fewer than this many vectors leave the FMA latency exposed (4 cycles, two
# FMAs a cycle), so a masked wider tile is preferred to a narrow divisor.
_ROW_VECTOR_MIN_VECTORS = 4


def _row_vector_nr(n: int, vl: int, limit_vectors: int) -> tuple[int, bool]:
    """A 1 x n matmul's register tile width: a power-of-two number of vectors.

    The accumulator is one vector of nr lanes carried by the k loop. LLVM
    legalizes a vector of 12 registers (nr = 192, the 384-wide gates of a
    GRU at batch 1) by splitting it lane by lane through the stack in every
    step: a 1 x 128 x 384 linear took 15.2 us of CPU time against 5.3 us at
    n = 512 (16 vectors) and 4.8 us at n = 256 (one thread). So: the widest
    power-of-two tile that divides n, at least ``_ROW_VECTOR_MIN_VECTORS``
    vectors; else the widest power-of-two tile, its last one masked.
    Returns (nr, divides)."""
    if n < vl:
        return n, True
    vectors = 1 << (min(limit_vectors, -(-n // vl)).bit_length() - 1)
    widest = vectors
    least = _ROW_VECTOR_MIN_VECTORS if widest >= _ROW_VECTOR_MIN_VECTORS else 1
    while vectors >= least:
        if n % (vectors * vl) == 0:
            return vectors * vl, True
        vectors //= 2
    return widest * vl, n % (widest * vl) == 0


def _balanced_mc(column_tiles: int, m: int, mc: int, mr: int, cores: int) -> int:
    """The largest divisor of ``m`` down to ``mc / 2``, in whole register
    tiles, that gives every core the same number of tiles; ``mc`` when none
    does. Like ``_balanced_nc`` along the rows: 1568 rows in 7 tiles of 224
    (a ConvNeXt block's 384 -> 96 projection at batch 8, too narrow to split
    by columns) leave a core idle for a seventh of it on 2 cores; 14 of 112
    do not."""
    if (column_tiles * (m // mc)) % cores == 0 or m % mc:
        return mc
    for size in range(mc - mr, mc // 2 - 1, -mr):
        if size > 0 and m % size == 0 and (column_tiles * (m // size)) % cores == 0:
            return size
    return mc


def _balanced_nc(row_tiles: int, n: int, nc: int, nr: int, cores: int) -> int:
    """The largest divisor of ``n`` up to ``nc``, in whole register tiles, that
    gives every core the same number of tiles; ``nc`` when none does.

    Tiles of one group run as one parallel loop: 3 tiles on 2 cores leave a
    core idle for a third of it (the encoder's 128 x 768 QKV projection).
    """
    if (row_tiles * (n // nc)) % cores == 0 or n % nc:
        return nc
    for size in range(nc - nr, nr - 1, -nr):
        if n % size == 0 and (row_tiles * (n // size)) % cores == 0:
            return size
    return nc


def vector_tile(n: int, target: CpuTarget, element_bytes: int = 4) -> int:
    """Tile size for the vectorized (innermost) dimension of an elementwise op:
    a divisor of ``n`` when a good one exists, else whole vectors with a
    masked partial last tile (a 50257-wide row would otherwise be tiled by
    its divisor 29: odd-width vectors, which LLVM splits lane by lane)."""
    vl = lanes(target, element_bytes)
    return _tile(n, 8 * vl, vl)[0]


# Vectors per tile of an op without reductions (see elementwise_tile).
_ELEMENTWISE_VECTORS = 4


def elementwise_tile(n: int, target: CpuTarget, element_bytes: int = 4) -> int:
    """``vector_tile`` for an op without reductions, at most four vectors
    wide. LLVM splits a wider tile's loads and stores into registers issued
    out of address order, and on a stream larger than the caches eight
    vectors per step ran elementwise ops at about half the memory throughput
    of four (64x50257 exp2, reciprocal, sigmoid, GELU at 1 thread: 1.9-2.6x
    eager's CPU time with eight, 0.9-1.4x with four, and no loss at 16x4096,
    in cache; bench/ops-cpu-time.md). Reductions keep ``vector_tile``: their
    column tiles are accumulators, which more vectors keep busy."""
    vl = lanes(target, element_bytes)
    return _tile(n, _ELEMENTWISE_VECTORS * vl, vl)[0]


# Independent vector accumulators per reduced row: an add's latency (4 cycles)
# times the two adds a cycle the cores here issue, rounded to a power of two.
_REDUCTION_ACCUMULATORS = 4


def reduction_chunk(target: CpuTarget, element_bytes: int = 4) -> int:
    """Elements of a row reduced per step along the innermost axis: a few
    vectors of partial sums, so the adds of one step do not wait on each
    other and the accumulators stay in registers."""
    return _REDUCTION_ACCUMULATORS * lanes(target, element_bytes)


@dataclass(frozen=True)
class ConvTiles:
    """Tile sizes for an NCHW convolution out[n, f, oh, ow] (stride 1).

    A register tile is ``mr`` output channels by ``nr`` output columns: each
    step of the (c, kh, kw) loops broadcasts ``mr`` weights and loads one
    input row segment, a rank-1 update like a matmul's.
    """

    fc: int  # output channels of a parallel tile
    ohc: int  # output rows of a parallel tile
    mr: int
    nr: int
    masked: bool = False  # nr does not divide the row
    # The partial column tile as whole power-of-two vectors (24 -> 16 + 8):
    # unmasked, no select per FMA. Empty: one masked tile.
    tail: tuple[int, ...] = ()
    kr: int = 1  # input channels per step (INT8_DOT_K for int8 dot products)
    rows: int = 1  # output rows of a register tile (window nests)
    # Output channels that ``mr`` leaves over (f % mr): the last parallel
    # tile's, computed one channel at a time (peeled). 0: mr divides f.
    channels_left: int = 0
    # Window taps along the input row computed in one step (a strided row's
    # horizontal taps: one contiguous read of the row serves them all). 1:
    # every window loop is a loop of steps of 1.
    row_taps: int = 1

    def describe(self) -> str:
        mask = ", masked" if self.masked else ""
        if self.tail:
            mask = f", partial tile as {' + '.join(map(str, self.tail))} columns"
        steps = "1" if self.kr == 1 else f"{self.kr}, 1, 1"
        rows = f" x {self.rows} rows" if self.rows > 1 else ""
        left = f", last {self.channels_left} channel(s) one at a time" if self.channels_left else ""
        loops = f"(c, kh, kw) loops of {steps}"
        if self.row_taps > 1:
            loops = f"(c, kh) loops of {steps}, {self.row_taps} kw taps per step from one row read"
        return (
            f"parallel {self.fc} channels x {self.ohc} rows, registers "
            f"{self.mr} channels{rows} x {self.nr} columns{mask}{left}, {loops}"
        )


def conv_tiles(target: CpuTarget, f: int, oh: int, ow: int, element_bytes: int = 4) -> ConvTiles:
    vl = lanes(target, element_bytes)
    regs = vector_registers(target)
    # nr: whole vectors (LLVM rebuilds odd-width vectors lane by lane when
    # they cross loop iterations: measured 30x slower at 28 lanes). The
    # partial tile of a row that is not a multiple of nr is split into
    # power-of-two pieces.
    nr = min(2 * vl, -(-ow // vl) * vl)
    vectors = nr // vl
    mr = channel_tile(f, max(1, (regs - vectors - 2) // vectors))
    fc = mr
    ohc = largest_divisor(oh, 8) or 1
    masked = ow % nr != 0
    tail = _power_of_two_pieces(ow % nr)
    return ConvTiles(fc, ohc, mr, nr, masked, tail, channels_left=f % mr)


def channel_tile(f: int, limit: int) -> int:
    """Output channels of a convolution register tile, at most ``limit``:
    the largest divisor of ``f`` when it fills at least half the limit, else
    the size from ``limit / 2`` to ``limit`` that leaves the fewest channels
    over (the larger on a tie), those computed one at a time. A prime
    ``f`` (53) otherwise gets tiles of one channel: each step then loads
    an input row for two FMAs (measured 1.8x ONNX Runtime's time on a 1x1
    convolution to 53 channels, bench/conv-layers.md)."""
    exact = largest_divisor(f, limit) or 1
    if 2 * exact >= limit or f <= limit:
        return exact
    candidates = range(max(1, -(-limit // 2)), limit + 1)
    return min(candidates, key=lambda size: (f % size, -size))


def _power_of_two_pieces(n: int) -> tuple[int, ...]:
    """``n`` as decreasing powers of two (its binary digits: 10 -> 8 + 2);
    () if it is one already (then it needs no mask). Every piece, even one
    column wide, is a static tile whose accumulators stay in registers; a
    masked tile's are loaded and stored at every step of the (c, kh, kw)
    loops (measured on a MobileNetV2 block with 10 x 10 planes, one thread:
    1.9x eager's time with masked 10-column tiles, 1.2x with 8 + 2)."""
    pieces = [1 << bit for bit in range(n.bit_length() - 1, -1, -1) if n >> bit & 1]
    return tuple(pieces) if len(pieces) > 1 else ()


def window_tiles(
    target: CpuTarget,
    channels: int,
    oh: int,
    ow: int,
    element_bytes: int = 4,
    shared_input: bool = False,
    row_taps: tuple[int, int] = (1, 1),
) -> ConvTiles:
    """Tile sizes for a pooling or a depthwise, grouped, strided or dilated
    convolution out[.., c, oh, ow], computed as elementwise steps over its
    window (``lowerline.passes.tiling.window_tiles``).

    The register tile is ``mr`` channels x ``nr`` columns of one output row,
    whole vectors along the row (a masked partial tile at its end). In a
    pooling or a depthwise convolution every step reads a vector of input
    per accumulator (no reuse across channels): the registers hold ``mr x
    rows x vectors`` accumulators and as many input vectors, ``rows``
    output rows of one channel (a divisor of the parallel tile's rows)
    before more channels: one channel's weight per step serves all its
    rows. Measured on one thread (bench/conv-layers.md): a depthwise 3x3
    over 14 x 14 planes took 2.0 ns per vector step at 8 channels x 1 row,
    1.3 ns at 1 channel x 7 rows; over 112 x 112 planes half the time.
    With ``shared_input`` (a dense or grouped convolution, strided or
    dilated: the input row does not depend on the output channel) a step
    is a rank-1 update like a stride-1 convolution's: one input row of
    ``vectors`` for all ``mr`` channels, so the registers hold twice the
    accumulators (one output row).

    ``row_taps`` (taps, stride): the horizontal taps of a strided window
    computed in one step from one read of the input row's span
    (``lowerline.passes.tiling.window_tiles.row_tap_loop``): that read,
    live until the last tap, takes the place of the input vectors above
    (measured on a 3x3 stride-2 depthwise of 7 rows x 2 vectors: 5 input
    vectors per row spilled to the stack).
    """
    vl = lanes(target, element_bytes)
    regs = vector_registers(target)
    nr = _window_columns(ow, vl)
    vectors = max(1, nr // vl)
    ohc = largest_divisor(oh, 8) or 1
    taps, stride = row_taps
    # Input vectors a row holds: the span of all taps, or one per accumulator.
    row = -(-(stride * (nr - 1) + taps) // vl) if taps > 1 else vectors
    if shared_input:
        # Accumulators plus one input row for all channels.
        mr = channel_tile(channels, max(1, (regs - row - 2) // vectors))
        return ConvTiles(
            mr, ohc, mr, nr, masked=ow % nr != 0, channels_left=channels % mr, row_taps=taps
        )
    # Accumulators plus their input vectors: output rows of one channel
    # first, then channels.
    per_row = vectors + row
    rows = largest_divisor(ohc, max(1, (regs - 2) // per_row)) or 1
    mr = largest_divisor(channels, max(1, (regs - 2) // (rows * per_row))) or 1
    return ConvTiles(mr, ohc, mr, nr, masked=ow % nr != 0, rows=rows, row_taps=taps)


def _window_columns(ow: int, vl: int) -> int:
    """A window nest's register tile width: whole vectors (at most two), or
    for a row narrower than one vector the power of two that holds it (a
    7-wide plane: 8 lanes, a masked half vector, not 16). Every step of the
    window is a vector op on the tile: on a CPU that splits its widest
    vectors in two halves (Zen 4's 512-bit ops), a half-empty full vector
    costs twice the half one. Still a power of two: LLVM splits odd widths
    lane by lane."""
    if ow >= vl:
        return min(2 * vl, -(-ow // vl) * vl)
    return 1 << (ow - 1).bit_length()
