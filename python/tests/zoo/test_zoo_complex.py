"""Complex numbers through the whole pipeline: concatenation, elementwise
arithmetic and functions, parts and views, and the FFTs torch-mlir lowers.

torch-mlir leaves complex elementwise ops, reductions and ``fft``/``ifft``
unusable; the frontend rewrites them as real arithmetic on the parts
(``lowerline.frontend.complex_ops``, ``complex_reductions``, ``fft``; op by
op on the branch cuts: ``python/tests/test_complex_ops.py``). Complex buffers reach the llvm stage
as structs of two floats (``convert-complex-to-standard``,
``test/pipelines/llvm-complex.mlir``). Shapes are odd; batch 1 and larger.
"""

import pytest
import torch
from zoo_support import Case, Fn, params, run_case

import lowerline


def cplx(*shape, dtype=torch.complex64):
    return torch.randn(*shape, dtype=dtype)


CASES = [
    Case(
        "concat_complex128",
        "complex",
        lambda: Fn(lambda a, b: torch.cat([a, b], dim=0)),
        lambda: (cplx(3, 5, dtype=torch.complex128), cplx(2, 5, dtype=torch.complex128)),
    ),
    Case(
        "arithmetic_broadcast_batch1",
        "complex",
        lambda: Fn(lambda a, b: a * b - a / b + 2 * a + (b - 1.5)),
        lambda: (cplx(1, 7, 13), cplx(13)),
    ),
    Case(
        "arithmetic_complex128_batch4",
        "complex",
        lambda: Fn(lambda a, b: (a + b) * (a - b) / (a * b + 1)),
        lambda: (cplx(4, 3, 5, dtype=torch.complex128), cplx(4, 3, 5, dtype=torch.complex128)),
    ),
    Case(
        "with_real_tensors_and_scalars",
        "complex",
        lambda: Fn(lambda a, r: (a * r, a / r, a + r, a * 2.5, a / (1 + 2j))),
        lambda: (cplx(3, 5), torch.randn(3, 5)),
    ),
    Case(
        "abs_angle_real_imag",
        "complex",
        lambda: Fn(lambda a: (a.abs(), a.angle(), a.real * 2, a.imag + 1)),
        lambda: (cplx(7, 13),),
    ),
    Case(
        "abs_of_large_parts",
        "complex",
        lambda: Fn(lambda a: (a * 1e20).abs()),
        lambda: (cplx(5, 3),),
    ),
    Case(
        "exp",
        "complex",
        lambda: Fn(lambda a: torch.exp(a)),
        lambda: (cplx(3, 7),),
    ),
    Case(
        "neg_log_reciprocal",
        "complex",
        lambda: Fn(lambda a: (-a, torch.log(a), torch.reciprocal(a), 1 / a)),
        lambda: (cplx(1, 9),),
    ),
    Case(
        "angle_of_reals",
        "complex",
        lambda: Fn(lambda x: torch.angle(x)),
        lambda: (torch.tensor([-1.5, 0.0, 2.0, float("nan"), -0.0, -3.0, 7.0]),),
    ),
    Case(
        "view_as_real_and_back",
        "complex",
        lambda: Fn(lambda x: torch.view_as_real(torch.view_as_complex(x) * (0.5 - 1j))),
        lambda: (torch.randn(2, 9, 2),),
    ),
    Case(
        "polar_magnitude",
        "complex",
        lambda: Fn(lambda m, t: torch.polar(m.abs(), t).abs()),
        lambda: (torch.randn(3, 5), torch.randn(3, 5)),
    ),
    Case(
        "fft_ifft_batch1",
        "complex",
        lambda: Fn(
            lambda z: (torch.fft.fft(z), torch.fft.ifft(z, n=9, dim=1), torch.fft.irfft(z, n=7))
        ),
        lambda: (cplx(1, 11, 5),),
    ),
    Case(
        "sqrt_asin_sum",
        "complex",
        lambda: Fn(lambda a: (torch.sqrt(a) + torch.asin(a)).sum(1)),
        lambda: (cplx(4, 7),),
    ),
    Case(
        "rfft",
        "complex",
        lambda: Fn(lambda x: torch.fft.rfft(x)),
        lambda: (torch.randn(3, 10),),
    ),
    Case(
        "stft",
        "complex",
        lambda: Fn(lambda x: torch.stft(x, 16, 4, 16, return_complex=True)),
        lambda: (torch.randn(2, 67),),
        rtol=1e-4,
        atol=1e-4,
        reason="a sum of 16 products per bin: f32 rounding in another order than ATen's",
    ),
]


@pytest.mark.parametrize("case", params(CASES))
def test_complex(case: Case, zoo_cache: str) -> None:
    run_case(case, zoo_cache)


class BesselJ0(torch.nn.Module):
    def forward(self, x):
        return torch.special.bessel_j0(x)


def test_an_op_without_a_torch_dialect_op_fails_naming_it(zoo_cache: str) -> None:
    # bessel_j0 has no torch dialect op: it imports as torch.operator, which
    # torch-mlir's backend refuses, naming the ATen op. (hfft, the op this
    # test used, is now decomposed in frontend/fft.py.)
    with pytest.raises(lowerline.CompileError) as info:
        lowerline.compile(BesselJ0(), torch.randn(3, 8), cache_dir=zoo_cache)
    assert info.value.stage == "import"
    assert 'name = "torch.aten.special_bessel_j0"' in str(info.value)
