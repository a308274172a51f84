"""The C text of an exported model: its header, the wrapper behind
``name_run`` and the artifact's README.

The wrapper builds one memref descriptor per tensor from the caller's
pointers (contiguous, row-major: strides follow from the static shapes),
one for the workspace (the arena), calls ``_mlir_ciface_main`` and turns a
failed run-time check, which the compiled code records in the workspace's
failure word (``lowerline.failure_record``), or without one through
``lowerline_assert_failed`` (``runtime_support.c``), instead of aborting,
into a non-zero status. For a target with AMX it first asks Linux for the
AMX tile state, once (lowerline.runtime.amx says why): a refusal is a
failed check, not the illegal instruction the first tile op would be.
"""

from __future__ import annotations

from lowerline.aot.signature import CTensor, Signature
from lowerline.aot.toolchain import OPENMP


def _strides(shape: tuple[int, ...]) -> list[int]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return strides[::-1]


def _macro(signature: Signature, what: str) -> str:
    return f"{signature.name.upper()}_{what}"


def _fields(tensors: list[CTensor], const: str) -> list[str]:
    return [f"  {const}{t.ctype} *{t.name}; /* {t.describe}: {t.what} */" for t in tensors]


def _sizes(signature: Signature) -> list[str]:
    """Element counts of every tensor, for the caller's buffers."""
    return [
        f"#define {_macro(signature, t.name.upper() + '_ELEMENTS')} {t.elements}"
        for t in (*signature.inputs, *signature.outputs)
    ]


def _needs(signature: Signature) -> str:
    """What the library needs at run time, for the header and README."""
    if signature.num_threads == 1:
        return "needs only libc and libm"
    return f"needs libc, libm and {OPENMP} (OpenMP, beside it)"


def _link(signature: Signature) -> str:
    n = signature.name
    if signature.num_threads == 1:
        return f"cc app.c -I. -L. -l{n} -lm"
    return f"cc app.c -I. -L. -l{n} -liomp5 -lm -Wl,-rpath,'$ORIGIN'"


def _threads_doc(signature: Signature) -> list[str]:
    """The header's paragraph on threads: what the OpenMP runtime allocates."""
    up, threads = signature.name.upper(), signature.num_threads
    if threads == 1:
        return [" * Single-threaded: a call runs on the caller's thread."]
    return [
        f" * Multithreaded: a call runs its parallel loops on up to {up}_NUM_THREADS",
        f" * ({threads}) OpenMP threads, and the workspace holds a scratch slot per thread.",
        f" * The OpenMP runtime ({OPENMP}) allocates its thread pool on the heap at the",
        " * first call from a thread; later calls from that thread make no heap call.",
    ]


def header(signature: Signature, target: str) -> str:
    n, up = signature.name, signature.name.upper()
    baked = "".join(f"\n *   {line}" for line in signature.baked) or " none"
    constants = "".join(f"\n *   {line}" for line in signature.constants) or " none"
    lines = [
        f"/* {n}.h: the C API of a model exported by lowerline.export for target {target}.",
        " *",
        f" * Link lib{n}.a (weights included); it {_needs(signature)}:",
        f" *   {_link(signature)}",
        " * One call:",
        " *",
        f" *   static unsigned char ws[{up}_WORKSPACE_BYTES]"
        f" __attribute__((aligned({up}_WORKSPACE_ALIGNMENT)));",
        f" *   {n}_inputs in = {{...}};  {n}_outputs out = {{...}};",
        f" *   int status = {n}_run(&in, &out, ws);   // {up}_OK (0) on success",
        " *",
        " * Tensors are contiguous and row-major (C order), of the shapes below;",
        " * outputs are written into the caller's buffers. The run makes no heap",
        " * allocation: every intermediate lives in the workspace, which calls running",
        " * at the same time must not share. A failed run-time check (an index out of",
        f" * range) returns {up}_ERROR_CHECK_FAILED and never aborts; the outputs are then",
        " * unspecified.",
        *_threads_doc(signature),
        f" * Numbers the model took, baked in when it was exported:{baked}",
        f" * Outputs that are constants, not computed:{constants}",
        " */",
        f"#ifndef {up}_H",
        f"#define {up}_H",
        "",
        "#include <stdint.h>",
        "",
        "#ifdef __cplusplus",
        'extern "C" {',
        "#endif",
        "",
        "/* Bytes of the workspace a call needs: the static memory plan's arena, exact. */",
        f"#define {up}_WORKSPACE_BYTES {signature.workspace_bytes}",
        "/* The most planned bytes live at one point of the call: no plan needs less. */",
        f"#define {up}_WORKSPACE_LOWER_BOUND_BYTES {signature.lower_bound_bytes}",
        "/* The workspace's address must be a multiple of this. */",
        f"#define {up}_WORKSPACE_ALIGNMENT 64",
        "/* The threads a call uses at most (the workspace is sized for them). */",
        f"#define {up}_NUM_THREADS {signature.num_threads}",
        "/* Elements of each tensor. */",
        *_sizes(signature),
        "",
        "typedef enum {",
        f"  {up}_OK = 0,",
        f"  {up}_ERROR_NULL_ARGUMENT = 1,     /* a struct, a tensor or the workspace is NULL */",
        f"  {up}_ERROR_WORKSPACE_ALIGNMENT = 2, /* workspace not aligned as below */",
        f"  {up}_ERROR_CHECK_FAILED = 3,      /* a run-time check failed: {n}_error_message() */",
        f"}} {n}_status;",
        "",
        "typedef struct {",
        *_fields(signature.inputs, "const "),
        f"}} {n}_inputs;",
        "",
        "typedef struct {",
        *_fields(signature.outputs, ""),
        f"}} {n}_outputs;",
        "",
        f"/* Run the model: a {n}_status. workspace: {up}_WORKSPACE_BYTES bytes",
        f" * (NULL when that is 0), {up}_WORKSPACE_ALIGNMENT-aligned. */",
        f"int {n}_run(const {n}_inputs *inputs, {n}_outputs *outputs, void *workspace);",
        "",
        f"/* The check that failed in the last call that returned {up}_ERROR_CHECK_FAILED",
        " * (a constant string), or NULL. */",
        f"const char *{n}_error_message(void);",
        "",
        "#ifdef __cplusplus",
        "}",
        "#endif",
        "",
        f"#endif /* {up}_H */",
    ]
    return "\n".join(lines) + "\n"


def _descriptor_types(signature: Signature) -> list[str]:
    ranks = sorted({len(t.shape) for t in (*signature.inputs, *signature.outputs)} | {1})
    lines = []
    for rank in ranks:
        dims = f" int64_t sizes[{rank}]; int64_t strides[{rank}];" if rank else ""
        fields = f"void *allocated; void *aligned; int64_t offset;{dims}"
        lines.append(f"typedef struct {{ {fields} }} memref{rank};")
    return lines


def _descriptor(tensor: CTensor, pointer: str, variable: str) -> str:
    rank = len(tensor.shape)
    base = f"memref{rank} {variable} = {{(void *){pointer}, (void *){pointer}, 0"
    if not rank:
        return base + "};"
    sizes = ", ".join(map(str, tensor.shape))
    strides = ", ".join(map(str, _strides(tensor.shape)))
    return base + f", {{{sizes}}}, {{{strides}}}}};"


def _null_checks(signature: Signature) -> list[str]:
    up = signature.name.upper()
    pointers = [f"inputs->{t.name}" for t in signature.inputs]
    pointers += [f"outputs->{t.name}" for t in signature.outputs]
    if signature.workspace_bytes:
        pointers.append("workspace")
    return [f"  if (!{p})\n    return {up}_ERROR_NULL_ARGUMENT;" for p in pointers]


def _failure_lines(record: int | None) -> tuple[list[str], list[str]]:
    """The wrapper's lines before and after the call that find the call's
    failed check: in the workspace's failure word (lowerline.failure_record,
    so calls with their own workspaces may run at the same time; -1: the
    model has no check), else in the library's slot."""
    if record is None:
        return [], ["  const char *failed = lowerline_failed_check();"]
    if record < 0:
        return [], ["  const char *failed = 0;"]
    word = f"(const char *_Atomic *)((char *)workspace + {record})"
    return (
        [f"  atomic_store({word}, (const char *)0);"],
        [f"  const char *failed = atomic_load({word});"],
    )


# The AMX permission request of lowerline.runtime.amx, in C.
_AMX_REQUEST = [
    "#include <sys/syscall.h>",
    "#include <unistd.h>",
    "",
    "/* AMX tiles: Linux gives a process the tile state only when asked. */",
    "static const char *request_amx(void) {",
    "  static atomic_int granted;",
    "  if (atomic_load(&granted))",
    "    return 0;",
    "  if (syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XTILEDATA */) != 0)",
    '    return "the kernel refused AMX tile state (arch_prctl(ARCH_REQ_XCOMP_PERM))";',
    "  atomic_store(&granted, 1);",
    "  return 0;",
    "}",
    "",
]


def _amx_lines(amx: bool, up: str) -> tuple[list[str], list[str]]:
    """The request's definition and its call in ``run`` (none without AMX)."""
    if not amx:
        return [], []
    call = [
        "  const char *refused = request_amx();",
        "  if (refused) {",
        "    failed_message = refused;",
        f"    return {up}_ERROR_CHECK_FAILED;",
        "  }",
    ]
    return _AMX_REQUEST, call


def wrapper(signature: Signature, amx: bool = False) -> str:
    """``amx``: the code may use AMX tiles (a target with AMX)."""
    n, up = signature.name, signature.name.upper()
    tensors = [(t, f"inputs->{t.name}", f"in{i}") for i, t in enumerate(signature.inputs)]
    tensors += [(t, f"outputs->{t.name}", f"out{i}") for i, t in enumerate(signature.outputs)]
    arguments = [f"memref{len(t.shape)} *" for t, _, _ in tensors]
    calls = [f"&{variable}" for _, _, variable in tensors]
    arena: list[str] = []
    if signature.workspace_bytes:
        arguments.append("memref1 *")
        calls.append("&arena")
        arena = [
            f"  memref1 arena = {{workspace, workspace, 0, {{{up}_WORKSPACE_BYTES}}, {{1}}}};",
        ]
    take, failed = _failure_lines(signature.failure_record)
    request, call_request = _amx_lines(amx, up)
    lines = [
        f"/* The wrapper behind {n}_run (generated by lowerline.export). */",
        f'#include "{n}.h"',
        "#include <stdatomic.h>",
        "",
        *_descriptor_types(signature),
        "",
        f"void _mlir_ciface_main({', '.join(arguments) or 'void'});",
        "const char *lowerline_failed_check(void); /* runtime_support.c */",
        "",
        "static const char *failed_message;",
        "",
        *request,
        f"const char *{n}_error_message(void) {{ return failed_message; }}",
        "",
        f"int {n}_run(const {n}_inputs *inputs, {n}_outputs *outputs, void *workspace) {{",
        "  if (!inputs || !outputs)",
        f"    return {up}_ERROR_NULL_ARGUMENT;",
        *_null_checks(signature),
        f"  if ((uintptr_t)workspace % {up}_WORKSPACE_ALIGNMENT)",
        f"    return {up}_ERROR_WORKSPACE_ALIGNMENT;",
        "  (void)workspace;",
        *call_request,
        *(f"  {_descriptor(t, pointer, variable)}" for t, pointer, variable in tensors),
        *arena,
        *take,
        f"  _mlir_ciface_main({', '.join(calls)});",
        "  /* The compiled code records the first failed check and skips the work it",
        "   * guarded (lowerline-report-failed-asserts); take it. */",
        *failed,
        "  if (failed) {",
        "    failed_message = failed;",
        f"    return {up}_ERROR_CHECK_FAILED;",
        "  }",
        f"  return {up}_OK;",
        "}",
    ]
    return "\n".join(lines) + "\n"


def _readme_heap(signature: Signature) -> str:
    if signature.num_threads == 1:
        return ""
    return (
        f" (the OpenMP runtime allocates its pool of {signature.num_threads} threads "
        "at the first call from a thread, and not after)"
    )


def readme(signature: Signature, target: str, sizes_text: str) -> str:
    n, up = signature.name, signature.name.upper()
    inputs = "\n".join(f"- `{t.name}`: {t.describe} ({t.what})" for t in signature.inputs)
    outputs = "\n".join(f"- `{t.name}`: {t.describe} ({t.what})" for t in signature.outputs)
    return f"""# {n}: a model exported by lowerline for `{target}`

- `{n}.h`: the C API (`{n}_run`, the `{n}_inputs` / `{n}_outputs` structs, status codes).
- `lib{n}.a`: the compiled model with its weights; it {_needs(signature)},
  reads no file and makes no heap allocation when it runs{_readme_heap(signature)}.

```c
#include "{n}.h"
static unsigned char workspace[{up}_WORKSPACE_BYTES]
    __attribute__((aligned({up}_WORKSPACE_ALIGNMENT)));
...
{n}_inputs in = {{ /* one pointer per input */ }};
{n}_outputs out = {{ /* one pointer per output buffer */ }};
if ({n}_run(&in, &out, workspace) != {up}_OK) {{ /* {n}_error_message() */ }}
```

Build: `{_link(signature)}` (a cross compiler for another target).

Inputs (contiguous, row-major):
{inputs}

Outputs (written into the caller's buffers):
{outputs}

Workspace: {signature.workspace_bytes} bytes (`{up}_WORKSPACE_BYTES`, the static
memory plan, for {signature.num_threads} thread(s): `{up}_NUM_THREADS`), liveness lower
bound {signature.lower_bound_bytes} bytes. Calls that run at the same time need a
workspace each.

Sizes:

```
{sizes_text}
```
"""
