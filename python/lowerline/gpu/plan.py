"""Tile sizes for NVIDIA GPUs: blocks, threads, the reduction step, shared memory.

The GPU half of tile-and-fuse reuses the CPU analysis (which ops are roots,
which fills and epilogues fuse) and replaces the cost model. A contraction
(matmul, batch matmul, convolution) gets:

- a **block tile** over its parallel output dims (one thread block each),
  as large as the target's threads per block and shared memory allow, and a
  divisor of the dims (no partial block tiles), so small layers still get
  many blocks;
- a **reduction step** (k for matmuls, input channels for convolutions): the
  operand tiles of one step are staged in shared memory;
- a **thread tile** of ``4 x 4`` outputs (fewer when the block tile is
  narrower), accumulated by one thread; 16 accumulators and two rows of
  operands fit the register budget without spills.

Everything else (elementwise, reductions, pooling, copies) is one output
point per thread, blocks of ``THREADS`` points.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from lowerline.targets import GpuTarget

THREADS = 256  # threads per block for one-point-per-thread ops
THREAD_TILE = 4  # outputs per thread along each of the two innermost parallel dims


def _pow2_at_least(n: int) -> int:
    p = 1
    while p < n:
        p *= 2
    return p


@dataclass(frozen=True)
class ContractionTiles:
    """Sizes over the op's iteration space (zeros: not tiled at that level)."""

    block: tuple[int, ...]  # parallel dims per block
    step: tuple[int, ...]  # the reduction loop's step per dim
    thread_counts: tuple[int, ...]  # threads along each parallel dim of the block tile
    shared_bytes: int

    @property
    def threads(self) -> int:
        count = 1
        for t in self.thread_counts:
            count *= max(t, 1)
        return count

    def describe(self) -> str:
        return (
            f"block {list(self.block)}, reduction step {list(self.step)}, "
            f"{self.threads} threads as {list(self.thread_counts)}, "
            f"{self.shared_bytes} B shared"
        )


def _divisor_tile(n: int, limit: int) -> int:
    """A block tile size for a dim of ``n``: a divisor (partial block tiles
    would give the block-local accumulator a dynamic size, which shared
    memory cannot have), preferably a multiple of 4 (rows of 16-byte vectors)."""
    divisors = [d for d in range(1, min(n, limit) + 1) if n % d == 0]
    fours = [d for d in divisors if d % 4 == 0 and 4 * d >= min(n, limit)]
    return max(fours) if fours else max(divisors)


def _side(n: int, limit: int) -> tuple[int, int]:
    """(block tile, threads) for one of the two innermost parallel dims."""
    block = _divisor_tile(n, limit)
    per_thread = min(THREAD_TILE, block)
    return block, max(1, block // per_thread)


def matmul_tiles(
    target: GpuTarget, batch: int, m: int, n: int, k: int, element_bytes: int
) -> ContractionTiles:
    """Tiles for a (batch) matmul over (b..., m, n, k)."""
    bm, tm = _side(m, 64)
    # A thin m (matrix-vector products) gets a wider n tile: the block still
    # has enough threads and each of them reuses its A row across 4 columns.
    bn, tn = _side(n, 64 if bm >= 16 else 128)
    bk = min(16, k)
    shared = (bm * bk + bk * bn) * element_bytes
    # Blocks map at most three loops (upstream's linear block ids assert on
    # more): one batch dim is split over blocks, outer ones loop in each block.
    lead = (0,) * (batch - 1) + (1,) if batch else ()
    return ContractionTiles(
        block=(*lead, bm, bn, 0),
        step=(0,) * (batch + 2) + (bk,),
        thread_counts=(*(0,) * batch, tm, tn),
        shared_bytes=shared,
    )


def conv_tiles(
    target: GpuTarget,
    f: int,
    oh: int,
    ow: int,
    c: int,
    kh: int,
    kw: int,
    strides: tuple[int, int],
    dilations: tuple[int, int],
    element_bytes: int,
) -> ContractionTiles:
    """Tiles for conv_2d_nchw_fchw over (n, f, oh, ow, c, kh, kw): a block of
    output channels x rows x columns, input channels staged in steps."""
    bf, tf = _side(f, 32)
    bh = _divisor_tile(oh, 4)
    bw, tw = _side(ow, 16)
    bc = min(4, c)
    in_h = (bh - 1) * strides[0] + (kh - 1) * dilations[0] + 1
    in_w = (bw - 1) * strides[1] + (kw - 1) * dilations[1] + 1
    shared = (bc * in_h * in_w + bf * bc * kh * kw) * element_bytes
    # At most three block loops (see matmul_tiles): the batch loops in each block.
    return ContractionTiles(
        block=(0, bf, bh, bw, 0, 0, 0),
        step=(0, 0, 0, 0, bc, 0, 0),
        thread_counts=(0, tf, bh, tw),
        shared_bytes=shared,
    )


def with_accumulator(tiles: ContractionTiles, result_type) -> ContractionTiles:
    """``tiles`` counting the block's accumulator tile in shared memory."""
    count = 1
    for size, block in zip(result_type.shape, tiles.block, strict=False):
        count *= block or size
    element_bytes = max(1, result_type.element_type.width // 8)
    return replace(tiles, shared_bytes=tiles.shared_bytes + count * element_bytes)


def fits(tiles: ContractionTiles, target: GpuTarget) -> str | None:
    """Why the tiles do not fit the target; None when they do."""
    if tiles.threads > target.max_threads_per_block:
        return f"{tiles.threads} threads > {target.max_threads_per_block} per block"
    if tiles.shared_bytes > target.shared_memory_per_block:
        return f"{tiles.shared_bytes} B shared > {target.shared_memory_per_block} B per block"
    return None


MAX_MAPPED_LOOPS = 3  # block or thread loops one forall may map


def point_tiles(shape: list[int], iterators: list[str]) -> list[int]:
    """Block tile sizes for a one-point-per-thread op: up to ``THREADS`` points
    per block, filled from the innermost parallel dim out; 0 (the whole dim,
    looped in each thread) on reductions and beyond the third tiled loop."""
    sizes = [0] * len(shape)
    room, loops = THREADS, 0
    for dim in reversed(range(len(shape))):
        if iterators[dim] != "parallel" or loops == MAX_MAPPED_LOOPS:
            continue
        take = min(shape[dim], room) if room > 1 else 1
        sizes[dim] = max(take, 1)
        room //= sizes[dim]
        loops += 1
    return sizes


def thread_split(shape: list[int], budget: int, inner_vector: int = 1) -> list[int]:
    """Threads along each dim of a tile of ``shape`` (inner dims first), at most
    ``budget`` in all; the inner dim in chunks of ``inner_vector``. 0: the dim
    is not split (each thread loops over it); the innermost dim is always
    split, so that even a one-thread forall exists (the op runs on one thread,
    not on all). At most three dims are split."""
    counts = [0] * len(shape)
    room, loops = budget, 0
    for dim in reversed(range(len(shape))):
        size = shape[dim]
        if dim == len(shape) - 1:
            size = -(-size // inner_vector)
        count = max(1, min(size, room))
        if count > 1 or dim == len(shape) - 1:
            counts[dim] = count
            loops += 1
        room //= count
        if room <= 1 or loops == MAX_MAPPED_LOOPS:
            break
    return counts
