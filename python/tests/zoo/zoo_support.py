"""The model zoo's table row and its one check: compile, call, compare with eager torch.

A case is data: a name (its test id), a module factory, an input factory and
the tolerance with the reason it differs from the default. ``run_case`` seeds
torch before building either, so every case is deterministic.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import torch
from torch.utils import _pytree as pytree

import lowerline

# f32 against eager torch: the default.
RTOL, ATOL = 1e-4, 1e-5
# Half types: the compiled code accumulates in f32 as ATen does, but not in
# the same order, so a result next to a rounding boundary of the half type
# may round to the neighbouring value: allow two ulps (f16: 2**-10 relative,
# bf16: 2**-7).
F16 = {"rtol": 2e-3, "atol": 2e-3, "reason": "two f16 ulps: f32 sums in another order"}
BF16 = {"rtol": 1.6e-2, "atol": 1.6e-2, "reason": "two bf16 ulps: f32 sums in another order"}


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
        if want.is_floating_point():
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
    """Compile ``case`` and check the compiled module against eager torch."""
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
    return compiled
