"""Comparisons of a tensor with a number of another kind (frontend/number_comparisons).

torch-mlir's folders misread a constant tensor compared with a number of the
other kind: ``full_like(x, 3.0, dtype=float64) == 0`` folded to all true,
and ``full_like(x, 3, dtype=int64) < 3.5`` crashed the import worker.
"""

import pytest
import torch

import lowerline
from lowerline.frontend.number_comparisons import COMPARISONS, one_kind

aten = torch.ops.aten


class FilledComparisons(torch.nn.Module):
    """Filled (constant) tensors of each kind against numbers of the other,
    and the same comparisons of computed tensors."""

    def forward(self, x):
        f64 = torch.full_like(x, 3.0, dtype=torch.float64)
        f32 = torch.full_like(x, -1.5)
        i64 = torch.full_like(x, 3, dtype=torch.int64)
        flags = torch.full_like(x, 1, dtype=torch.bool)
        computed = x.double() * 4.0
        return (
            f64 == 0,
            f64 != 0,
            f64 <= 0,
            f64 >= 3,
            f64 > 2,
            f32 < 0,
            f32 == -1,
            i64 < 3.5,
            i64 >= 2.5,
            i64 == 3.0,
            flags == 2,
            computed > 2,
            (computed * 10).to(torch.int64) <= 19.5,
        )


@pytest.mark.parametrize("shape", [(1, 7), (3, 5, 9)])
def test_filled_tensors_compare_like_eager(shape):
    torch.manual_seed(0)
    x = torch.rand(*shape)
    model = FilledComparisons()
    compiled = lowerline.compile(model, x, num_threads=1)
    for index, (got, want) in enumerate(zip(compiled(x), model(x), strict=True)):
        assert got.dtype == want.dtype == torch.bool, index
        assert torch.equal(got, want), (
            f"output {index}: {got.flatten()[:4]} != {want.flatten()[:4]}"
        )


@pytest.mark.parametrize("op", COMPARISONS, ids=lambda op: str(op))
def test_entry_makes_one_kind_and_keeps_the_rest(op):
    floats = torch.tensor([-2.0, 0.0, 3.0, float("nan")], dtype=torch.float64)
    ints = torch.tensor([-2, 0, 3, 4])
    entry = one_kind(op)
    # Another kind: rewritten, with eager's result.
    for tensor, number in ((floats, 0), (floats, True), (ints, 2.5), (ints, 3.0)):
        got = entry(tensor, number)
        assert got is not NotImplemented
        assert torch.equal(got, op(tensor, number)), (tensor, number)
    # One kind already, a complex tensor, a symbolic number: the op is kept.
    assert entry(floats, 0.5) is NotImplemented
    assert entry(ints, 3) is NotImplemented
    assert entry(torch.ones(2, dtype=torch.complex64), 1) is NotImplemented
    assert entry(floats, torch.tensor(1)) is NotImplemented
