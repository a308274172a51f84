"""``lowerline.export`` on this machine: the header and static library run
from a C program built only with them, match torch, make no heap call while
running (the program wraps malloc and friends: export_support), report the
workspace the plan allocates, turn a failed check into a status code and
refuse what they cannot do without malloc."""

import os
import subprocess
import sys

import pytest
import torch
from export_support import foreign, run_exported, symbols
from mlir import ir

import lowerline
from lowerline.aot import export as aot_export
from lowerline.aot.signature import ExportSignatureError
from lowerline.aot.toolchain import ToolchainError
from lowerline.driver import standalone
from lowerline.pipeline.lowerer import Lowerer

BIN = os.path.dirname(sys.executable)


def mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(13, 29), torch.nn.ReLU(), torch.nn.Linear(29, 7)
    ).eval()


@pytest.mark.parametrize("batch", [1, 6])
def test_mlp_runs_from_c_without_malloc_and_matches_torch(batch, tmp_path):
    model, x = mlp(), torch.randn(batch, 13)
    exported = lowerline.export(model, x, out_dir=str(tmp_path / "out"), name="mlp")
    for name in ("mlp.h", "libmlp.a", "README.md"):
        assert (tmp_path / "out" / name).is_file()
    outputs, printed = run_exported(exported, (x,), str(tmp_path))
    assert printed["status"] == printed["first"] == "0"
    assert printed["first_heap_calls"] == printed["heap_calls"] == "0"
    torch.testing.assert_close(outputs[0], model(x).detach(), rtol=1e-4, atol=1e-5)
    # Only the API is global: two exported models link into one program.
    defined, undefined = symbols(exported.library)
    assert defined == {"mlp_run", "mlp_error_message"}
    assert not foreign(undefined)
    header = (tmp_path / "out" / "mlp.h").read_text()
    assert f"#define MLP_WORKSPACE_BYTES {exported.workspace_bytes}\n" in header
    assert f"float32[{batch}][13]" in header


def test_workspace_is_the_arena_the_plan_allocates(tmp_path):
    """NAME_WORKSPACE_BYTES is the arena lowerline.compile's library takes
    for the same model and options (one thread), beside its lower bound."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 6, 3), torch.nn.ReLU(), torch.nn.Conv2d(6, 5, 3, groups=1)
    ).eval()
    x = torch.randn(2, 3, 11, 9)
    exported = lowerline.export(model, x, out_dir=str(tmp_path / "out"), name="convs")
    compiled = lowerline.compile(model, x, num_threads=1)
    compiled(x)
    memory = compiled.memory()
    assert exported.workspace_bytes == memory.arena_bytes > 0
    assert exported.lower_bound_bytes == memory.lower_bound_bytes
    assert exported.lower_bound_bytes <= exported.workspace_bytes
    assert memory.allocations == 0  # one thread: every buffer in the arena
    assert "liveness lower bound" in exported.report()
    assert exported.sizes.text > 0 and exported.sizes.weights >= 6 * 3 * 9 * 4


class Embed(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.table = torch.nn.Embedding(11, 5)

    def forward(self, index):
        return self.table(index)


def test_failed_check_is_a_status_not_an_abort(tmp_path):
    torch.manual_seed(0)
    model, index = Embed().eval(), torch.randint(0, 11, (3, 4))
    exported = lowerline.export(model, index, out_dir=str(tmp_path / "out"), name="embed")
    outputs, printed = run_exported(exported, (index,), str(tmp_path))
    assert printed["status"] == "0"
    torch.testing.assert_close(outputs[0], model(index).detach())
    bad = index.clone()
    bad[2, 3] = 11
    _, printed = run_exported(exported, (bad,), str(tmp_path))
    assert printed["status"] == "3"  # EMBED_ERROR_CHECK_FAILED
    assert "index must be smaller than dim size" in printed["message"]


_CONCURRENT_DRIVER = r"""
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "embed.h"

typedef struct { int64_t index[12]; float out[60]; int expected, wrong; } job;

static void *calls(void *argument) {
  job *j = argument;
  void *workspace = aligned_alloc(EMBED_WORKSPACE_ALIGNMENT,
      (EMBED_WORKSPACE_BYTES + EMBED_WORKSPACE_ALIGNMENT) & ~(EMBED_WORKSPACE_ALIGNMENT - 1));
  embed_inputs in = {j->index};
  embed_outputs out = {j->out};
  for (int i = 0; i < 200000; i++)
    j->wrong += embed_run(&in, &out, workspace) != j->expected;
  free(workspace);
  return NULL;
}

int main(void) {
  job valid = {{0}, {0}, EMBED_OK, 0}, failing = {{0}, {0}, EMBED_ERROR_CHECK_FAILED, 0};
  for (int i = 0; i < 12; i++)
    valid.index[i] = failing.index[i] = i % 11;
  failing.index[1] = 11; /* early: the failure is set long before the call ends */
  pthread_t threads[2];
  pthread_create(&threads[0], NULL, calls, &valid);
  pthread_create(&threads[1], NULL, calls, &failing);
  pthread_join(threads[0], NULL);
  pthread_join(threads[1], NULL);
  printf("%d %d\n", valid.wrong, failing.wrong);
  return 0;
}
"""


def test_concurrent_calls_with_own_workspaces_get_their_own_status(tmp_path):
    """Two threads call one exported model, each with its own workspace: the
    failure word is the workspace's, so the valid calls always return OK
    and the failing ones always CHECK_FAILED."""
    model, index = Embed().eval(), torch.zeros(3, 4, dtype=torch.int64)
    exported = lowerline.export(model, index, out_dir=str(tmp_path / "out"), name="embed")
    assert exported.signature.inputs[0].name == "index"  # the driver's field
    source = tmp_path / "concurrent.c"
    source.write_text(_CONCURRENT_DRIVER)
    program = str(tmp_path / "concurrent")
    compiler = os.environ.get("CC", "cc")
    command = [compiler, "-std=c11", "-O1", "-pthread", str(source), f"-I{exported.out_dir}"]
    subprocess.run([*command, "-o", program, exported.library, "-lm"], check=True)
    done = subprocess.run([program], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["0", "0"], done.stdout  # wrong statuses: valid, failing


class AddsInPlace(torch.nn.Module):
    def forward(self, x):
        x.add_(1)
        return x * 2


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"name": "2fast"}, ValueError, "C identifier"),
        ({"name": "int"}, ValueError, "keyword"),
        ({"target": "cuda:sm_80"}, ValueError, "CPUs"),
        (
            {"num_threads": 2, "target": "cpu:cortex-a72"},
            ValueError,
            "no.*OpenMP runtime|none for aarch64",
        ),
        ({"num_threads": 2, "parallel": "async"}, ValueError, "parallel='openmp'"),
        ({"num_threads": 0}, ValueError, "positive int"),
    ],
)
def test_bad_arguments_are_refused_before_compiling(kwargs, error, match, tmp_path):
    with pytest.raises(error, match=match):
        lowerline.export(mlp(), torch.randn(2, 13), out_dir=str(tmp_path), **kwargs)
    assert not (tmp_path / "model.h").exists()


def test_state_written_by_forward_is_refused(tmp_path):
    with pytest.raises(ExportSignatureError, match="forward writes into x"):
        lowerline.export(AddsInPlace(), torch.randn(3), out_dir=str(tmp_path))


def test_code_that_would_malloc_is_refused_naming_the_source_line(tmp_path):
    # Without the arena every intermediate buffer is a heap allocation.
    with pytest.raises(aot_export.ExportRefused, match="heap allocation") as info:
        lowerline.export(mlp(), torch.randn(2, 13), out_dir=str(tmp_path / "o"), arena=False)
    assert "test_export.py" in str(info.value) or "linear.py" in str(info.value)
    assert not (tmp_path / "o" / "libmodel.a").exists()


def test_missing_cross_compiler_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv(aot_export.toolchain.CC_VAR, "no-such-cc")
    with pytest.raises(ToolchainError, match="no-such-cc"):
        lowerline.export(mlp(), torch.randn(2, 13), out_dir=str(tmp_path), target="cpu:cortex-a72")


STANDALONE_CASES = """
llvm.func @_mlir_memref_to_llvm_alloc(i64) -> !llvm.ptr
llvm.func @f(%n: i64) {
  %c = llvm.mlir.constant(16 : i64) : i64
  %big = llvm.mlir.constant(8192 : i64) : i64
  %small = llvm.alloca %c x f32 : (i64) -> !llvm.ptr
  %large = llvm.alloca %big x f32 : (i64) -> !llvm.ptr
  %dynamic = llvm.alloca %n x f32 : (i64) -> !llvm.ptr
  %heap = llvm.call @_mlir_memref_to_llvm_alloc(%c) : (i64) -> !llvm.ptr
  llvm.return
}
"""


def test_standalone_check_names_heap_and_growing_stack_allocations():
    lowerer = Lowerer()
    module = lowerer.parse(STANDALONE_CASES, "cases.mlir")
    with lowerer.context:
        found = standalone.problems(module)
    assert len(found) == 3, found  # the 64-byte alloca is fine
    assert "32768 bytes" in found[0]
    assert "run-time size" in found[1]
    assert "_mlir_memref_to_llvm_alloc" in found[2]
    with lowerer.context:
        clean = lowerer.parse("llvm.func @g() {\n  llvm.return\n}", "clean.mlir")
        assert standalone.problems(clean) == []
    assert isinstance(module, ir.Module)


def test_cli_exports_a_model_file(tmp_path):
    source = tmp_path / "tiny.py"
    source.write_text(
        "import torch\n"
        "model = torch.nn.Sequential(torch.nn.Linear(5, 3), torch.nn.Tanh()).eval()\n"
        "example_inputs = (torch.randn(1, 5),)\n"
    )
    out = tmp_path / "out"
    done = subprocess.run(
        [os.path.join(BIN, "lowerline"), "export", str(source), "-o", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert (out / "tiny.h").is_file() and (out / "libtiny.a").is_file()
    assert "workspace:" in done.stdout and "text" in done.stdout
    bad = subprocess.run(
        [os.path.join(BIN, "lowerline"), "export", str(source), "--target", "cpu:nope"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 1 and "unknown target 'cpu:nope'" in bad.stderr


TWO_MODELS_C = """
#include <stdio.h>
#include "first.h"
#include "second.h"
static unsigned char ws1[FIRST_WORKSPACE_BYTES + 1] __attribute__((aligned(64)));
static unsigned char ws2[SECOND_WORKSPACE_BYTES + 1] __attribute__((aligned(64)));
int main(void) {
  float x[FIRST_INPUT_ELEMENTS], y[FIRST_OUTPUT0_ELEMENTS], z[SECOND_OUTPUT0_ELEMENTS];
  for (int i = 0; i < FIRST_INPUT_ELEMENTS; ++i)
    x[i] = (float)i / 7.0f - 1.0f;
  first_inputs a = {x};
  first_outputs b = {y};
  second_inputs c = {y};
  second_outputs d = {z};
  if (first_run(&a, &b, ws1) || second_run(&c, &d, ws2))
    return 1;
  for (int i = 0; i < SECOND_OUTPUT0_ELEMENTS; ++i)
    printf("%.9g\\n", z[i]);
  return 0;
}
"""


def test_two_exported_models_link_into_one_program(tmp_path):
    """Each library keeps its entry point and support code to itself."""
    torch.manual_seed(0)
    first = torch.nn.Sequential(torch.nn.Linear(6, 9), torch.nn.GELU()).eval()
    second = torch.nn.Sequential(torch.nn.Linear(9, 4), torch.nn.Sigmoid()).eval()
    x = torch.arange(18, dtype=torch.float32).reshape(3, 6) / 7 - 1
    libraries = []
    for name, model, example in (("first", first, x), ("second", second, first(x))):
        exported = lowerline.export(
            model, example.detach(), out_dir=str(tmp_path / name), name=name, print_report=False
        )
        libraries += [f"-I{exported.out_dir}", exported.library]
    source = tmp_path / "main.c"
    source.write_text(TWO_MODELS_C)
    program = str(tmp_path / "both")
    compiler = os.environ.get("CC", "cc")
    subprocess.run([compiler, str(source), *libraries, "-lm", "-o", program], check=True)
    done = subprocess.run([program], capture_output=True, text=True, check=True)
    actual = torch.tensor([float(v) for v in done.stdout.split()]).reshape(3, 4)
    torch.testing.assert_close(actual, second(first(x)).detach(), rtol=1e-4, atol=1e-5)
