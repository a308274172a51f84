"""Complex numbers through ``lowerline.compile``, against eager torch.

The inputs hold every pair of ``VALUES`` as (real, imaginary) parts: signed
zeros, the branch points +-1 and +-i, the cuts beyond them (where the sign of
a zero part picks the side), tiny and large magnitudes; then random values
to an odd shape. Ops are grouped into one module per test to keep the number
of compiles down; a mismatch names the op.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import pytest
import torch

import lowerline
from lowerline.frontend import complex_math

VALUES = (0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 1e-7, 30.0, -30.0, 1e4)
Op = tuple[str, Callable[..., torch.Tensor]]


def grid(dtype: torch.dtype, rows: int = 3, cols: int = 53) -> torch.Tensor:
    """Every (re, im) pair of ``VALUES``, then random values, as ``rows x cols``."""
    pairs = list(itertools.product(VALUES, VALUES))
    re = torch.tensor([p[0] for p in pairs], dtype=torch.float64)
    im = torch.tensor([p[1] for p in pairs], dtype=torch.float64)
    special = torch.complex(re, im).to(dtype)
    torch.manual_seed(0)
    rest = torch.randn(rows * cols - special.numel(), dtype=dtype) * 2
    return torch.cat([special, rest]).reshape(rows, cols)


class Ops(torch.nn.Module):
    def __init__(self, ops: list[Op]) -> None:
        super().__init__()
        self.ops = ops

    def forward(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return tuple(op(*inputs) for _, op in self.ops)


def _as_real(t: torch.Tensor) -> torch.Tensor:
    return torch.view_as_real(t) if t.is_complex() else t


def check(ops: list[Op], inputs: tuple, cache_dir: str, tolerance: float = 1e-4) -> None:
    module = Ops(ops)
    compiled = lowerline.compile(module, *inputs, cache_dir=cache_dir)
    got, want = compiled(*inputs), module(*inputs)
    wrong = []
    for (name, _), g, w in zip(ops, got, want, strict=True):
        if g.dtype != w.dtype or g.shape != w.shape:
            wrong.append(f"{name}: {g.dtype}{tuple(g.shape)} != {w.dtype}{tuple(w.shape)}")
            continue
        if g.dtype == torch.bool:
            if not torch.equal(g, w):
                wrong.append(f"{name}: {int((g != w).sum())} booleans differ")
            continue
        close = torch.isclose(_as_real(g), _as_real(w), tolerance, tolerance / 10, equal_nan=True)
        if not close.all():
            at = tuple((~close).nonzero()[0].tolist()[: g.dim()])
            wrong.append(f"{name}: at {at} got {g[at].item()} want {w[at].item()}")
    assert not wrong, "\n".join(wrong)


ROOTS_LOGS_EXPS: list[Op] = [
    ("sqrt", torch.sqrt),
    ("rsqrt", torch.rsqrt),
    ("exp", torch.exp),
    ("exp2", torch.exp2),
    ("expm1", torch.expm1),
    ("log", torch.log),
    ("log1p", torch.log1p),
    ("log2", torch.log2),
    ("log10", torch.log10),
    ("reciprocal", torch.reciprocal),
    ("sigmoid", torch.sigmoid),
    ("silu", torch.nn.functional.silu),
    ("sgn", torch.sgn),
    ("abs", torch.abs),
    ("angle", torch.angle),
]
TRIGONOMETRIC: list[Op] = [
    ("sin", torch.sin),
    ("cos", torch.cos),
    ("tan", torch.tan),
    ("sinh", torch.sinh),
    ("cosh", torch.cosh),
    ("tanh", torch.tanh),
]
INVERSE: list[Op] = [
    ("asin", torch.asin),
    ("acos", torch.acos),
    ("atan", torch.atan),
    ("asinh", torch.asinh),
    ("acosh", torch.acosh),
    ("atanh", torch.atanh),
]


@pytest.mark.parametrize(
    "ops",
    [ROOTS_LOGS_EXPS, TRIGONOMETRIC, INVERSE],
    ids=["roots_logs_exps", "trigonometric", "inverse"],
)
def test_unary_ops_match_eager_on_the_branch_cuts(ops: list[Op], cache_dir: str) -> None:
    check(ops, (grid(torch.complex64),), cache_dir)


def test_complex128_unary_ops_match_eager(cache_dir: str) -> None:
    # complex128 at batch 1, tighter tolerance.
    ops = ROOTS_LOGS_EXPS + TRIGONOMETRIC + INVERSE
    check(ops, (grid(torch.complex128, rows=1, cols=151),), cache_dir, tolerance=1e-9)


ARITHMETIC: list[Op] = [
    ("add.Scalar", lambda z, w: z + 2.5),
    ("add alpha", lambda z, w: torch.add(z, w, alpha=-3)),
    ("sub.Scalar complex", lambda z, w: z - (1 - 2j)),
    ("mul.Scalar", lambda z, w: z * 3),
    ("mul.Scalar complex", lambda z, w: z * (0.5 + 1j)),
    ("div.Scalar", lambda z, w: z / 3),
    ("div.Scalar complex", lambda z, w: z / (2 - 1j)),
    ("div by zero", lambda z, w: z / 0),
    ("div.Tensor broadcast", lambda z, w: z / w),
    ("rsub", lambda z, w: 1 - z),
    ("pow.Tensor_Tensor", lambda z, w: torch.pow(z, w)),
    ("pow 2.5", lambda z, w: torch.pow(z, 2.5)),
    ("pow 2", lambda z, w: torch.pow(z, 2)),
    ("pow 3", lambda z, w: torch.pow(z, 3)),
    ("pow -2", lambda z, w: torch.pow(z, -2)),
    ("pow 0.5", lambda z, w: torch.pow(z, 0.5)),
    ("pow complex exponent", lambda z, w: torch.pow(z, 1 + 1j)),
    ("pow.Scalar", lambda z, w: torch.pow(2, z)),
    ("pow.Scalar of 0", lambda z, w: torch.pow(0, w)),
    ("lerp complex weight", lambda z, w: torch.lerp(z, w, 0.3 + 0.1j)),
    ("lerp far weight", lambda z, w: torch.lerp(z, w, 0.7)),
    ("ldexp", lambda z, w: torch.ldexp(z, torch.full(z.shape, 3))),
    ("ldexp complex", lambda z, w: torch.ldexp(z, w)),
    ("nan_to_num", lambda z, w: torch.nan_to_num(z / 0)),
    ("square", lambda z, w: torch.square(z)),
]


def test_arithmetic_with_scalars_and_powers(cache_dir: str) -> None:
    z = grid(torch.complex64)
    w = torch.randn(1, z.shape[1], dtype=torch.complex64)  # broadcast over the rows
    w[0, :3] = torch.tensor([0, -1, 1j])  # zero exponents and divisors
    check(ARITHMETIC, (z, w), cache_dir)


PREDICATES: list[Op] = [
    ("eq.Tensor", lambda z, w: z == w),
    ("ne.Tensor", lambda z, w: z != w),
    ("eq.Scalar", lambda z, w: z == (1 - 1j)),
    ("ne.Scalar", lambda z, w: z != 0),
    ("isnan", lambda z, w: torch.isnan(z)),
    ("isinf", lambda z, w: torch.isinf(z)),
    ("isfinite", lambda z, w: torch.isfinite(z)),
    ("logical_not", lambda z, w: torch.logical_not(z)),
    ("logical_and", lambda z, w: torch.logical_and(z, w)),
    ("logical_or", lambda z, w: torch.logical_or(z, w.real)),
    ("logical_xor", lambda z, w: torch.logical_xor(z, w)),
]


def test_comparisons_and_predicates(cache_dir: str) -> None:
    z = torch.randn(5, 7, dtype=torch.complex64)
    parts = torch.view_as_real(z)
    parts[0, :, 0] = torch.tensor([math.nan, math.inf, -math.inf, 0, 0, 1, -0.0])
    parts[0, :, 1] = torch.tensor([0, 0, 1, math.nan, -math.inf, -1, 0])
    w = z.clone()
    w[1:3] = torch.randn(2, 7, dtype=torch.complex64)  # rows that differ
    w[3, 2] = complex(z[3, 2].real, 5)  # only the imaginary part differs
    z[4, 1] = 1 - 1j
    check(PREDICATES, (z, w), cache_dir)


SPECTRA: list[Op] = [
    ("fft", lambda z, x: torch.fft.fft(z)),
    ("fft n=9 dim=0 ortho", lambda z, x: torch.fft.fft(z, n=9, dim=0, norm="ortho")),
    ("ifft", lambda z, x: torch.fft.ifft(z)),
    ("ifft n=7 forward", lambda z, x: torch.fft.ifft(z, n=7, norm="forward")),
    ("fft of real", lambda z, x: torch.fft.fft(x)),
    ("rfft", lambda z, x: torch.fft.rfft(x)),
    ("irfft", lambda z, x: torch.fft.irfft(z)),
    ("irfft n=8 ortho", lambda z, x: torch.fft.irfft(z, n=8, norm="ortho")),
    ("stft centered", lambda z, x: torch.stft(x, 8, 3, 8, return_complex=True)),
    (
        "stft hann",
        lambda z, x: torch.stft(x, 8, 2, window=torch.hann_window(8), return_complex=True),
    ),
    ("stft not centered", lambda z, x: torch.stft(x, 8, 4, center=False, return_complex=True)),
]


@pytest.mark.parametrize("batch", [1, 3])
def test_ffts_and_stft(batch: int, cache_dir: str) -> None:
    torch.manual_seed(batch)
    z = torch.randn(batch, 13, dtype=torch.complex64)
    x = torch.randn(batch, 37)
    check(SPECTRA, (z, x), cache_dir)


SPECTRA_ND: list[Op] = [
    ("fft2", lambda z, x: torch.fft.fft2(z)),
    ("fft2 s ortho", lambda z, x: torch.fft.fft2(x, s=(4, 9), norm="ortho")),
    ("ifft2", lambda z, x: torch.fft.ifft2(z)),
    ("fftn dims", lambda z, x: torch.fft.fftn(z, dim=(0, 2))),
    ("ifftn s forward", lambda z, x: torch.fft.ifftn(z, s=(3, 8), norm="forward")),
    ("rfft n", lambda z, x: torch.fft.rfft(x, n=10)),
    ("rfft trimmed forward", lambda z, x: torch.fft.rfft(x, n=4, dim=1, norm="forward")),
    ("rfft2", lambda z, x: torch.fft.rfft2(x)),
    ("rfftn s", lambda z, x: torch.fft.rfftn(x, s=(5, 6))),
    ("irfft2", lambda z, x: torch.fft.irfft2(z)),
    ("irfftn s ortho", lambda z, x: torch.fft.irfftn(z, s=(6, 9), norm="ortho")),
    ("hfft", lambda z, x: torch.fft.hfft(z, n=9)),
    ("hfft forward", lambda z, x: torch.fft.hfft(z, dim=1, norm="forward")),
    ("ihfft", lambda z, x: torch.fft.ihfft(x).resolve_conj()),
    ("hfft2", lambda z, x: torch.fft.hfft2(z)),
    ("hfftn s", lambda z, x: torch.fft.hfftn(z, s=(4, 9))),
    ("ihfft2 ortho", lambda z, x: torch.fft.ihfft2(x, norm="ortho").resolve_conj()),
    ("ihfftn", lambda z, x: torch.fft.ihfftn(x).resolve_conj()),
    ("fftshift", lambda z, x: torch.fft.fftshift(z, dim=(-2, -1))),
    ("ifftshift", lambda z, x: torch.fft.ifftshift(x)),
]


@pytest.mark.parametrize("batch", [1, 2])
def test_two_and_n_dimensional_ffts(batch: int, cache_dir: str) -> None:
    torch.manual_seed(batch)
    z = torch.randn(batch, 6, 5, dtype=torch.complex64)
    x = torch.randn(batch, 6, 7)
    check(SPECTRA_ND, (z, x), cache_dir)


PLUMBING: list[Op] = [
    ("cat", lambda z, w: torch.cat([z, w * 2], dim=1)),
    ("stack", lambda z, w: torch.stack([z, w + 1], dim=0)),
    ("view_as_real", lambda z, w: torch.view_as_real(z * (1 + 2j))),
    ("view_as_complex", lambda z, w: torch.view_as_complex(torch.stack([z.real, w.imag], -1))),
    ("real, imag", lambda z, w: z.real * w.imag),
    ("complex", lambda z, w: torch.complex(w.real, z.imag)),
    ("polar", lambda z, w: torch.polar(z.abs(), w.angle())),
    ("conj", lambda z, w: torch.conj_physical(z)),
    ("to complex128", lambda z, w: z.to(torch.complex128) * 2),
    ("to float", lambda z, w: z.to(torch.float32)),
    ("to int32", lambda z, w: (z * 10).to(torch.int32)),
    ("to int64", lambda z, w: (w * -7).to(torch.int64)),
    ("to bool", lambda z, w: (z * (w.real > 0)).to(torch.bool)),
    ("float_power", lambda z, w: torch.float_power(z, w)),
    ("masked_fill", lambda z, w: z.masked_fill(w.real > 0, 2 - 1j)),
    ("full_like", lambda z, w: torch.full_like(z, 1 + 2j) * w),
    ("full", lambda z, w: torch.full((5, 3), 1j) + z),
    ("fill", lambda z, w: torch.fill(z, 0.5j)),
]


REDUCTIONS: list[Op] = [
    ("sum", lambda z, w: z.sum()),
    ("sum dims keepdim", lambda z, w: torch.sum(z, (0, 2), keepdim=True)),
    ("mean", lambda z, w: z.mean(1)),
    ("prod", lambda z, w: z.prod(2)),
    ("prod all", lambda z, w: (z / 2).prod()),
    ("var", lambda z, w: torch.var(z, 1)),
    ("std all", lambda z, w: torch.std(z, correction=0)),
    ("logaddexp", lambda z, w: torch.logaddexp(z, w)),
    ("cumsum", lambda z, w: torch.cumsum(z, 1)),
    ("cumprod", lambda z, w: torch.cumprod(z, 1)),
    ("matmul", lambda z, w: z[0] @ w[0].T),
]


def test_reductions_and_logaddexp(cache_dir: str) -> None:
    z = torch.randn(3, 7, 5, dtype=torch.complex64)
    w = torch.randn(3, 7, 5, dtype=torch.complex64)
    check(REDUCTIONS, (z, w), cache_dir)


def test_concatenation_views_and_conversions(cache_dir: str) -> None:
    z = torch.randn(5, 3, dtype=torch.complex64)
    w = torch.randn(5, 3, dtype=torch.complex64)
    check(PLUMBING, (z, w), cache_dir)


def test_complex_inputs_can_change_at_call_time(cache_dir: str) -> None:
    module = Ops([("sqrt of sum", lambda z, w: torch.sqrt(z + w))])
    z, w = torch.randn(4, 9, dtype=torch.complex64), torch.randn(4, 9, dtype=torch.complex64)
    compiled = lowerline.compile(module, z, w, cache_dir=cache_dir)
    for seed in (1, 2):
        torch.manual_seed(seed)
        a, b = torch.randn(4, 9, dtype=torch.complex64), -torch.randn(4, 9, dtype=torch.complex64)
        torch.testing.assert_close(compiled(a, b)[0], torch.sqrt(a + b))


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
@pytest.mark.parametrize(
    "name", ["sqrt", "asin", "acos", "atan", "asinh", "acosh", "atanh", "tan", "tanh", "log1p"]
)
def test_formulas_follow_the_c_library_on_a_dense_grid(name: str, dtype: torch.dtype) -> None:
    # No compile: the real formulas themselves, against eager's complex kernels,
    # on every pair of a finer set of values (the cuts at +-1 and +-i, 0.999...).
    values = (*VALUES, 0.999, -0.999, 1.001, -1.001, 1e19, -1e19, 0.3, -0.3)
    pairs = list(itertools.product(values, values))
    z = torch.complex(
        torch.tensor([p[0] for p in pairs], dtype=torch.float64),
        torch.tensor([p[1] for p in pairs], dtype=torch.float64),
    ).to(dtype)
    re, im = getattr(complex_math, name)((z.real.clone(), z.imag.clone()))
    want = getattr(torch, name)(z)
    tolerance = 1e-5 if dtype == torch.complex64 else 1e-12
    torch.testing.assert_close(
        torch.complex(re, im), want, rtol=tolerance, atol=tolerance, equal_nan=True
    )


class ComplexWeights(torch.nn.Module):
    """Complex buffers: a rotary embedding as LLaMA writes it (``freqs_cis``
    multiplied into the queries viewed as complex), a complex128 table and a
    complex scalar."""

    def __init__(self, seq: int, half: int) -> None:
        super().__init__()
        angles = torch.outer(torch.arange(seq, dtype=torch.float32), torch.rand(half))
        self.register_buffer("freqs_cis", torch.polar(torch.ones_like(angles), angles))
        self.register_buffer("table", torch.randn(seq, half, dtype=torch.complex128))
        self.register_buffer("scale", torch.tensor(0.5 - 2j))

    def forward(self, q: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        pairs = torch.view_as_complex(q.reshape(*q.shape[:-1], -1, 2))
        rotated = torch.view_as_real(pairs * self.freqs_cis * self.scale).flatten(-2)
        return rotated, (pairs.to(torch.complex128) + self.table).abs()


@pytest.mark.parametrize("batch", [1, 3])
def test_complex_weights_are_bound_as_constants(batch: int, cache_dir: str) -> None:
    seq, half = 7, 5
    model = ComplexWeights(seq, half)
    q = torch.randn(batch, seq, 2 * half)
    compiled = lowerline.compile(model, q, cache_dir=cache_dir)
    for got, want in zip(compiled(q), model(q), strict=True):
        torch.testing.assert_close(got, want)
