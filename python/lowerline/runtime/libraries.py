"""Where the native libraries that compiled code links against live.

Found from the installed packages' files, without importing MLIR: the
runtime never loads the compiler.
"""

from __future__ import annotations

import importlib.util
import os
import sys

# Linked into every library: allocation counters and the bf16 helpers.
RUNTIME_SUPPORT = os.path.join(os.path.dirname(__file__), "runtime_support.c")


def runtime_library(name: str) -> str:
    """Path of one of MLIR's runtime libraries shipped in the ``mlir`` wheel."""
    spec = importlib.util.find_spec("mlir")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the 'mlir' package (xtc-mlir-python-bindings) is not installed")
    return os.path.join(next(iter(spec.submodule_search_locations)), "lib", name)


def openmp_library() -> str | None:
    """Intel's OpenMP runtime from the ``intel-openmp`` wheel (it installs into
    ``<prefix>/lib``), or None when it is not installed. Multithreaded code
    (``convert-scf-to-openmp``) calls its ``__kmpc_*`` functions."""
    path = os.path.join(sys.prefix, "lib", "libiomp5.so")
    return path if os.path.exists(path) else None
