"""What a failed or killed compile leaves on disk is bounded.

* A failing stage's input larger than the reproducer limit
  (``$LOWERLINE_REPRODUCER_MAX_BYTES``; an unrolled whole-tensor vector once
  made a 700 MB reproducer) is not copied: the reproducer is the latest
  earlier stage's input that fits, with a command that replays every stage
  from there; with none, there is no reproducer and the error says why.
* The build folder of a process killed while it compiled (2.5 GB of stage IR
  once) is removed by the next compile in the same cache: its pid is gone,
  or belongs to a process that started after the folder was last written.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from test_compile_memory import HOG, WORKER_BOUND, _job

from lowerline.driver import workers
from lowerline.driver.cache import Cache
from lowerline.driver.compile_worker import HOG_ENV


def test_an_input_over_the_limit_is_replayed_from_an_earlier_stage(tmp_path, monkeypatch):
    monkeypatch.setenv(HOG_ENV, f"llvm:{HOG}")
    monkeypatch.setenv(workers.REPRODUCER_LIMIT_ENV, "1")
    job = _job(tmp_path / "job")
    with pytest.raises(workers.CompileError) as info:
        workers.run_compile_worker(job, str(tmp_path / "failures"), WORKER_BOUND)
    error = info.value
    assert error.stage == "llvm"
    assert error.reproducer is None and error.command is None
    assert "no reproducer: the 'llvm' stage's input is" in str(error)
    assert workers.REPRODUCER_LIMIT_ENV in str(error)
    assert not (tmp_path / "failures").exists() or not os.listdir(tmp_path / "failures")

    # The same failure's record, with a limit that the llvm stage's input
    # is over and the loops stage's input fits: replayed from the loops stage.
    current = workers._read_json(os.path.join(job, "current-stage.json"))
    loops = next(s for s in current["earlier"] if s["stage"] == "loops")
    limit = os.path.getsize(loops["input"])
    assert os.path.getsize(current["input"]) > limit
    step, note = workers._reproducer_step(current, limit)
    assert step is not None and step["input"] == loops["input"]
    assert "over the reproducer limit" in note and "'loops' stage's input" in note
    opt = shutil.which("lowerline-opt", path=os.path.dirname(sys.executable))
    assert opt is not None
    replay = subprocess.run(
        [opt, step["input"], f"--pass-pipeline={step['pipeline']}"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert replay.returncode == 0, replay.stderr[-2000:]
    # Both stages ran: the loops stage's input has no LLVM dialect, the replay ends in it.
    assert "llvm.func @main" in replay.stdout
    assert "llvm.func" not in Path(loops["input"]).read_text()


def test_the_input_itself_is_kept_within_the_limit(tmp_path):
    stage_input = tmp_path / "4-loops.mlir"
    stage_input.write_text("module {}\n")
    current = {"stage": "llvm", "input": str(stage_input), "pipeline": "builtin.module(cse)"}
    assert workers._reproducer_step(current, 1 << 20) == (current, "")


def test_a_step_that_is_not_a_module_pipeline_stops_the_replay(tmp_path):
    small, large = tmp_path / "small.mlir", tmp_path / "large.mlir"
    small.write_text("module {}\n")
    large.write_text("module {}\n" + " " * 4096)
    earlier = [{"stage": "llvm", "input": str(small), "pipeline": "builtin.module(cse)"}]
    # Object emission (no pipeline) after the llvm stage cannot be replayed
    # with lowerline-opt from the llvm stage's input.
    current = {"stage": "object", "input": str(large), "pipeline": None, "earlier": earlier}
    step, why = workers._reproducer_step(current, 1024)
    assert step is None and "no earlier stage's input fits" in why
    # An empty stage pipeline joins nothing to the others.
    earlier = [
        {"stage": "graph", "input": str(small), "pipeline": "builtin.module(canonicalize)"},
        {"stage": "tiled", "input": str(large), "pipeline": "builtin.module()"},
    ]
    current = {"stage": "loops", "input": str(large), "pipeline": "builtin.module(cse)"}
    step, _ = workers._reproducer_step({**current, "earlier": earlier}, 1024)
    assert step is not None and step["pipeline"] == "builtin.module(canonicalize,cse)"


_HOLD_A_WORKSPACE = """
import sys, time
from lowerline.driver.cache import Cache
folder = Cache.at(sys.argv[1]).new_workspace()
with open(folder + "/stage.mlir", "w") as handle:
    handle.write("x" * (1 << 20))
print(folder, flush=True)
time.sleep(600)
"""


def test_the_folder_of_a_killed_compile_is_removed_by_the_next(tmp_path):
    root = str(tmp_path / "cache")
    child = subprocess.Popen(
        [sys.executable, "-c", _HOLD_A_WORKSPACE, root], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        held = child.stdout.readline().strip()
        assert os.path.isdir(held)
        # Alive: a compile beside it leaves its folder alone.
        beside = Cache.at(root).new_workspace()
        assert os.path.isdir(held)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert os.path.isdir(held)  # nothing removes it when the process dies
    later = Cache.at(root).new_workspace()
    assert not os.path.exists(held)
    assert os.path.isdir(beside) and os.path.isdir(later)  # this live process's own


def test_a_folder_named_for_a_reused_pid_is_a_leftover(tmp_path):
    root = tmp_path / "cache"
    tmp = root / "tmp"
    tmp.mkdir(parents=True)
    # This process's pid, in a folder last written before it started: the
    # pid was another process's when the folder was made.
    stale = tmp / f"build-{os.getpid()}-old"
    stale.mkdir()
    os.utime(stale, (1_000_000, 1_000_000))
    fresh = tmp / f"build-{os.getpid()}-new"
    fresh.mkdir()
    unrelated = tmp / "notes"  # not lowerline's: never removed
    unrelated.mkdir()
    made = Cache.at(str(root)).new_workspace()
    assert not stale.exists()
    assert fresh.is_dir() and unrelated.is_dir() and os.path.isdir(made)
