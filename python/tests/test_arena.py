"""One arena per call (issue 14 item 3): the entry function's intermediate
buffers live at offsets planned when compiling (lowerline-plan-arena), in an
arena the compiled module keeps and reuses, the scratch of parallel tiles in
a slot per thread; concurrent calls take arenas of their own from a pool
(lowerline.runtime.native.ArenaPool)."""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch
from pool_watch import SharingWatch
from torch import nn

import lowerline

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "zoo"))
from test_zoo_models import BasicBlock, with_running_stats


def _mlp(batch: int) -> tuple[nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(37, 65), nn.ReLU(), nn.Linear(65, 65), nn.GELU(), nn.Linear(65, 11)
    )
    return model.eval(), torch.randn(batch, 37)


class _PoolingCnn(nn.Module):
    """Convolutions with max and average pooling on an odd-sized image."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 12, 3),
            nn.ReLU(),
            nn.AvgPool2d(2),
        )
        self.head = nn.Linear(12 * 3 * 3, 5)

    def forward(self, x):
        return self.head(torch.flatten(self.features(x), 1))


def _cnn(batch: int) -> tuple[nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    return _PoolingCnn().eval(), torch.randn(batch, 3, 17, 17)


def _block(batch: int) -> tuple[nn.Module, torch.Tensor]:
    """ResNet's basic block: tiled convolutions whose tiles use scratch buffers."""
    torch.manual_seed(0)
    return with_running_stats(BasicBlock(8)), torch.randn(batch, 8, 13, 13)


def _encoder(batch: int) -> tuple[nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
    return layer.eval(), torch.randn(batch, 7, 32)


def _compiled(build, batch: int, cache_dir: str, **options):
    model, x = build(batch)
    with torch.no_grad():
        expected = model(x)
    return lowerline.compile(model, x, cache_dir=cache_dir, **options), x, expected


# The bound counts each parallel loop's scratch once per thread
# (lowerline-plan-arena): the block's and the CNN's tiles have some.
@pytest.mark.parametrize(
    ("build", "batch"),
    [(_mlp, 1), (_mlp, 8), (_cnn, 3), (_block, 1), (_encoder, 1), (_encoder, 3)],
    ids=["mlp-b1", "mlp-b8", "cnn-b3", "block-b1", "encoder-b1", "encoder-b3"],
)
def test_the_arena_is_within_a_quarter_of_the_lower_bound(build, batch, cache_dir):
    compiled, x, expected = _compiled(build, batch, cache_dir)
    torch.testing.assert_close(compiled(x), expected, rtol=1e-4, atol=1e-5)
    stats = compiled.memory()
    assert stats.lower_bound_bytes > 0, stats
    assert stats.lower_bound_bytes <= stats.arena_bytes <= 1.25 * stats.lower_bound_bytes, stats


def _mlp_whole_tiles(batch: int) -> tuple[nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.GELU())
    return model.eval(), torch.randn(batch, 64)


# The scratch of parallel tiles (convolution rows, pooling windows, the
# partial last tile of an odd width) lives in per-thread slots of the arena:
# nothing is left to malloc, whatever the model.
@pytest.mark.parametrize(
    ("build", "batch"),
    [
        (_mlp_whole_tiles, 1),
        (_mlp_whole_tiles, 8),
        (_mlp, 1),
        (_mlp, 8),
        (_cnn, 1),
        (_cnn, 3),
        (_block, 1),
        (_block, 3),
        (_encoder, 3),
    ],
    ids=[
        "mlp-whole-b1",
        "mlp-whole-b8",
        "mlp-odd-b1",
        "mlp-odd-b8",
        "cnn-b1",
        "cnn-b3",
        "block-b1",
        "block-b3",
        "encoder-b3",
    ],
)
def test_a_steady_state_call_allocates_nothing(build, batch, cache_dir):
    compiled, x, expected = _compiled(build, batch, cache_dir)
    compiled(x)
    torch.testing.assert_close(compiled(x), expected, rtol=1e-4, atol=1e-5)
    stats = compiled.memory()
    assert stats.allocations == 0 and stats.peak_bytes == 0, stats
    assert stats.arena_bytes > 0, stats


# More threads than this machine has cores (OpenMP runs the team anyway):
# every thread number below the team size gets its own slot, and one thread
# (scf-forall-to-for, one slot) needs none.
@pytest.mark.parametrize("threads", [1, 3, 4])
def test_each_thread_has_its_own_scratch_slot(threads, cache_dir):
    compiled, x, expected = _compiled(_block, 3, cache_dir, num_threads=threads)
    for _ in range(5):
        torch.testing.assert_close(compiled(x), expected, rtol=1e-4, atol=1e-5)
        stats = compiled.memory()
        assert stats.allocations == 0, stats
    assert stats.lower_bound_bytes <= stats.arena_bytes <= 1.25 * stats.lower_bound_bytes, stats


def test_the_slots_grow_with_the_thread_count(cache_dir):
    """The arena holds a scratch slot per thread: more threads, more bytes,
    and the lower bound grows with them (it counts every thread's scratch)."""
    sizes = {}
    for threads in (1, 4):
        compiled, x, _ = _compiled(_block, 1, cache_dir, num_threads=threads)
        compiled(x)
        sizes[threads] = compiled.memory()
    assert sizes[4].arena_bytes > sizes[1].arena_bytes, sizes
    assert sizes[4].lower_bound_bytes > sizes[1].lower_bound_bytes, sizes


def test_the_async_runtime_keeps_scratch_allocated_per_tile(cache_dir):
    """MLIR's async workers have no thread number the code can read: their
    tiles' scratch stays allocated (and reported), the results still right."""
    compiled, x, expected = _compiled(_block, 1, cache_dir, num_threads=2, parallel="async")
    compiled(x)
    torch.testing.assert_close(compiled(x), expected, rtol=1e-4, atol=1e-5)
    assert compiled.memory().allocations > 0


def test_without_the_arena_every_buffer_is_allocated(cache_dir):
    model, x = _mlp(4)
    compiled = lowerline.compile(model, x, cache_dir=cache_dir, arena=False)
    compiled(x)
    stats = compiled.memory()
    assert stats.allocations > 0 and stats.arena_bytes == 0, stats


def test_concurrent_calls_never_share_an_arena(cache_dir):
    compiled, x, _ = _compiled(_mlp, 16, cache_dir)
    compiled(x)
    pool = compiled.specializations[0].function.arenas
    watch = SharingWatch(4)
    pool.watch = watch
    inputs = [torch.randn(16, 37, generator=torch.Generator().manual_seed(i)) for i in range(4)]
    model = _mlp(16)[0]
    with torch.no_grad():
        expected = [model(t) for t in inputs]

    def calls(index: int) -> None:
        for _ in range(5):
            got = compiled(inputs[index])
            torch.testing.assert_close(got, expected[index], rtol=1e-4, atol=1e-5)

    try:
        with ThreadPoolExecutor(4) as threads:
            list(threads.map(calls, range(4)))  # raises a thread's exception here
    finally:
        pool.watch = None
    assert not watch.shared, f"arenas used by two calls at once: {watch.shared}"
    assert not watch.held  # every call gave its arena back
    assert pool.created == 4  # grown to the four concurrent callers, not more


class _SqueezedGroupNorm(nn.Module):
    """Group norm computed as (1, groups, channels / groups, length) and
    returned as (channels, length): a reshape of the buffer it computes."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.norm = nn.GroupNorm(2, 8)

    def forward(self, x):
        return self.norm(x.unsqueeze(0)).squeeze(0)


@pytest.mark.parametrize("num_threads", [1, 2])
def test_a_reshaped_result_is_written_in_place(num_threads, cache_dir):
    """lowerline-allocate-reshaped-results: the returned reshape is the
    caller's output buffer, computed in place, not a buffer of the arena
    copied into it (before: 8 KiB of arena for a 8x256 output and a copy)."""
    model, x = _SqueezedGroupNorm().eval(), torch.randn(8, 256)
    compiled = lowerline.compile(model, x, cache_dir=cache_dir, num_threads=num_threads)
    torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
    assert compiled.memory().arena_bytes < x.numel() * 4, compiled.memory().arena()
    assert "memref.copy" not in compiled.ir("bufferized").split("func.func @main")[1]
