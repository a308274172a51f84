"""Reductions along the first and the last axis, and norms: accuracy and IR.

First-axis reductions are vectorized along the contiguous axis (columns
outside, rows accumulated in registers inside), split across the cores by
columns or, for narrow tensors, by rows with a combine step; long rows with
fewer rows than cores are split along the row
(``lowerline.passes.tiling.thread_reductions``). Norms of order 2, 1, 0 and
inf are plain reductions (``lowerline.frontend.decompositions``).

One module computes every reduction, so each shape is compiled once.
Checked on odd shapes, batch 1 and large: against a float64 reference
within the zoo's float32 tolerance (or no further from it than twice eager
torch), arg-extremes exactly against eager; and in the tiled IR, that every
op was vectorized (no op left as loops but the one-element results of a
full reduction) with vectors bounded by the target's registers.
"""

import re

import pytest
import torch

import lowerline
from lowerline.cpu.tile_plan import lanes, vector_registers
from lowerline.driver.tolerance import DEFAULT
from lowerline.targets import cpu_target


class Reductions(torch.nn.Module):
    def forward(self, x):
        near_one = 1 + 0.001 * x  # a product of thousands of values that stays finite
        out = []
        for dim in (0, -1):
            out += [
                x.sum(dim),
                x.mean(dim),
                x.amax(dim),
                x.amin(dim),
                near_one.prod(dim),
                x.var(dim) if x.shape[dim] > 1 else x.sum(dim),
                x.std(dim) if x.shape[dim] > 1 else x.sum(dim),
                torch.linalg.vector_norm(x, 2, dim=dim),
                torch.linalg.vector_norm(x, 1, dim=dim),
                torch.linalg.vector_norm(x, float("inf"), dim=dim),
                torch.logsumexp(x, dim),
            ]
        out += [
            torch.linalg.matrix_norm(x, "fro"),
            torch.norm(x),
            torch.linalg.vector_norm(x, 0, dim=-1),
            torch.linalg.vector_norm(x, float("-inf"), dim=0),
        ]
        return tuple(out)


class ArgReductions(torch.nn.Module):
    def forward(self, x):
        return x.argmax(0), x.argmin(0), x.argmax(-1)


SHAPES = [(1, 1), (7, 13), (129, 4099), (3, 5, 1031), (4096, 16), (1, 50257)]
_compiled: dict = {}


def _shape_id(shape):
    return "x".join(map(str, shape))


def compiled_for(shape, cache_dir):
    if shape not in _compiled:
        module = Reductions().eval()
        _compiled[shape] = lowerline.compile(module, torch.randn(*shape), cache_dir=cache_dir)
    return _compiled[shape]


@pytest.mark.parametrize("shape", SHAPES, ids=_shape_id)
def test_matches_float64_reference(shape, cache_dir):
    compiled = compiled_for(shape, cache_dir)
    module = Reductions()
    torch.manual_seed(5)
    x = 2 * torch.randn(*shape)
    with torch.no_grad():
        eager = module(x)
        reference = module(x.double())
    for index, (got, torch_f32, want) in enumerate(zip(compiled(x), eager, reference, strict=True)):
        assert got.shape == want.shape and got.dtype == torch_f32.dtype, index
        error = (got.double() - want).abs()
        within = bool((error <= DEFAULT.atol + DEFAULT.rtol * want.abs()).all())
        eager_error = (torch_f32.double() - want).abs().max()
        assert within or error.max() <= 2 * eager_error, (
            f"output {index}: {error.max():.3g} from float64 (eager: {eager_error:.3g})"
        )


@pytest.mark.parametrize("shape", [(7, 13), (4096, 16), (129, 4099)], ids=_shape_id)
def test_arg_reductions_match_eager(shape, cache_dir):
    module = ArgReductions()
    compiled = lowerline.compile(module, torch.randn(*shape), cache_dir=cache_dir)
    # Two single-result reductions each (the extreme, then its first index): vectorized.
    assert not compiled.fallbacks, [str(f) for f in compiled.fallbacks]
    torch.manual_seed(6)
    for x in (torch.randn(*shape), torch.randint(0, 3, shape).float()):
        for got, want in zip(compiled(x), module(x), strict=True):
            assert torch.equal(got, want)


def _vector_elements(ir_text: str) -> list[int]:
    sizes = []
    for dims in re.findall(r"vector<([0-9x]+)x[a-z]", ir_text):
        count = 1
        for d in dims.split("x"):
            count *= int(d)
        sizes.append(count)
    return sizes


@pytest.mark.parametrize(
    "shape", [(129, 4099), (3, 5, 1031), (4096, 16), (1, 50257)], ids=_shape_id
)
def test_reductions_are_vectorized_with_bounded_vectors(shape, cache_dir):
    compiled = compiled_for(shape, cache_dir)
    left = [f for f in compiled.fallbacks if "0-d result" not in f.message]
    assert not left, [str(f) for f in left]
    target = cpu_target("host")
    bound = vector_registers(target) * lanes(target, 4)
    tiled = compiled.ir("tiled")
    assert max(_vector_elements(tiled)) <= bound
    # The reduced axis is never a scalar loop: every linalg op with loops
    # became vectors (a full reduction's one-element sqrt has none).
    generics = re.findall(r"linalg.generic .*", tiled)
    assert all("iterator_types = []" in g for g in generics), generics


@pytest.mark.parametrize("shape", [(4096, 16), (1, 50257)], ids=_shape_id)
def test_few_columns_or_rows_split_the_reduction_across_threads(shape, cache_dir):
    if cpu_target("host").cores < 2:
        pytest.skip("one core: nothing to split across")
    tiled = compiled_for(shape, cache_dir).ir("tiled")
    # The partial results of the two threads, combined after the forall.
    assert re.search(r"scf.forall .* -> \(tensor<\d+x2xf32>\)", tiled)


def test_long_row_compiles_in_bounded_vectors(cache_dir):
    """A 393,216-wide row: softmax, logsumexp, sum and layer norm."""

    class Row(torch.nn.Module):
        def forward(self, x):
            return (
                torch.softmax(x, -1),
                torch.logsumexp(x, -1),
                x.sum(-1),
                torch.nn.functional.layer_norm(x, x.shape[-1:]),
            )

    x = torch.randn(1, 393216)
    compiled = lowerline.compile(Row(), x, cache_dir=cache_dir)
    target = cpu_target("host")
    assert max(_vector_elements(compiled.ir("tiled"))) <= vector_registers(target) * lanes(
        target, 4
    )
    with torch.no_grad():
        reference = Row()(x.double())
    for got, want in zip(compiled(x), reference, strict=True):
        torch.testing.assert_close(got.double(), want, rtol=DEFAULT.rtol, atol=DEFAULT.atol)


class Powers(torch.nn.Module):
    def forward(self, x):
        return x**2, x**2.0, x.pow(3.0), x**0.5, x**-0.5, x**-1.0, x**-2, (x**2.0).sum(0)


def test_float_powers_are_multiplies_and_roots(cache_dir):
    """The exponents ATen's kernel special-cases (2, 3, 0.5, -0.5, -1, -2)
    compute as it does, special values included; no powf is left."""
    x = torch.randn(7, 13)
    x[0, :6] = torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan"), -4.0])
    compiled = lowerline.compile(Powers(), x, cache_dir=cache_dir)
    assert "math.powf" not in compiled.ir("linalg")
    for got, want in zip(compiled(x), Powers()(x), strict=True):
        torch.testing.assert_close(got, want, rtol=DEFAULT.rtol, atol=DEFAULT.atol, equal_nan=True)
        numbers = ~want.isnan()  # -0.0 vs +0.0 (sqrt(-0.0) is -0.0 in eager)
        assert torch.equal(got.signbit()[numbers], want.signbit()[numbers])
