"""`lowerline compile FILE.py` on a file that defines ``quantize``: the model
compiles as int8 (but the layer ``skip`` names), and the quant report is
printed and checked."""

import re

import pytest
import torch

import lowerline
from lowerline.tools import cli

MODEL_FILE = """
import torch
import lowerline

torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(11, 17),
    torch.nn.ReLU(),
    torch.nn.Linear(17, 9),
    torch.nn.ReLU(),
    torch.nn.Linear(9, 5),
).eval()
example_inputs = (torch.randn(3, 11),)
generator = torch.Generator().manual_seed(1)
quantize = lowerline.quant.Int8(
    calibration=[torch.randn(6, 11, generator=generator) for _ in range(4)],
    observer="percentile",
    skip=["4"],
)
"""


def test_compile_prints_the_quant_report(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("LOWERLINE_CACHE_DIR", str(tmp_path / "cache"))
    source = tmp_path / "int8_mlp.py"
    source.write_text(MODEL_FILE)
    out = tmp_path / "out"
    assert cli.main(["compile", str(source), "-o", str(out), "--runs", "1"]) == 0
    printed = capsys.readouterr().out
    assert re.search(r"^  calibrate +[0-9.]+ ms$", printed, re.M)
    assert "int8 layers: 2 (max error in output steps, must be <= 1)" in printed
    rows = re.findall(r"^  (\S+) +linear +(\S+ \S+|float) +([0-9.]+) steps", printed, re.M)
    assert [(name, kernel) for name, kernel, _ in rows] == [
        ("0", "linalg.matmul i8"),
        ("2", "linalg.matmul i8"),
    ]
    assert all(float(steps) <= 1.0 for _, _, steps in rows)
    assert "left in float: 4" in printed
    assert "end to end against the float model: max |error|" in printed
    assert "tolerance:" not in printed  # float tolerances are not the int8 model's
    # In the model: two integer matmuls, and the skipped layer's float one.
    graph = (out / "2-graph.mlir").read_text()
    kinds = re.findall(r"linalg\.matmul ins\([^)]*: tensor<\w+x(i8|f32)>, ", graph)
    assert sorted(kinds) == ["f32", "i8", "i8"]


def test_quant_report_needs_a_quantized_module(tmp_path):
    model = torch.nn.Linear(3, 2).eval()
    compiled = lowerline.compile(model, torch.randn(2, 3), cache_dir=str(tmp_path))
    with pytest.raises(RuntimeError, match=r"quantize=lowerline\.quant\.Int8"):
        compiled.quant_report()
