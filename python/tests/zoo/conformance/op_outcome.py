"""Run one conformance case through ``lowerline.compile`` and say what happened.

Every case ends in one ``Outcome``: its ``category`` is one of ``CATEGORIES``
and ``detail`` the first line of the evidence (the op torch-mlir left behind,
the stage and pass that failed, the largest error). ``counted`` says whether
the op is in the denominator: torch-mlir's linalg backend lowers it (it reached
linalg or TMTensor), or it is one of the families counted whatever happens
(``aten_ops.ALWAYS_COUNTED``).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

import torch
from aten_ops import OpCase, build
from torch.utils import _pytree as pytree
from zoo_support import Case, assert_matches

import lowerline
from lowerline.frontend.export import ExportError

# category -> (passes, what it means in the report)
CATEGORIES = {
    "pass": "compiled, ran and matched eager torch",
    "pass-shape-only": "random or uninitialized output: compiled and ran, shape and dtype match",
    "wrong-result": "compiled and ran, but the result differs from eager torch",
    "runtime-error": "compiled, but the call failed",
    "lowerline-compile": "lowerline's pipeline failed on it (a lowerline bug or missing lowering)",
    "tm-tensor": "torch-mlir lowers it to a TMTensor op lowerline does not lower yet",
    "no-linalg-lowering": "torch-mlir's linalg backend left it as a torch op (no lowering)",
    "torch-mlir-rejects": "torch-mlir's lowering of it refuses this use (its diagnostic quoted)",
    "other-dialect": "torch-mlir lowered it to a dialect lowerline does not take",
    "import": "torch-mlir's import or backend pipeline failed on it (or made invalid IR)",
    "data-dependent": "data-dependent output shape or value: torch.export refuses it",
    "export": "torch.export could not capture the call",
    "not-generated": "no module generated (see the reason)",
}
PASSING = ("pass", "pass-shape-only")
# Categories whose op is outside the denominator unless ALWAYS_COUNTED.
NOT_LOWERED_BY_TORCH_MLIR = ("no-linalg-lowering", "torch-mlir-rejects", "data-dependent", "export")


@dataclass(frozen=True)
class Outcome:
    op: str
    family: str
    category: str
    detail: str
    counted: bool

    @property
    def passed(self) -> bool:
        return self.category in PASSING

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def counted(case: OpCase, category: str) -> bool:
    """Whether ``case`` is in the denominator: torch-mlir lowers it (or its
    family is always counted); never a complex variant or an op without a
    generated module."""
    if case.variant or category == "not-generated":
        return False
    return case.always_counted or category not in NOT_LOWERED_BY_TORCH_MLIR


_LOCATION = re.compile(r'^"[^"]*"(:\d+)*: ')


def _first_line(err: BaseException) -> str:
    """The error's first line, and its first MLIR ``error:`` line when the
    first says only that a pipeline failed."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    text = f"{type(err).__name__}: {lines[0] if lines else ''}"
    errors = [line for line in lines[1:] if "error:" in line or "Greatest absolute" in line]
    if errors and "error:" not in text:
        text += " " + _LOCATION.sub("", errors[0].split("error:", 1)[-1].strip())
    return text[:400]


def _unsupported(err: lowerline.UnsupportedOpsError) -> tuple[str, str]:
    """The category of an unsupported-ops error: TMTensor first (lowerline's
    gap), then torch ops torch-mlir refused with a diagnostic, then torch ops
    without a lowering, then anything else; the detail is the import
    worker's reason for each op."""
    detail = "; ".join(f"{op.get('mlir_op') or op['op']}: {op.get('reason', '')}" for op in err.ops)
    mlir_ops = [op.get("mlir_op") or op["op"] for op in err.ops]
    reasons = [op.get("reason", "") for op in err.ops]
    if any(name.startswith("tm_tensor.") for name in mlir_ops):
        return "tm-tensor", detail
    if any("rejects this use" in reason for reason in reasons):
        return "torch-mlir-rejects", detail
    if any(name.startswith("torch.") for name in mlir_ops):
        return "no-linalg-lowering", detail
    return "other-dialect", detail


def _compile_failure(err: Exception, case: OpCase) -> tuple[str, str]:
    if isinstance(err, lowerline.UnsupportedOpsError):
        return _unsupported(err)
    if isinstance(err, ExportError):
        message = str(err)
        data_dependent = "data-dependent" in message or "data dependent" in message
        return ("data-dependent" if data_dependent or case.data_dependent else "export"), (
            _first_line(err)
        )
    if isinstance(err, lowerline.CompileError):
        if err.stage == "import":
            return "import", _first_line(err)
        where = f"stage {err.stage}" + (f", pass {err.pass_name}" if err.pass_name else "")
        return "lowerline-compile", f"{where}: {_first_line(err)}"
    return "lowerline-compile", _first_line(err)


def _clone(tree: Any) -> Any:
    return pytree.tree_map(lambda v: v.clone() if isinstance(v, torch.Tensor) else v, tree)


def _same_structure(actual: Any, expected: Any) -> None:
    """Shapes and dtypes only: for ops whose values are random or uninitialized."""
    flat_actual, spec_actual = pytree.tree_flatten(actual)
    flat_expected, spec_expected = pytree.tree_flatten(expected)
    assert spec_actual == spec_expected, f"output structure {spec_actual} != {spec_expected}"
    for got, want in zip(flat_actual, flat_expected, strict=True):
        if isinstance(want, torch.Tensor):
            assert got.dtype == want.dtype and got.shape == want.shape, (
                f"{got.dtype}{tuple(got.shape)} != {want.dtype}{tuple(want.shape)}"
            )


def run(case: OpCase, cache_dir: str) -> Outcome:
    """Compile, call and compare ``case``; never raises for the op's own failures."""

    def outcome(category: str, detail: str) -> Outcome:
        return Outcome(case.name, case.family, category, detail, counted(case, category))

    if case.skip:
        return outcome("not-generated", case.skip)
    built = build(case)
    if isinstance(built, str):
        return outcome("not-generated", built)
    module = built.module.eval()
    torch.manual_seed(0)
    with torch.no_grad():
        expected = module(*_clone(built.inputs))
    try:
        compiled = lowerline.compile(module, *built.inputs, cache_dir=cache_dir)
    except Exception as err:
        return outcome(*_compile_failure(err, case))
    try:
        actual = compiled(*built.inputs)
    except Exception as err:
        return outcome("runtime-error", _first_line(err))
    try:
        if case.random:
            _same_structure(actual, expected)
            return outcome("pass-shape-only", "")
        assert_matches(actual, expected, Case(case.name, "conformance", lambda: module, tuple))
    except AssertionError as err:
        return outcome("wrong-result", _first_line(err))
    return outcome("pass", "")
