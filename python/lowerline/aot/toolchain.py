"""Build an exported model's static library for its target.

The compile worker leaves two objects (``export.o``: the code;
``export.o.weights.o``: the weights, assembled from their bytes). Here the
target's C compiler builds the wrapper (``cgen.wrapper``) and the support
code (``runtime_support.c`` without its allocation functions:
``LOWERLINE_STANDALONE``), the same compiler links all four into one
relocatable object (``-r``), ``llvm-objcopy`` makes every symbol local but
``name_run`` and ``name_error_message`` (two exported models link into one
program: their ``_mlir_ciface_main`` and support code stay apart), and
``llvm-ar`` archives it as ``libname.a``.

A multithreaded export (x86 only) calls the OpenMP runtime the compiler
links for ``lowerline.compile`` too (Intel's ``libiomp5.so`` of the
``intel-openmp`` wheel: ``runtime.libraries.openmp_library``); it is copied
beside the library (``ship_openmp``), so the artifact folder is all a
program needs.

The C compiler: ``$LOWERLINE_EXPORT_CC`` if set, else this machine's ``$CC``
or ``cc`` for its own architecture, else the Debian cross compiler of the
target's triple (``aarch64-linux-gnu-gcc``: ``tools/apt-packages.txt``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass

from lowerline.driver.objects import host_arch, llvm_tool, weights_object
from lowerline.errors import LowerlineError
from lowerline.runtime.libraries import RUNTIME_SUPPORT, openmp_library
from lowerline.targets import CpuTarget

CC_VAR = "LOWERLINE_EXPORT_CC"
# The section the weights are assembled into (driver.objects._emit_weights).
WEIGHTS_SECTION = ".rodata.lowerline_weights"
CFLAGS = ["-std=c11", "-O2", "-fPIC", "-ffunction-sections", "-fdata-sections"]
# Per architecture: GCC's AArch64 atomics call libgcc's __aarch64_* helpers
# by default; inline ones leave the library needing only libc and libm.
ARCH_CFLAGS = {"aarch64": ["-mno-outline-atomics"]}
# The OpenMP runtime multithreaded code calls (``__kmpc_*``); its soname.
OPENMP = "libiomp5.so"


class ToolchainError(LowerlineError):
    """The target's C compiler or a build step of the library is missing or failed."""


def _arch(triple: str) -> str:
    return triple.split("-", 1)[0]


def c_compiler(target: CpuTarget) -> str:
    """The C compiler for ``target``: a path, or ToolchainError saying what to install."""
    arch = _arch(target.triple)
    if os.environ.get(CC_VAR):
        wanted = os.environ[CC_VAR]
    elif arch == host_arch():
        wanted = os.environ.get("CC", "cc")
    else:
        wanted = f"{arch}-linux-gnu-gcc"
    found = shutil.which(wanted)
    if found is None:
        raise ToolchainError(
            f"no C compiler for target '{target.name}' ({target.triple}): cannot find "
            f"'{wanted}' (install gcc-{arch.replace('_', '-')}-linux-gnu, see "
            f"tools/apt-packages.txt, or set ${CC_VAR})"
        )
    return found


def openmp_runtime(target: CpuTarget) -> str:
    """The OpenMP runtime a multithreaded export for ``target`` links: the
    x86-64 ``libiomp5.so`` the compiler uses; ToolchainError when it is
    missing or not for ``target``'s architecture."""
    found = openmp_library()
    if found is None:
        raise ToolchainError(
            f"a multithreaded export needs the OpenMP runtime {OPENMP} (the intel-openmp "
            "package, a lowerline dependency), which is not installed; export with num_threads=1"
        )
    if _arch(target.triple) != host_arch():
        raise ToolchainError(
            f"the OpenMP runtime {found} is for {host_arch()}, not for target '{target.name}' "
            f"({target.triple}); export with num_threads=1"
        )
    return found


def ship_openmp(runtime: str, out_dir: str) -> str:
    """Copy the OpenMP runtime beside the library; returns the copy."""
    shipped = os.path.join(out_dir, OPENMP)
    shutil.copyfile(runtime, shipped)
    os.chmod(shipped, 0o755)
    return shipped


def _run(step: str, command: list[str]) -> str:
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False)
    except OSError as err:
        raise ToolchainError(f"export step '{step}': cannot run {command[0]}: {err}") from None
    if done.returncode != 0:
        raise ToolchainError(
            f"export step '{step}' failed: {' '.join(command)}\n{done.stderr.strip()}"
        )
    return done.stdout


def build_library(
    compiler: str,
    target: CpuTarget,
    folder: str,
    name: str,
    wrapper_c: str,
    objects: list[str],
    out: str,
) -> str:
    """Compile the wrapper and support code for ``target``, link them with
    ``objects`` into one object whose only global symbols are the API's, and
    archive it as ``out``; returns that object (for ``sizes``)."""
    flags = [*CFLAGS, *ARCH_CFLAGS.get(_arch(target.triple), [])]
    include = ["-I", folder]
    wrapper_o = os.path.join(folder, f"{name}_wrapper.o")
    support_o = os.path.join(folder, f"{name}_support.o")
    combined = os.path.join(folder, f"{name}.o")
    _run("wrapper", [compiler, *flags, *include, "-c", wrapper_c, "-o", wrapper_o])
    _run(
        "support",
        [compiler, *flags, "-DLOWERLINE_STANDALONE", "-c", RUNTIME_SUPPORT, "-o", support_o],
    )
    _run("link", [compiler, "-r", "-nostdlib", "-o", combined, wrapper_o, support_o, *objects])
    keep = [f"--keep-global-symbol={name}_{symbol}" for symbol in ("run", "error_message")]
    _run("localize", [llvm_tool("llvm-objcopy"), *keep, combined])
    if os.path.exists(out):
        os.remove(out)
    _run("archive", [llvm_tool("llvm-ar"), "rcs", out, combined])
    for temporary in (wrapper_o, support_o):
        os.remove(temporary)
    return combined


def export_objects(workspace: str) -> list[str]:
    """The objects the compile worker left for an export (code, weights if any)."""
    code = os.path.join(workspace, "export.o")
    return [code] + [weights_object(code)] * os.path.exists(weights_object(code))


@dataclass(frozen=True)
class Sizes:
    """Bytes of an exported model's library, by kind of section."""

    text: int  # machine code
    weights: int  # the model's constants (read-only data)
    rodata: int  # other read-only data (tables, strings)
    data: int
    bss: int

    def table(self, name: str) -> str:
        return (
            f"{'model':<16} {'text':>10} {'weights':>10} {'rodata':>8} {'data':>6} {'bss':>6}\n"
            f"{name:<16} {self.text:>10} {self.weights:>10} {self.rodata:>8} "
            f"{self.data:>6} {self.bss:>6}"
        )


def sizes(obj: str) -> Sizes:
    """The section sizes of ``obj`` (``llvm-size -A``), summed by kind."""
    totals = {"text": 0, "weights": 0, "rodata": 0, "data": 0, "bss": 0}
    for line in _run("size", [llvm_tool("llvm-size"), "-A", obj]).splitlines():
        parts = line.split()
        if len(parts) < 2 or not parts[1].isdigit():
            continue
        section, size = parts[0], int(parts[1])
        if section.startswith(WEIGHTS_SECTION):
            totals["weights"] += size
        elif section.startswith(".text"):
            totals["text"] += size
        elif section.startswith((".rodata", ".lrodata")):
            totals["rodata"] += size
        elif section.startswith((".data", ".ldata")):
            totals["data"] += size
        elif section.startswith((".bss", ".lbss", ".tbss")):
            totals["bss"] += size
    return Sizes(**totals)
