"""Issue 17, item 3: AArch64 targets as data (``cpu:cortex-a72``,
``cpu:cortex-a76``, ``cpu:neoverse-n1``), register tiles sized from their
128-bit vectors and 32 registers, and the code checked in the disassembly of
the functions that hold a model's matmul and convolution kernels.

The objects are generated here from the linalg IR torch-mlir wrote for a host
compile (its cache entry's ``linalg.mlir``, the weights as arguments): the
same stages, the AArch64 target's tile plan and LLVM's AArch64 backend. No
shared library is linked (this host cannot load AArch64 code).
"""

import os
import re
import shutil
from dataclasses import replace

import pytest
import torch
from disassembly import functions

import lowerline
from lowerline.cpu.stages import CPU_STAGES, CpuOptions
from lowerline.cpu.tile_plan import conv_tiles, lanes, matmul_tiles, vector_registers
from lowerline.driver.objects import emit_object
from lowerline.pipeline.lowerer import Lowerer
from lowerline.pipeline.stage_runner import StageRunner, stages_of
from lowerline.targets import CPU_TARGETS, cpu_target

AARCH64 = ("cortex-a72", "cortex-a76", "neoverse-n1")
# The model's kernels are inlined into the entry function; parallel loops
# would be outlined next to it (main..omp_par), so those count too.
KERNEL_SYMBOL = re.compile(r"main\b.*")
# A fused multiply-add on four f32 lanes: fmla v0.4s, v1.4s, v2.4s (or v2.s[1]).
FMLA_4S = re.compile(r"\bfmla\s+v\d+\.4s, v\d+\.4s, v\d+\.(4s|s\[\d\])")


@pytest.mark.parametrize("name", AARCH64)
def test_aarch64_targets_are_neon_with_32_registers(name):
    target = cpu_target(f"cpu:{name}")
    assert target.arch == "aarch64" and target.vector_bits == 128
    assert vector_registers(target) == 32 and lanes(target, 4) == 4
    assert ("asimddp" in target.required_flags) == (name != "cortex-a72")
    assert target.llvm_features == ("" if name == "cortex-a72" else "+dotprod")


@pytest.mark.parametrize("name", AARCH64)
@pytest.mark.parametrize(("m", "n", "k"), [(1, 10, 64), (3, 48, 64), (64, 100, 37)])
def test_matmul_register_tile_fits_neon_registers(name, m, n, k):
    target = CPU_TARGETS[name]
    tiles = matmul_tiles(target, m, n, k)
    vectors = -(-tiles.nr // 4)
    # Accumulators, the B vectors of a k step and a broadcast fit 32 registers.
    assert tiles.mr * vectors + vectors + 1 <= 32
    assert tiles.nr % 4 == 0 or tiles.nr == n


def test_register_tiles_follow_the_register_count_not_the_architecture():
    """Same 128-bit vectors, half the registers: smaller tiles (target data
    decides, no test of the triple)."""
    a72 = CPU_TARGETS["cortex-a72"]
    few = replace(a72, vector_registers=16)
    assert matmul_tiles(a72, 64, 64, 64).mr > matmul_tiles(few, 64, 64, 64).mr
    assert conv_tiles(a72, 64, 17, 17).mr > conv_tiles(few, 64, 17, 17).mr


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(37, 45)
        self.b = torch.nn.Linear(45, 10)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


class Cnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 12, 3)
        self.depthwise = torch.nn.Conv2d(12, 12, 3, padding=1, groups=12)

    def forward(self, x):
        return torch.relu(self.depthwise(torch.relu(self.conv(x))))


MODELS = {"mlp": (Mlp, (3, 37)), "cnn": (Cnn, (2, 3, 19, 19))}


@pytest.fixture(scope="module")
def linalg_ir(cache_dir):
    """Model name -> the linalg IR torch-mlir made of it (one host compile each)."""
    found = {}
    for name, (make, shape) in MODELS.items():
        torch.manual_seed(0)
        compiled = lowerline.compile(make().eval(), torch.randn(shape), cache_dir=cache_dir)
        with open(os.path.join(compiled.artifacts_dir, "linalg.mlir"), encoding="utf-8") as f:
            found[name] = f.read()
    return found


def aarch64_object(text: str, target: str, path: str, tile: bool = True) -> str:
    """``text`` lowered through the CPU stages for ``target`` (one thread:
    no OpenMP runtime exists for AArch64 here) into the object ``path``."""
    lowerer = Lowerer()
    module = lowerer.parse(text, "linalg.mlir")
    options = CpuOptions(target, num_threads=1, tile=tile)
    StageRunner(lowerer).run(module, stages_of(CPU_STAGES), options)
    emit_object(module, path, cpu_target(target))
    return path


def objdump() -> str | None:
    """GNU's AArch64 objdump where installed (tools/apt-packages.txt), else llvm-objdump."""
    return shutil.which("aarch64-linux-gnu-objdump")


def kernel_code(obj: str) -> str:
    """The disassembly of the functions of ``obj`` that hold the kernels."""
    found = functions(obj, objdump())
    kernels = {s: code for s, code in found.items() if KERNEL_SYMBOL.fullmatch(s)}
    assert kernels, sorted(found)
    return "\n".join(kernels.values())


@pytest.mark.parametrize("target", AARCH64)
@pytest.mark.parametrize("model", sorted(MODELS))
def test_kernels_use_fmla_on_4s_vectors(linalg_ir, tmp_path, model, target):
    code = kernel_code(aarch64_object(linalg_ir[model], target, str(tmp_path / f"{model}.o")))
    assert FMLA_4S.search(code), code[:2000]


@pytest.mark.parametrize("model", sorted(MODELS))
def test_untiled_kernels_have_no_vector_fmla(linalg_ir, tmp_path, model):
    """Without the tiled stage (naive loops) the same check finds none: the
    vectors come from the tile plan, not from LLVM's loop vectorizer."""
    obj = aarch64_object(linalg_ir[model], "cortex-a76", str(tmp_path / "naive.o"), tile=False)
    assert not FMLA_4S.search(kernel_code(obj))
