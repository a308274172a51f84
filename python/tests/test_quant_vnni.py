"""The int8 matmul kernels of a PT2E-quantized model use AVX-512 VNNI's
``vpdpbusd`` on a target that has it (lowerline.passes.tiling.int8_dot), and
outer products (``vpmulld``) on one that has not; checked in the disassembly
of the compiled library, in the function that holds the model's kernels.

The numerics of the dot-product path are checked against eager torch where
the host can run it (test_quant_pt2e runs every model on the host target too).
"""

import os
import re

import pytest
import torch
from disassembly import functions
from test_quant_pt2e import Mlp, QuantizedOutput, integer_matmuls, quantize

import lowerline
from lowerline.targets import cpu_target

pytest.importorskip("torchao")

x86_host = pytest.mark.skipif(
    not cpu_target("host").triple.startswith("x86_64"), reason="runs x86 code"
)
# The model's kernels are inlined into the entry function; the parallel
# loops may be outlined next to it (main..omp_par and the like).
KERNEL_SYMBOL = re.compile(r"main\b.*")


def host_int8_instruction() -> str:
    """What the host's int8 matmul kernels (constant weights) run on: AMX
    tiles where it has AMX (test_quant_amx), else vpdpbusd."""
    return "tdpbssd" if cpu_target("host").amx else "vpdpbusd"


def kernel_code(compiled) -> str:
    """The disassembly of the functions that hold the model's kernels."""
    library = os.path.join(compiled.artifacts_dir, "lib.so")
    kernels = {s: code for s, code in functions(library).items() if KERNEL_SYMBOL.fullmatch(s)}
    assert kernels, sorted(functions(library))
    return "\n".join(kernels.values())


class WideMlp(Mlp):
    """Layers of 45 and 70 columns: register tiles of two zmm (32 columns)
    and a masked tail, so a tile spans several groups of vpdpbusd lanes."""

    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(37, 45)
        self.b = torch.nn.Linear(45, 70)


def quantized_mlp(batch: int, make: type = Mlp) -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    model = make().eval()
    example = torch.randn(batch, 37)
    converted = quantize(model, example)
    return QuantizedOutput(converted, high=converted(example * 3).max().item()), example


def assert_matches_eager(compiled, quantized: QuantizedOutput, example: torch.Tensor) -> None:
    for spread in (0.5, 3.0):
        x = torch.randn(example.shape) * spread
        expected = quantized(x)
        # One output step apart at most, where a value lands next to a tie.
        assert (compiled(x) - expected).abs().max().item() <= quantized.scale * 1.001


@pytest.mark.parametrize("batch", [1, 13])
def test_vnni_target_kernels_use_vpdpbusd(batch):
    """Cross-compiled for znver4 (AVX-512 VNNI without AMX; not run: the
    host may lack its other extensions): both layers' matmuls are dot
    products (test_quant_amx: AMX tiles on sapphirerapids)."""
    quantized, example = quantized_mlp(batch)
    compiled = lowerline.compile(quantized, example, target="cpu:znver4")
    assert integer_matmuls(compiled.ir("graph")) == (2, 0)
    code = kernel_code(compiled)
    assert "vpdpbusd" in code
    assert "vpmulld" not in code  # no layer is left on outer products
    assert_no_correction_per_step(code)


def assert_no_correction_per_step(code: str) -> None:
    """What reading A as u8 adds is subtracted from the accumulators once
    per tile, before their k loop (lowerline.passes.tiling.int8_corrections),
    not after every vpdpbusd of a 4-deep step: with K = 37 and 29 (10 and 8
    steps) far fewer vpsubd than vpdpbusd (as many, per step)."""
    assert code.count("vpsubd") * 4 <= code.count("vpdpbusd"), (
        code.count("vpsubd"),
        code.count("vpdpbusd"),
    )


@x86_host
def test_target_without_vnni_keeps_outer_products():
    quantized, example = quantized_mlp(8)
    compiled = lowerline.compile(quantized, example, target="cpu:haswell")
    code = kernel_code(compiled)
    assert "vpdpbusd" not in code and "vpmulld" in code
    assert_matches_eager(compiled, quantized, example)


@pytest.mark.skipif(not cpu_target("host").vnni, reason="the host has no VNNI")
@x86_host
@pytest.mark.parametrize(("make", "batch"), [(Mlp, 1), (Mlp, 13), (Mlp, 64), (WideMlp, 9)])
def test_host_vnni_kernels_match_eager(make, batch):
    quantized, example = quantized_mlp(batch, make)
    compiled = lowerline.compile(quantized, example)
    code = kernel_code(compiled)
    assert host_int8_instruction() in code
    if not cpu_target("host").amx:
        assert_no_correction_per_step(code)
    assert_matches_eager(compiled, quantized, example)
