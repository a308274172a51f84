"""The model zoo's table row and its one check: compile, call, compare with eager
torch, and allow no op left as plain loops that ``expected_fallbacks`` does not list.

A case is data: a name (its test id), a module factory, an input factory and
the tolerance with the reason it differs from the default. ``run_case`` seeds
torch before building either, so every case is deterministic.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch
from expected_fallbacks import check_fallbacks
from torch.utils import _pytree as pytree

import lowerline
from lowerline.driver.tolerance import BF16, DEFAULT, F16

# f32 against eager torch: the default (``lowerline compile`` checks the same).
RTOL, ATOL = DEFAULT.rtol, DEFAULT.atol
# Half types: two ulps (see lowerline.driver.tolerance), as Case keywords.
F16 = {"rtol": F16.rtol, "atol": F16.atol, "reason": F16.reason}
BF16 = {"rtol": BF16.rtol, "atol": BF16.atol, "reason": BF16.reason}


class Fn(torch.nn.Module):
    """A module whose forward is ``fn``: one-line cases stay one line."""

    def __init__(self, fn: Callable[..., Any]):
        super().__init__()
        self.fn = fn

    def forward(self, *args: Any) -> Any:
        return self.fn(*args)


@dataclass(frozen=True)
class Case:
    name: str
    group: str
    module: Callable[[], torch.nn.Module]
    inputs: Callable[[], tuple]
    rtol: float = RTOL
    atol: float = ATOL
    reason: str = ""  # why rtol/atol differ from the default; required when they do

    def __post_init__(self) -> None:
        if (self.rtol, self.atol) != (RTOL, ATOL) and not self.reason:
            raise ValueError(f"{self.name}: a non-default tolerance needs a written reason")


def params(cases: list[Case]) -> list:
    """pytest parameters, one test id per case."""
    names = [case.name for case in cases]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    assert not duplicates, f"duplicate case names: {duplicates}"
    return [pytest.param(case, id=case.name) for case in cases]


def _clone(tree: Any) -> Any:
    return pytree.tree_map(lambda v: v.clone() if isinstance(v, torch.Tensor) else v, tree)


def assert_matches(actual: Any, expected: Any, case: Case) -> None:
    flat_actual, spec_actual = pytree.tree_flatten(actual)
    flat_expected, spec_expected = pytree.tree_flatten(expected)
    assert spec_actual == spec_expected, f"output structure {spec_actual} != {spec_expected}"
    for index, (got, want) in enumerate(zip(flat_actual, flat_expected, strict=True)):
        where = f"{case.name}: output #{index}"
        if not isinstance(want, torch.Tensor):
            assert got == want, f"{where}: {got!r} != {want!r}"
            continue
        assert isinstance(got, torch.Tensor), f"{where}: expected a tensor, got {type(got)}"
        assert got.dtype == want.dtype, f"{where}: dtype {got.dtype} != {want.dtype}"
        assert got.shape == want.shape, f"{where}: shape {tuple(got.shape)} != {tuple(want.shape)}"
        if want.is_floating_point() or want.is_complex():
            torch.testing.assert_close(
                got,
                want,
                rtol=case.rtol,
                atol=case.atol,
                equal_nan=True,
                msg=lambda m, where=where: f"{where}: {m}",
            )
        else:
            assert torch.equal(got, want), f"{where}: {got} != {want}"


def run_case(case: Case, cache_dir: str) -> lowerline.CompiledModule:
    """Compile ``case``, check the compiled module against eager torch and its
    fallbacks (ops left as plain loops) against ``expected_fallbacks``."""
    torch.manual_seed(0)
    module = case.module().eval()
    inputs = case.inputs()
    with torch.no_grad():
        expected = module(*_clone(inputs))
    compiled = lowerline.compile(module, *inputs, cache_dir=cache_dir)
    before = _clone(inputs)
    actual = compiled(*inputs)
    assert_matches(actual, expected, case)
    # The compiled code reads its inputs and never writes them.
    assert_matches(inputs, before, Case(case.name + " (inputs after the call)", "", Fn, tuple))
    check_fallbacks(case.name, compiled.fallbacks)
    return compiled


def bench_models() -> list[Case]:
    """The benchmark's models (bench/speed.py) as cases named ``bench_<name>``."""
    path = Path(__file__).parents[3] / "bench" / "speed.py"
    spec = importlib.util.spec_from_file_location("lowerline_bench_speed", path)
    speed = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = speed  # its dataclasses look their module up
    spec.loader.exec_module(speed)
    return [
        Case(
            f"bench_{name}",
            "bench",
            lambda make=make: make()[0],
            lambda make=make: make()[1],
        )
        for name, make in speed.MODELS.items()
    ]
