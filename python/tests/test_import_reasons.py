"""Why an op did not reach linalg, as the import worker says it: no torch-mlir
lowering, a torch-mlir lowering that rejects this use (its diagnostic quoted),
a TMTensor op lowerline lacks, or torch-mlir's own failure (invalid IR)."""

import json
import subprocess
import sys

import pytest
import torch
from test_compile_errors import _line_of

import lowerline
from lowerline.frontend import import_worker

# The shape of an MLIRError's text when a torch-mlir pattern gives up on an op.
REJECTED = (
    "Failure while executing pass pipeline:\n"
    'error: "/m.py":5:0: unimplemented: Only integer/float dtype supported\n'
    ' note: "/m.py":5:0: see current operation: %19 = "torch.aten.mul.Scalar"(%12, %1) : '
    "(!torch.vtensor<[3,5],complex<f32>>, !torch.int) -> !torch.vtensor<[3,5],complex<f32>>\n"
    "error: \"/m.py\":6:0: failed to legalize operation 'torch.aten.sort' that was explicitly "
    "marked illegal\n"
    ' note: "/m.py":6:0: see current operation: %3 = "torch.aten.sort"(%1) : () -> ()\n'
)


def test_a_pattern_diagnostic_is_the_reason_of_its_op() -> None:
    diagnostics = import_worker._reasons(REJECTED)
    # The conversion framework's generic message is no reason.
    assert diagnostics == {
        "torch.aten.mul.Scalar": "unimplemented: Only integer/float dtype supported"
    }
    assert import_worker._reason("torch.aten.mul.Scalar", diagnostics) == (
        "torch-mlir's linalg lowering rejects this use of it: "
        "unimplemented: Only integer/float dtype supported"
    )
    assert import_worker._reason("torch.aten.sort", diagnostics) == (
        "torch-mlir has no lowering of it to linalg"
    )


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        (
            "tm_tensor.scan",
            "torch-mlir lowers it to TMTensor (tm_tensor.scan), in a form lowerline does not lower yet",
        ),
        (
            "stablehlo.sort",
            "torch-mlir makes it stablehlo.sort, a stablehlo op lowerline does not take",
        ),
    ],
)
def test_ops_outside_torch_say_which_lowering_is_missing(name: str, reason: str) -> None:
    assert import_worker._reason(name, {}) == reason


@pytest.mark.parametrize(
    "name", ["torch_c.to_builtin_tensor", "torch.constant.int", "tm_tensor.yield"]
)
def test_ops_left_around_a_failure_are_never_its_cause(name: str) -> None:
    assert import_worker.COLLATERAL.match(name)


# Run in a child: torch_mlir's bindings abort a process that has loaded the
# upstream ``mlir`` package (two copies of MLIR), as pytest's has.
_COLLATERAL_ONLY = """
import json
from torch_mlir import ir
from torch_mlir.dialects import torch as torch_d
from lowerline.frontend import import_worker

context = ir.Context()
torch_d.register_dialect(context)
context.allow_unregistered_dialects = True
with context:
    module = ir.Module.parse(
        "func.func @main(%a: !torch.vtensor<[3],f32>) -> tensor<3xf32> {"
        '  %0 = "torch_c.to_builtin_tensor"(%a) : (!torch.vtensor<[3],f32>) -> tensor<3xf32>'
        "  return %0 : tensor<3xf32>"
        "}"
    )
    try:
        import_worker._run_backend(
            "builtin.module(torch-verify-linalg-on-tensors-backend-contract)",
            module,
            (),
            named_only=False,
        )
    except import_worker.ImportFailure as failure:
        print(json.dumps(failure.reply))
"""


def test_a_failure_leaving_only_collateral_ops_is_torch_mlirs_own() -> None:
    # A torch-mlir pipeline that fails on a module whose only non-upstream op
    # is one left around failures (a cast to a builtin tensor): no op is
    # blamed, and torch-mlir's error is quoted. (The program this test used,
    # a complex tensor converted to integers, now compiles.)
    child = subprocess.run(
        [sys.executable, "-c", _COLLATERAL_ONLY], capture_output=True, text=True, timeout=300
    )
    assert child.returncode == 0, child.stderr
    reply = json.loads(child.stdout.strip().splitlines()[-1])
    assert reply["kind"] == "import" and "ops" not in reply
    assert reply["message"].startswith("torch-mlir failed:")
    assert "linalg-on-tensors backend contract" in reply["message"]


def test_after_a_rolled_back_conversion_only_the_named_ops_are_causes() -> None:
    # torch-mlir's conversion failed on the sort and was rolled back: every
    # torch op it would have converted is still there, around the sort.
    left = ["torch.aten.exp", "torch.aten.sort", "torch.aten.relu", "tm_tensor.scan"]
    named = import_worker._failing_ops(REJECTED)
    assert named == {"torch.aten.mul.Scalar", "torch.aten.sort"}
    # The sort, and the TMTensor op (never collateral); not exp or relu.
    assert import_worker.root_causes(left, named, named_only=False) == [
        False,
        True,
        False,
        True,
    ]
    # No diagnostic names one of them: none can be told from the others.
    assert import_worker.root_causes(left, set(), named_only=False) == [True] * 4
    # Before the linalg lowering every op is a torch op: only a named one is blamed.
    assert import_worker.root_causes(left[:3], set(), named_only=True) == [False] * 3


class UnknownToTorchMlir(torch.nn.Module):
    """``i0`` is an op torch-mlir does not define (``torch.operator``); its
    failing pipeline leaves every other op of the model unlowered too."""

    def forward(self, x):
        bessel = torch.special.i0(x)  # i0
        return bessel, (x.exp() * 2 + 1).relu().sum(-1), torch.tanh(x) - x.sin()


def test_an_op_torch_mlir_does_not_define_is_the_only_one_reported(cache_dir) -> None:
    with pytest.raises(lowerline.UnsupportedOpsError) as info:
        lowerline.compile(UnknownToTorchMlir(), torch.rand(3, 5), cache_dir=cache_dir)
    ops = info.value.ops
    assert [op["mlir_op"] for op in ops] == ["torch.aten.i0"], ops
    assert ops[0]["count"] == 1
    assert ops[0]["where"] == [_line_of(UnknownToTorchMlir.forward, "# i0")]
    assert ops[0]["reason"] == import_worker.UNKNOWN_OP
    assert "1 op that lowerline cannot compile" in str(info.value)


class CountsInALoop(torch.nn.Module):
    def forward(self, x):
        from torch._higher_order_ops.while_loop import while_loop

        def body(i, y):
            return i + 1, y * 2

        count, y = while_loop(lambda i, y: i < 3, body, (torch.tensor(0), x))  # while_loop
        return count, y


def test_a_higher_order_op_is_named_not_a_key_error(cache_dir) -> None:
    # The loop's body is a subgraph, which the one-graph import left behind:
    # torch-mlir's importer failed with a bare KeyError.
    with pytest.raises(lowerline.UnsupportedOpsError) as info:
        lowerline.compile(CountsInALoop(), torch.rand(4, 3), cache_dir=cache_dir)
    ops = info.value.ops
    assert [op["mlir_op"] for op in ops] == ["torch.ops.higher_order.while_loop"], ops
    assert ops[0]["reason"] == import_worker.HIGHER_ORDER_OP
    assert ops[0]["where"] == [_line_of(CountsInALoop.forward, "# while_loop")]


# An op made by a helper of the user's code: its location is a call site.
AT_A_CALL_SITE = (
    "Failure while executing pass pipeline:\n"
    'error: callsite("/lib.py":167:0 at "/m.py":17:0): failed to legalize operation '
    "'torch.operator' that was explicitly marked illegal: %4:2\n"
    ' note: callsite("/lib.py":167:0 at "/m.py":17:0): see current operation: %4:2 = '
    '"torch.operator"(%0) <{name = "quantized_decomposed.choose_qparams_per_token"}> : () -> ()\n'
)


def test_an_op_at_a_call_site_is_named_by_its_diagnostic() -> None:
    # The location was not read: no op named, and with named_only (torch-mlir's
    # first pipeline) none reported: a bare "torch-mlir failed" instead of an
    # UnsupportedOpsError naming the op.
    assert import_worker._failing_ops(AT_A_CALL_SITE) == {"torch.operator"}
    assert import_worker.root_causes(["torch.operator"], {"torch.operator"}, True) == [True]
