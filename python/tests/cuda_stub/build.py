"""Builds the stub CUDA driver (stub_driver.c) for tests.

A test module takes the fixture with ``stub_driver = build.stub_driver``
(assigning it, not importing the name, keeps ruff's F811 quiet).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

SOURCE = Path(__file__).with_name("stub_driver.c")


def build_stub_driver(directory: Path) -> Path:
    """Compile the stub into ``directory``; returns the library's path.

    Its soname is libcuda.so.1, so that a runtime needing the driver binds to
    it once it is loaded globally, whatever its file is called.
    """
    library = directory / "libcuda_stub.so"
    command = [
        os.environ.get("CC", "cc"),
        "-shared",
        "-fPIC",
        "-O1",
        "-Wall",
        "-Wextra",
        "-Wl,-soname,libcuda.so.1",
        "-o",
        str(library),
        str(SOURCE),
        "-lpthread",
    ]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode:
        raise RuntimeError(f"building the stub CUDA driver failed:\n{result.stderr}")
    return library


@pytest.fixture(scope="session")
def stub_driver(tmp_path_factory) -> Path:
    """The path of the stub driver library, built once per session."""
    return build_stub_driver(tmp_path_factory.mktemp("cuda_stub"))
