"""Python numbers in and out of ``forward``.

* A number read from a tensor (``t.item()``, ``int(t)``, ``float(t)``) is a
  run-time value: computed at each call, never baked in, so other values
  need no new specialization.
* Number outputs come back as Python numbers (``int``, ``float``, ``bool``)
  as eager returns them, whether computed at run time or constant.
* Number inputs are baked in by torch.export: a new value compiles (and
  caches) a guarded specialization, never reuses another value's code.
"""

import pytest
import torch

import lowerline
from lowerline.frontend.export import ExportError


def assert_same_outputs(got, expected):
    """Same structure, same values, and numbers of the same Python type."""
    assert type(got) is type(expected)
    if isinstance(got, tuple | list):
        assert len(got) == len(expected)
        for g, e in zip(got, expected, strict=True):
            assert_same_outputs(g, e)
    elif isinstance(got, torch.Tensor):
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)
    else:
        assert got == expected


class ScaleByItems(torch.nn.Module):
    """Numbers read from tensors used in the computation and returned."""

    def forward(self, x, scale, shift):
        factor = scale.item()  # a float
        offset = int(shift)  # an int: a data-dependent value in non-strict export
        return x * factor + offset, offset, float(scale), shift.item() > 3, x.shape[-1]


@pytest.mark.parametrize("shape", [(1, 7), (5, 3), (2, 3, 5)], ids=["batch1", "odd", "rank3"])
def test_numbers_read_from_tensors_are_run_time_values(cache_dir, shape):
    model = ScaleByItems()
    x = torch.randn(shape)
    compiled = lowerline.compile(model, x, torch.tensor(2.5), torch.tensor(5), cache_dir=cache_dir)
    for scale, shift in [(2.5, 5), (-0.75, 2), (1e3, -40), (0.0, 3)]:
        args = (torch.randn(shape), torch.tensor(scale), torch.tensor(shift))
        assert_same_outputs(compiled(*args), model(*args))
    assert len(compiled.specializations) == 1  # no value was baked in


class SumAndCount(torch.nn.Module):
    """Number outputs only, of each Python type."""

    def forward(self, x):
        positive = x > 0
        return x.sum().item(), int(positive.sum()), bool(positive.all()), len(x)


def test_number_outputs_are_python_numbers_of_eager_type(cache_dir):
    model = SumAndCount()
    compiled = lowerline.compile(model, torch.randn(9), cache_dir=cache_dir)
    for x in (torch.randn(9), torch.rand(9) + 0.1, -torch.rand(9)):
        got, expected = compiled(x), model(x)
        assert [type(value) for value in got] == [float, int, bool, int]
        assert got[1:] == expected[1:]
        assert got[0] == pytest.approx(expected[0], rel=1e-5)


class LargeInteger(torch.nn.Module):
    def forward(self, n):
        return n.item() + 1


def test_an_integer_item_is_exact_beyond_float_precision(cache_dir):
    compiled = lowerline.compile(LargeInteger(), torch.tensor(7), cache_dir=cache_dir)
    big = 2**53 + 1  # not a float32 or float64
    result = compiled(torch.tensor(big))
    assert type(result) is int and result == big + 1


class Offset(torch.nn.Module):
    def forward(self, x, k: int, scale: float, flip: bool):
        y = x * scale + k
        return (-y if flip else y), k


def test_number_inputs_are_guarded_specializations(cache_dir):
    model = Offset()
    x = torch.randn(3, 5)
    compiled = lowerline.compile(model, x, 2, 0.5, False, cache_dir=cache_dir)
    calls = [(2, 0.5, False), (3, 0.5, False), (2, -1.25, True), (2, 0.5, False)]
    for k, scale, flip in calls:
        x = torch.randn(3, 5)
        assert_same_outputs(compiled(x, k, scale, flip), model(x, k, scale, flip))
    assert len(compiled.specializations) == 3  # one per distinct set of numbers
    again = lowerline.compile(model, x, 3, 0.5, False, cache_dir=cache_dir)
    assert again.cache_hit


class Truncate(torch.nn.Module):
    def forward(self, x, n):
        return x[: int(n)]


def test_a_data_dependent_output_shape_is_a_clear_export_error(cache_dir):
    with pytest.raises(ExportError, match="data-dependent"):
        lowerline.compile(Truncate(), torch.randn(6), torch.tensor(3), cache_dir=cache_dir)


def test_run_time_numbers_survive_a_cache_hit(cache_dir):
    model = ScaleByItems()
    x = torch.randn(4, 3)
    lowerline.compile(model, x, torch.tensor(1.5), torch.tensor(1), cache_dir=cache_dir)
    compiled = lowerline.compile(model, x, torch.tensor(9.0), torch.tensor(7), cache_dir=cache_dir)
    assert compiled.cache_hit  # the values are not part of the key
    args = (x, torch.tensor(-3.0), torch.tensor(8))
    assert_same_outputs(compiled(*args), model(*args))
