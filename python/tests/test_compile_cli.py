"""`lowerline compile FILE.py` and `lowerline cache`."""

import os
import re

import pytest

from lowerline.driver.compile_cli import load_model_file
from lowerline.errors import UsageError
from lowerline.examples import EXAMPLES_DIR
from lowerline.tools import cli

MODEL_FILE = """
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(7, 13), torch.nn.GELU(), torch.nn.Linear(13, 3)).eval()
example_inputs = (torch.randn(5, 7),)
"""


def test_compile_writes_stages_and_compares_with_eager(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("LOWERLINE_CACHE_DIR", str(tmp_path / "cache"))
    source = tmp_path / "mlp.py"
    source.write_text(MODEL_FILE)
    out = tmp_path / "out"
    assert cli.main(["compile", str(source), "-o", str(out), "--runs", "3"]) == 0
    printed = capsys.readouterr().out
    assert f"{source}: compiled; stage IR and lib.so in {out}/" in printed
    assert "latency (median of 3): eager" in printed
    assert re.search(
        r"^peak intermediate memory: [0-9.]+ KiB in [0-9]+ allocations$", printed, re.M
    )
    assert re.search(r"^arena: [0-9.]+ KiB \(liveness lower bound [0-9.]+ KiB\)$", printed, re.M)
    assert "\nops left as plain loops: none (everything tiled and vectorized)\n" in printed
    assert "\ntolerance: float32: rtol=0.0001, atol=1e-05\n" in printed
    difference = float(printed.rsplit("largest difference from eager: ", 1)[1])
    assert difference < 1e-5
    written = sorted(os.listdir(out))
    assert written == [
        "0-torch.mlir", "1-linalg.mlir", "2-graph.mlir", "3-tiled.mlir",
        "4-bufferized.mlir", "5-loops.mlir", "6-llvm.mlir", "lib.so",
    ]  # fmt: skip
    # A second run is served by the cache.
    assert cli.main(["compile", str(source), "-o", str(out), "--runs", "1"]) == 0
    assert "from the cache" in capsys.readouterr().out
    assert cli.main(["cache", "clear"]) == 0
    cleared = capsys.readouterr().out.splitlines()
    assert cleared[0].startswith(f"removed {tmp_path / 'cache'}/v1/")
    assert cleared[-1].startswith("removed 1 entries, 0 reproducers and 0 leftover build")


# A forward that differs between eager torch and torch.export (the graph that
# is compiled): the compiled output is off by 0.5, outside the tolerance. The
# gather has no vector form: it is listed as left as plain loops.
MISMATCH_FILE = """
import torch

class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("index", torch.tensor([[2, 0, 1], [1, 1, 0]]))

    def forward(self, x):
        y = torch.gather(x, 1, self.index)
        return y + 0.5 if torch.compiler.is_exporting() else y

model = Model()
example_inputs = (torch.randn(2, 3),)
"""


def test_compile_fails_beyond_the_tolerance_and_lists_fallbacks(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("LOWERLINE_CACHE_DIR", str(tmp_path / "cache"))
    source = tmp_path / "planted.py"
    source.write_text(MISMATCH_FILE)
    assert cli.main(["compile", str(source), "-o", str(tmp_path / "out"), "--runs", "1"]) == 1
    captured = capsys.readouterr()
    assert "\nops left as plain loops (not tiled or not vectorized): 1\n" in captured.out
    # The gather is fused with the add after it, whose line it keeps.
    line = next(i for i, t in enumerate(MISMATCH_FILE.splitlines(), 1) if "return y" in t)
    assert re.search(
        rf"^  linalg.generic at {re.escape(str(source))}:{line}:\d+: left as loops: ",
        captured.out,
        re.M,
    )
    assert "\ntolerance: float32: rtol=0.0001, atol=1e-05\n" in captured.out
    assert "largest difference from eager: 0.5\n" in captured.out
    assert captured.err.startswith("lowerline: error: outside the tolerance: output #0: ")
    assert "(allowed: rtol=0.0001, atol=1e-05)" in captured.err


def test_model_file_must_define_model_and_inputs(tmp_path):
    source = tmp_path / "empty.py"
    source.write_text("x = 1\n")
    with pytest.raises(UsageError, match="must define model and example_inputs"):
        load_model_file(str(source))
    with pytest.raises(UsageError, match="cannot open model file"):
        load_model_file(str(tmp_path / "missing.py"))
    # Issue 20 item 7: a usage error, not an internal error.
    source.write_text("model = 5\nexample_inputs = ()\n")
    with pytest.raises(UsageError, match=r"model must be an nn\.Module, got int"):
        load_model_file(str(source))


def test_bundled_example_defines_a_model():
    model, inputs = load_model_file(os.path.join(EXAMPLES_DIR, "classifier.py"))
    assert model(*inputs).shape == (2, 10)


GPU_MISMATCH_FILE = """
import torch

class Model(torch.nn.Module):
    def forward(self, x):
        y = torch.relu(x) * 3
        return y + 0.5 if torch.compiler.is_exporting() else y

model = Model()
example_inputs = (torch.randn(3, 37),)
"""


def test_compile_for_a_gpu_lists_fallbacks_and_applies_the_tolerance(tmp_path, capsys, monkeypatch):
    """Issue 20: ``--target cuda:...`` printed neither. Without a GPU the
    tolerance is checked on the CPU run of the GPU-mapped IR."""
    monkeypatch.setenv("LOWERLINE_CACHE_DIR", str(tmp_path / "cache"))
    source = tmp_path / "planted.py"
    source.write_text(GPU_MISMATCH_FILE)
    out = str(tmp_path / "out")
    assert cli.main(["compile", str(source), "-o", out, "--target", "cuda:sm_80"]) == 1
    captured = capsys.readouterr()
    assert re.search(r"^ops left as plain loops", captured.out, re.M)
    assert re.search(
        r"^tolerance \(checked on the (CPU run of the mapped IR|GPU and CPU runs)\): "
        r"float32: rtol=0.0001, atol=1e-05$",
        captured.out,
        re.M,
    )
    assert captured.err.startswith("lowerline: error: outside the tolerance: output #0: ")
    # The same model without the planted difference passes.
    source.write_text(GPU_MISMATCH_FILE.replace("y + 0.5 if", "y if"))
    assert cli.main(["compile", str(source), "-o", out, "--target", "cuda:sm_80"]) == 0
