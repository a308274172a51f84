"""Reductions over long rows: right answers, and every vector bounded by the target.

A row reduction used to be vectorized as one vector as long as the row (a
393,216-wide softmax row: ``vector<393216xf32>``, and ``llc -O3`` ran for
over 15 minutes). Now rows are reduced in register-sized chunks
(``lowerline.passes.tiling.reduction_chunks``). These tests check the IR's
vector types, not time: no vector holds more than the target's vector
register file, and the results match eager torch within the zoo's tolerance.
"""

import re

import pytest
import torch

import lowerline
from lowerline.cpu.tile_plan import vector_registers
from lowerline.driver.tolerance import worst_mismatch
from lowerline.targets import host_cpu

_VECTOR = re.compile(r"vector<((?:\d+x)+)([a-z]+)(\d+)>")


def vector_bits(ir_text: str) -> list[tuple[int, str]]:
    """(bits, type) of every fixed-size vector type in ``ir_text``."""
    found = []
    for match in _VECTOR.finditer(ir_text):
        elements = 1
        for dim in match.group(1).rstrip("x").split("x"):
            elements *= int(dim)
        found.append((elements * int(match.group(3)), match.group(0)))
    return found


def test_vector_bits_parses_types():
    text = "vector<1x64xf32> vector<64xi1> vector<4x8xf64>"
    assert vector_bits(text) == [
        (2048, "vector<1x64xf32>"),
        (64, "vector<64xi1>"),
        (2048, "vector<4x8xf64>"),
    ]


class Fn(torch.nn.Module):
    def __init__(self, name):
        super().__init__()
        self.name = name

    def forward(self, x):
        if self.name == "softmax":
            return torch.softmax(x, -1)
        if self.name == "log_softmax":
            return torch.log_softmax(x, -1)
        if self.name == "layer_norm":
            return torch.nn.functional.layer_norm(x, x.shape[-1:])
        if self.name == "sum":
            return x.sum(-1)
        if self.name == "sum0":
            return x.sum(0)
        if self.name == "amax":
            return x.amax(-1)
        if self.name == "argmax":
            return x.argmax(-1)
        if self.name == "argmin0":
            return x.argmin(0)
        if self.name == "var":
            return x.var(-1)
        if self.name == "logsumexp":
            return x.logsumexp(-1)
        if self.name == "rms_norm":
            return torch.nn.functional.rms_norm(x, x.shape[-1:])
        if self.name == "group_norm":  # rows as 64 channels in 16 groups
            return torch.nn.functional.group_norm(x.unsqueeze(0), 16).squeeze(0)
        if self.name == "instance_norm":  # NCHW: each channel's H x W plane
            return torch.nn.functional.instance_norm(x)
        if self.name == "group_norm_nchw":  # two channels per group
            return torch.nn.functional.group_norm(x, x.shape[1] // 2)
        raise ValueError(self.name)


CASES = [
    ("softmax", (1, 393216)),
    ("softmax", (64, 50257)),
    ("log_softmax", (64, 50257)),
    ("layer_norm", (64, 50257)),
    ("sum", (64, 50257)),
    ("sum0", (64, 50257)),
    ("amax", (3, 4099)),
    # Row kernels (lowerline.passes.tiling.row_kernels) and two-pass arg reductions.
    ("argmax", (64, 50257)),
    ("argmin0", (64, 50257)),
    ("var", (64, 50257)),
    ("logsumexp", (1, 393216)),
    ("rms_norm", (64, 50257)),
    ("group_norm", (64, 50257)),
    # Rows of several reduced dims whose innermost one fits a chunk (H x W
    # planes): reduced a line at a time, not as one vector<3136xf32>.
    ("instance_norm", (2, 64, 56, 56)),
    ("instance_norm", (3, 15, 17, 23)),
    ("group_norm_nchw", (1, 30, 9, 56)),
]


@pytest.mark.parametrize(
    ("name", "shape"), CASES, ids=[f"{n}-{'x'.join(map(str, s))}" for n, s in CASES]
)
def test_long_rows_compile_with_bounded_vectors(name, shape, cache_dir):
    torch.manual_seed(0)
    x = torch.randn(*shape)
    module = Fn(name).eval()
    compiled = lowerline.compile(module, x, cache_dir=cache_dir)
    mismatch = worst_mismatch([module(x)], [compiled(x)])
    assert mismatch is None, mismatch.describe()
    target = host_cpu()
    register_file = vector_registers(target) * target.vector_bits
    for stage in ("tiled", "loops"):
        too_long = [t for bits, t in vector_bits(compiled.ir(stage)) if bits > register_file]
        assert not too_long, (
            f"{stage}: vectors larger than the register file: {sorted(set(too_long))}"
        )
    assert not compiled.fallbacks
