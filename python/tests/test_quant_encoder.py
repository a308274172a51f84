"""A PT2E-quantized transformer encoder layer (bench/quant.py's ``encoder``
at odd sizes) against the converted model run eagerly.

X86InductorQuantizer quantizes the feed-forward block's two linear layers
only (torchao's XNNPACKQuantizer quantizes the attention's projections too,
below): the attention's input and output projections (``F.linear`` inside
``nn.MultiheadAttention``) and its scaled dot product stay float in the
converted graph, so they stay float here too. The two linears become
integer matmuls with constant weights, whose ``vpdpbusd`` correction is
subtracted once per register tile where the target has VNNI
(lowerline.passes.tiling.int8_corrections): K = 36 and 70 (9 and 18 steps
of 4, the last one partial), N = 70 and 36 (not multiples of 16).
"""

import re

import pytest
import torch
from test_quant_pt2e import integer_matmuls, quantize
from test_quant_vnni import kernel_code

import lowerline
from lowerline.targets import cpu_target

pytest.importorskip("torchao")


def encoder_layer() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.TransformerEncoderLayer(36, 4, 70, batch_first=True).eval()


@pytest.mark.parametrize(("batch", "sequence"), [(1, 13), (3, 7)])
def test_int8_encoder_layer_matches_converted_model(batch, sequence):
    example = torch.randn(batch, sequence, 36)
    converted = quantize(encoder_layer(), example)
    compiled = lowerline.compile(converted, example)
    assert integer_matmuls(compiled.ir("graph"))[0] == 2
    for spread in (0.5, 2.0):
        x = torch.randn(batch, sequence, 36) * spread
        expected = converted(x)
        # The output is a layer norm of the residual sum: unit scale. A
        # requantized activation may land one step apart at a rounding tie
        # (the folded layer adds the bias in i32), which the second linear
        # spreads over a row; nothing more.
        torch.testing.assert_close(compiled(x), expected, atol=0.05, rtol=0.0)
        assert (compiled(x) - expected).abs().mean().item() < 0.005


@pytest.mark.skipif(not cpu_target("host").triple.startswith("x86_64"), reason="x86 code")
def test_int8_encoder_layer_vnni_kernels():
    """Cross-compiled for znver4 (VNNI without AMX): both linears are vpdpbusd kernels
    that load no per-step sums of their weights: each has one constant of
    its whole k loop's sums instead (the float parts of the layer have
    vpsubd of their own, so the disassembly's count says nothing here)."""
    example = torch.randn(2, 11, 36)
    converted = quantize(encoder_layer(), example)
    compiled = lowerline.compile(converted, example, target="cpu:znver4")
    assert "vpdpbusd" in kernel_code(compiled)
    tiled = compiled.ir("tiled")
    totals = re.findall(r"= arith.constant dense_resource<[^>]*\.vnni_totals[0-9_]+>", tiled)
    assert len(totals) == 2, totals
    assert "vnni_sums" not in tiled


def xnnpack_quantize(model: torch.nn.Module, example: torch.Tensor) -> torch.fx.GraphModule:
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from torchao.testing.pt2e import _xnnpack_quantizer as xnnpack

    config = xnnpack.get_symmetric_quantization_config(is_per_channel=True)
    quantizer = xnnpack.XNNPACKQuantizer().set_global(config)
    prepared = prepare_pt2e(torch.export.export(model, (example,)).module(), quantizer)
    for _ in range(4):
        prepared(torch.randn_like(example))
    return convert_pt2e(prepared)


def test_xnnpack_quantized_encoder_layer_folds_all_four_linears():
    """XNNPACKQuantizer's graph: the in-projection reads the transposed
    (sequence-first) input, which torch lowers as a batch matmul by the
    broadcast weight; collapsed before the QDQ folds, it folds like the
    other three (the scaled dot product stays float: no PT2E quantizer
    annotates it)."""
    example = torch.randn(3, 7, 36)
    converted = xnnpack_quantize(encoder_layer(), example)
    compiled = lowerline.compile(converted, example)
    assert integer_matmuls(compiled.ir("graph")) == (4, 0)
    for spread in (0.5, 2.0):
        x = torch.randn(3, 7, 36) * spread
        expected = converted(x)
        torch.testing.assert_close(compiled(x), expected, atol=0.05, rtol=0.0)
        assert (compiled(x) - expected).abs().mean().item() < 0.005
