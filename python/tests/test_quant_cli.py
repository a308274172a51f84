"""`lowerline compile FILE.py` on a file that defines ``quantize``: the model
compiles as int8 and the quant report is printed and checked."""

import re

from lowerline.tools import cli

MODEL_FILE = """
import torch
import lowerline

torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(11, 17), torch.nn.ReLU(), torch.nn.Linear(17, 5)
).eval()
example_inputs = (torch.randn(3, 11),)
generator = torch.Generator().manual_seed(1)
quantize = lowerline.quant.Int8(
    calibration=[torch.randn(6, 11, generator=generator) for _ in range(4)],
    observer="percentile",
)
"""


def test_compile_prints_the_quant_report(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("LOWERLINE_CACHE_DIR", str(tmp_path / "cache"))
    source = tmp_path / "int8_mlp.py"
    source.write_text(MODEL_FILE)
    assert cli.main(["compile", str(source), "-o", str(tmp_path / "out"), "--runs", "1"]) == 0
    printed = capsys.readouterr().out
    assert re.search(r"^  calibrate +[0-9.]+ ms$", printed, re.M)
    assert "int8 layers: 2 (max error in output steps, must be <= 1)" in printed
    rows = re.findall(r"^  (\S+) +linear +(\S+ \S+|float) +([0-9.]+) steps", printed, re.M)
    assert [(name, kernel) for name, kernel, _ in rows] == [
        ("0", "linalg.matmul i8"),
        ("2", "linalg.matmul i8"),
    ]
    assert all(float(steps) <= 1.0 for _, _, steps in rows)
    assert "end to end against the float model: max |error|" in printed
    assert "tolerance:" not in printed  # float tolerances are not the int8 model's
