"""Reductions of a whole tensor (every dim reduced) compile in bounded memory.

torch's variance of a whole tensor reaches linalg as reductions over every
dim into a ``1x1`` output indexed by constants (``(d0, d1) -> (0, 0)``).
Such an output was left whole by the reduction tiling, so ``torch.std`` of a
1024x1536 tensor became one ``vector<1024x1536xf32>`` and the compile worker
grew to 11.8 GB. These compile under a 2 GB bound (a regression fails as a
``CompileError`` of the memory bound, not by exhausting the machine), match
eager, and keep every vector within the target's register file.
"""

import pytest
import torch
from test_reduction_vectors import vector_bits

import lowerline
from lowerline.cpu.tile_plan import vector_registers
from lowerline.driver.tolerance import worst_mismatch
from lowerline.targets import host_cpu


class Whole(torch.nn.Module):
    def __init__(self, name):
        super().__init__()
        self.name = name

    def forward(self, x):
        if self.name == "std":
            return torch.std(x)
        if self.name == "var_mean":
            return torch.var_mean(x, correction=0)
        if self.name == "mean_std":  # rrelu's statistics in upstream's e2e tests
            return x.mean(), x.std()
        if self.name == "var_keepdim":  # every dim reduced, kept as 1x1x1
            return x.var(dim=(0, 1, 2), keepdim=True)
        raise ValueError(self.name)


CASES = [
    ("std", (1024, 1536)),
    ("var_mean", (1023, 1537)),
    ("mean_std", (3, 257, 129)),
    ("var_keepdim", (5, 33, 4099)),
    ("std", (1, 4099)),
]


@pytest.mark.parametrize(
    ("name", "shape"), CASES, ids=[f"{n}-{'x'.join(map(str, s))}" for n, s in CASES]
)
def test_whole_tensor_reductions_compile_in_bounded_memory(name, shape, cache_dir):
    torch.manual_seed(0)
    x = torch.randn(*shape) + 3.0  # an offset mean: the shifted moments matter
    module = Whole(name).eval()
    compiled = lowerline.compile(module, x, cache_dir=cache_dir, compile_memory="2G")
    expected = module(x)
    expected = list(expected) if isinstance(expected, tuple) else [expected]
    got = compiled(x)
    got = list(got) if isinstance(got, tuple) else [got]
    mismatch = worst_mismatch(expected, got)
    assert mismatch is None, mismatch.describe()
    target = host_cpu()
    register_file = vector_registers(target) * target.vector_bits
    for stage in ("tiled", "loops"):
        too_long = [t for bits, t in vector_bits(compiled.ir(stage)) if bits > register_file]
        assert not too_long, f"{stage}: vectors larger than the register file: {too_long[:4]}"
