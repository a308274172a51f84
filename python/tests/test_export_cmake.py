"""The example C application (examples/c) built with CMake through
``lowerline_add_model`` (cmake/Lowerline.cmake): natively (one thread, and
two, linking the OpenMP runtime), and for AArch64
with the toolchain file, run under qemu-aarch64; its outputs match torch."""

import os
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from export_support import AARCH64_SYSROOT, QEMU, require_aarch64_tools

from lowerline.driver.objects import llvm_tool

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "c"
TOOLCHAIN = ROOT / "cmake" / "aarch64-linux-gnu.cmake"


def _build(build: Path, *flags: str) -> Path:
    configure = ["cmake", "-S", str(EXAMPLE), "-B", str(build), *flags]
    configure.append(f"-DLOWERLINE_PYTHON={sys.executable}")
    for command in (configure, ["cmake", "--build", str(build)]):
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return build / "classify"


@pytest.mark.parametrize("arch", ["native", "native-threads", "aarch64"])
def test_example_app_builds_with_cmake_and_matches_torch(arch, tmp_path):
    if shutil.which("cmake") is None:
        pytest.skip("cmake is not installed")
    runner: list[str] = []
    flags: list[str] = []
    if arch == "aarch64":
        require_aarch64_tools()
        flags = [f"-DCMAKE_TOOLCHAIN_FILE={TOOLCHAIN}", "-DLOWERLINE_TARGET=cpu:cortex-a72"]
        runner = [QEMU, "-L", AARCH64_SYSROOT]
    if arch == "native-threads":  # the OpenMP runtime in the target's link interface
        flags = ["-DLOWERLINE_THREADS=2"]
    program = _build(tmp_path / "build", *flags)
    example = runpy.run_path(str(ROOT / "python" / "lowerline" / "examples" / "classifier.py"))
    model = example["model"]
    torch.manual_seed(1)
    images = torch.randn(example["example_inputs"][0].shape)
    images.numpy().tofile(tmp_path / "in.bin")
    done = subprocess.run(
        [*runner, str(program), str(tmp_path / "in.bin"), str(tmp_path / "out.bin")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    with torch.no_grad():
        expected = model(images)
    actual = torch.from_numpy(np.fromfile(tmp_path / "out.bin", dtype=np.float32))
    torch.testing.assert_close(actual.reshape(expected.shape), expected, rtol=1e-4, atol=1e-5)
    # Without arguments the example prints a class per image and its workspace.
    done = subprocess.run([*runner, str(program)], capture_output=True, text=True, check=False)
    assert done.returncode == 0 and "image 1: class" in done.stdout
    out = tmp_path / "build" / "lowerline" / "classifier"
    assert os.path.isfile(out / "libclassifier.a")
    assert os.path.isfile(out / "libiomp5.so") == (arch == "native-threads")
    if arch == "native-threads":  # linked through the target, found through the rpath
        dynamic = subprocess.run(
            [llvm_tool("llvm-readelf"), "-d", str(program)], capture_output=True, text=True
        ).stdout
        assert "[libiomp5.so]" in dynamic and str(out) in dynamic, dynamic
