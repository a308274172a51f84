"""The int8 matmul and convolution kernels of a PT2E-quantized model use
``sdot`` on an AArch64 target with dot products (``cpu:cortex-a76``,
``cpu:neoverse-n1``; lowerline.passes.tiling.int8_dot) and no dot product
on ``cpu:cortex-a72``, which has none; checked in the disassembly of the
exported library's kernel functions.

The numerics are checked by running the exported models under qemu-aarch64
(its default CPU has dot products) against eager torch's quantized ops
(skipped with a message where the cross tools are missing, except in CI).
"""

import re

import pytest
import torch
from disassembly import functions
from export_support import require_aarch64_tools, run_exported
from test_aarch64_targets import KERNEL_SYMBOL, objdump
from test_quant_conv import OneConv
from test_quant_pt2e import Mlp, QuantizedOutput, quantize

import lowerline

pytest.importorskip("torchao")

# sdot v0.4s, v1.16b, v2.16b (or an indexed v2.4b[1]).
SDOT = re.compile(r"\bsdot\s+v\d+\.4s, v\d+\.16b, v\d+\.(16b|4b\[\d\])")
# Any integer dot product (signed or unsigned, vector or indexed).
ANY_DOT = re.compile(r"\b[su]dot\b")


class WideMlp(Mlp):
    """Layers of 45 and 70 columns: several 4-lane registers per register
    tile and a partial one (45 and 70 are not multiples of 4)."""

    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(37, 45)
        self.b = torch.nn.Linear(45, 70)


def conv() -> torch.nn.Module:
    """A convolution alone (its dot products are its own) over 8 input
    channels: whole 4-deep steps of k."""
    return OneConv(torch.nn.Conv2d(8, 6, 3, padding=1))


MODELS = {"mlp": (Mlp, (37,)), "wide_mlp": (WideMlp, (37,)), "conv": (conv, (8, 9, 7))}


def quantized_model(name: str, batch: int) -> tuple[QuantizedOutput, torch.Tensor]:
    make, shape = MODELS[name]
    torch.manual_seed(0)
    example = torch.randn(batch, *shape)
    converted = quantize(make().eval(), example)
    return QuantizedOutput(converted, high=converted(example * 3).max().item()), example


def exported_kernels(model, example, target: str, folder) -> tuple[object, str]:
    exported = lowerline.export(model, example, target=target, out_dir=str(folder), name="q")
    found = functions(exported.library, objdump())
    kernels = {s: code for s, code in found.items() if KERNEL_SYMBOL.fullmatch(s)}
    assert kernels, sorted(found)
    return exported, "\n".join(kernels.values())


@pytest.mark.parametrize("target", ["cortex-a76", "neoverse-n1"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_dotprod_target_kernels_use_sdot(tmp_path, name, target):
    model, example = quantized_model(name, 3)
    _, code = exported_kernels(model, example, f"cpu:{target}", tmp_path)
    assert SDOT.search(code), code[:3000]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_target_without_dotprod_has_no_dot_products(tmp_path, name):
    model, example = quantized_model(name, 3)
    _, code = exported_kernels(model, example, "cpu:cortex-a72", tmp_path)
    assert not ANY_DOT.search(code)


@pytest.mark.parametrize(
    ("name", "batch", "target"),
    [
        ("mlp", 1, "cortex-a76"),
        ("wide_mlp", 13, "cortex-a76"),
        ("conv", 2, "neoverse-n1"),
        ("wide_mlp", 5, "cortex-a72"),
    ],
)
def test_exported_int8_model_matches_eager_under_qemu(tmp_path, name, batch, target):
    require_aarch64_tools()
    model, example = quantized_model(name, batch)
    exported, _ = exported_kernels(model, example, f"cpu:{target}", tmp_path / "out")
    for spread in (0.5, 3.0):
        x = torch.randn(example.shape) * spread
        outputs, printed = run_exported(exported, (x,), str(tmp_path), aarch64=True)
        assert printed["status"] == "0", printed
        # One output step apart at most, where a value lands next to a tie.
        error = (outputs[0] - model(x)).abs().max().item()
        assert error <= model.scale * 1.001
