"""Multithreaded x86 exports (``lowerline.export(..., num_threads=2)``): the
library calls the OpenMP runtime the compiler uses (``libiomp5.so``, copied
beside it), runs from a C program built with the header, the library and
that runtime, matches torch, and makes no heap call after the first call
(the runtime's thread pool, allocated then, by the runtime alone); the
workspace holds the per-thread scratch slots the plan reserves for the
thread count."""

import os
import subprocess
import sys

import pytest
import torch
from export_support import foreign, run_exported, symbols

import lowerline
from lowerline.aot import toolchain

BIN = os.path.dirname(sys.executable)
THREADS = 2
# The OpenMP runtime's first call: its thread pool and bookkeeping. Measured
# at 77 calls and 50 KB for two threads on a 2-core machine (the runtime
# sizes some tables by the machine's cores); the bounds fail a runtime that
# allocates per tile or per element, not one that grows a little.
FIRST_CALL_HEAP_CALLS = 1000
FIRST_CALL_HEAP_BYTES = 4 << 20
# Objects the first call's heap calls may come from: the runtime, and libc /
# the dynamic loader acting for it (thread creation, thread-local storage).
RUNTIME_OBJECTS = {toolchain.OPENMP, "libc.so.6", "ld-linux-x86-64.so.2"}


def mlp() -> torch.nn.Module:
    return torch.nn.Sequential(
        torch.nn.Linear(61, 512), torch.nn.ReLU(), torch.nn.Linear(512, 129)
    ).eval()


def cnn() -> torch.nn.Module:
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(8, 8, 3, groups=8),
        torch.nn.ReLU(),
        torch.nn.Conv2d(8, 6, 1),
        torch.nn.Flatten(),
        torch.nn.Linear(6 * 5 * 4, 5),
    ).eval()


# Sizes whose tiles make parallel loops on two cores and more (the tile
# plan splits 512 columns, and the convolutions' channels and rows).
CASES = [
    ("mlp", mlp, (1, 61)),
    ("mlp", mlp, (9, 61)),
    ("cnn", cnn, (1, 3, 15, 13)),
    ("cnn", cnn, (3, 3, 15, 13)),
]


@pytest.mark.parametrize(("name", "build", "shape"), CASES, ids=["mlp1", "mlp9", "cnn1", "cnn3"])
def test_threaded_export_runs_from_c_and_matches_torch(name, build, shape, tmp_path):
    torch.manual_seed(0)
    model, x = build(), torch.randn(shape)
    out = tmp_path / "out"
    exported = lowerline.export(model, x, out_dir=str(out), name=name, num_threads=THREADS)
    assert exported.openmp == str(out / toolchain.OPENMP) and os.path.isfile(exported.openmp)
    outputs, printed = run_exported(exported, (x,), str(tmp_path))
    assert printed["status"] == printed["first"] == "0", printed
    torch.testing.assert_close(outputs[0], model(x).detach(), rtol=1e-4, atol=1e-5)
    # The steady state: no heap call at all after the first call.
    assert printed["heap_calls"] == "0", printed
    # The first call's are the runtime's (the library references no heap
    # function: below), and few.
    by_object = dict(part.split(":") for part in printed["first_heap_by"].split(",") if part)
    assert set(by_object) <= RUNTIME_OBJECTS, printed
    assert int(printed["first_heap_calls"]) <= FIRST_CALL_HEAP_CALLS, printed
    assert int(printed["first_heap_bytes"]) <= FIRST_CALL_HEAP_BYTES, printed
    defined, undefined = symbols(exported.library)
    assert defined == {f"{name}_run", f"{name}_error_message"}
    # The parallel loops call the runtime, and nothing else is foreign.
    extra = foreign(undefined)
    assert "__kmpc_fork_call" in extra and all(s.startswith(("__kmpc_", "omp_")) for s in extra), (
        extra
    )
    header = (out / f"{name}.h").read_text()
    assert f"#define {name.upper()}_NUM_THREADS {THREADS}\n" in header
    assert f"#define {name.upper()}_WORKSPACE_BYTES {exported.workspace_bytes}\n" in header
    assert "-liomp5" in header and "-liomp5" in (out / "README.md").read_text()


def test_threaded_workspace_is_the_arena_the_plan_allocates_for_its_threads(tmp_path):
    """NAME_WORKSPACE_BYTES is the arena lowerline.compile's library takes
    for the same thread count: the plan's per-thread scratch slots included,
    so it is at least the one-thread arena."""
    torch.manual_seed(0)
    model, x = cnn(), torch.randn(2, 3, 15, 13)
    exported = lowerline.export(
        model, x, out_dir=str(tmp_path / "out"), num_threads=THREADS, print_report=False
    )
    memory = {}
    for threads in (1, THREADS):
        compiled = lowerline.compile(model, x, num_threads=threads)
        compiled(x)
        memory[threads] = compiled.memory()
    assert exported.workspace_bytes == memory[THREADS].arena_bytes > 0
    assert memory[THREADS].allocations == 0  # every buffer in the arena
    assert exported.workspace_bytes >= memory[1].arena_bytes
    assert exported.lower_bound_bytes == memory[THREADS].lower_bound_bytes
    assert f"sized for {THREADS} threads" in exported.report()


def test_cli_refuses_threads_for_aarch64_naming_the_reason(tmp_path):
    source = tmp_path / "tiny.py"
    source.write_text(
        "import torch\n"
        "model = torch.nn.Linear(5, 3).eval()\n"
        "example_inputs = (torch.randn(1, 5),)\n"
    )
    command = [os.path.join(BIN, "lowerline"), "export", str(source), "-o", str(tmp_path / "o")]
    done = subprocess.run(
        [*command, "--target", "cpu:cortex-a72", "--num-threads", "2"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert "single-threaded" in done.stderr and "OpenMP runtime" in done.stderr
    assert not (tmp_path / "o").exists()


def test_missing_openmp_runtime_is_named_before_compiling(tmp_path, monkeypatch):
    monkeypatch.setattr(toolchain, "openmp_library", lambda: None)
    with pytest.raises(toolchain.ToolchainError, match="intel-openmp"):
        lowerline.export(mlp(), torch.randn(2, 61), out_dir=str(tmp_path / "o"), num_threads=2)
    assert not (tmp_path / "o").exists()


class Gather(torch.nn.Module):
    def forward(self, x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        return torch.gather(x, 1, index)


def test_threaded_export_failed_check_on_a_worker_is_a_status(tmp_path):
    """A bounds check that fails on an OpenMP worker: its compare-and-swap
    into the workspace's failure word reaches the caller's status."""
    x, index = torch.randn(301, 515), torch.randint(0, 515, (301, 257))  # parallel tiles
    exported = lowerline.export(
        Gather(), x, index, out_dir=str(tmp_path / "out"), name="gather", num_threads=THREADS
    )
    assert "__kmpc_fork_call" in symbols(exported.library)[1]  # rows on the runtime's threads
    outputs, printed = run_exported(exported, (x, index), str(tmp_path))
    assert printed["status"] == "0", printed
    torch.testing.assert_close(outputs[0], torch.gather(x, 1, index))
    for row in (0, 150, 300):  # first, middle and last rows: different threads
        bad = index.clone()
        bad[row, 256] = 515
        _, printed = run_exported(exported, (x, bad), str(tmp_path))
        assert printed["status"] == printed["first"] == "3", printed  # CHECK_FAILED
        assert "index must be smaller than dim size" in printed["message"]
