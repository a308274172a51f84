"""A failed run-time check in compiled code (torch-mlir's cf.assert) raises
a Python error naming the check; the process and the module survive
(lowerline-report-failed-asserts, runtime_support.c, runtime/native.py)."""

import os
import subprocess
import sys
import textwrap
import threading

import pytest
import torch

import lowerline
from lowerline.errors import (
    IndexCheckError,
    RuntimeCheckError,
    ZeroDivisionCheckError,
    runtime_check_error,
)


class Embed(torch.nn.Module):
    def __init__(self, rows: int = 11, width: int = 5):
        super().__init__()
        self.table = torch.nn.Embedding(rows, width)

    def forward(self, index: torch.Tensor) -> torch.Tensor:
        return self.table(index)


class Gather(torch.nn.Module):
    def forward(self, x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        return torch.gather(x, 1, index)


@pytest.fixture(scope="module")
def embed():
    torch.manual_seed(0)
    return Embed()


@pytest.mark.parametrize("shape", [(1, 3), (6, 7)])
def test_embedding_index_out_of_range_raises_and_module_survives(embed, shape):
    index = torch.randint(0, 11, shape)
    compiled = lowerline.compile(embed, index, num_threads=1)
    assert "abort" not in compiled.ir("llvm")
    torch.testing.assert_close(compiled(index), embed(index))
    too_large = index.clone()
    too_large[-1, -1] = 11
    with pytest.raises(IndexError, match="index must be smaller than dim size"):
        compiled(too_large)
    negative = index.clone()
    negative[0, 0] = -4
    with pytest.raises(IndexCheckError, match="index must be larger or equal to 0"):
        compiled(negative)
    # The failure was taken by the call that raised: later calls are clean.
    valid = torch.randint(0, 11, shape)
    torch.testing.assert_close(compiled(valid), embed(valid))


def test_failed_check_names_the_model_line(embed):
    index = torch.tensor([[3, 20]])
    compiled = lowerline.compile(embed, index, num_threads=1)
    with pytest.raises(RuntimeCheckError) as failure:
        compiled(index)
    # The message points at nn.Embedding's forward, called from this file.
    assert "sparse.py" in str(failure.value)
    assert __file__.rsplit("/", 1)[-1] in str(failure.value)


def test_check_in_parallel_loop_reports_from_a_worker_thread():
    """The gather runs as OpenMP threads; a bad index on any row raises, and
    the same module then computes valid inputs."""
    x = torch.randn(301, 515)
    index = torch.randint(0, 515, (301, 257))
    compiled = lowerline.compile(Gather(), x, index, num_threads=2)
    assert "omp.parallel" in compiled.ir("loops")
    assert "abort" not in compiled.ir("llvm")
    torch.testing.assert_close(compiled(x, index), torch.gather(x, 1, index))
    for row in (0, 150, 300):  # first, middle and last rows: different threads
        bad = index.clone()
        bad[row, 256] = 515
        with pytest.raises(IndexError, match="index must be smaller than dim size"):
            compiled(x, bad)
        torch.testing.assert_close(compiled(x, index), torch.gather(x, 1, index))


def _hammer(call, iterations: int) -> list[BaseException]:
    """Runs ``call`` ``iterations`` times; the unexpected outcomes."""
    wrong: list[BaseException] = []
    for _ in range(iterations):
        try:
            call()
        except BaseException as error:  # pytest.raises fails with one: collected too
            wrong.append(error)
    return wrong


@pytest.mark.parametrize(
    ("arena", "record"),
    [(True, "lowerline.failure_record"), (False, None)],  # the arena's word / the slot
)
def test_concurrent_calls_get_their_own_failures(arena, record):
    """Two threads call one compiled module at once (its checks run on
    OpenMP workers): the one with a bad index always gets its error, the one
    with valid inputs never gets one, nor a wrong result."""
    x = torch.randn(301, 203)  # long enough calls for two to overlap
    index = torch.randint(0, 203, (301, 1025))
    compiled = lowerline.compile(Gather(), x, index, num_threads=2, arena=arena)
    llvm = compiled.ir("llvm")
    assert (record in llvm) if record else ("lowerline.failure_record" not in llvm)
    bad = index.clone()
    bad[7, 33] = 203  # early: the failure is set long before the call ends
    expected = torch.gather(x, 1, index)

    def failing() -> None:
        with pytest.raises(IndexError, match="index must be smaller than dim size"):
            compiled(x, bad)

    def valid() -> None:
        torch.testing.assert_close(compiled(x, index), expected)

    results: dict[str, list[BaseException]] = {}
    threads = [
        threading.Thread(target=lambda f=f, k=k: results.__setitem__(k, _hammer(f, 300)))
        for k, f in (("failing", failing), ("valid", valid))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {"failing": [], "valid": []}, {k: v[:3] for k, v in results.items()}


def test_failed_check_does_not_kill_the_process(tmp_path):
    """Before: cf.assert lowered to abort(), exit status 134 (SIGABRT)."""
    script = textwrap.dedent(
        """
        import torch, lowerline
        table = torch.nn.Embedding(7, 3)
        compiled = lowerline.compile(table, torch.tensor([1, 2]), num_threads=1)
        try:
            compiled(torch.tensor([1, 99]))
        except IndexError as error:
            print("raised:", error)
        print("alive:", torch.equal(compiled(torch.tensor([6, 0])), table(torch.tensor([6, 0]))))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "LOWERLINE_CACHE_DIR": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr
    assert (
        "raised: a run-time check failed in compiled code: index must be smaller" in result.stdout
    )
    assert "alive: True" in result.stdout


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        ("index must be smaller than dim size", IndexCheckError),
        ("only support cases with fixed stride size", RuntimeCheckError),
    ],
)
def test_error_kind_follows_the_check(message, kind):
    error = runtime_check_error(message)
    assert type(error) is kind
    assert isinstance(error, ValueError)
    assert message in str(error)


class Reciprocal(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.reciprocal(x)


@pytest.mark.parametrize(
    "x",
    [
        torch.tensor([[0.0, -0.0, 2.0, -4.0, 1e-3]]).repeat(1, 7),  # batch 1
        torch.tensor([[0.0, -0.0, 2.0, -4.0, 1e-3]]).repeat(3, 7),
        torch.tensor([0, 1, -2, 3, 5], dtype=torch.int32),  # promoted to float, as torch does
        torch.tensor([0.0, 0.5, -2.0], dtype=torch.float64),
    ],
)
def test_reciprocal_of_zero_is_inf_not_a_failed_check(x):
    """torch-mlir's reciprocal asserts x != 0; torch says 1 / 0 = inf. The
    decomposition (1 / x) has no check, and its loop is vectorized."""
    compiled = lowerline.compile(Reciprocal(), x, num_threads=1)
    result = compiled(x)
    assert result.dtype == torch.reciprocal(x).dtype
    assert torch.equal(result, torch.reciprocal(x))  # inf and -inf included
    loops = compiled.ir("loops")
    assert "cf.assert" not in loops
    assert "vector." in loops


class IndexSelect(torch.nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        return torch.index_select(x, self.dim, index)


@pytest.mark.parametrize(("dim", "batch"), [(0, 1), (1, 3), (-1, 5)])
def test_index_select_out_of_range_raises(dim, batch):
    """torch-mlir's index_select has no bounds check: it read outside the
    tensor. Decomposed to a gather, it raises like eager's IndexError."""
    x = torch.randn(batch, 7, 9)
    size = x.shape[dim]
    index = torch.tensor([size - 1, 0, size // 2])
    compiled = lowerline.compile(IndexSelect(dim), x, index, num_threads=1)
    torch.testing.assert_close(compiled(x, index), torch.index_select(x, dim, index))
    with pytest.raises(IndexError, match="index must be smaller than dim size"):
        compiled(x, torch.tensor([0, size + 100000, 1]))
    # Either of the gather's two checks may report a negative index, depending
    # on how the pipeline folded the two compares.
    with pytest.raises(IndexError, match=r"index must be (smaller|larger)"):
        compiled(x, torch.tensor([0, 1, -1]))
    torch.testing.assert_close(
        compiled(x, index.flip(0)), torch.index_select(x, dim, index.flip(0))
    )


class IntegerDivision(torch.nn.Module):
    def __init__(self, op):
        super().__init__()
        self.op = op

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return self.op(a, b)


def floor_divide(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.div(a, b, rounding_mode="floor")


@pytest.mark.parametrize("op", [torch.remainder, torch.fmod, torch.floor_divide, floor_divide])
@pytest.mark.parametrize(("shape", "dtype"), [((1, 7), torch.int32), ((5, 13), torch.int64)])
def test_integer_division_by_zero_raises_instead_of_sigfpe(op, shape, dtype):
    """Eager torch raises on an integer division by zero; the compiled code
    checks the divisor and raises naming the op and this file's line."""
    torch.manual_seed(0)
    a = torch.randint(-50, 50, shape, dtype=dtype)
    b = torch.randint(1, 9, shape, dtype=dtype) * torch.where(torch.rand(shape) < 0.5, 1, -1)
    compiled = lowerline.compile(IntegerDivision(op), a, b, num_threads=1)
    torch.testing.assert_close(compiled(a, b), op(a, b))
    zero = b.clone()
    zero[-1, shape[1] // 2] = 0
    with pytest.raises(ZeroDivisionError, match=r"integer division by zero \(arith\.\w+\)") as e:
        compiled(a, zero)
    assert isinstance(e.value, ZeroDivisionCheckError)
    assert __file__.rsplit("/", 1)[-1] in str(e.value)
    torch.testing.assert_close(compiled(a, b), op(a, b))  # usable after


class FloorDivisions(torch.nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return a // b, a // 3, a // -7, torch.div(a.to(torch.int32), b, rounding_mode="floor")


@pytest.mark.parametrize("shape", [(1, 5), (3, 17)])
def test_integer_floor_division_is_exact_beyond_f64(shape):
    """torch-mlir divides integers in f64 for rounding_mode="floor": int64
    values over 2**53 came out wrong. The frontend writes it as a truncating
    integer division with a sign fix-up, exact for every int64."""
    torch.manual_seed(1)
    a = torch.randint(-(2**62), 2**62, shape, dtype=torch.int64)
    a[0, :3] = torch.tensor([2**60 + 3, -(2**60) - 1, 0])
    b = torch.randint(1, 1000, shape, dtype=torch.int64) * torch.where(
        torch.rand(shape) < 0.5, 1, -1
    )
    b[0, :3] = torch.tensor([3, 2, -5])
    compiled = lowerline.compile(FloorDivisions(), a, b, num_threads=1)
    for got, expected in zip(compiled(a, b), FloorDivisions()(a, b), strict=True):
        assert got.dtype == expected.dtype
        assert torch.equal(got, expected)
    assert "arith.sitofp" not in compiled.ir("linalg")  # no f64 round trip left


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("op", [torch.floor_divide, torch.remainder, torch.fmod])
def test_int_min_by_minus_one_wraps_like_eager(op, dtype):
    """INT_MIN / -1 overflows: x86's idiv traps, which killed the process.
    The compiled code gives eager's answers (INT_MIN for the quotient, 0 for
    the remainders). Eager's own truncating division traps here, so it is
    not compared."""
    low = torch.iinfo(dtype).min
    a = torch.tensor([[low, low, 7, -7, low + 1]], dtype=dtype)
    b = torch.tensor([[-1, 1, -1, -1, -1]], dtype=dtype)
    compiled = lowerline.compile(IntegerDivision(op), a, b, num_threads=1)
    assert torch.equal(compiled(a, b), op(a, b))


def test_float_remainder_by_zero_is_nan_and_unchecked():
    a = torch.randn(3, 5)
    b = torch.randn(3, 5)
    b[1, 2] = 0.0
    compiled = lowerline.compile(IntegerDivision(torch.remainder), a, b, num_threads=1)
    assert "integer division by zero" not in compiled.ir("llvm")
    torch.testing.assert_close(compiled(a, b), torch.remainder(a, b), equal_nan=True)


def test_failed_check_of_a_dynamic_function_raises(embed):
    """A function compiled for dynamic sizes reports through the same word."""
    compiled = lowerline.compile(
        embed, torch.randint(0, 11, (2, 3)), dynamic={"index": {0: (1, 9)}}, num_threads=1
    )
    for batch in (1, 5):
        index = torch.randint(0, 11, (batch, 3))
        torch.testing.assert_close(compiled(index), embed(index))
        bad = index.clone()
        bad[-1, 1] = 11
        with pytest.raises(IndexCheckError, match="index must be smaller than dim size"):
            compiled(bad)
        torch.testing.assert_close(compiled(index), embed(index))
