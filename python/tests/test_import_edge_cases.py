"""Programs whose import used to fail, found by running torch-mlir's upstream
e2e suite (tools/upstream_e2e.py); the modules here are our own.

* Integer matmuls of int8 and uint8 killed torch-mlir's import worker; they
  are computed in int32 and wrapped back, bit-exact with eager (whose
  accumulator wraps in the narrow type). int16 is checked alongside.
* A computed tensor with no elements (a batch matmul of empty matrices, a
  view of an empty slice) killed it too; it is zeros of its shape now.
* ``prims`` views (``split_dim``, ``collapse_view``, ``squeeze``, ...) were refused by
  functionalization; they are their ATen views.
* A batched float16 matmul aborted in lowerline-vectorize (a half contraction
  sign-extended as if it were an integer one).
* ``narrow`` with a start written as a tensor (``torch.tensor(2)``) failed in
  the importer: read back from its file, the program no longer knew the
  constant, and its decomposition guarded a run-time number with ``&`` of
  symbolic bools. The constant is passed as the number it is now.
* Sizes multiplied as tensors (``torch.mul(b, t)``) and read back by a
  ``reshape``: torch.export left the read behind, unused, and could not load
  the program it had saved; such reads are removed before saving.
* Numbers read from tensors and compared across kinds (``float(a) >= int(b)``,
  ``!=`` and ``<=`` of floats): torch-mlir's importer did not implement
  ``sym_float`` and made ``aten.ne.float`` / ``aten.le.float``, which torch-mlir
  does not define; they are ops it defines now (``import_worker``).
* ``avg_pool2d`` / ``avg_pool3d`` of unbatched inputs: torch-mlir lowers only
  the batched form; they are pools of a batch of one.
* An ``out=`` argument that torch.export's trace resized: the write back into
  the caller's tensor failed at the call; it is refused at compile time now.
* Floats converted to uint8 after a clamp to 255 (``quantize``'s last step):
  torch-mlir's ``fptosi`` to ``i8`` is poison from 128 up and LLVM dropped
  the clamp: 300 came back 44. Converted through int32 now.
* ``pow`` of integer tensors by integer tensors: torch-mlir has no lowering
  (an ``UnsupportedOpsError``); ATen's square-and-multiply now.
"""

import math

import pytest
import torch

import lowerline


class IntegerMatmuls(torch.nn.Module):
    def forward(self, a, b, c):
        return torch.mm(a, b), torch.matmul(c, b.unsqueeze(0).expand(c.shape[0], -1, -1))


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int16])
@pytest.mark.parametrize("batch", [1, 3])
def test_narrow_integer_matmuls_wrap_like_eager(dtype, batch):
    info = torch.iinfo(dtype)
    generator = torch.Generator().manual_seed(batch)

    def draw(*shape):
        return torch.randint(info.min, info.max, shape, generator=generator).to(dtype)

    # Odd sizes, and sums far outside the type's range: the results wrap.
    a, b, c = draw(5, 7), draw(7, 3), draw(batch, 5, 7)
    model = IntegerMatmuls()
    compiled = lowerline.compile(model, a, b, c, num_threads=1)
    for got, want in zip(compiled(a, b, c), model(a, b, c), strict=True):
        assert got.dtype == want.dtype == dtype
        assert torch.equal(got, want)


class EmptyValues(torch.nn.Module):
    """Tensors with no elements in the middle of a program, and as outputs."""

    def forward(self, x, m, e):
        nothing = x[:, 4:2]  # (N, 0)
        joined = torch.cat([x, nothing.reshape(x.shape[0], 0) * 2.0], dim=1)
        products = torch.matmul(m, e)  # (0, 0) @ (B, 0, 0) -> (B, 0, 0)
        return joined + 1.0, products.view(e.shape[0], 0, 0), nothing.sum(dim=1)


@pytest.mark.parametrize("batch", [1, 4])
def test_empty_intermediates_and_outputs(batch):
    x, m, e = torch.rand(batch, 5), torch.empty(0, 0), torch.empty(batch, 0, 0)
    model = EmptyValues()
    compiled = lowerline.compile(model, x, m, e, num_threads=1)
    for got, want in zip(compiled(x, m, e), model(x, m, e), strict=True):
        assert got.shape == want.shape and got.dtype == want.dtype
        torch.testing.assert_close(got, want)


class PrimsViews(torch.nn.Module):
    def forward(self, x):
        split = torch.ops.prims.split_dim(x, 1, 3)  # (N, 6, 5) -> (N, 3, 2, 5)
        collapsed = torch.ops.prims.collapse_view(split, 2, 3)  # -> (N, 3, 10)
        swapped = torch.ops.prims.transpose(collapsed, [0, 2, 1])
        row = torch.ops.prims.broadcast_in_dim(x[0, 0], [3, 5], [1])
        units = x.unsqueeze(1).unsqueeze(-1)  # (N, 1, 6, 5, 1)
        squeezed = torch.ops.prims.squeeze(units, [4, 1])
        kept = torch.ops.prims.squeeze(units, [])
        return torch.ops.prims.view_of(swapped) * 2.0, row + 1.0, squeezed - 1.0, kept * 3.0


def _compiled_matches_eager(model: torch.nn.Module, x: torch.Tensor) -> None:
    """Every output of the compiled ``model`` equals eager's on ``x``."""
    compiled = lowerline.compile(model, x, num_threads=1)
    for got, want in zip(compiled(x), model(x), strict=True):
        torch.testing.assert_close(got, want, rtol=0, atol=0)


@pytest.mark.parametrize("batch", [1, 2])
def test_prims_views_are_aten_views(batch):
    _compiled_matches_eager(PrimsViews(), torch.rand(batch, 6, 5))


class HalfBatchMatmul(torch.nn.Module):
    def forward(self, a, b):
        return torch.bmm(a, b) + 1.0


@pytest.mark.parametrize("batch", [1, 3])
def test_float16_batch_matmul(batch):
    a = torch.rand(batch, 5, 7).half()
    b = torch.rand(batch, 7, 9).half()
    model = HalfBatchMatmul()
    got = lowerline.compile(model, a, b, num_threads=1)(a, b)
    want = model(a, b)
    assert got.dtype == torch.float16
    # eager accumulates in f32 and rounds once, as the compiled code does
    torch.testing.assert_close(got, want, rtol=1e-3, atol=1e-3)


class TensorStarts(torch.nn.Module):
    """Narrows whose starts are constant tensors created in ``forward``."""

    def forward(self, x):
        return (
            torch.narrow(x, 1, torch.tensor(2), 3) * 2.0,
            torch.narrow(x, 0, torch.tensor(-1), 1),
            torch.narrow(x, -1, torch.tensor(1, dtype=torch.int32), 3),
        )


@pytest.mark.parametrize("batch", [1, 6])
def test_narrow_with_tensor_starts(batch):
    _compiled_matches_eager(TensorStarts(), torch.rand(batch, 7, 5))


class SizesAsTensors(torch.nn.Module):
    """Folds the two leading dims with a size product computed as a tensor."""

    def forward(self, x):
        b, t, c, w = x.shape
        return torch.reshape(x, [torch.mul(b, t), c, w]) + 1.0, x.reshape(torch.mul(b, t * c), w)


@pytest.mark.parametrize("batch", [1, 5])
def test_size_products_computed_as_tensors(batch):
    _compiled_matches_eager(SizesAsTensors(), torch.rand(batch, 3, 7, 2))


class MixedNumberComparisons(torch.nn.Module):
    """Numbers read from tensors compared across kinds: ``int(b)`` is made a
    float (``sym_float``) for ``float(a) >= int(b)``, which torch-mlir's
    importer did not implement, ``!=`` and ``<=`` of two floats became ops
    torch-mlir does not define, ``<`` one it does not lower, and torch-mlir
    lowered all of them with unordered predicates (``nan >= 1`` true)."""

    def forward(self, a, b):
        x, n, y = float(a), int(b), float(b)
        return (
            (x >= n, x > n, x != n, n <= x, x < n, n < x, x == n),
            (x >= y, x > y, x != y, x <= y, x < y, y < x, x == y),
        )


@pytest.mark.parametrize(
    ("a", "b"),
    [(0.5, 0), (2.0, 2), (math.nan, 1), pytest.param(-3.5, -3, marks=pytest.mark.long)],
    ids=["gt", "eq", "nan", "lt"],
)
def test_numbers_compared_across_kinds(a, b):
    args = (torch.tensor(a, dtype=torch.float64), torch.tensor(b))
    compiled = lowerline.compile(MixedNumberComparisons(), *args, num_threads=1)
    assert compiled(*args) == MixedNumberComparisons()(*args)


class UnbatchedAvgPool3d(torch.nn.Module):
    """avg_pool3d of a (C, D, H, W) input, which torch-mlir lowers only batched."""

    def forward(self, x):
        return (
            torch.nn.functional.avg_pool3d(x, 2, (1, 2, 2), divisor_override=3),
            torch.nn.functional.avg_pool3d(x[:1], (1, 3, 2), 1, (0, 1, 1), count_include_pad=False),
        )


@pytest.mark.parametrize("channels", [1, pytest.param(5, marks=pytest.mark.long)])
def test_unbatched_avg_pool3d(channels):
    x = torch.rand(channels, 4, 6, 7)
    compiled = lowerline.compile(UnbatchedAvgPool3d(), x, num_threads=1)
    for got, want in zip(compiled(x), UnbatchedAvgPool3d()(x), strict=True):
        torch.testing.assert_close(got, want)


class ArangeIntoOut(torch.nn.Module):
    def forward(self, x):
        return torch.arange(1, 1 + x.numel(), out=x)


def test_an_out_argument_written_in_another_shape_is_refused():
    # torch.export's trace resizes ``x`` (3x4) to 12 elements; the copy back
    # into the caller's tensor failed with a broadcast RuntimeError at the call.
    with pytest.raises(lowerline.CompileError, match="resizes no input"):
        lowerline.compile(ArangeIntoOut(), torch.zeros(3, 4, dtype=torch.int64))
    x = torch.zeros(12, dtype=torch.int64)
    compiled = lowerline.compile(ArangeIntoOut(), x.clone(), num_threads=1)
    assert torch.equal(compiled(x), torch.arange(1, 13)) and torch.equal(x, torch.arange(1, 13))


class UnsignedZeroPoints(torch.nn.Module):
    """Per-channel QDQ of uint8 with zero points from 128 up, which
    torch-mlir's lowering of the ops read as negative (off by 256 steps)."""

    def forward(self, q, x, scales, zero_points):
        ops = torch.ops.quantized_decomposed
        dequantized = ops.dequantize_per_channel.default(
            q, scales, zero_points, 1, 0, 255, torch.uint8
        )
        quantized = ops.quantize_per_channel.default(x, scales, zero_points, 1, 0, 255, torch.uint8)
        return dequantized, quantized.to(torch.int32)


@pytest.mark.parametrize("batch", [1, 3])
def test_per_channel_qdq_with_unsigned_zero_points(batch):
    import torch.ao.quantization.fx._decomposed  # defines the ops

    torch.manual_seed(0)
    zero_points = torch.randint(128, 192, (7,)).to(torch.uint8)
    # Eager subtracts in uint8: inputs at or above every zero point do not wrap.
    args = (
        torch.randint(192, 256, (batch, 7, 5)).to(torch.uint8),
        10 * torch.rand(batch, 7, 5) - 5,
        torch.rand(7) + 0.01,
        zero_points,
    )
    compiled = lowerline.compile(UnsignedZeroPoints(), *args, num_threads=1)
    for got, want in zip(compiled(*args), UnsignedZeroPoints()(*args), strict=True):
        torch.testing.assert_close(got, want, rtol=0, atol=0)


class AvgPools3d(torch.nn.Module):
    """avg_pool3d with padding, ceil mode, counts without padding and a divisor."""

    def forward(self, x):
        pool = torch.nn.functional.avg_pool3d
        return (
            pool(x, 2, 2),
            pool(x, 3, (1, 2, 2), 1, ceil_mode=True),
            pool(x, (2, 3, 3), 2, (1, 1, 0), count_include_pad=False, ceil_mode=True),
            pool(x, (3, 2, 2), 1, (1, 0, 1), divisor_override=5),
        )


@pytest.mark.parametrize("batch", [1, 3])
def test_avg_pool3d_is_tiled_as_2d_pools(batch):
    # torch-mlir's channels-last linalg.pooling_ndhwc_sum was left as loops.
    x = torch.rand(batch, 5, 6, 9, 11)
    compiled = lowerline.compile(AvgPools3d(), x, num_threads=1)
    assert not compiled.fallbacks, compiled.fallbacks
    for got, want in zip(compiled(x), AvgPools3d()(x), strict=True):
        torch.testing.assert_close(got, want)


class ClampToUint8(torch.nn.Module):
    def forward(self, x):
        return (
            torch.clamp(torch.round(x) + 128, 0, 255).to(torch.uint8),
            torch.clamp(x, 0, 255).to(torch.uint8),
            x.abs().double().clamp(max=255).to(torch.uint8),
        )


def test_floats_clamped_and_converted_to_uint8_keep_the_clamp():
    # The clamp to 255 was dropped: 127.5 + 128 came back 0 and 200 + 128 came back 72.
    x = torch.cat([torch.tensor([127.5, 128.0, -300.0, 200.0, 254.9]), 600 * torch.rand(37) - 300])
    compiled = lowerline.compile(ClampToUint8(), x, num_threads=1)
    for got, want in zip(compiled(x), ClampToUint8()(x), strict=True):
        assert torch.equal(got, want), (got, want)


class IntegerPowers(torch.nn.Module):
    def forward(self, x, y, small, exponents):
        return torch.pow(x, y), torch.pow(x, exponents), torch.pow(small, exponents)


def test_integer_pow_of_integer_exponents():
    # aten.pow.Tensor_Tensor of integers was an UnsupportedOpsError. Negative
    # exponents (0, or +-1 for bases of +-1), wrapping products, a broadcast
    # exponent and a mixed int8 x int64 pair.
    torch.manual_seed(0)
    args = (
        torch.randint(-5, 6, (3, 4, 5), dtype=torch.int32),
        torch.randint(-3, 40, (3, 4, 5), dtype=torch.int32),
        torch.randint(-3, 4, (2, 5), dtype=torch.int8),
        torch.randint(-4, 70, (5,), dtype=torch.int64),
    )
    module = IntegerPowers()
    compiled = lowerline.compile(module, *args, num_threads=1)
    for got, want in zip(compiled(*args), module(*args), strict=True):
        assert got.dtype == want.dtype and torch.equal(got, want), (got, want)
