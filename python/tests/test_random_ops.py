"""Random ops (lowerline.driver.seed): right in distribution, seeded per call
from torch's generator, and compiled at a cost that does not grow with the
tensor.

Every statistical check runs after ``torch.manual_seed``: the numbers are
fixed, so a threshold is either met or not, never by luck. Thresholds are
several standard errors wide (n is tens of thousands) and far tighter than a
wrong distribution passes (a KS distance of 0.01 at n = 66k; U(0, 1) against
N(0, 1) is 0.5 apart).
"""

from __future__ import annotations

import copy
import math
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import lowerline
from lowerline.api import SEED_INPUT
from lowerline.driver import seed
from lowerline.pipeline.lowerer import Lowerer, LoweringError

ROWS, COLS = 64, 1031  # odd row length: partial vectors in every row


class RandomOps(torch.nn.Module):
    """One of each random op, so that one compile covers them all."""

    def forward(self, x: torch.Tensor, p: torch.Tensor):
        return (
            torch.rand(x.shape),
            torch.randn(x.shape),
            torch.randint(3, 10, x.shape),
            torch.rand_like(x),
            torch.randn_like(x),
            torch.bernoulli(p),
            torch.empty_like(x).normal_(2.0, 3.0),
            torch.empty_like(x).uniform_(-1.0, 0.5),
            F.dropout(x, 0.25, training=True),
            F.rrelu(-x, 0.125, 1 / 3, training=True),
        )


@pytest.fixture(scope="module")
def random_ops():
    x = torch.rand(ROWS, COLS) + 0.5  # positive: dropout's survivors are x / 0.75
    p = torch.linspace(0, 1, COLS).expand(ROWS, COLS).contiguous()
    return lowerline.compile(RandomOps(), x, p, cache=False), x, p


def _ks_distance(samples: torch.Tensor, cdf) -> float:
    """Kolmogorov-Smirnov distance between the samples and ``cdf``."""
    ordered = samples.double().flatten().sort().values
    n = ordered.numel()
    model = cdf(ordered)
    above = torch.arange(1, n + 1, dtype=torch.float64) / n - model
    below = model - torch.arange(0, n, dtype=torch.float64) / n
    return max(above.max().item(), below.max().item())


def _uniform_cdf(low: float, high: float):
    return lambda t: ((t - low) / (high - low)).clamp(0, 1)


def _normal_cdf(mean: float, std: float):
    return lambda t: 0.5 * (1 + torch.erf((t - mean) / (std * math.sqrt(2))))


def _call(random_ops, seed: int):
    compiled, x, p = random_ops
    torch.manual_seed(seed)
    return compiled(x, p)


def test_uniforms_are_uniform_on_half_open_ranges(random_ops):
    rand, _, _, rand_like, _, _, _, uniform, _, _ = _call(random_ops, 0)
    for samples in (rand, rand_like):
        assert samples.dtype == torch.float32 and samples.shape == (ROWS, COLS)
        assert samples.min() >= 0 and samples.max() < 1
        assert abs(samples.mean().item() - 0.5) < 0.01
        assert abs(samples.var().item() - 1 / 12) < 0.005
        assert _ks_distance(samples, _uniform_cdf(0, 1)) < 0.01
    assert uniform.min() >= -1 and uniform.max() < 0.5
    assert _ks_distance(uniform, _uniform_cdf(-1, 0.5)) < 0.01
    # Different ops draw different numbers.
    correlation = torch.corrcoef(torch.stack([rand.flatten(), rand_like.flatten()]))[0, 1]
    assert abs(correlation.item()) < 0.02


def test_normals_are_normal(random_ops):
    _, randn, _, _, randn_like, _, normal, _, _, _ = _call(random_ops, 1)
    for samples, mean, std in ((randn, 0.0, 1.0), (randn_like, 0.0, 1.0), (normal, 2.0, 3.0)):
        assert torch.isfinite(samples).all()
        assert abs(samples.mean().item() - mean) < 0.02 * std
        assert abs(samples.std().item() - std) < 0.02 * std
        assert _ks_distance(samples, _normal_cdf(mean, std)) < 0.01


def test_randint_takes_every_value_in_range_equally_often(random_ops):
    randint = _call(random_ops, 2)[2]
    assert randint.dtype == torch.int64
    assert randint.min() == 3 and randint.max() == 9
    counts = torch.bincount(randint.flatten() - 3, minlength=7).double()
    expected = randint.numel() / 7
    assert ((counts - expected).abs() < 0.05 * expected).all(), counts


class SignedAndFloatRandint(torch.nn.Module):
    def forward(self, x: torch.Tensor):
        return (
            torch.randint(1000, x.shape, dtype=torch.float64),
            torch.randint(-3, 4, x.shape, dtype=torch.float32),
            torch.randint(-3, 4, x.shape),
        )


@pytest.mark.parametrize("rows", [1, 16])
def test_randint_of_a_float_dtype_or_below_zero_draws_integers_equally_often(rows):
    # torch-mlir converted the uniform sample toward zero: unrounded for a
    # float dtype (0.00016, 999.99994), -3 never drawn and 0 twice as often.
    x = torch.zeros(rows, COLS)
    torch.manual_seed(3)
    wide, narrow, signed = lowerline.compile(SignedAndFloatRandint(), x, num_threads=1)(x)
    assert (wide.dtype, narrow.dtype, signed.dtype) == (torch.float64, torch.float32, torch.int64)
    assert torch.equal(wide, wide.floor()) and wide.min() >= 0 and wide.max() <= 999
    for samples in (narrow, signed):
        assert torch.equal(samples, samples.floor())
        counts = torch.bincount(samples.flatten().long() + 3, minlength=7).double()
        assert counts.numel() == 7 and (counts > 0).all(), counts
        if rows > 1:
            expected = samples.numel() / 7
            assert ((counts - expected).abs() < 0.1 * expected).all(), counts


def test_bernoulli_follows_its_probabilities(random_ops):
    _, _, _, _, _, bernoulli, *_ = _call(random_ops, 3)
    p = random_ops[2]
    assert set(bernoulli.unique().tolist()) <= {0.0, 1.0}
    assert (bernoulli[:, 0] == 0).all() and (bernoulli[:, -1] == 1).all()  # p = 0 and p = 1
    # Columns in 16 bands of p: each band's rate within 4 standard errors.
    for band in torch.arange(COLS).chunk(16):
        rate, expected = bernoulli[:, band].mean().item(), p[0, band].mean().item()
        error = math.sqrt(expected * (1 - expected) / (ROWS * len(band))) + 1e-3
        assert abs(rate - expected) < 4 * error, (band[0].item(), rate, expected)


def test_training_mode_dropout_and_rrelu(random_ops):
    _, x, _ = random_ops
    dropout, rrelu = _call(random_ops, 4)[8:]
    kept = dropout != 0
    assert abs(1 - kept.double().mean().item() - 0.25) < 0.01
    torch.testing.assert_close(dropout[kept], x[kept] / 0.75)
    slopes = rrelu / -x  # every input negative: each got a slope of U(1/8, 1/3)
    assert slopes.min() >= 0.125 and slopes.max() <= 1 / 3 + 1e-6
    assert _ks_distance(slopes, _uniform_cdf(0.125, 1 / 3)) < 0.01


def test_manual_seed_reproduces_a_call_and_calls_differ(random_ops):
    first = _call(random_ops, 5)
    again = _call(random_ops, 5)
    other = _call(random_ops, 6)
    following = random_ops[0](*random_ops[1:])  # no reseeding: the generator moved on
    for a, b, c, d in zip(first, again, other, following, strict=True):
        assert torch.equal(a, b)
        assert not torch.equal(a, c) and not torch.equal(a, d)
    # The seed is an argument drawn per call, not state in the library.
    assert random_ops[0].primary.arguments[-1] == SEED_INPUT


def test_a_deterministic_model_takes_no_seed():
    model = torch.nn.Linear(7, 3).eval()
    compiled = lowerline.compile(model, torch.randn(2, 7), cache=False)
    assert SEED_INPUT not in compiled.primary.arguments


@pytest.mark.parametrize("batch", [1, 5])
def test_a_training_mode_module_with_dropout_compiles(batch):
    # The rule (frontend.export): a module in .train() compiles when its
    # forward mutates nothing; its random ops then draw new numbers per call.
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(33, 300), torch.nn.Dropout(0.5), torch.nn.ReLU()
    ).train()
    x = torch.randn(batch, 33)
    compiled = lowerline.compile(model, x, cache=False)
    with torch.no_grad():
        dense = torch.relu(model[0](x))
    y = compiled(x)
    live = dense != 0
    kept = (y != 0) & live
    assert abs(kept.sum().item() / live.sum().item() - 0.5) < 0.1
    torch.testing.assert_close(y[kept], 2 * dense[kept])
    assert not torch.equal(y, compiled(x))


def test_a_training_mode_module_updates_its_buffers_and_draws_per_call():
    """BatchNorm's running statistics are state (test_mutations), dropout's
    mask is drawn per call: both in one module in training mode."""
    torch.manual_seed(0)
    layers = [torch.nn.Linear(32, 32), torch.nn.BatchNorm1d(32), torch.nn.Dropout(0.5)]
    model = torch.nn.Sequential(*layers).train()
    reference = copy.deepcopy(model)
    x = torch.randn(64, 32)
    compiled = lowerline.compile(model, x, cache=False)
    out = compiled(x)
    reference(x)
    torch.testing.assert_close(model[1].running_mean, reference[1].running_mean)
    torch.testing.assert_close(model[1].running_var, reference[1].running_var)
    zeros = (out == 0).float().mean().item()
    assert 0.4 < zeros < 0.6, zeros  # fixed seed: a fixed fraction, near p


def _squares(seed: int, count: int) -> np.ndarray:
    """torch-mlir's ``aten.uniform`` for ``rand`` (TorchToLinalg): the
    "squares" counter-based generator keyed by the LCG step of the seed, on
    each element's linear index, times 5.4210108e-20 (its 2**-64, to 8
    digits), in float64."""
    with np.errstate(over="ignore"):
        key = np.uint64(seed) * np.uint64(6364136223846793005) + np.uint64(1442695040888963407)
        index = np.arange(count, dtype=np.uint64)

        def rotate(v: np.ndarray) -> np.ndarray:
            return (v << np.uint64(32)) | (v >> np.uint64(32))

        x = y = index * key
        z = y + key
        for add in (y, z, y):
            x = rotate(x * x + add)
        t = x * x + z
        x = rotate(t)
        bits = t ^ ((x * x + y) >> np.uint64(32))
    return bits.astype(np.float64) * 5.4210108e-20


class Rand(torch.nn.Module):
    def forward(self, x):
        return torch.rand(x.shape)


def test_rand_never_rounds_up_to_one():
    # torch.manual_seed(31) draws the seed whose 3175th sample, 0.99999998,
    # rounded to the nearest float32 is 1.0: rand is [0, 1). Every sample is
    # torch-mlir's generator rounded down to float32.
    x = torch.zeros(4, 1031)
    compiled = lowerline.compile(Rand(), x, cache=False)
    torch.manual_seed(31)
    seed = torch.randint(2**62, ()).item()
    torch.manual_seed(31)
    samples = compiled(x).flatten().numpy()
    exact = _squares(seed, samples.size)
    nearest = exact.astype(np.float32)
    assert nearest[3174] == 1.0  # what the case is about
    below = np.nextafter(nearest, np.float32(-1))
    np.testing.assert_array_equal(samples, np.where(nearest > exact, below, nearest))
    assert samples[3174] == np.nextafter(np.float32(1), np.float32(0))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_rand_stays_below_one(dtype):
    # Rounded to nearest, 1 sample in 2**12 (float16) or 2**9 (bfloat16) was 1.0.
    class HalfRand(torch.nn.Module):
        def forward(self, x):
            return torch.rand(x.shape, dtype=dtype)

    x = torch.zeros(ROWS, COLS)
    compiled = lowerline.compile(HalfRand(), x, cache=False)
    torch.manual_seed(7)
    samples = compiled(x)
    assert samples.dtype == dtype
    assert samples.min() >= 0 and samples.max() < 1
    # Quantization adds up to half a step (2**-9 for bfloat16 near 1) to the distance.
    assert _ks_distance(samples, _uniform_cdf(0, 1)) < 0.015


def _vector_shapes(ir_text: str) -> set[str]:
    return set(re.findall(r"vector<([0-9x]+)x[a-z0-9]+>", ir_text))


def test_compiling_a_large_random_tensor_costs_what_a_small_one_does():
    # A 128x256x512 rand once drove a compile worker to 23 GB: the compiled
    # code must not grow with the tensor (same loops, same vectors), and the
    # compile must fit a bound far below the tensor's own bytes times many.
    small = lowerline.compile(Rand(), torch.zeros(3, 5, 512), cache=False)
    large = lowerline.compile(Rand(), torch.zeros(128, 256, 512), cache=False, compile_memory="2G")
    for stage in ("tiled", "loops"):
        assert _vector_shapes(small.ir(stage)) == _vector_shapes(large.ir(stage))
    assert max(len(large.ir(stage)) for stage in ("tiled", "loops", "llvm")) < 64 << 10
    y = large(torch.zeros(128, 256, 512))
    assert y.shape == (128, 256, 512)
    assert y.min() >= 0 and y.max() < 1 and abs(y.mean().item() - 0.5) < 1e-3


# torch-mlir's get_next_seed twice, as its linalg backend leaves it (a load,
# an LCG step, a store), the second step reading what the first stored.
TWO_SEEDS = """
ml_program.global private mutable @global_seed(dense<0> : tensor<i64>) : tensor<i64>
func.func @main(%x: tensor<4xf32>) -> (i64, i64) {
  %m = arith.constant 6364136223846793005 : i64
  %first = ml_program.global_load @global_seed : tensor<i64>
  %a0 = tensor.extract %first[] : tensor<i64>
  %a = arith.muli %a0, %m : i64
  %s = tensor.insert %a into %first[] : tensor<i64>
  ml_program.global_store @global_seed = %s : tensor<i64>
  %second = ml_program.global_load @global_seed : tensor<i64>
  %b0 = tensor.extract %second[] : tensor<i64>
  %b = arith.muli %b0, %m : i64
  %t = tensor.insert %b into %second[] : tensor<i64>
  ml_program.global_store @global_seed = %t : tensor<i64>
  return %a, %b : i64, i64
}
"""


def _bind(text: str) -> tuple[bool, str]:
    lowerer = Lowerer()
    module = lowerer.parse(text)
    with lowerer.context:
        main = [op.operation for op in module.body.operations if op.operation.name == "func.func"]
        taken = seed.bind_seed(module, main[0])
    return taken, str(module)


def test_the_seed_global_becomes_an_argument_threaded_through_its_stores():
    taken, text = _bind(TWO_SEEDS)
    assert taken
    assert "ml_program" not in text
    assert re.search(r"func.func @main\(%arg0: tensor<4xf32>, %arg1: tensor<i64>\)", text)
    # The first step reads the argument, the second what the first inserted.
    assert re.search(r"tensor.extract %arg1\[\]", text)
    assert re.search(r"%inserted = tensor.insert .*\n.*tensor.extract %inserted\[\]", text)


def test_a_module_without_random_ops_is_left_alone():
    # Another global (no random op of torch-mlir's) stays as it is.
    taken, text = _bind(TWO_SEEDS.replace("@global_seed", "@other_seed"))
    assert not taken
    assert "%arg1" not in text and text.count("ml_program.global_load @other_seed") == 2


def test_a_seed_used_inside_a_region_is_an_error():
    nested = TWO_SEEDS.replace(
        "  return %a, %b : i64, i64",
        "  %c = scf.execute_region -> tensor<i64> {\n"
        "    %l = ml_program.global_load @global_seed : tensor<i64>\n"
        "    scf.yield %l : tensor<i64>\n  }\n  return %a, %b : i64, i64",
    )
    with pytest.raises(LoweringError, match="@global_seed is used outside the body of @main"):
        _bind(nested)


@pytest.mark.parametrize("rows", [1, 7])
def test_functional_uniform_with_its_default_range(rows):
    # aten.uniform(x) leaves `from` and `to` (Python keywords) at their
    # defaults: torch.export.save dropped them and torch.export.load could not
    # read the program back (frontend.export._keyword_defaults_explicit).
    class Uniforms(torch.nn.Module):
        def forward(self, x: torch.Tensor):
            return torch.ops.aten.uniform(x), torch.ops.aten.uniform(x, -2.0, 3.0)

    x = torch.zeros(rows, 4099)  # odd row length
    compiled = lowerline.compile(Uniforms(), x, cache=False)
    torch.manual_seed(7)
    unit, wide = compiled(x)
    torch.manual_seed(7)
    again = compiled(x)
    later = compiled(x)
    assert unit.shape == wide.shape == x.shape and unit.dtype == torch.float32
    assert unit.min() >= 0 and unit.max() < 1 and wide.min() >= -2 and wide.max() < 3
    bound = 2 / math.sqrt(x.numel())  # the KS distance's 99.8% point
    assert _ks_distance(unit, _uniform_cdf(0, 1)) < bound
    assert _ks_distance(wide, _uniform_cdf(-2, 3)) < bound
    assert torch.equal(unit, again[0]) and torch.equal(wide, again[1])
    assert not torch.equal(unit, later[0])
