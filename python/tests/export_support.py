"""Run an exported model (``lowerline.export``) from a C program, here or
under ``qemu-aarch64``, on inputs and outputs passed through files.

The program is generated from the export's signature: it reads ``in<i>.bin``
from a folder, calls ``name_run`` RUNS times on a workspace filled with
garbage (the later calls check that nothing depends on a first call or on a
zeroed workspace), writes ``out<i>.bin`` and prints the status and the heap
calls made during the first call and during the later ones (the steady
state). It defines malloc, calloc, realloc, aligned_alloc, posix_memalign,
memalign, valloc, pvalloc and free itself, forwarding to glibc's
``__libc_*`` functions: the program's definitions interpose on every caller
in the process, the library linked into it and the shared OpenMP runtime a
multithreaded export calls alike (``-Wl,--wrap`` would see the program's own
objects only). Each counted call records its caller's address, and the
program names the objects (``dladdr``) the first call's heap calls came from.
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

QEMU = "qemu-aarch64"
AARCH64_CC = "aarch64-linux-gnu-gcc"
AARCH64_SYSROOT = "/usr/aarch64-linux-gnu"
RUNS = 4  # the first call, then the steady state

_COUNTING = """
#include <stddef.h>
#include <dlfcn.h>
#include <string.h>
/* 0: not counting; 1: the first call; 2: the later calls. */
static int phase;
static long heap_calls[3], heap_bytes[3];
#define MAX_CALLERS 4096
static void *callers[MAX_CALLERS];
static long n_callers;
void *__libc_malloc(size_t);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);
void *__libc_memalign(size_t, size_t);
void *__libc_valloc(size_t);
void *__libc_pvalloc(size_t);
void __libc_free(void *);
/* OpenMP's threads allocate concurrently: atomic counters. */
static void note(void *caller, size_t bytes) {
  int now = __atomic_load_n(&phase, __ATOMIC_RELAXED);
  if (!now)
    return;
  __atomic_fetch_add(&heap_calls[now], 1, __ATOMIC_RELAXED);
  __atomic_fetch_add(&heap_bytes[now], (long)bytes, __ATOMIC_RELAXED);
  long slot = __atomic_fetch_add(&n_callers, 1, __ATOMIC_RELAXED);
  if (now == 1 && slot < MAX_CALLERS)
    callers[slot] = caller;
}
#define CALLER __builtin_return_address(0)
void *malloc(size_t n) { note(CALLER, n); return __libc_malloc(n); }
void *calloc(size_t n, size_t m) { note(CALLER, n * m); return __libc_calloc(n, m); }
void *realloc(void *p, size_t n) { note(CALLER, n); return __libc_realloc(p, n); }
void *memalign(size_t a, size_t n) { note(CALLER, n); return __libc_memalign(a, n); }
void *aligned_alloc(size_t a, size_t n) { note(CALLER, n); return __libc_memalign(a, n); }
void *valloc(size_t n) { note(CALLER, n); return __libc_valloc(n); }
void *pvalloc(size_t n) { note(CALLER, n); return __libc_pvalloc(n); }
int posix_memalign(void **p, size_t a, size_t n) {
  note(CALLER, n);
  void *got = __libc_memalign(a, n);
  if (!got)
    return 12; /* ENOMEM */
  *p = got;
  return 0;
}
void free(void *p) {
  if (p)
    note(CALLER, 0);
  __libc_free(p);
}
/* "object:count,..." for the first call's heap calls, by calling object. */
static void print_callers(void) {
  const char *names[32];
  long counts[32];
  int n = 0;
  long recorded = n_callers < MAX_CALLERS ? n_callers : MAX_CALLERS;
  for (long i = 0; i < recorded; ++i) {
    Dl_info info;
    const char *name = "?";
    if (dladdr(callers[i], &info) && info.dli_fname) {
      const char *slash = strrchr(info.dli_fname, '/');
      name = slash ? slash + 1 : info.dli_fname;
    }
    int k = 0;
    while (k < n && strcmp(names[k], name))
      ++k;
    if (k == n && n < 32) {
      names[n] = name;
      counts[n++] = 0;
    }
    if (k < n)
      ++counts[k];
  }
  printf("first_heap_by=");
  for (int k = 0; k < n; ++k)
    printf("%s%s:%ld", k ? "," : "", names[k], counts[k]);
  printf("\\n");
}
"""


def driver_c(exported: ExportedModel) -> str:
    sig = exported.signature
    n, up = sig.name, sig.name.upper()
    lines = [
        "#define _GNU_SOURCE /* dladdr */",
        "#include <stdio.h>",
        "#include <stdlib.h>",
        "#include <string.h>",
        f'#include "{n}.h"',
        _COUNTING,
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
        "  phase = 1;",
        f"  int first = {n}_run(&in, &out, workspace);",
        "  phase = 2;",
        "  int status = 0;",
        f"  for (int run = 1; run < {RUNS} && !status; ++run)",
        f"    status = {n}_run(&in, &out, workspace);",
        "  phase = 0;",
        '  printf("status=%d first=%d first_heap_calls=%ld first_heap_bytes=%ld heap_calls=%ld\\n",',
        "         status, first, heap_calls[1], heap_bytes[1], heap_calls[2]);",
        "  print_callers();",
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
    command = [compiler, "-std=c11", "-O1", source, f"-I{exported.out_dir}", "-o", program]
    command += [exported.library, "-lm"]
    if exported.openmp:  # a multithreaded export: the runtime shipped beside it
        command += [exported.openmp, f"-Wl,-rpath,{exported.out_dir}"]
    done = subprocess.run(command, check=False, capture_output=True, text=True)
    assert done.returncode == 0, f"{' '.join(command)}\n{done.stderr}"
    return program


def run_exported(
    exported: ExportedModel, inputs: tuple, folder: str, aarch64: bool = False
) -> tuple[list[torch.Tensor], dict[str, str]]:
    """The outputs of the exported model on ``inputs`` and what the driver
    printed (``status``, ``first``: the first call's; ``first_heap_calls``,
    ``first_heap_bytes``, ``first_heap_by``; ``heap_calls``: the later calls';
    ``message``)."""
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
