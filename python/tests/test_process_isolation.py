"""The user's process never loads a compiler: no `mlir`, no `torch_mlir` (DESIGN.md)."""

import subprocess
import sys

SCRIPT = """
import sys, torch, lowerline
model = torch.nn.Linear(7, 3).eval()
x = torch.randn(2, 7)
compiled = lowerline.compile(model, x, cache_dir=sys.argv[1])
assert torch.allclose(compiled(x), model(x), atol=1e-6)
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("mlir", "torch_mlir"))
print("loaded:", loaded)
"""


def test_compile_and_call_load_no_mlir_in_the_caller(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip().splitlines()[-1] == "loaded: []"
