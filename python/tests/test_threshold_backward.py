"""``threshold_backward`` computes in the type its two operands promote to.

torch's decomposition (which torch-mlir's table uses) selected between 0 and
the gradient in the gradient's type: an int64 gradient with a float32 input
came back int64 where eager returns float32 (torch-mlir's upstream e2e test
``ThresholdBackward2dMixedModule``). Fixed in
``lowerline.frontend.decompositions.threshold_backward``."""

import pytest
import torch

import lowerline


class ThresholdBackward(torch.nn.Module):
    def __init__(self, threshold: float):
        super().__init__()
        self.threshold = threshold

    def forward(self, grad, x):
        return torch.ops.aten.threshold_backward(grad, x, self.threshold)


def _values(shape: tuple[int, ...], dtype: torch.dtype, generator: torch.Generator) -> torch.Tensor:
    if dtype.is_floating_point:
        values = torch.randn(shape, generator=generator) * 3
        values.view(-1)[::7] = float("nan")  # NaN inputs keep their gradient
        return values.to(dtype)
    return torch.randint(-20, 20, shape, generator=generator, dtype=dtype)


@pytest.mark.parametrize(
    ("grad_dtype", "x_dtype", "threshold"),
    [
        (torch.int64, torch.float32, 0.5),
        (torch.int32, torch.float64, -2),
        (torch.float32, torch.int64, 0.5),
        (torch.float32, torch.float32, -2),
    ],
)
@pytest.mark.parametrize("batch", [1, 4])
def test_threshold_backward_promotes_like_eager(grad_dtype, x_dtype, batch, threshold):
    generator = torch.Generator().manual_seed(batch)
    shape = (batch, 5, 7)
    grad, x = _values(shape, grad_dtype, generator), _values(shape, x_dtype, generator)
    model = ThresholdBackward(threshold)
    compiled = lowerline.compile(model, grad, x, num_threads=1)
    got, want = compiled(grad, x), model(grad, x)
    assert got.dtype == want.dtype
    torch.testing.assert_close(got, want, equal_nan=True, rtol=0, atol=0)
