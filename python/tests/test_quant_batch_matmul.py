"""Batch matmuls of two quantized activations (attention's ``q @ k^T``,
``p @ v``) become integer batch matmuls with run-time zero-point sums
(lowerline-fold-qdq-batch-matmul) and match eager torch's
``quantized_decomposed`` ops within one output step.

No PT2E quantizer here annotates ``bmm``/``matmul`` of two activations, so
the model writes its quantize/dequantize pairs itself, as a converted graph
would hold them.
"""

import re

import pytest
import torch

import lowerline

pytest.importorskip("torchao")
import torch.ao.quantization.fx._decomposed

OPS = torch.ops.quantized_decomposed


def qdq(x: torch.Tensor, scale: float, zero_point: int, dtype: torch.dtype) -> torch.Tensor:
    low, high = (0, 255) if dtype == torch.uint8 else (-128, 127)
    q = OPS.quantize_per_tensor(x, scale, zero_point, low, high, dtype)
    return OPS.dequantize_per_tensor(q, scale, zero_point, low, high, dtype)


class QuantizedBmm(torch.nn.Module):
    """u8 x s8 batch matmul (zero points on both sides), ReLU, u8 output."""

    def __init__(self, zero_x: int, zero_y: int, relu: bool) -> None:
        super().__init__()
        self.zero_x, self.zero_y, self.relu = zero_x, zero_y, relu
        self.out_scale = 0.05

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        y = torch.bmm(qdq(a, 0.02, self.zero_x, torch.uint8), qdq(b, 0.03, self.zero_y, torch.int8))
        if self.relu:
            return qdq(torch.relu(y), self.out_scale, 0, torch.uint8)
        return qdq(y, self.out_scale, 3, torch.int8)


class QuantizedAttentionScores(torch.nn.Module):
    """(B, H, S, D) queries times transposed keys, both s8: torch-mlir
    collapses the heads and transposes k around a batch matmul, which the
    sink pass moves onto the integers."""

    out_scale = 0.1

    def forward(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        qd, kd = qdq(q, 0.02, 1, torch.int8), qdq(k, 0.025, -2, torch.int8)
        return qdq(torch.matmul(qd, kd.transpose(-1, -2)), self.out_scale, 0, torch.int8)


def batch_matmuls(ir: str) -> tuple[int, int]:
    """(i8 x i8 batch matmuls, other batch matmuls) in a stage's IR."""
    found = re.findall(r"linalg\.batch_matmul ins\([^)]*: (tensor<[^)]*>)\)", ir)
    integer = [c for c in found if re.fullmatch(r"tensor<\w+xi8>, tensor<\w+xi8>", c)]
    return len(integer), len(found) - len(integer)


def assert_within_one_step(compiled, model, shapes, step: float) -> None:
    generator = torch.Generator().manual_seed(3)
    for spread in (0.5, 2.0):
        inputs = [torch.randn(s, generator=generator) * spread for s in shapes]
        expected = model(*inputs)
        got = compiled(*inputs)
        assert got.shape == expected.shape
        assert (got - expected).abs().max().item() <= step * 1.001
        assert (got != expected).float().mean().item() < 0.05


@pytest.mark.parametrize("batch", [1, 8])
@pytest.mark.parametrize(
    ("zero_x", "zero_y", "relu"), [(131, -3, True), (128, 0, False), (0, 5, True)]
)
def test_batch_matmul_folds_and_matches_eager(batch, zero_x, zero_y, relu):
    model = QuantizedBmm(zero_x, zero_y, relu)
    shapes = [(batch, 5, 7), (batch, 7, 9)]
    compiled = lowerline.compile(model, *[torch.randn(s) for s in shapes])
    assert batch_matmuls(compiled.ir("graph")) == (1, 0)
    assert_within_one_step(compiled, model, shapes, model.out_scale)


def test_attention_scores_fold_through_reshapes_and_transpose():
    model = QuantizedAttentionScores()
    shapes = [(2, 3, 5, 8), (2, 3, 6, 8)]
    compiled = lowerline.compile(model, *[torch.randn(s) for s in shapes])
    assert batch_matmuls(compiled.ir("graph")) == (1, 0)
    assert_within_one_step(compiled, model, shapes, model.out_scale)
