"""Exported models for ``cpu:cortex-a72``, cross-compiled with
aarch64-linux-gnu-gcc and run under qemu-aarch64: the zoo's MLP, a CNN with
pooling and a depthwise convolution, and the zoo's transformer encoder layer
match torch at the zoo's tolerances and make no heap call while running.

Skipped with a message when the cross compiler or qemu is missing, except
in CI (``$CI`` set), where they fail instead (export_support)."""

import sys
from pathlib import Path

import pytest
import torch
from export_support import foreign, require_aarch64_tools, run_exported, symbols
from torch import nn

import lowerline

sys.path.insert(0, str(Path(__file__).parent / "zoo"))
from test_zoo_models import MODELS
from zoo_support import Case

ZOO = {case.name: case for case in MODELS}


def depthwise_separable(channels: int, out: int) -> nn.Module:
    """A depthwise 3x3 (groups = channels), batch norm, ReLU6, pointwise 1x1."""
    return nn.Sequential(
        nn.Conv2d(channels, channels, 3, padding=1, groups=channels),
        nn.BatchNorm2d(channels),
        nn.ReLU6(),
        nn.Conv2d(channels, out, 1),
    )


class DepthwiseCnn(nn.Module):
    """The blocks of an edge network: a conv stem, max pooling, a depthwise
    separable block, average pooling and a linear head."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.block = depthwise_separable(8, 12)
        self.head = nn.Linear(12 * 3 * 3, 5)

    def forward(self, x):
        x = nn.functional.max_pool2d(torch.relu(self.stem(x)), 2)
        x = nn.functional.avg_pool2d(self.block(x), 2)
        return self.head(torch.flatten(x, 1))


CASES = [
    ZOO["mlp"],
    Case("depthwise_cnn", "model", DepthwiseCnn, lambda: (torch.randn(2, 3, 13, 13),)),
    ZOO["transformer_encoder_layer"],
]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_zoo_model_runs_under_qemu_and_matches_torch(case, tmp_path):
    require_aarch64_tools()
    torch.manual_seed(0)
    model = case.module().eval()
    inputs = case.inputs()
    with torch.no_grad():
        expected = model(*inputs)
    exported = lowerline.export(
        model, *inputs, target="cpu:cortex-a72", out_dir=str(tmp_path / "out"), name=case.name
    )
    outputs, printed = run_exported(exported, inputs, str(tmp_path), aarch64=True)
    assert printed["status"] == printed["first"] == "0", printed
    assert printed["first_heap_calls"] == printed["heap_calls"] == "0"
    torch.testing.assert_close(outputs[0], expected, rtol=case.rtol, atol=case.atol)
    # Only libc and libm are needed (no libgcc helpers, no MLIR runtime).
    assert not foreign(symbols(exported.library)[1])
    # The bound on the plan: at most 1.25x the liveness lower bound.
    assert exported.lower_bound_bytes <= exported.workspace_bytes
    assert exported.workspace_bytes <= 1.25 * exported.lower_bound_bytes


def test_failed_check_is_a_status_under_qemu(tmp_path):
    """The failure word in the workspace (a compare-and-swap in the compiled
    code, atomics in the wrapper) needs no libgcc helper on AArch64."""
    require_aarch64_tools()
    torch.manual_seed(0)
    model, index = nn.Embedding(11, 5).eval(), torch.randint(0, 11, (3, 4))
    exported = lowerline.export(
        model, index, target="cpu:cortex-a72", out_dir=str(tmp_path / "out"), name="embed"
    )
    assert not foreign(symbols(exported.library)[1])
    _, printed = run_exported(exported, (index,), str(tmp_path), aarch64=True)
    assert printed["status"] == "0", printed
    bad = index.clone()
    bad[2, 3] = 11
    _, printed = run_exported(exported, (bad,), str(tmp_path), aarch64=True)
    assert printed["status"] == "3", printed  # EMBED_ERROR_CHECK_FAILED
    assert "index must be smaller than dim size" in printed["message"]
