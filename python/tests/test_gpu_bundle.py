"""GPU bundles (lowerline.runtime.gpu_bundle, lowerline.tools.gpu_check):
compiled GPU libraries that run on a machine without the compiler.

Built here; run in a subprocess that cannot import ``mlir`` or ``torch_mlir``,
on the stub driver (cuda_stub/), which records launches but computes
nothing: what is checked is that everything loads without a file of the
compiler packages and that the planned kernels are launched. The numbers
are checked on a real GPU (bench/gpu-h100.md).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from cuda_stub import build as stub_build

from lowerline.runtime import gpu_bundle
from lowerline.tools import gpu_check

TESTS = Path(__file__).parent
stub_driver = stub_build.stub_driver  # the fixture


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("bundle") / "b"
    assert gpu_check.build(str(folder), "cuda:sm_90", ["mlp_b1", "softmax_8x33"]) == 0
    return folder


RUN = """
import json, sys
sys.modules["mlir"] = sys.modules["torch_mlir"] = None  # importing them fails
sys.path.insert(0, TESTS)
from lowerline.runtime import cuda
from lowerline.tools import gpu_check
from cuda_stub.stub import StubDriver

gpu_check.run(BUNDLE, OUT, [], timing=False)
with open("/proc/self/maps") as maps:
    mapped = sorted({line.split()[-1] for line in maps if "/" in line})
launches = [launch.kernel for launch in StubDriver(cuda.load_driver()).launches()]
print(json.dumps({"mapped": mapped, "launches": launches}))
"""


def test_bundle_runs_without_the_compiler(bundle, stub_driver, tmp_path):
    code = f"TESTS = {str(TESTS)!r}\nBUNDLE = {str(bundle)!r}\nOUT = {str(tmp_path)!r}\n" + RUN
    env = {**os.environ, "LOWERLINE_CUDA_DRIVER": str(stub_driver)}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "failed with" not in done.stderr, done.stderr  # the mgpu runtime's failures
    result = json.loads(done.stdout.strip().splitlines()[-1])
    manifest = gpu_bundle.read_manifest(str(bundle))
    # Every planned kernel of every case was launched, in order.
    assert len(result["launches"]) == sum(c["info"]["kernels"] for c in manifest["cases"]) > 0
    # Nothing of the compiler's wheels was mapped: the runtime came from the bundle.
    compiler = [p for p in result["mapped"] if "/mlir/" in p or "/llvm/" in p]
    assert compiler == [], compiler
    assert any(p.startswith(str(bundle)) for p in result["mapped"])
    report = json.loads((tmp_path / "report.json").read_text())
    assert [c["name"] for c in report["cases"]] == ["mlp_b1", "softmax_8x33"]
    assert all("error" not in c for c in report["cases"]), report


def test_bundle_leaves_out_unused_compiler_libraries(bundle):
    """libmlir_cuda_runtime.so names libLLVM.so (136 MB) and uses none of its
    symbols: the bundle has an empty stand-in, not the library."""
    manifest = gpu_bundle.read_manifest(str(bundle))
    assert "lib/libmlir_cuda_runtime.so" in manifest["runtime"]
    for name in manifest["stubs"]:
        assert (bundle / name).stat().st_size < 64 * 1024, name
    total = sum(f.stat().st_size for f in (bundle / "lib").iterdir())
    assert total < 1024 * 1024


def test_not_a_bundle_is_named(tmp_path):
    with pytest.raises(gpu_bundle.BundleError, match=f"{tmp_path} is not a GPU bundle"):
        gpu_bundle.read_manifest(str(tmp_path))


def test_other_format_is_refused(tmp_path):
    (tmp_path / gpu_bundle.MANIFEST).write_text(json.dumps({"format": 99}))
    with pytest.raises(gpu_bundle.BundleError, match="bundle format 99"):
        gpu_bundle.read_manifest(str(tmp_path))


def test_compare_reports_errors_and_mismatches():
    want = [torch.tensor([1.0, 2.0, -4.0])]
    same = gpu_bundle.compare([torch.tensor([1.0, 2.0, -4.0])], want, 1e-4, 1e-5)
    assert same.close and same.max_abs == 0.0
    off = gpu_bundle.compare([torch.tensor([1.0, 2.5, -4.0])], want, 1e-4, 1e-5)
    assert not off.close and off.max_abs == pytest.approx(0.5)
    assert off.max_rel == pytest.approx(0.25)
    shape = gpu_bundle.compare([torch.zeros(2)], want, 1e-4, 1e-5)
    assert not shape.close and "float32[2], expected torch.float32[3]" in shape.why
    count = gpu_bundle.compare([], want, 1e-4, 1e-5)
    assert not count.close and "0 outputs, expected 1" in count.why
