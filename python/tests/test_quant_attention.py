"""lowerline's own Int8 quantization of a transformer encoder layer, its
attention included: the in- and out-projections, both batch matmuls
(``q @ k^T``, ``softmax @ v``) and the feed-forward linears become integer
kernels, and each matches its QDQ float reference within one output step.

Odd sizes: d = 36 with 3 heads (head size 12, k steps of 4), 70 hidden
units, a sequence of 17 (a partial register tile and a partial k step in
``softmax @ v``), batch 1 and 3.
"""

import re

import pytest
import torch
from test_quant_batch_matmul import batch_matmuls
from test_quant_pt2e import integer_matmuls

import lowerline
from lowerline.quant import Int8
from lowerline.quant.attention import decompose_attention
from lowerline.quant.calibrate import SOFTMAX_QPARAMS, quantize_model
from lowerline.quant.report import integer_kernel

pytest.importorskip("torchao")

D, HEADS, HIDDEN, SEQUENCE = 36, 3, 70, 17


def encoder_layer() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.TransformerEncoderLayer(D, HEADS, HIDDEN, batch_first=True).eval()


def calibration(batch: int, count: int = 4) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(batch)
    return [torch.randn(batch, SEQUENCE, D, generator=generator) for _ in range(count)]


def test_attention_is_written_out_and_its_matmuls_are_layers():
    """Calibration sees the two batch matmuls (the softmax output on its
    fixed [0, 1] grid, the operands moved out of the packed projection on
    its grid) besides the four linear layers."""
    data = calibration(2)
    quantized = quantize_model(encoder_layer(), (data[0],), Int8(calibration=data))
    kinds = [layer.kind for layer in quantized.layers]
    assert kinds == ["linear", "matmul", "matmul", "linear", "linear", "linear"]
    projection, scores, context = quantized.layers[:3]
    assert [layer.name for layer in (scores, context)] == ["self_attn.matmul0", "self_attn.matmul1"]
    # q and k are picked out of the in-projection's output: its parameters.
    assert scores.inputs == (projection.output, projection.output)
    assert context.inputs == (SOFTMAX_QPARAMS, projection.output)
    # The out-projection reads the heads put back together: the context's grid.
    assert quantized.layers[3].input == context.output
    targets = {node.target for node in quantized.graph.graph.nodes}
    assert torch.ops.aten.scaled_dot_product_attention.default not in targets


def test_skipping_matmuls_keeps_attention_float():
    data = calibration(2)
    config = Int8(calibration=data, skip="matmul")
    quantized = quantize_model(encoder_layer(), (data[0],), config)
    assert [layer.kind for layer in quantized.layers] == ["linear"] * 4
    targets = {node.target for node in quantized.graph.graph.nodes}
    assert torch.ops.aten.scaled_dot_product_attention.default in targets


class Attention(torch.nn.Module):
    def __init__(self, mask: torch.Tensor | None, scale: float | None) -> None:
        super().__init__()
        self.mask, self.scale = mask, scale

    def forward(self, q, k, v):
        return torch.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=self.mask, scale=self.scale
        )


@pytest.mark.parametrize(
    ("mask", "scale"),
    [
        (None, None),
        (torch.randn(5, 7), 0.3),
        (torch.rand(5, 7) > 0.3, None),
    ],
    ids=["plain", "float-mask", "bool-mask"],
)
def test_decomposed_attention_computes_what_sdpa_does(mask, scale):
    torch.manual_seed(1)
    q, k, v = torch.randn(2, 3, 5, 12), torch.randn(2, 3, 7, 12), torch.randn(2, 3, 7, 9)
    graph = torch.export.export(Attention(mask, scale), (q, k, v)).module()
    assert decompose_attention(graph) == 1
    assert "scaled_dot_product_attention" not in graph.code
    torch.testing.assert_close(graph(q, k, v), Attention(mask, scale)(q, k, v))


def test_causal_attention_stays_whole():
    class Causal(torch.nn.Module):
        def forward(self, q, k, v):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)

    q = torch.randn(1, 2, 5, 8)
    graph = torch.export.export(Causal(), (q, q, q)).module()
    assert decompose_attention(graph) == 0


@pytest.mark.parametrize("batch", [1, 3])
def test_int8_encoder_layer_folds_attention_and_matches(batch):
    """Six integer kernels; every one within one output step of its QDQ
    float reference (quant_report). End to end, against the float model:
    the output is a layer norm (unit scale), quantized through six layers:
    at most 0.15 anywhere and 0.02 on average on these inputs."""
    data = calibration(batch)
    model = encoder_layer()
    compiled = lowerline.compile(model, data[0], quantize=Int8(calibration=data))
    graph_ir = compiled.ir("graph")
    assert batch_matmuls(graph_ir) == (2, 0)
    assert integer_matmuls(graph_ir) == (4, 0)
    report = compiled.quant_report()
    assert [layer.kernel for layer in report.layers if layer.kind == "matmul"] == [
        "linalg.batch_matmul i8"
    ] * 2
    assert all(layer.kernel != "float" for layer in report.layers), str(report)
    assert report.ok, str(report)
    assert report.max_abs_error < 0.15, str(report)
    assert report.mean_abs_error < 0.02, str(report)
    x = torch.randn(batch, SEQUENCE, D) * 0.5  # outside the calibration data
    with torch.no_grad():
        error = (compiled(x) - model(x)).abs()
    assert error.max().item() < 0.15 and error.mean().item() < 0.02


def test_integer_kernel_names_batch_matmuls():
    text = "linalg.batch_matmul ins(%3, %5 : tensor<9x17x12xi8>, tensor<9x12x17xi8>) outs("
    assert integer_kernel(text) == "linalg.batch_matmul i8"


def test_attention_batch_matmuls_are_vpdpbusd_kernels():
    """Cross-compiled for sapphirerapids (VNNI): each batch matmul's k loop
    accumulates batch-of-one register tiles (``vector<1 x M x N x i32>``)
    with ``vpdpbusd``, no widened i32 products; B is not a constant, so the
    loop also carries the u8-read correction (``vector<16 x i32>`` per
    register of columns), which no row subtracts inside it."""
    data = calibration(3)
    compiled = lowerline.compile(
        encoder_layer(), data[0], quantize=Int8(calibration=data), target="cpu:sapphirerapids"
    )
    tiled = compiled.ir("tiled")
    loops = re.findall(
        r"scf\.for [^\n]*-> \((?:vector<16xi32>, )+vector<1x\d+x\d+xi32>\) \{(.*?)scf\.yield",
        tiled,
        re.DOTALL,
    )
    assert loops, "no batch matmul k loop"
    with_dot = [body for body in loops if "vpdpbusd" in body]
    assert len(with_dot) >= 2, len(with_dot)  # both matmuls (and their partial tiles)
    assert all("arith.muli" not in body for body in with_dot)
    assert all("arith.subi" not in body for body in with_dot)
