"""Calling a compiled module: checks that name the argument, specializations
for new shapes and numbers, independence from the nn.Module, strided inputs,
eager's output structure; and inspecting it (dumps, IR per stage, timings)."""

import gc
import os
import weakref
from typing import NamedTuple

import pytest
import torch

import lowerline
from lowerline.api import STAGES
from lowerline.driver import workers
from lowerline.frontend.export import ExportError


def eager(model: torch.nn.Module, *args):
    with torch.no_grad():
        return model(*args)


class Affine(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.weight = torch.nn.Parameter(torch.randn(6, 6))

    def forward(self, x, bias):
        return torch.relu(x @ self.weight) + bias


@pytest.fixture(scope="module")
def affine(cache_dir):
    model = Affine().eval()
    x, bias = torch.randn(4, 6), torch.randn(4, 6)
    return model, lowerline.compile(model, x, bias, cache_dir=cache_dir), x, bias


# -- call-time checks ----------------------------------------------------------------


def _meta(x: torch.Tensor) -> torch.Tensor:
    return x.to("meta")


@pytest.mark.parametrize(
    ("make_args", "error", "message"),
    [
        (lambda x, b: (x,), TypeError, r"expected 2 inputs \(x, bias\), got 1: missing bias"),
        (lambda x, b: (x, b, b), TypeError, r"expected 2 inputs \(x, bias\), got 3: 1 too many"),
        (
            lambda x, b: (x.double(), b),
            TypeError,
            "x: expected dtype torch.float32, got torch.float64",
        ),
        (
            lambda x, b: (x, _meta(b)),
            ValueError,
            "bias: expected a tensor on cpu, got one on meta",
        ),
        (
            lambda x, b: (x, b.tolist()),
            TypeError,
            r"bias: expected a tensor \(torch.float32\), got list",
        ),
        (lambda x, b: (x, 1.0), TypeError, r"bias: expected a tensor \(torch.float32\), got float"),
        (
            lambda x, b: (x.clone().requires_grad_(), b),
            ValueError,
            "x: expected a tensor that does not require grad, got one that does",
        ),
    ],
    ids=["too-few", "too-many", "dtype", "device", "list", "number", "requires-grad"],
)
def test_bad_call_names_the_argument_expected_and_actual(affine, make_args, error, message):
    _, compiled, x, bias = affine
    count = len(compiled.specializations)
    with pytest.raises(error, match=message):
        compiled(*make_args(x, bias))
    assert len(compiled.specializations) == count  # nothing compiled for a bad call


class Point(NamedTuple):
    first: torch.Tensor
    second: torch.Tensor


class Pair(torch.nn.Module):
    def forward(self, point: Point, extra: dict, scale: float):
        return point.first * scale + point.second + extra["bias"]


def test_inputs_inside_containers_are_named_by_their_path(cache_dir):
    x = torch.randn(3)
    compiled = lowerline.compile(Pair(), Point(x, x), {"bias": x}, 2.0, cache_dir=cache_dir)
    torch.testing.assert_close(compiled(Point(x, x), {"bias": x}, 2.0), x * 4)
    wrong = torch.ones(3, dtype=torch.int64)
    with pytest.raises(TypeError, match=r"point\.second: expected dtype torch\.float32"):
        compiled(Point(x, wrong), {"bias": x}, 2.0)
    with pytest.raises(TypeError, match=r"extra\['bias'\]: expected dtype torch\.float32"):
        compiled(Point(x, x), {"bias": wrong}, 2.0)
    with pytest.raises(TypeError, match="expected inputs structured as"):
        compiled((x, x), {"bias": x}, 2.0)
    with pytest.raises(TypeError, match="scale: expected an int or a float, got str"):
        compiled(Point(x, x), {"bias": x}, "2")


# -- specializations -----------------------------------------------------------------


def test_new_shapes_compile_a_cached_specialization_up_to_the_cap(cache_dir):
    model = Affine().eval()
    x, bias = torch.randn(4, 6), torch.randn(4, 6)
    compiled = lowerline.compile(model, x, bias, cache_dir=cache_dir, max_specializations=2)
    taller, taller_bias = torch.randn(9, 6), torch.randn(9, 6)
    torch.testing.assert_close(compiled(taller, taller_bias), eager(model, taller, taller_bias))
    assert len(compiled.specializations) == 2

    launched = dict(workers.launches)
    torch.testing.assert_close(compiled(taller, taller_bias), eager(model, taller, taller_bias))
    torch.testing.assert_close(compiled(x, bias), eager(model, x, bias))
    assert dict(workers.launches) == launched  # both known: no compile
    again = lowerline.compile(model, taller, taller_bias, cache_dir=cache_dir)
    assert again.cache_hit  # the specialization went to the cache

    rank3 = torch.randn(2, 4, 6)
    with pytest.raises(RuntimeError, match=r"max_specializations=2\); compiled: x=\[4, 6\]"):
        compiled(rank3, rank3)


class Divide(torch.nn.Module):
    def forward(self, x, divisor: float, negate: bool):
        y = x / divisor
        return -y if negate else y


def test_a_baked_in_number_respecializes_when_its_value_changes(cache_dir):
    model, x = Divide(), torch.tensor([1.0, 2.0, 4.0])
    compiled = lowerline.compile(model, x, 2.0, False, cache_dir=cache_dir)
    torch.testing.assert_close(compiled(x, 2.0, False), x / 2)
    torch.testing.assert_close(compiled(x, 4.0, False), x / 4)
    torch.testing.assert_close(compiled(x, 4.0, True), -x / 4)
    # 0.0 == -0.0 in Python, but not to the program.
    assert torch.equal(compiled(x, 0.0, False), torch.full((3,), torch.inf))
    assert torch.equal(compiled(x, -0.0, False), torch.full((3,), -torch.inf))
    torch.testing.assert_close(compiled(x, 4, False), x / 4)  # an int is another number
    assert len(compiled.specializations) == 6
    with pytest.raises(TypeError, match="negate: expected a bool, got int 1"):
        compiled(x, 2.0, 1)


def test_compiled_module_outlives_and_ignores_the_nn_module(cache_dir):
    model = Affine().eval()
    x, bias = torch.randn(4, 6), torch.randn(4, 6)
    expected = eager(model, x, bias)
    compiled = lowerline.compile(model, x, bias, cache_dir=cache_dir)

    def broken(*args):
        raise AssertionError("the eager forward was called")

    model.forward = broken
    torch.testing.assert_close(compiled(x, bias), expected)
    alive = weakref.ref(model)
    del model
    gc.collect()
    torch.testing.assert_close(compiled(x, bias), expected)
    assert alive() is not None  # held to compile new shapes; those trace the current forward
    with pytest.raises(ExportError, match="the eager forward was called"):
        compiled(torch.randn(5, 6), torch.randn(5, 6))


# -- inputs and outputs ---------------------------------------------------------------


def test_non_contiguous_inputs_give_eager_results(affine):
    model, compiled, _, _ = affine
    cases = {
        "transposed": (torch.randn(6, 4).t(), torch.randn(4, 6)),
        "strided": (torch.randn(4, 12)[:, ::2], torch.randn(8, 6)[::2]),
        "broadcast": (torch.randn(1, 6).expand(4, 6), torch.randn(6).expand(4, 6)),
        "offset": (torch.randn(5, 6)[1:], torch.randn(30)[6:].view(4, 6)),
    }
    for name, (x, bias) in cases.items():
        assert not (x.is_contiguous() and x.storage_offset() == 0), name
        copies = (x.clone(), bias.clone())
        torch.testing.assert_close(compiled(x, bias), eager(model, x, bias), msg=name)
        assert torch.equal(x, copies[0]) and torch.equal(bias, copies[1])


class Structured(torch.nn.Module):
    def forward(self, x):
        y = x * 2
        return (
            {"double": y, "positive": y > 0, "rows": x.shape[0]},
            [y.sum(), 0.5, (y + 1, True)],
            None,
            y.to(torch.int32),
            torch.max(x, dim=1),  # a torch.return_types.max
        )


def _assert_same(actual, expected, path="output"):
    assert type(actual) is type(expected), f"{path}: {type(actual)} != {type(expected)}"
    if isinstance(expected, torch.Tensor):
        assert actual.dtype == expected.dtype, path
        torch.testing.assert_close(actual, expected, msg=path)
    elif isinstance(expected, dict):
        assert list(actual) == list(expected), path
        for key in expected:
            _assert_same(actual[key], expected[key], f"{path}[{key!r}]")
    elif isinstance(expected, list | tuple):
        assert len(actual) == len(expected), path
        for index, (a, e) in enumerate(zip(actual, expected, strict=True)):
            _assert_same(a, e, f"{path}[{index}]")
    else:
        assert actual == expected, path


def test_outputs_have_eager_structure(affine, cache_dir):
    x = torch.randn(3, 5)
    model = Structured()
    compiled = lowerline.compile(model, x, cache_dir=cache_dir)
    _assert_same(compiled(x), eager(model, x))
    model, single, x, bias = affine
    _assert_same(single(x, bias), eager(model, x, bias))


# -- inspection ---------------------------------------------------------------------------


def test_dump_dir_ir_stage_seconds_and_artifacts(tmp_path, cache_dir):
    model = Affine().eval()
    x, bias = torch.randn(4, 6), torch.randn(4, 6)
    dump = tmp_path / "dump"
    compiled = lowerline.compile(model, x, bias, cache_dir=tmp_path / "cache", dump_dir=dump)
    assert STAGES == ("torch", "linalg", "graph", "tiled", "bufferized", "loops", "llvm")
    expected_files = [f"{i}-{stage}.mlir" for i, stage in enumerate(STAGES)] + ["lib.so"]
    assert sorted(os.listdir(dump)) == sorted(expected_files)
    marks = {
        "torch": "torch.aten.mm",
        "linalg": "linalg.matmul",
        "graph": "linalg.generic",
        "tiled": "vector.fma",
        "bufferized": "memref<4x6xf32>",
        "loops": "scf.for",
        "llvm": "llvm.func @main",
    }
    for index, stage in enumerate(STAGES):
        text = compiled.ir(stage)
        assert marks[stage] in text, stage
        assert text == (dump / f"{index}-{stage}.mlir").read_text(), stage

    seconds = compiled.stage_seconds
    assert list(seconds)[:3] == ["export", "save", "import"]
    assert set(STAGES[1:]) | {"object"} <= set(seconds)
    assert all(isinstance(value, float) and value >= 0 for value in seconds.values())

    folder = compiled.artifacts_dir
    assert os.path.isfile(os.path.join(folder, "lib.so"))
    assert os.path.isfile(os.path.join(folder, "meta.json"))

    with pytest.raises(ValueError, match="unknown stage 'tiles'; stages: torch, linalg, graph"):
        compiled.ir("tiles")

    # A later specialization dumps beside the first.
    compiled(torch.randn(2, 6), torch.randn(2, 6))
    assert sorted(os.listdir(dump / "specialization-1")) == sorted(expected_files)

    hit = lowerline.compile(model, x, bias, cache_dir=tmp_path / "cache")
    assert hit.cache_hit and set(hit.stage_seconds) == {"export", "cache"}
    assert hit.ir("llvm") == compiled.ir("llvm")
