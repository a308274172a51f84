"""Integer matmuls of quantized models use ``dp4a`` on NVIDIA GPUs.

A PT2E-quantized MLP (X86InductorQuantizer: per-channel s8 weights, u8
activations) compiled for ``cuda:sm_80``/``cuda:sm_90``: lowerline's QDQ
folding makes its linear layers i8 x i8 -> i32 matmuls, each thread's tile
becomes four-byte dot products (lowerline-gpu-distribute) and those
``dp4a.s32.s32`` in the PTX (lowerline-gpu-dp4a), which ptxas assembles
without spills. The numbers come from the mapped IR run on this CPU: the
same integers as the CPU build (exact sums), and the converted model run
eagerly within 1% of its largest output (the CPU int8 tests bound the CPU
build against eager at the rounding step).
"""

from __future__ import annotations

import pytest
import torch

import lowerline

pytest.importorskip("torchao")
from test_quant_pt2e import quantize


class Mlp(torch.nn.Module):
    def __init__(self, k: int, hidden: int, n: int) -> None:
        super().__init__()
        self.a = torch.nn.Linear(k, hidden)
        self.b = torch.nn.Linear(hidden, n)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.relu(self.a(x)))


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("gpu-int8"))


def _int8_kernels(compiled: lowerline.CompiledModule) -> list[str]:
    return [ptx for ptx in compiled.ptx_modules.values() if "dp4a" in ptx]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_quantized_linears_use_dp4a(arch, cache):
    torch.manual_seed(0)
    x = torch.randn(64, 256)
    converted = quantize(Mlp(256, 128, 64).eval(), x)
    compiled = lowerline.compile(converted, x, target=f"cuda:{arch}", cache_dir=cache)
    assert len(_int8_kernels(compiled)) == 2, "one dp4a kernel per linear layer"
    assert "dp4a.s32.s32" in compiled.ptx
    for kernel in compiled.kernels:
        resources = kernel["resources"][arch]
        assert resources["spill_store_bytes"] == resources["spill_load_bytes"] == 0, kernel
    on_cpu = lowerline.compile(converted, x, cache_dir=cache)
    got = compiled.run_on_cpu(x)
    torch.testing.assert_close(got, on_cpu(x), rtol=0, atol=1e-6)
    expected = converted(x).detach()
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-2 * float(expected.abs().max()))


def test_odd_inner_size_stays_correct(cache):
    """k = 37: the k tiles are not whole four-byte groups, so no dp4a is
    formed for that layer; the results still match the CPU build."""
    torch.manual_seed(1)
    x = torch.randn(5, 37)
    converted = quantize(Mlp(37, 64, 16).eval(), x)
    compiled = lowerline.compile(converted, x, target="cuda:sm_80", cache_dir=cache)
    on_cpu = lowerline.compile(converted, x, cache_dir=cache)
    torch.testing.assert_close(compiled.run_on_cpu(x), on_cpu(x), rtol=0, atol=1e-6)
