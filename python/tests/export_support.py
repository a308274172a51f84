"""Run an exported model (``lowerline.export``) from a C program, here or
under ``qemu-aarch64``, on inputs and outputs passed through files.

The program is generated from the export's signature: it reads ``in<i>.bin``
from a folder, calls ``name_run`` twice on a workspace filled with garbage
(the second call checks that nothing depends on a first call or on a zeroed
workspace), writes ``out<i>.bin`` and prints the status and the heap calls
made during the runs. It links with ``-Wl,--wrap`` for malloc, calloc,
realloc, aligned_alloc, posix_memalign and free, so every call the library
makes to them goes through the counting wrappers below.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np
import pytest
import torch

from lowerline.aot.export import ExportedModel
from lowerline.driver.objects import llvm_tool
from lowerline.driver.standalone import HEAP_FUNCTIONS

WRAPPED = ("malloc", "calloc", "realloc", "aligned_alloc", "posix_memalign", "free")
QEMU = "qemu-aarch64"
AARCH64_CC = "aarch64-linux-gnu-gcc"
AARCH64_SYSROOT = "/usr/aarch64-linux-gnu"

_WRAPPERS = """
#include <stddef.h>
static int counting;
static long heap_calls;
void *__real_malloc(size_t);
void *__real_calloc(size_t, size_t);
void *__real_realloc(void *, size_t);
void *__real_aligned_alloc(size_t, size_t);
int __real_posix_memalign(void **, size_t, size_t);
void __real_free(void *);
void *__wrap_malloc(size_t n) { heap_calls += counting; return __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t m) { heap_calls += counting; return __real_calloc(n, m); }
void *__wrap_realloc(void *p, size_t n) { heap_calls += counting; return __real_realloc(p, n); }
void *__wrap_aligned_alloc(size_t a, size_t n) {
  heap_calls += counting;
  return __real_aligned_alloc(a, n);
}
int __wrap_posix_memalign(void **p, size_t a, size_t n) {
  heap_calls += counting;
  return __real_posix_memalign(p, a, n);
}
void __wrap_free(void *p) { heap_calls += counting && p; __real_free(p); }
"""


def driver_c(exported: ExportedModel) -> str:
    sig = exported.signature
    n, up = sig.name, sig.name.upper()
    lines = [
        "#include <stdio.h>",
        "#include <stdlib.h>",
        "#include <string.h>",
        f'#include "{n}.h"',
        _WRAPPERS,
        "static void *load(const char *dir, const char *file, size_t bytes) {",
        "  char path[4096];",
        '  snprintf(path, sizeof path, "%s/%s", dir, file);',
        '  FILE *f = fopen(path, "rb");',
        "  void *data = malloc(bytes ? bytes : 1);",
        "  if (!f || fread(data, 1, bytes, f) != bytes) { perror(path); exit(2); }",
        "  fclose(f);",
        "  return data;",
        "}",
        "static void save(const char *dir, const char *file, const void *data, size_t bytes) {",
        "  char path[4096];",
        '  snprintf(path, sizeof path, "%s/%s", dir, file);',
        '  FILE *f = fopen(path, "wb");',
        "  if (!f || fwrite(data, 1, bytes, f) != bytes) { perror(path); exit(2); }",
        "  fclose(f);",
        "}",
        "int main(int argc, char **argv) {",
        '  if (argc != 2) { fprintf(stderr, "usage: %s DIR\\n", argv[0]); return 2; }',
        f"  {n}_inputs in;",
        f"  {n}_outputs out;",
    ]
    for i, t in enumerate(sig.inputs):
        bytes_ = f"{t.elements} * sizeof(*in.{t.name})"
        lines.append(f'  in.{t.name} = load(argv[1], "in{i}.bin", {bytes_});')
    for t in sig.outputs:
        lines.append(f"  out.{t.name} = malloc({t.elements} * sizeof(*out.{t.name}) + 1);")
    lines += [
        f"  void *workspace = aligned_alloc({up}_WORKSPACE_ALIGNMENT,",
        f"      ({up}_WORKSPACE_BYTES + {up}_WORKSPACE_ALIGNMENT) & ~({up}_WORKSPACE_ALIGNMENT - 1));",
        f"  memset(workspace, 0xAB, {up}_WORKSPACE_BYTES);",
        "  counting = 1;",
        f"  int first = {n}_run(&in, &out, workspace);",
        f"  int status = {n}_run(&in, &out, workspace);",
        "  counting = 0;",
        '  printf("status=%d first=%d heap_calls=%ld\\n", status, first, heap_calls);',
        f'  if (status) printf("message=%s\\n", {n}_error_message());',
    ]
    for i, t in enumerate(sig.outputs):
        bytes_ = f"{t.elements} * sizeof(*out.{t.name})"
        lines.append(f'  save(argv[1], "out{i}.bin", out.{t.name}, {bytes_});')
    lines += ["  return 0;", "}"]
    return "\n".join(lines) + "\n"


def require_aarch64_tools() -> None:
    """Skip when the cross compiler or qemu is missing, except in CI (``$CI``),
    where the AArch64 tests must run: fail instead."""
    missing = [tool for tool in (AARCH64_CC, QEMU) if shutil.which(tool) is None]
    if not os.path.isdir(os.path.join(AARCH64_SYSROOT, "include")):
        missing.append(f"{AARCH64_SYSROOT}/include (libc6-dev-arm64-cross)")
    if not missing:
        return
    message = f"AArch64 tools missing: {', '.join(missing)} (tools/apt-packages.txt)"
    if os.environ.get("CI"):
        pytest.fail(message + "; CI must run these tests")
    pytest.skip(message)


def build_driver(exported: ExportedModel, folder: str, aarch64: bool) -> str:
    source = os.path.join(folder, "driver.c")
    with open(source, "w", encoding="utf-8") as handle:
        handle.write(driver_c(exported))
    program = os.path.join(folder, "driver")
    compiler = AARCH64_CC if aarch64 else os.environ.get("CC", "cc")
    wrap = "-Wl," + ",".join(f"--wrap={name}" for name in WRAPPED)
    command = [compiler, "-std=c11", "-O1", source, f"-I{exported.out_dir}", "-o", program]
    command += [exported.library, wrap, "-lm"]
    subprocess.run(command, check=True, capture_output=True, text=True)
    return program


def run_exported(
    exported: ExportedModel, inputs: tuple, folder: str, aarch64: bool = False
) -> tuple[list[torch.Tensor], dict[str, str]]:
    """The outputs of the exported model on ``inputs`` and what the driver
    printed (``status``, ``first``, ``heap_calls``, ``message``)."""
    program = build_driver(exported, folder, aarch64)
    for index, tensor in enumerate(inputs):
        tensor.contiguous().numpy().tofile(os.path.join(folder, f"in{index}.bin"))
    command = [QEMU, "-L", AARCH64_SYSROOT, program] if aarch64 else [program]
    done = subprocess.run([*command, folder], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    printed: dict[str, str] = {}
    for line in done.stdout.splitlines():
        if line.startswith("message="):  # the rest of the line, spaces included
            printed["message"] = line.removeprefix("message=")
        else:
            printed.update(word.split("=", 1) for word in line.split())
    outputs = []
    for index, tensor in enumerate(exported.signature.outputs):
        dtype = torch.empty((), dtype=tensor.dtype).numpy().dtype
        data = np.fromfile(os.path.join(folder, f"out{index}.bin"), dtype=dtype)
        outputs.append(torch.from_numpy(data.reshape(tensor.shape)))
    return outputs, printed


def symbols(library: str) -> tuple[set[str], set[str]]:
    """The defined global and the undefined symbols of ``library``."""
    listing = subprocess.run(
        [llvm_tool("llvm-nm"), "--extern-only", library], capture_output=True, text=True, check=True
    ).stdout
    defined, undefined = set(), set()
    for line in listing.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[-2] == "U":
            undefined.add(parts[-1])
        elif len(parts) == 3:
            defined.add(parts[2])
    return defined, undefined


def foreign(undefined: set[str]) -> set[str]:
    """The symbols of ``undefined`` that libc and libm would not provide: the
    heap functions, and reserved names (a compiler runtime's, MLIR's
    ``_mlir_*``, OpenMP's ``__kmpc_*``) but the linker's own GOT symbol."""
    return {
        name
        for name in undefined
        if name in HEAP_FUNCTIONS
        or (name.startswith("_") and name != "_GLOBAL_OFFSET_TABLE_")
        or name.startswith(("mlir", "lowerline", "omp_"))
    }
