"""From an LLVM-dialect module to an object file and a shared library.

Shared by the compile worker and ``lowerline object`` (which replays a failed
object step from its reproducer file).
"""

from __future__ import annotations

import os
import subprocess

from mlir import execution_engine, ir

from lowerline.errors import LowerlineError
from lowerline.jit import runtime_library


class ObjectError(LowerlineError):
    """Linking the shared library failed."""


def emit_object(module: ir.Module, path: str) -> None:
    """Generate host code for ``module`` (LLVM dialect) into the object ``path``."""
    # The engine resolves every symbol while generating code: memrefCopy and
    # friends come from MLIR's C runner utils (the library links against it).
    engine = execution_engine.ExecutionEngine(
        module, opt_level=3, shared_libs=[runtime_library("libmlir_c_runner_utils.so")]
    )
    engine.dump_to_object_file(path)


def link_shared_library(obj: str, out: str) -> None:
    lib_dir = os.path.dirname(runtime_library("libmlir_c_runner_utils.so"))
    command = [
        os.environ.get("CC", "cc"), "-shared", "-o", out, obj,
        f"-L{lib_dir}", "-lmlir_c_runner_utils", f"-Wl,-rpath,{lib_dir}", "-lm",
    ]  # fmt: skip
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False)
    except OSError as err:
        raise ObjectError(f"cannot run the linker '{command[0]}': {err.strerror}") from None
    if done.returncode != 0:
        raise ObjectError(f"linking failed: {' '.join(command)}\n{done.stderr.strip()}")
