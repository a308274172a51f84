"""The matmul and convolution kernels are real GPU kernels.

Not one thread per output element: operand tiles staged in shared memory
behind barriers, 16-byte vector loads from global memory, no register
spills (``ptxas -v`` for the target), and a grid of many blocks. Checked on
the PTX and ptxas reports of ``lowerline.compile(..., target="cuda:sm_XX")``;
the numbers come from the mapped IR run on this CPU.
"""

from __future__ import annotations

import pytest
import torch

import lowerline


class Gemm(torch.nn.Module):
    def __init__(self, n: int, dtype: torch.dtype):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(n, n, dtype=dtype) / n**0.5)

    def forward(self, x):
        return x @ self.w


def _only_kernel(compiled: lowerline.CompiledModule) -> dict:
    (kernel,) = compiled.kernels
    return kernel


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("gpu-kernels"))


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["f32", "f16"])
def test_matmul_kernel(arch, dtype, cache):
    torch.manual_seed(0)
    model = Gemm(512, dtype).eval()
    x = torch.randn(512, 512, dtype=dtype)
    compiled = lowerline.compile(model, x, target=f"cuda:{arch}", cache_dir=cache)
    kernel = _only_kernel(compiled)
    resources = kernel["resources"][arch]
    assert kernel["shared_bytes"] > 0 and resources["shared_bytes"] == kernel["shared_bytes"]
    assert resources["spill_store_bytes"] == resources["spill_load_bytes"] == 0
    assert resources["barriers"] >= 1
    grid, block = kernel["grid"], kernel["block"]
    assert grid[0] * grid[1] * grid[2] >= 64, grid
    assert block[0] * block[1] * block[2] >= 128, block
    assert "bar.sync" in compiled.ptx
    assert "ld.global.v4" in compiled.ptx
    assert "ld.shared.v4" in compiled.ptx
    tolerance = {} if dtype == torch.float32 else {"rtol": 2e-3, "atol": 2e-3}
    torch.testing.assert_close(compiled.run_on_cpu(x), model(x).detach(), **tolerance)


def test_conv_kernel(cache):
    torch.manual_seed(0)
    model = torch.nn.Conv2d(64, 64, 3, padding=1, bias=False).eval()
    x = torch.randn(1, 64, 56, 56)
    compiled = lowerline.compile(model, x, target="cuda:sm_80", cache_dir=cache)
    convs = [k for k in compiled.kernels if k["shared_bytes"] > 0]
    assert len(convs) == 1, compiled.kernels
    (conv,) = convs
    resources = conv["resources"]["sm_80"]
    assert resources["spill_store_bytes"] == 0
    assert resources["barriers"] >= 1
    assert conv["grid"][0] * conv["grid"][1] * conv["grid"][2] >= 64
    assert conv["block"][0] >= 64
    ptx = compiled.ptx_modules[conv["name"].split("::")[0]]
    assert "bar.sync" in ptx and "ld.shared" in ptx
    torch.testing.assert_close(compiled.run_on_cpu(x), model(x).detach(), rtol=1e-4, atol=1e-4)
