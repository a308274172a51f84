"""Eager quantized-tensor code (quint8/qint8 tensors) compiled as it is:
``torch.quantize_per_channel(...).dequantize()``, ``int_repr()``,
``q_scale()``/``q_zero_point()``, and quantized parameters and buffers
dequantized in ``forward`` (``lowerline.frontend.eager_quantized``). The
reference is eager torch running the same code. What reads a quantized
tensor otherwise is refused, named.
"""

import pytest
import torch

import lowerline


class PerChannel(torch.nn.Module):
    """quantize_per_channel along ``axis``, its dequantized values and integers."""

    def __init__(self, axis: int, dtype: torch.dtype) -> None:
        super().__init__()
        self.axis, self.dtype = axis, dtype
        self.register_buffer("scales", torch.tensor([0.1, 0.023, 0.3], dtype=torch.float64))
        self.register_buffer("zero_points", torch.tensor([0, 9, 2]))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        q = torch.quantize_per_channel(x, self.scales, self.zero_points, self.axis, self.dtype)
        return q.dequantize(), q.int_repr()


@pytest.mark.parametrize(("axis", "dtype"), [(1, torch.qint8), (2, torch.quint8)])
def test_quantize_per_channel_matches_eager(axis, dtype):
    model = PerChannel(axis, dtype)
    x = torch.randn(4, 3, 3) * 5  # some saturate
    compiled = lowerline.compile(model, x)
    (values, ints), (expected_values, expected_ints) = compiled(x), model(x)
    assert torch.equal(ints, expected_ints)
    assert torch.allclose(values, expected_values, rtol=0, atol=1e-6)


class IntRepr(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        q = torch.quantize_per_tensor(x, 0.05, 7, torch.quint8)
        return q.int_repr(), q.dequantize() + q.q_scale() * q.q_zero_point()


def test_int_repr_and_parameters_match_eager():
    x = torch.randn(3, 7) * 10  # beyond both ends of the u8 range
    compiled = lowerline.compile(IntRepr(), x)
    got, expected = compiled(x), IntRepr()(x)
    assert got[0].dtype == torch.uint8
    assert all(torch.equal(a, b) for a, b in zip(got, expected, strict=True))


class QuantizedWeights(torch.nn.Module):
    """A Linear whose weight is a per-channel qint8 buffer and an offset held
    as a per-tensor quint8 parameter, both dequantized in forward."""

    def __init__(self) -> None:
        super().__init__()
        weight = torch.randn(6, 9)
        scales, zeros = weight.abs().amax(1) / 127, torch.zeros(6, dtype=torch.long)
        qweight = torch.quantize_per_channel(weight, scales, zeros, 0, torch.qint8)
        self.register_buffer("weight", qweight)
        qoffset = torch.quantize_per_tensor(torch.randn(6), 0.02, 3, torch.quint8)
        self.offset = torch.nn.Parameter(qoffset, requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.nn.functional.linear(x, self.weight.dequantize())
        return y + self.offset.dequantize() * self.offset.q_zero_point()


def test_quantized_buffer_and_parameter_match_eager():
    torch.manual_seed(0)
    model = QuantizedWeights()
    x = torch.randn(5, 9)
    compiled = lowerline.compile(model, x)
    assert torch.allclose(compiled(x), model(x), rtol=1e-6, atol=1e-5)
    assert model.weight.is_quantized  # the caller's module is left as it was


def test_quantize_saturates_at_255():
    """torch-mlir converts float to uint8 through i8 (fptosi), poison above
    127: LLVM dropped the clamp at 255 (265.6 came out as 10)."""

    class Dequantized(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.quantize_per_tensor(x, 0.0565, 70, torch.quint8).dequantize()

    x = torch.linspace(-20, 20, 41)
    assert torch.equal(lowerline.compile(Dequantized(), x)(x), Dequantized()(x))


def test_quantized_tensor_read_by_another_op_is_named():
    class Flattens(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.flatten(torch.quantize_per_tensor(x, 0.05, 7, torch.quint8)).dequantize()

    with pytest.raises(lowerline.ExportError, match="quantized tensor is read by flatten"):
        lowerline.compile(Flattens(), torch.randn(3, 4))


def test_quantized_tensor_returned_is_named():
    class ReturnsQuantized(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.quantize_per_channel(
                x, torch.ones(4), torch.zeros(4, dtype=torch.long), 1, torch.qint8
            )

    with pytest.raises(lowerline.ExportError, match="read by the model's output"):
        lowerline.compile(ReturnsQuantized(), torch.randn(2, 4))
