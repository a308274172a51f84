"""On a target with Intel AMX (``cpu:sapphirerapids``) the int8 matmuls of a
PT2E-quantized model, linear layers and im2col'd convolutions alike, run on
AMX tiles: ``tdpbssd`` (lowerline.passes.tiling.amx_matmul,
lowerline.passes.lowering.amx_tiles), with the tile configuration
(``ldtilecfg``) LLVM inserts, checked in the disassembly of the functions
that hold the model's kernels. Cross-compiled here; run and compared with
eager torch where the host has AMX; refused with an error, not an illegal
instruction, where it has not.
"""

import subprocess

import pytest
import torch
from disassembly import functions
from test_quant_encoder import encoder_layer
from test_quant_pt2e import Mlp, QuantizedOutput, SmallCnn, integer_matmuls, quantize
from test_quant_vnni import WideMlp, assert_matches_eager, kernel_code, quantized_mlp, x86_host

import lowerline
from lowerline.driver.objects import llvm_tool
from lowerline.errors import ForeignTargetError
from lowerline.runtime.amx import AmxUnavailable, request_permission
from lowerline.targets import cpu_target

pytest.importorskip("torchao")

host_amx = cpu_target("host").amx
MLPS = [(Mlp, 1), (Mlp, 13), (WideMlp, 8)]  # Mlp at 13 rows: a 13x37 by 37x29 layer


def quantized_cnn(batch: int) -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    example = torch.randn(batch, 3, 9, 9)
    converted = quantize(SmallCnn().eval(), example)
    return QuantizedOutput(converted, high=converted(example * 3).max().item()), example


def assert_on_tiles(compiled) -> None:
    code = kernel_code(compiled)
    assert "tdpbssd" in code
    assert "ldtilecfg" in code
    assert "vpdpbusd" not in code  # no int8 matmul left on VNNI register tiles


@pytest.mark.parametrize(("make", "batch"), MLPS, ids=[f"{m.__name__}-{b}" for m, b in MLPS])
def test_amx_target_matmuls_use_tiles(make, batch):
    quantized, example = quantized_mlp(batch, make)
    compiled = lowerline.compile(quantized, example, target="cpu:sapphirerapids")
    assert integer_matmuls(compiled.ir("graph")) == (2, 0)
    assert compiled.ir("tiled").count("lowerline.amx_tiles") == 2
    assert_on_tiles(compiled)
    assert not compiled.fallbacks


def test_amx_target_conv_uses_tiles():
    """The convolution as an im2col matmul (lowerline-int8-conv-matmul) and
    the linear layer after it."""
    quantized, example = quantized_cnn(2)
    compiled = lowerline.compile(quantized, example, target="cpu:sapphirerapids")
    assert "linalg.conv_2d" not in compiled.ir("tiled")
    assert compiled.ir("tiled").count("lowerline.amx_tiles") == 2
    assert_on_tiles(compiled)


def test_amx_target_encoder_linears_use_tiles():
    """The int8 feed-forward linears of a PT2E encoder layer (the two
    integer matmuls the fold makes of it) on tiles."""
    example = torch.randn(2, 11, 36)
    converted = quantize(encoder_layer(), example)
    compiled = lowerline.compile(converted, example, target="cpu:sapphirerapids")
    assert compiled.ir("tiled").count("lowerline.amx_tiles") == 2
    assert "tdpbssd" in kernel_code(compiled)


@pytest.mark.skipif(not host_amx, reason="the host has no AMX")
@pytest.mark.parametrize(("make", "batch"), MLPS, ids=[f"{m.__name__}-{b}" for m, b in MLPS])
def test_host_amx_kernels_match_eager(make, batch):
    quantized, example = quantized_mlp(batch, make)
    compiled = lowerline.compile(quantized, example)
    assert_on_tiles(compiled)
    assert_matches_eager(compiled, quantized, example)


@pytest.mark.skipif(not host_amx, reason="the host has no AMX")
@pytest.mark.parametrize("batch", [1, 8])
def test_host_amx_conv_matches_eager(batch):
    quantized, example = quantized_cnn(batch)
    compiled = lowerline.compile(quantized, example)
    assert_on_tiles(compiled)
    assert_matches_eager(compiled, quantized, example)


@x86_host
@pytest.mark.skipif(host_amx, reason="the host has AMX")
def test_amx_code_is_refused_on_a_cpu_without_amx():
    """Compiled for sapphirerapids here: the call is refused with an error
    naming AMX before any tile instruction runs (a saved module is refused
    earlier, at load: test_saved_modules); the library itself refuses too,
    for callers that reach it without the module's check."""
    quantized, example = quantized_mlp(1)
    compiled = lowerline.compile(quantized, example, target="cpu:sapphirerapids")
    with pytest.raises(ForeignTargetError, match=r"this CPU lacks: .*amx_tile"):
        compiled(example)
    (specialization,) = compiled.specializations
    with pytest.raises(AmxUnavailable, match=r"uses Intel AMX tiles .* which this CPU lacks"):
        specialization.call(specialization.function, [example], compiled._state)


@x86_host
@pytest.mark.skipif(host_amx, reason="the host has AMX")
def test_the_kernel_refuses_amx_state_to_a_cpu_without_it():
    """The request itself (``arch_prctl``) fails on a CPU without AMX, with
    an error that names it (never reached through a library: the CPU
    check comes first)."""
    with pytest.raises(AmxUnavailable, match=r"refused AMX tile state .*ARCH_REQ_XCOMP_PERM"):
        request_permission()


@x86_host
def test_exported_amx_library_requests_the_tile_state(tmp_path):
    """``lowerline.export`` for sapphirerapids: the static library's kernels
    use tiles and its ``name_run`` asks Linux for the AMX state first
    (``syscall(SYS_arch_prctl, ...)``); a target without AMX asks nothing."""
    quantized, example = quantized_mlp(1)
    for target, amx in (("cpu:sapphirerapids", True), ("cpu:znver4", False)):
        out = tmp_path / target.split(":")[1]
        lowerline.export(quantized, example, target=target, out_dir=str(out), name="mlp")
        library = str(out / "libmlp.a")
        undefined = subprocess.run(
            [llvm_tool("llvm-nm"), "-u", library], capture_output=True, text=True, check=True
        ).stdout.split()
        assert ("syscall" in undefined) == amx, target
        code = "\n".join(functions(library).values())
        assert ("tdpbssd" in code) == amx, target
