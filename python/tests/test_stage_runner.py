"""The stage runner behind ``lowerline run`` and the compile worker: each stage
announced, timed and dumped, and a failure in any stage (a late one too)
reproduced from that stage's input by the printed ``lowerline-opt`` command."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

import pytest

from lowerline.cpu.stages import CpuOptions
from lowerline.driver import compile_worker, workers
from lowerline.gpu.ptx import CudaToolError, find_tool
from lowerline.gpu.stages import GpuOptions, cpu_emulation
from lowerline.pipeline.lowerer import Lowerer
from lowerline.pipeline.stage_runner import (
    DumpPolicy,
    Stage,
    StageError,
    StageRunner,
    StageStart,
)
from lowerline.tools import cli

BIN = os.path.dirname(sys.executable)

ADD = """
func.func @add(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  %unused = arith.constant 7 : i32
  %e = tensor.empty() : tensor<3xf32>
  %r = linalg.add ins(%a, %b : tensor<3xf32>, tensor<3xf32>) outs(%e : tensor<3xf32>) -> tensor<3xf32>
  return %r : tensor<3xf32>
}
"""
# tosa ops have no bufferization: one-shot-bufferize fails on them. The
# canonicalize stage before it drops the unused constant, so the failing
# stage's input differs from the source.
TOSA = """
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %unused = arith.constant 7 : i32
  %0 = tosa.abs %a : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""
CANONICALIZE = Stage("canonical", lambda _: "canonicalize")
CSE = Stage("cse", lambda _: "cse")
BUFFERIZE = Stage("buffers", lambda _: "one-shot-bufferize")

# An i1 atomic that every CPU stage carries along until the llvm stage's
# lowerline-widen-i1-memrefs rejects it (LLVM has no i1 atomics): a failure
# in the last stage, from upstream-parsable IR, that a subprocess replays.
I1_ATOMIC = """
func.func @main(%x: tensor<4xi1>) -> tensor<4xi1> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = memref.alloc() : memref<4xi1>
  %b = tensor.extract %x[%c0] : tensor<4xi1>
  %r = memref.atomic_rmw ori %b, %m[%c0] : (i1, memref<4xi1>) -> i1
  %y = tensor.insert %r into %x[%c1] : tensor<4xi1>
  return %y : tensor<4xi1>
}
"""
I1_ATOMIC_ERROR = (
    "'memref.atomic_rmw' on an i1 memref is not supported by lowerline-widen-i1-memrefs"
)

SQUARE_MATMUL = """
func.func @main(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %r = linalg.matmul ins(%a, %b : tensor<64x64xf32>, tensor<64x64xf32>)
                     outs(%f : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %r : tensor<64x64xf32>
}
"""


def _replay(command: str) -> subprocess.CompletedProcess:
    """Run a printed ``lowerline-opt ...`` command with this environment's tool."""
    argv = shlex.split(command)
    assert argv[0] == "lowerline-opt"
    tool = os.path.join(BIN, "lowerline-opt")
    return subprocess.run([tool, *argv[1:]], capture_output=True, text=True, check=False)


def _runner(dumps: DumpPolicy | None = None, **settings) -> tuple[StageRunner, list]:
    """A runner with a fresh lowerer, and the list its ``on_stage`` hook fills."""
    started: list[StageStart] = []
    runner = StageRunner(Lowerer(), dumps, on_stage=started.append, **settings)
    return runner, started


def test_each_stage_starts_from_the_previous_dump_and_is_timed_and_dumped(tmp_path):
    seen: list[str] = []
    runner, started = _runner(DumpPolicy(str(tmp_path)), after_stage=lambda s, m: seen.append(s))
    source = tmp_path / "add.mlir"
    source.write_text(ADD)
    module = runner.lowerer.parse(ADD, "add.mlir")
    result = runner.run(module, (CANONICALIZE, CSE), None, str(source))

    assert list(result.seconds) == ["canonical", "cse"]
    assert all(seconds >= 0 for seconds in result.seconds.values())
    assert result.dumps == {
        "canonical": str(tmp_path / "1-canonical.mlir"),
        "cse": str(tmp_path / "2-cse.mlir"),
    }
    assert result.last_dump == str(tmp_path / "2-cse.mlir")
    assert started == [
        StageStart("canonical", "builtin.module(canonicalize)", str(source)),
        StageStart("cse", "builtin.module(cse)", result.dumps["canonical"]),
    ]
    assert seen == ["canonical", "cse"]
    assert "arith.constant 7" not in (tmp_path / "1-canonical.mlir").read_text()


def test_without_dumps_stage_inputs_are_scratch_files_removed_after_success(tmp_path):
    runner, started = _runner(scratch_dir=str(tmp_path))
    module = runner.lowerer.parse(ADD, "add.mlir")
    result = runner.run(module, (CANONICALIZE, CSE), None)

    assert list(result.seconds) == ["canonical", "cse"] and result.dumps == {}
    assert result.last_dump is None
    inputs = [Path(start.input_path) for start in started]
    assert [p.parent for p in inputs] == [tmp_path, tmp_path]
    assert inputs[1].name.startswith("lowerline-cse-input-")
    assert list(tmp_path.iterdir()) == []


def test_a_failing_last_stage_names_the_previous_dump_and_replays(tmp_path):
    runner, started = _runner(DumpPolicy(str(tmp_path / "dumps")))
    source = tmp_path / "tosa.mlir"
    source.write_text(TOSA)
    module = runner.lowerer.parse(TOSA, "tosa.mlir")
    with pytest.raises(StageError) as info:
        runner.run(module, (CANONICALIZE, BUFFERIZE), None, str(source))
    error = info.value

    dump = str(tmp_path / "dumps" / "1-canonical.mlir")
    assert (error.stage, error.input_path) == ("buffers", dump)
    assert error.pipeline == "builtin.module(one-shot-bufferize)" == started[-1].pipeline
    assert error.reproducer == f"lowerline-opt {dump} --pass-pipeline='{error.pipeline}'"
    lines = str(error).splitlines()
    assert lines[:2] == [
        "pass pipeline failed in 'one-shot-bufferize' on 'builtin.module'",
        "tosa.mlir:4:8: error: op was not bufferized",
    ]
    assert lines[-1] == f"reproduce with: {error.reproducer}"
    assert not (tmp_path / "dumps" / "2-buffers.mlir").exists()
    replay = _replay(error.reproducer)
    assert replay.returncode == 1
    assert "error: op was not bufferized" in replay.stderr


def test_without_dumps_the_failing_stage_keeps_its_input_as_the_reproducer(tmp_path):
    runner = StageRunner(Lowerer(), scratch_dir=str(tmp_path))
    module = runner.lowerer.parse(TOSA, "tosa.mlir")
    with pytest.raises(StageError) as info:
        runner.run(module, (CANONICALIZE, BUFFERIZE), None)
    error = info.value

    # Only the failing stage's input is left, and it is that stage's input:
    # the canonical stage's output, without the unused constant.
    assert list(tmp_path.iterdir()) == [Path(error.input_path)]
    assert Path(error.input_path).name.startswith("lowerline-buffers-input-")
    kept = Path(error.input_path).read_text()
    assert "tosa.abs" in kept and "arith.constant 7" not in kept
    replay = _replay(error.reproducer)
    assert replay.returncode == 1
    assert "error: op was not bufferized" in replay.stderr


def test_a_stage_whose_pipeline_cannot_be_planned_is_a_stage_error(tmp_path):
    runner = StageRunner(Lowerer(), scratch_dir=str(tmp_path))
    module = runner.lowerer.parse(ADD, "add.mlir")
    with pytest.raises(StageError, match="unknown pass or pipeline 'nope'") as info:
        runner.run(module, (CANONICALIZE, Stage("broken", lambda _: "nope")), None)
    assert info.value.stage == "broken"


def _reproducer_line(stderr: str) -> str:
    (line,) = [line for line in stderr.splitlines() if line.startswith("reproduce with: ")]
    return line.removeprefix("reproduce with: ")


def test_lowerline_run_names_the_failing_llvm_stages_input(tmp_path, monkeypatch, capsys):
    source = tmp_path / "i1_atomic.mlir"
    source.write_text(I1_ATOMIC)
    dumps = tmp_path / "dumps"
    assert cli.main(["run", str(source), "--dump-dir", str(dumps)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(
        "lowerline: error: pass pipeline failed in 'lowerline-widen-i1-memrefs' on 'builtin.module'"
    )
    assert f"{source}:7:8: error: {I1_ATOMIC_ERROR}" in err
    command = _reproducer_line(err)
    loops = str(dumps / "4-loops.mlir")
    assert shlex.split(command)[:2] == ["lowerline-opt", loops]
    assert "lowerline-widen-i1-memrefs" in command
    replay = _replay(command)
    assert replay.returncode == 1 and I1_ATOMIC_ERROR in replay.stderr

    # Without --dump-dir the reproducer is a file holding the same input,
    # not the source file (which every stage used to name).
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    assert cli.main(["run", str(source)]) == 1
    command = _reproducer_line(capsys.readouterr().err)
    kept = shlex.split(command)[1]
    assert list(scratch.iterdir()) == [Path(kept)]
    assert Path(kept).read_text() == Path(loops).read_text()
    replay = _replay(command)
    assert replay.returncode == 1 and I1_ATOMIC_ERROR in replay.stderr


def _job(folder: Path, source: str, kind: str, options, inputs: int) -> str:
    """A compile job as the import worker and the API leave it (inputs only)."""
    folder.mkdir()
    (folder / "linalg.mlir").write_text(source)
    request = {"args": [{"kind": "input"}] * inputs, "kind": kind, "options": asdict(options)}
    (folder / "job.json").write_text(json.dumps(request))
    return str(folder)


def test_compile_worker_names_the_failing_llvm_stages_input(tmp_path):
    job = _job(tmp_path / "job", I1_ATOMIC, "cpu", CpuOptions(), inputs=1)
    with pytest.raises(workers.CompileError) as info:
        workers.run_compile_worker(job, str(tmp_path / "failures"))
    error = info.value

    assert (error.stage, error.pass_name) == ("llvm", "lowerline-widen-i1-memrefs")
    assert any(I1_ATOMIC_ERROR in d for d in error.diagnostics)
    loops = Path(job, "ir", "4-loops.mlir")
    assert Path(error.reproducer).parent == tmp_path / "failures"
    assert Path(error.reproducer).read_text() == loops.read_text()
    assert shlex.split(error.command)[:2] == ["lowerline-opt", error.reproducer]
    replay = _replay(error.command)
    assert replay.returncode == 1 and I1_ATOMIC_ERROR in replay.stderr


def _have_ptxas() -> bool:
    try:
        find_tool("ptxas")
    except CudaToolError:
        return False
    return True


def _emulation_on_workgroup_memory(options: GpuOptions) -> str:
    """The CPU emulation without its first pass, which moves shared memory to
    the host: the CPU lowering then fails on the workgroup address space."""
    first, rest = cpu_emulation(options).split(",", 1)
    assert first == "lowerline-gpu-shared-to-host-memory"
    return rest


@pytest.mark.skipif(not _have_ptxas(), reason="ptxas not found (the GPU stages run it)")
def test_gpu_cpu_emulation_failure_names_the_bufferized_dump(tmp_path, monkeypatch):
    # The worker's main in this process, so that the emulation stage can be broken.
    monkeypatch.setattr(compile_worker, "cpu_emulation", _emulation_on_workgroup_memory)
    job = _job(tmp_path / "job", SQUARE_MATMUL, "gpu", GpuOptions(), inputs=2)
    monkeypatch.setattr(sys, "argv", ["compile_worker", job])
    assert compile_worker.main() == 1

    error = json.loads(Path(job, "error.json").read_text())
    bufferized = os.path.join(job, "ir", "3-bufferized.mlir")
    assert (error["stage"], error["input"]) == ("cpu-emulation", bufferized)
    assert error["pipeline"] == f"builtin.module({_emulation_on_workgroup_memory(GpuOptions())})"
    assert any("'!llvm.ptr<3>' != '!llvm.ptr'" in d for d in error["diagnostics"])
    assert Path(job, "progress.log").read_text().count("stage cpu-emulation\n") == 1
    # The GPU library was built before the emulation stage started.
    assert Path(job, "lib.so").exists() and Path(job, "ir", "5-llvm.mlir").exists()
    command = (
        f"lowerline-opt {shlex.quote(bufferized)} --pass-pipeline={shlex.quote(error['pipeline'])}"
    )
    replay = _replay(command)
    assert replay.returncode == 1 and "'!llvm.ptr<3>' != '!llvm.ptr'" in replay.stderr


@pytest.mark.skipif(not _have_ptxas(), reason="ptxas not found (the GPU stages run it)")
def test_gpu_compile_worker_dumps_every_stage_and_the_cpu_emulation(tmp_path):
    job = _job(tmp_path / "job", SQUARE_MATMUL, "gpu", GpuOptions(), inputs=2)
    result = workers.run_compile_worker(job, str(tmp_path / "failures"))
    assert list(result["stage_seconds"]) == [
        *("linalg", "graph", "tiled", "bufferized", "loops", "llvm"),
        *("ptxas", "object", "cpu-emulation", "cpu-object"),
    ]
    dumps = sorted(os.listdir(os.path.join(job, "ir")))
    assert dumps == [
        *("0-linalg.mlir", "1-graph.mlir", "2-tiled.mlir", "3-bufferized.mlir"),
        *("4-loops.mlir", "5-llvm.mlir", "6-cpu-emulation.mlir"),
    ]
    stages = [
        line.split(" ", 1)[1]
        for line in Path(job, "progress.log").read_text().splitlines()
        if line.startswith("stage ")
    ]
    assert stages == [
        *("linalg", "graph", "tiled", "bufferized", "loops", "llvm"),
        *("object", "cpu-emulation", "object"),
    ]
