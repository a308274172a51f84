"""``lowerline.compile(..., precision="bf16")`` (lowerline.precision): bf16
weights and activations with f32 accumulation, against eager f32.

Tolerance: bf16 keeps 8 significant bits (a relative step of 2**-8); each
layer rounds its inputs, weights and outputs once, so a few layers deep the
error is a few of those steps of the output's scale. The checks allow 3% of
the largest output magnitude, well above what the models show (their
precision reports: under 1%) and well below what a wrong kernel gives.

The matmul kernels use ``vdpbf16ps`` on a target with AVX512-BF16
(lowerline.passes.tiling.bf16_dot), checked in the disassembly of the
library's kernel functions: on the host where it has the feature (Zen 4),
cross-compiled for ``cpu:znver4``, and absent on ``cpu:haswell``, which
widens bf16 to f32 and runs here. A target with AMX (``cpu:sapphirerapids``,
such a host) runs the matmuls with a constant B on AMX bf16 tiles
(``tdpbf16ps``, lowerline.passes.tiling.amx_matmul) instead.
"""

import os
import re

import pytest
import torch
from disassembly import functions

import lowerline
from lowerline.targets import CPU_TARGETS, cpu_target, runs_here

TOLERANCE = 0.03  # of the largest |output| (see the module docstring)
KERNEL_SYMBOL = re.compile(r"main\b.*")
x86_host = pytest.mark.skipif(
    not cpu_target("host").triple.startswith("x86_64"), reason="runs x86 code"
)


def mlp() -> torch.nn.Module:
    return torch.nn.Sequential(
        torch.nn.Linear(37, 70), torch.nn.GELU(), torch.nn.Linear(70, 45), torch.nn.ReLU()
    )


def encoder() -> torch.nn.Module:
    return torch.nn.TransformerEncoderLayer(48, 4, 96, dropout=0.0, batch_first=True)


def cnn() -> torch.nn.Module:
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.Conv2d(8, 8, 3, padding=1, groups=8),  # depthwise
        torch.nn.Conv2d(8, 12, 1),
        torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(),
        torch.nn.Linear(12, 5),
    )


MODELS = {
    "mlp": (mlp, (37,)),
    "encoder": (encoder, (11, 48)),  # an odd sequence length
    "cnn": (cnn, (3, 13, 13)),
}


def built(name: str, batch: int) -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    make, shape = MODELS[name]
    return make().eval(), torch.randn(batch, *shape)


def assert_close_to_f32(got: torch.Tensor, expected: torch.Tensor) -> None:
    assert got.dtype == torch.float32 and got.shape == expected.shape
    scale = expected.abs().max().item()
    error = (got - expected).abs().max().item()
    assert error <= TOLERANCE * scale, (error, scale)


def kernel_code(compiled) -> str:
    """The disassembly of the functions that hold the model's kernels."""
    library = os.path.join(compiled.artifacts_dir, "lib.so")
    kernels = {s: code for s, code in functions(library).items() if KERNEL_SYMBOL.fullmatch(s)}
    assert kernels, sorted(functions(library))
    return "\n".join(kernels.values())


def bf16_matmuls(graph_ir: str) -> int:
    return len(
        re.findall(r"linalg\.(?:batch_)?matmul ins\([^)]*xbf16>, tensor<[^)]*xbf16>\)", graph_ir)
    )


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("batch", [1, 8])
def test_bf16_matches_f32_within_bf16_tolerance(name, batch):
    model, x = built(name, batch)
    compiled = lowerline.compile(model, x, precision="bf16")
    # Every matmul and convolution tiled (a bf16 max pooling still is loops).
    assert not [r for r in compiled.fallbacks if "conv" in r.op or "matmul" in r.op]
    with torch.inference_mode():
        expected = model(x)
        for inputs in (x, torch.randn(x.shape) * 2):  # the example and new values
            assert_close_to_f32(compiled(inputs), model(inputs))
    report = compiled.precision_report()
    assert report.precision == "bf16" and report.outputs == 1
    assert report.max_reference == pytest.approx(expected.abs().max().item())
    assert 0 < report.relative_error <= TOLERANCE  # bf16 rounds: never exactly f32
    assert "precision bf16: max |error|" in str(report)


def test_bf16_weights_and_matmul_operands_are_bf16():
    """The matmuls read bf16 (no f32 copies of weights or activations) and
    accumulate in f32; the library's weights take half the f32 bytes."""
    model, x = built("mlp", 8)
    narrow = lowerline.compile(model, x, precision="bf16")
    wide = lowerline.compile(model, x)
    graph = narrow.ir("graph")
    assert bf16_matmuls(graph) == 2, graph
    assert "tensor<37x70xf32>" not in graph and "tensor<70x45xf32>" not in graph
    # The output of the f32 compile is exact f32; bf16's differs (it is not computed in f32).
    with torch.inference_mode():
        assert not torch.equal(narrow(x), wide(x))


def test_bf16_encoder_batch_matmuls_read_bf16():
    model, x = built("encoder", 2)
    graph = lowerline.compile(model, x, precision="bf16").ir("graph")
    assert bf16_matmuls(graph) >= 4, graph  # in-projection, scores, context, out, ffn


@x86_host
def test_host_kernels_use_vdpbf16ps_where_it_has_avx512_bf16():
    model, x = built("mlp", 8)
    compiled = lowerline.compile(model, x, precision="bf16")
    code = kernel_code(compiled)
    if cpu_target("host").amx:  # the matmuls on AMX tiles instead
        assert "tdpbf16ps" in code
    else:
        assert ("vdpbf16ps" in code) == cpu_target("host").bf16


def test_avx512_bf16_target_kernels_use_vdpbf16ps():
    """Cross-compiled for znver4 (AVX512-BF16 without AMX)."""
    for batch in (1, 13):
        model, x = built("mlp", batch)
        compiled = lowerline.compile(model, x, target="cpu:znver4", precision="bf16")
        assert "vdpbf16ps" in kernel_code(compiled)


def test_sapphirerapids_kernels_use_amx_bf16_tiles():
    """Cross-compiled (not run here: the host may lack its other extensions):
    the matmuls on AMX tiles (lowerline-amx-matmul), ``tdpbf16ps``."""
    for batch in (1, 13):
        model, x = built("mlp", batch)
        compiled = lowerline.compile(model, x, target="cpu:sapphirerapids", precision="bf16")
        code = kernel_code(compiled)
        assert "tdpbf16ps" in code and "ldtilecfg" in code
    if not runs_here(CPU_TARGETS["sapphirerapids"]):  # no report made by running foreign code
        with pytest.raises(RuntimeError, match="whose code runs on this machine"):
            compiled.precision_report()


@x86_host
def test_haswell_widens_bf16_and_runs_correctly():
    model, x = built("mlp", 8)
    compiled = lowerline.compile(model, x, target="cpu:haswell", precision="bf16")
    code = kernel_code(compiled)
    assert "vdpbf16ps" not in code
    assert "vfmadd" in code  # the widened operands are FMA'd
    with torch.inference_mode():
        assert_close_to_f32(compiled(x), model(x))


def test_f32_is_the_default_and_has_no_precision_report():
    model, x = built("mlp", 2)
    compiled = lowerline.compile(model, x, precision="f32")
    with pytest.raises(RuntimeError, match='precision="bf16"'):
        compiled.precision_report()


@pytest.mark.parametrize("precision", ["fp8", "BF16", "float16", 16, None])
def test_unknown_precision_is_refused(precision):
    model, x = built("mlp", 2)
    with pytest.raises(ValueError, match="precision takes one of f32, bf16, f16"):
        lowerline.compile(model, x, precision=precision)


def test_f16_is_for_gpu_targets():
    model, x = built("mlp", 2)
    with pytest.raises(ValueError, match=r"precision='f16' is for GPU targets.*'cpu:haswell'"):
        lowerline.compile(model, x, target="cpu:haswell", precision="f16")


def test_precision_and_quantize_exclude_each_other():
    model, x = built("mlp", 2)
    with pytest.raises(ValueError, match="precision='bf16' and quantize= exclude each other"):
        lowerline.compile(
            model, x, precision="bf16", quantize=lowerline.quant.Int8(calibration=[x])
        )


@pytest.mark.parametrize(("precision", "ptx_type"), [("f16", ".f16"), ("bf16", ".bf16")])
def test_gpu_targets_take_f16_and_bf16(precision, ptx_type):
    """Compiled for sm_80 (no GPU needed): the kernels compute on 16-bit
    values, and the GPU-mapped IR run on this CPU matches f32 within bf16's
    tolerance (f16 keeps 3 more bits)."""
    model, x = built("mlp", 8)
    compiled = lowerline.compile(model, x, target="cuda:sm_80", precision=precision)
    assert ptx_type in compiled.ptx
    with torch.inference_mode():
        assert_close_to_f32(compiled.run_on_cpu(x), model(x))
