"""The attribute protocol between passes (lowerline.pipeline.protocol) and the
check that the test suites run after every lowerline pass."""

import ast
import contextlib
import os
import pathlib
import re
from dataclasses import dataclass

import pytest
from mlir import ir

from lowerline.passes import PASS_MODULES
from lowerline.pipeline import pass_api, protocol
from lowerline.pipeline.context import make_context
from lowerline.pipeline.diagnostics import DiagnosticCollector
from lowerline.pipeline.protocol import (
    CONTRACT,
    NUM_RESULTS,
    OP_TAG,
    VECTOR_SIZES,
    VECTORIZE_ME,
)

PASSES_DIR = pathlib.Path(__file__).resolve().parents[2] / "passes"

MATMUL = """
func.func @f(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>, %c: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = linalg.matmul ATTRS ins(%a, %b : tensor<4x4xf32>, tensor<4x4xf32>) outs(%c : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}
"""


@pytest.fixture
def context():
    context = make_context()
    with context, ir.Location.unknown():
        yield context


def matmul_module(attrs: str = "") -> ir.Module:
    return ir.Module.parse(MATMUL.replace("ATTRS", attrs))


def first(module: ir.Module, name: str) -> ir.Operation:
    return pass_api.ops_matching(module.operation, lambda op: op.name == name)[0]


def errors_of_check(module: ir.Module) -> list[str]:
    collector = DiagnosticCollector(module.context)
    clean = protocol.check(module.operation, "test-pass")
    messages = [d.message for d in collector.take()]
    collector.detach()
    assert clean == (not messages)
    return messages


# -- declarations


def test_every_declaration_names_real_passes_and_lowerline_names():
    for name, attr in protocol.DECLARED.items():
        assert name == attr.name and name.startswith("lowerline.")
        assert attr.on and attr.set_by and attr.read_by and attr.doc
        for flag in attr.set_by:
            assert flag in PASS_MODULES or flag in protocol.OUTSIDE_PASSES, flag
        for flag in attr.read_by:
            assert flag in PASS_MODULES, f"{name}: {flag} is not a lowerline pass"


def test_the_import_worker_spells_the_declared_name():
    # The worker runs torch-mlir's MLIR, not the protocol's: one spelling each, kept equal.
    from lowerline.frontend import import_worker

    assert protocol.DYNAMIC_RANGES.name == import_worker.DYNAMIC_RANGES


def test_declaring_a_name_twice_is_refused():
    with pytest.raises(ValueError, match="declared twice"):
        protocol.declare("lowerline.contract", protocol.UNIT, ("linalg.*",), (), (), "")


def _strings_outside_docstrings(path: pathlib.Path) -> list[ast.Constant]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    ]


def test_passes_spell_no_attribute_name_outside_docstrings():
    # Names live in the protocol only; a string "lowerline.x" in a pass is a
    # second spelling (module paths such as lowerline.targets.X are fine).
    spelled = re.compile(r"\blowerline\.[a-z_]+(?![.\w])")
    found = [
        f"{path.name}:{node.lineno}: {node.value!r}"
        for path in sorted(PASSES_DIR.rglob("*.py"))
        for node in _strings_outside_docstrings(path)
        if spelled.search(node.value)
    ]
    assert not found


# -- typed accessors


def test_accessors_store_the_declared_attribute_types(context):
    op = first(matmul_module(), "linalg.matmul")
    VECTOR_SIZES.set(op, [8, 32, 1])
    CONTRACT.set(op, True)
    OP_TAG.set(op, "g0.root")
    VECTORIZE_ME.set(op, 3)
    assert isinstance(op.attributes["lowerline.vector_sizes"], ir.DenseI64ArrayAttr)
    assert isinstance(op.attributes["lowerline.contract"], ir.UnitAttr)
    assert isinstance(op.attributes["lowerline.op"], ir.StringAttr)
    assert str(op.attributes["lowerline.vectorize_me"]) == "3 : i64"
    assert VECTOR_SIZES.get(op) == [8, 32, 1]
    assert CONTRACT.get(op) is True and CONTRACT.has(op)
    assert OP_TAG.get(op) == "g0.root"
    assert VECTORIZE_ME.get(op) == 3
    assert protocol.problems_of(op) == []


def test_remove_and_get_of_an_absent_attribute(context):
    op = first(matmul_module(), "linalg.matmul")
    OP_TAG.set(op, "g0.root")
    OP_TAG.remove(op)
    OP_TAG.remove(op)  # removing what is not there is fine
    assert not OP_TAG.has(op)
    assert OP_TAG.get(op) is None
    assert VECTORIZE_ME.get(op, 0) == 0
    CONTRACT.set(op, True)
    CONTRACT.set(op, False)
    assert not CONTRACT.has(op)


@pytest.mark.parametrize(
    ("attr", "value"),
    [(OP_TAG, 'g0."c1"'), (VECTORIZE_ME, 7), (VECTOR_SIZES, [4, 16, 1]), (CONTRACT, True)],
)
def test_entry_text_parses_back_to_the_stored_attribute(context, attr, value):
    """``entry`` goes into transform scripts' attribute dictionaries."""
    parsed = ir.DictAttr(ir.Attribute.parse("{" + attr.entry(value) + "}"))
    assert parsed[attr.name] == attr.kind.to_attr(value)


# -- the check


def test_check_accepts_the_declared_attributes(context):
    module = matmul_module(
        '{lowerline.vector_sizes = array<i64: 4, 4, 1>, lowerline.contract, lowerline.op = "g0.root"}'
    )
    NUM_RESULTS.set(first(module, "func.func"), 1)
    assert errors_of_check(module) == []


def test_check_rejects_a_misspelt_attribute(context):
    module = matmul_module("{lowerline.contrac}")
    assert errors_of_check(module) == [
        "protocol check after test-pass: unknown lowerline attribute 'lowerline.contrac' "
        "(did you mean 'lowerline.contract'?)"
    ]


def test_check_rejects_a_mistyped_value(context):
    module = matmul_module("{lowerline.vector_sizes = [4, 4, 1]}")
    (error,) = errors_of_check(module)
    assert "'lowerline.vector_sizes' must be an i64 array (array<i64: ...>), not [4, 4, 1]" in error


def test_check_rejects_an_integer_of_another_width(context):
    module = matmul_module("{lowerline.vectorize_me = 1 : i32}")
    (error,) = errors_of_check(module)
    assert "'lowerline.vectorize_me' must be an i64 integer" in error


def test_check_rejects_an_attribute_on_an_op_that_may_not_carry_it(context):
    module = matmul_module("{lowerline.gpu_threads = array<i64: 4, 4>}")
    (error,) = errors_of_check(module)
    assert "'lowerline.gpu_threads' may sit on scf.forall only, not on linalg.matmul" in error


def test_check_ignores_other_dialects_attributes(context):
    assert errors_of_check(matmul_module("{lowerlinex.foo, my.contract = 1}")) == []


# -- the check in the pass adapter


@dataclass(frozen=True)
class _SetsAttribute(pass_api.Pass):
    """A test pass leaving ``name = value`` on every linalg.matmul."""

    flag = "test-sets-attribute"
    summary = "test only"
    name: str = "lowerline.contract"
    value: str = "unit"

    def run(self, op: ir.Operation) -> None:
        for matmul in pass_api.ops_matching(op, lambda o: o.name == "linalg.matmul"):
            matmul.attributes[self.name] = ir.Attribute.parse(self.value)


def run_pass(p: pass_api.Pass) -> list[str]:
    """Run ``p`` through the adapter on a matmul; its error messages."""
    module = matmul_module()
    collector = DiagnosticCollector(module.context)
    manager = pass_api.python_pass_manager(p, "builtin.module", module.context)
    with contextlib.suppress(ir.MLIRError):  # a failed pass: its errors are collected
        manager.run(module.operation)
    messages = [d.message for d in collector.take() if d.severity == "error"]
    collector.detach()
    return messages


def test_adapter_checks_after_each_pass_when_enabled(context, monkeypatch):
    monkeypatch.setenv(pass_api.CHECK_PROTOCOL_ENV, "1")
    assert run_pass(_SetsAttribute()) == []
    misspelt = run_pass(_SetsAttribute(name="lowerline.vector_size", value="array<i64: 4>"))
    assert misspelt == [
        "protocol check after test-sets-attribute: unknown lowerline attribute "
        "'lowerline.vector_size' (did you mean 'lowerline.vector_sizes'?)"
    ]
    mistyped = run_pass(_SetsAttribute(name="lowerline.op", value="3 : i64"))
    assert mistyped == [
        "protocol check after test-sets-attribute: 'lowerline.op' must be a string "
        '("..."), not 3 : i64'
    ]


def test_adapter_skips_the_check_when_disabled(context, monkeypatch):
    monkeypatch.setenv(pass_api.CHECK_PROTOCOL_ENV, "0")
    assert run_pass(_SetsAttribute(name="lowerline.contrac")) == []
    monkeypatch.delenv(pass_api.CHECK_PROTOCOL_ENV)
    assert run_pass(_SetsAttribute(name="lowerline.contrac")) == []


def test_test_suites_run_with_the_check_on():
    # conftest.py turns it on for every test and the workers they start.
    assert os.environ.get(pass_api.CHECK_PROTOCOL_ENV) == "1"


# -- lowerline's IRDL dialect, loaded into lowerline's contexts


QDQ = """
func.func @f(%x: tensor<4xf32>) -> tensor<4xi8> {
  %q = "lowerline.quantize"(%x) {params = PARAMS} : (tensor<4xf32>) -> tensor<4xi8>
  return %q : tensor<4xi8>
}
"""


def test_contexts_verify_lowerline_ops_through_irdl(context):
    good = ir.Module.parse(QDQ.replace("PARAMS", "#lowerline.per_tensor<0.5 : f32, 3 : i64>"))
    assert good.operation.verify()
    with pytest.raises(ir.MLIRError, match=r"expected base attribute 'lowerline\.per_tensor'"):
        ir.Module.parse(QDQ.replace("PARAMS", "0.5 : f32"))


def test_irdl_does_not_see_a_misspelt_attribute_on_an_upstream_op(context):
    """Why the protocol check exists: the verifier accepts this."""
    module = matmul_module("{lowerline.contrac}")
    assert module.operation.verify()
    assert errors_of_check(module)


def test_loading_the_dialect_twice_is_harmless(context):
    from lowerline import dialects

    dialects.load(context)
    assert context.is_registered_operation("lowerline.dequantize")
