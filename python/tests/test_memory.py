"""Buffer reuse after bufferization, measured by counting the allocations the
compiled code makes at run time (runtime_support.c): the peak is lower with
buffer_reuse (the default) than without, and the outputs are still right.
Without the arena (arena=False) every buffer is allocated at run time; with it
(test_arena.py) the planned buffers are not counted here."""

import pytest
import torch

import lowerline
from lowerline.runtime.native import MemoryStats


def _encoder():
    torch.manual_seed(0)
    model = torch.nn.TransformerEncoderLayer(32, 2, 64, batch_first=True).eval()
    return model, torch.randn(1, 16, 32)


def _mlp():
    torch.manual_seed(0)
    layers = [torch.nn.Linear(64, 256), torch.nn.ReLU()]
    for _ in range(3):
        layers += [torch.nn.Linear(256, 256), torch.nn.GELU()]
    layers.append(torch.nn.Linear(256, 10))
    return torch.nn.Sequential(*layers).eval(), torch.randn(16, 64)


@pytest.mark.parametrize("build", [_encoder, _mlp], ids=["encoder", "mlp"])
def test_buffer_reuse_lowers_the_measured_peak(build, cache_dir):
    model, x = build()
    with torch.no_grad():
        expected = model(x)
    stats: dict[bool, MemoryStats] = {}
    for reuse in (False, True):
        compiled = lowerline.compile(model, x, cache_dir=cache_dir, buffer_reuse=reuse, arena=False)
        torch.testing.assert_close(compiled(x), expected, rtol=1e-4, atol=1e-5)
        stats[reuse] = compiled.memory()
        assert stats[reuse].allocations > 0
        assert stats[reuse].live_bytes == 0  # everything allocated was freed
    assert stats[True].peak_bytes < stats[False].peak_bytes, stats


def test_memory_is_about_the_last_call(cache_dir):
    model, x = _mlp()
    compiled = lowerline.compile(model, x, cache_dir=cache_dir)
    with pytest.raises(RuntimeError, match="call the compiled module first"):
        compiled.memory()
    compiled(x)
    first = compiled.memory()
    compiled(x)
    # Reset at every call: the counts do not add up over calls.
    assert compiled.memory() == first
    assert str(first) == f"{first.peak_bytes / 1024:.1f} KiB in {first.allocations} allocations"
