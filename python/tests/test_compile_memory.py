"""The compile memory bound (lowerline.driver.memory): a worker going past it
is stopped and reported as a CompileError naming the stage and pass that was
running, with the reproducer of that stage; the caller survives.

The blow-up is the compile worker's test hook ``$LOWERLINE_TEST_HOG_MEMORY``
(a pass that takes memory 16 MiB at a time), under a bound of 700
MiB: these tests never use more than that.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import asdict
from pathlib import Path

import pytest
import torch

import lowerline
from lowerline.cpu.stages import CpuOptions
from lowerline.driver import memory, workers
from lowerline.driver.compile_worker import HOG_ENV

ADD = """
func.func @main(%a: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<16xf32> {
  %e = tensor.empty() : tensor<16xf32>
  %r = linalg.add ins(%a, %b : tensor<16xf32>, tensor<16xf32>)
                  outs(%e : tensor<16xf32>) -> tensor<16xf32>
  return %r : tensor<16xf32>
}
"""
# More than a compile worker needs for ADD (~200 MiB resident here), less
# than the hog takes on top of it.
WORKER_BOUND = 700 << 20  # the worker alone reached 466 MiB in the object stage
HOG = "1G"


def _job(folder: Path) -> str:
    """A compile job of ADD as the import worker and the API leave it."""
    folder.mkdir()
    (folder / "linalg.mlir").write_text(ADD)
    request = {"args": [{"kind": "input"}] * 2, "kind": "cpu", "options": asdict(CpuOptions())}
    (folder / "job.json").write_text(json.dumps(request))
    return str(folder)


@pytest.mark.parametrize(
    "size, expected",
    [
        ("1048576", 1 << 20),
        ("4G", 4 << 30),
        ("512m", 512 << 20),
        ("1.5GiB", 3 << 29),
        (" 64 MB ", 64 << 20),
        ("2K", 2048),
    ],
)
def test_sizes_parse_with_binary_suffixes(size, expected):
    assert memory.parse_size(size, "x") == expected


@pytest.mark.parametrize("size", ["", "lots", "4X", "-1G", "0", "1G2"])
def test_bad_sizes_name_where_they_came_from(size, monkeypatch):
    monkeypatch.setenv(memory.MEMORY_ENV, size or " ")
    with pytest.raises(ValueError, match=memory.MEMORY_ENV):
        memory.compile_memory()


def test_the_bound_is_the_option_then_the_environment_then_half_the_memory(monkeypatch):
    monkeypatch.delenv(memory.MEMORY_ENV, raising=False)
    half = memory.compile_memory()
    assert half == int(memory.available_memory() * memory.DEFAULT_FRACTION) > 0
    monkeypatch.setenv(memory.MEMORY_ENV, "3G")
    assert memory.compile_memory() == 3 << 30
    assert memory.compile_memory("300M") == 300 << 20
    assert memory.compile_memory(12345) == 12345
    for bad in (0, -5):
        with pytest.raises(ValueError, match="compile_memory"):
            memory.compile_memory(bad)
    for wrong in (1.5, True, b"4G"):
        with pytest.raises(TypeError, match="compile_memory"):
            memory.compile_memory(wrong)  # type: ignore[arg-type]


def test_a_pass_past_the_bound_is_a_compile_error_naming_stage_pass_and_reproducer(
    tmp_path, monkeypatch
):
    monkeypatch.setenv(HOG_ENV, f"tiled:{HOG}")
    job = _job(tmp_path / "job")
    with pytest.raises(workers.CompileError) as info:
        workers.run_compile_worker(job, str(tmp_path / "failures"), WORKER_BOUND)
    error = info.value

    assert error.stage == "tiled" and error.pass_name  # the stage's first pass
    assert error.pass_name in Path(job, "progress.log").read_text().splitlines()[-1]
    assert "went past the compile memory limit" in str(error)
    assert f"limit {WORKER_BOUND >> 20} MiB" in str(error) and memory.MEMORY_ENV in str(error)
    # The reproducer is the tiled stage's input: the graph stage's dump.
    graph = Path(job, "ir", "1-graph.mlir")
    assert Path(error.reproducer).parent == tmp_path / "failures"
    assert Path(error.reproducer).read_text() == graph.read_text()
    assert shlex.split(error.command)[:2] == ["lowerline-opt", error.reproducer]
    assert f"reproducer: {error.reproducer}" in str(error)


def test_the_same_job_compiles_within_a_bound_it_fits(tmp_path, monkeypatch):
    # The hog in a stage that does not exist: the worker's own needs fit the bound.
    monkeypatch.setenv(HOG_ENV, f"no-such-stage:{HOG}")
    job = _job(tmp_path / "job")
    result = workers.run_compile_worker(job, str(tmp_path / "failures"), WORKER_BOUND)
    assert Path(job, "lib.so").exists() and "llvm" in result["stage_seconds"]


def test_the_hog_alone_would_take_its_memory(tmp_path, monkeypatch):
    # What makes the tests above able to fail: with a bound above the hog,
    # the hogging compile runs to the end.
    monkeypatch.setenv(HOG_ENV, "tiled:64M")
    job = _job(tmp_path / "job")
    workers.run_compile_worker(job, str(tmp_path / "failures"), 4 << 30)
    assert Path(job, "lib.so").exists()


def test_the_import_worker_is_bounded_and_the_caller_survives(tmp_path, monkeypatch):
    # torch and torch-mlir alone are more than 64 MiB resident.
    model = torch.nn.Linear(5, 3).eval()
    x = torch.randn(2, 5)
    with pytest.raises(lowerline.CompileError) as info:
        lowerline.compile(model, x, cache=False, compile_memory="64M")
    assert info.value.stage == "import"
    assert "import worker went past the compile memory limit" in str(info.value)
    assert "limit 64 MiB" in str(info.value)

    monkeypatch.setenv(memory.MEMORY_ENV, "64M")
    with pytest.raises(lowerline.CompileError, match="went past the compile memory limit"):
        lowerline.compile(model, x, cache=False)
    # The option wins over the environment, and a new import worker serves it.
    compiled = lowerline.compile(model, x, cache=False, compile_memory="8G")
    torch.testing.assert_close(compiled(x), model(x).detach())


def test_compile_rejects_a_bad_bound_before_any_work():
    model = torch.nn.Linear(5, 3).eval()
    before = dict(workers.launches)
    with pytest.raises(ValueError, match="compile_memory takes a size"):
        lowerline.compile(model, torch.randn(2, 5), compile_memory="plenty")
    assert dict(workers.launches) == before
