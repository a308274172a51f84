"""torch.erfc, which torch-mlir cannot import: the frontend writes it
1 - erf(x) and lowerline-fold-erfc folds that into math.erfc. The f32 sweep
over bit patterns is in test_approximate_math.py; here the other dtypes and
the shapes of the graph around it."""

import pytest
import torch

import lowerline


class Erfc(torch.nn.Module):
    def forward(self, x):
        return torch.erfc(x)


class ErfAndErfc(torch.nn.Module):
    """erf read twice: by the output and by erfc's 1 - erf(x)."""

    def forward(self, x):
        e = torch.erf(x)
        return e, torch.erfc(x), 1 - e


def _tail(dtype: torch.dtype, count: int = 1001) -> torch.Tensor:
    # Where 1 - erf(x) is 0 or far off: erfc(4) = 1.5e-8, erfc(9) = 4e-37.
    return torch.linspace(-12.0, 12.0, count, dtype=dtype)


def _assert_close_f32(got: torch.Tensor, x: torch.Tensor) -> None:
    """Within 3e-7 relative of float64 erfc, or two subnormal ulps (2^-148)
    where the result underflows (x > 9.2)."""
    torch.testing.assert_close(got.double(), torch.erfc(x.double()), rtol=3e-7, atol=2.0**-148)


@pytest.mark.parametrize("shape", [(1, 37), (3, 1001)])
def test_f32_tail_relative_accuracy(cache_dir, shape):
    x = _tail(torch.float32, shape[0] * shape[1]).reshape(shape)
    got = lowerline.compile(Erfc().eval(), x, cache_dir=cache_dir)(x)
    _assert_close_f32(got, x)


def test_f64_goes_to_libm_erfc(cache_dir):
    x = _tail(torch.float64).reshape(7, 143)
    compiled = lowerline.compile(Erfc().eval(), x, cache_dir=cache_dir)
    assert "@erfc(" in compiled.ir("llvm")
    torch.testing.assert_close(compiled(x), torch.erfc(x), rtol=1e-15, atol=0)


def test_integer_input_is_promoted_like_torch(cache_dir):
    x = torch.arange(-6, 6, dtype=torch.int32).reshape(2, 6)
    got = lowerline.compile(Erfc().eval(), x, cache_dir=cache_dir)(x)
    want = torch.erfc(x)
    assert got.dtype == want.dtype
    _assert_close_f32(got, x)


def test_erf_read_twice_keeps_both(cache_dir):
    x = _tail(torch.float32).reshape(7, 143)
    got = lowerline.compile(ErfAndErfc().eval(), x, cache_dir=cache_dir)(x)
    erf, _, one_minus = ErfAndErfc()(x)
    torch.testing.assert_close(got[0], erf)
    _assert_close_f32(got[1], x)
    torch.testing.assert_close(got[2], one_minus)
