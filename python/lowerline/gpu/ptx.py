"""Checking PTX with the CUDA toolchain: ``ptxas`` to cubins, ``fatbinary``.

There is no GPU on the build machines, so ``ptxas`` is the judge of the PTX
that the NVVM lowering emits: it rejects invalid PTX with a line number, and
its ``-v`` report (registers, spills, shared memory, barriers per kernel) is
what tells whether a tiling decision fits the target. ``fatbinary`` bundles the
cubins with the PTX, so a driver runs the cubin on a matching GPU and JIT
compiles the PTX on a newer one.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, fields

CUDA_PATH_VAR = "LOWERLINE_CUDA_PATH"
_FALLBACK_BIN = "/usr/local/cuda/bin"
_PTX_NAME = "kernel.ptx"  # the temp file's name, as ptxas' messages show it
_ARCH = re.compile(r"sm_\d+[af]?")


class CudaToolError(RuntimeError):
    """A CUDA tool (``ptxas``, ``fatbinary``) is missing or failed to run."""


class PtxasError(RuntimeError):
    """``ptxas`` rejected the PTX; ``stderr`` holds its full report."""

    def __init__(self, message: str, stderr: str, arch: str):
        super().__init__(message)
        self.stderr = stderr
        self.arch = arch


@dataclass(frozen=True)
class KernelResources:
    """What ``ptxas -v`` reports for one kernel (entry function); sizes in bytes."""

    name: str
    arch: str
    registers: int
    spill_store_bytes: int
    spill_load_bytes: int
    shared_bytes: int
    stack_bytes: int
    barriers: int
    constant_bytes: int  # all cmem[N] banks the entry uses, parameters included


def find_tool(name: str) -> str:
    """The path of a CUDA tool: ``$LOWERLINE_CUDA_PATH/bin``, then ``PATH``, then
    ``/usr/local/cuda/bin``, so a chosen toolkit wins over whatever is installed."""
    root = os.environ.get(CUDA_PATH_VAR)
    candidates = [os.path.join(root, "bin", name)] if root else []
    found = shutil.which(name)
    candidates += [found] if found else []
    candidates.append(os.path.join(_FALLBACK_BIN, name))
    for path in candidates:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    raise CudaToolError(
        f"CUDA tool '{name}' not found: set {CUDA_PATH_VAR} to a CUDA toolkit "
        f"(looked in {CUDA_PATH_VAR}/bin, PATH and {_FALLBACK_BIN})"
    )


def toolkit_version() -> str:
    """``ptxas --version``'s last line (the release), or ``none``: part of the
    cache key of GPU artifacts, whose cubins ptxas makes."""
    try:
        done = subprocess.run(
            [find_tool("ptxas"), "--version"], capture_output=True, text=True, check=False
        )
    except (CudaToolError, OSError):
        return "none"
    lines = done.stdout.strip().splitlines()
    return lines[-1] if lines else "none"


# --- ptxas -v report -------------------------------------------------------

_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '([^']+)'")
_PROPERTIES = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"ptxas info\s*:\s*Used \d+ registers")
_FIELDS = {
    "registers": re.compile(r"Used (\d+) registers"),
    "barriers": re.compile(r"used (\d+) barriers"),
    "shared_bytes": re.compile(r"(\d+) bytes smem"),
}
_CMEM = re.compile(r"(\d+) bytes cmem\[\d+\]")
_ZERO = {f.name: 0 for f in fields(KernelResources) if f.name not in ("name", "arch")}


def _usage(line: str) -> dict[str, int]:
    """The fields of a ``Used N registers, ...`` line; ptxas leaves out the
    ones that are zero or not applicable (no cmem[0] on sm_90), so each is
    looked for on its own."""
    found = {key: int(m.group(1)) for key, rx in _FIELDS.items() if (m := rx.search(line))}
    found["constant_bytes"] = sum(int(n) for n in _CMEM.findall(line))
    return found


def parse_ptxas_report(report: str) -> list[KernelResources]:
    """One ``KernelResources`` per entry, in ptxas' order.

    Stack and usage lines belong to the function named by the last
    ``Compiling entry function``/``Function properties for`` header, which may
    be a device function (not an entry): those lines are skipped.
    """
    entries: dict[str, dict] = {}
    subject = None
    for line in report.splitlines():
        if m := _ENTRY.search(line):
            subject = m.group(1)
            entries[subject] = {**_ZERO, "name": subject, "arch": m.group(2)}
        elif m := _PROPERTIES.search(line):
            subject = m.group(1)
        elif subject in entries and (m := _FRAME.search(line)):
            stack, stores, loads = (int(g) for g in m.groups())
            entries[subject].update(
                stack_bytes=stack, spill_store_bytes=stores, spill_load_bytes=loads
            )
        elif subject in entries and _USED.search(line):
            entries[subject].update(_usage(line))
    return [KernelResources(**fields) for fields in entries.values()]


# --- running the tools -------------------------------------------------------


def _write_atomically(path: str | os.PathLike, data: bytes) -> None:
    """Write ``path`` under a temporary name and rename it, so a reader (or a
    build cache) never sees a half-written artifact."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=os.path.basename(path))
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _run(tool: str, args: list[str], cwd: str) -> subprocess.CompletedProcess:
    """Run a CUDA tool in ``cwd`` (so its messages name files relative to it)."""
    return subprocess.run(
        [find_tool(tool), *args], cwd=cwd, capture_output=True, text=True, check=False
    )


def _check_arch(arch: str) -> str:
    if not _ARCH.fullmatch(arch):
        raise ValueError(f"not a CUDA architecture: '{arch}' (expected e.g. 'sm_80', 'sm_90a')")
    return arch


def _first_errors(stderr: str, limit: int = 5) -> str:
    lines = [line for line in stderr.splitlines() if re.search(r"\b(error|fatal)\b", line)]
    return "\n".join((lines or stderr.splitlines())[:limit])


def assemble(
    ptx: str, arch: str, out_cubin: str | os.PathLike | None = None
) -> tuple[bytes, list[KernelResources]]:
    """Assemble PTX for ``arch`` (``"sm_80"``) with ``ptxas -v``: the cubin and
    each kernel's resources. Raises ``PtxasError`` with ptxas' first errors."""
    _check_arch(arch)
    with tempfile.TemporaryDirectory(prefix="lowerline-ptxas-") as work:
        with open(os.path.join(work, _PTX_NAME), "w") as handle:
            handle.write(ptx)
        done = _run("ptxas", ["-v", f"-arch={arch}", _PTX_NAME, "-o", "kernel.cubin"], work)
        if done.returncode != 0:
            raise PtxasError(
                f"ptxas failed for {arch}:\n{_first_errors(done.stderr)}", done.stderr, arch
            )
        with open(os.path.join(work, "kernel.cubin"), "rb") as handle:
            cubin = handle.read()
    if out_cubin is not None:
        _write_atomically(out_cubin, cubin)
    return cubin, parse_ptxas_report(done.stdout + done.stderr)


_TARGET = re.compile(r"^\s*\.target\s+(sm_\d+[af]?)", re.MULTILINE)


def _ptx_arch(ptx: str) -> str:
    """The ``.target`` of a PTX module: the oldest GPU its PTX image may JIT on."""
    m = _TARGET.search(ptx)
    if not m:
        raise ValueError("PTX has no '.target sm_XX' directive")
    return m.group(1)


def fatbin(ptx: str, cubins: dict[str, bytes], out_path: str | os.PathLike | None = None) -> bytes:
    """A fat binary holding each cubin (keyed by arch, ``"sm_80"``) and the PTX,
    so one file loads with ``cuModuleLoadData`` on every listed GPU and later ones."""
    with tempfile.TemporaryDirectory(prefix="lowerline-fatbin-") as work:
        images = []
        for arch, cubin in cubins.items():
            name = f"{_check_arch(arch)}.cubin"
            with open(os.path.join(work, name), "wb") as handle:
                handle.write(cubin)
            images.append(f"--image3=kind=elf,sm={arch[3:]},file={name}")
        with open(os.path.join(work, _PTX_NAME), "w") as handle:
            handle.write(ptx)
        images.append(f"--image3=kind=ptx,sm={_ptx_arch(ptx)[3:]},file={_PTX_NAME}")
        done = _run("fatbinary", ["--create=out.fatbin", "--64", *images], work)
        if done.returncode != 0:
            raise CudaToolError(f"fatbinary failed:\n{done.stdout}{done.stderr}".rstrip())
        with open(os.path.join(work, "out.fatbin"), "rb") as handle:
            data = handle.read()
    if out_path is not None:
        _write_atomically(out_path, data)
    return data
