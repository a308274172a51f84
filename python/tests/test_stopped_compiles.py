"""A stopped compile stops everything it started (issue 21).

Each test replaces one tool of a compile step with a script that starts a
grandchild and waits forever, then stops the compile the way a user's would
be stopped: ``LOWERLINE_COMPILE_TIMEOUT`` during object generation (``llc``),
linking (``cc``) and PTX assembly (``ptxas``), SIGKILL of the compile worker,
and Ctrl-C (SIGINT) to the calling process. Within 2 s nothing the compile
started may still run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest
import torch

import lowerline
from lowerline.driver import objects
from lowerline.processes import run_in_group

# Records its own pid, its grandchild's and its parent's (the worker), then
# waits; answers `--version` at once (the cache key asks ptxas for it).
HANGING_TOOL = """#!/bin/sh
case "$1" in --version) echo "hanging tool 0.0"; exit 0;; esac
echo $$ >> "$LOWERLINE_TEST_PIDS"
sleep 600 &
echo $! >> "$LOWERLINE_TEST_PIDS"
echo $PPID > "$LOWERLINE_TEST_PIDS.worker"
wait
"""


def _alive(pid: int) -> bool:
    """Running (a zombie waiting to be reaped has stopped)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def _pids(path: str) -> list[int]:
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as handle:
        return [int(line) for line in handle if line.strip()]


def _all_gone(pids: list[int], within: float = 2.0) -> list[int]:
    """The pids still running after ``within`` seconds (none, hopefully)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        left = [pid for pid in pids if _alive(pid)]
        if not left:
            return []
        time.sleep(0.05)
    return [pid for pid in pids if _alive(pid)]


def _wait_for(path: str, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while not _pids(path):
        if time.monotonic() > deadline:
            pytest.fail(f"the hanging tool never started ({path})")
        time.sleep(0.05)


@pytest.fixture
def hanging(tmp_path, monkeypatch):
    """A folder with the hanging tool under the names ``name``; the pid file."""
    pids = str(tmp_path / "pids")
    monkeypatch.setenv("LOWERLINE_TEST_PIDS", pids)

    def install(folder_name: str, name: str) -> str:
        folder = tmp_path / folder_name
        folder.mkdir(parents=True, exist_ok=True)
        tool = folder / name
        tool.write_text(HANGING_TOOL)
        tool.chmod(0o755)
        return str(folder)

    return install, pids


def _linear():
    return torch.nn.Linear(5, 3).eval(), torch.randn(2, 5)


def _llvm_bin_with_hanging_llc(install) -> str:
    folder = install("llvm-bin", "llc")
    os.symlink(objects.llvm_tool("opt"), os.path.join(folder, "opt"))
    return folder


def test_run_in_group_kills_grandchildren_on_timeout(tmp_path):
    script = "sleep 600 & echo $! > " + str(tmp_path / "pid") + "; wait"
    with pytest.raises(subprocess.TimeoutExpired):
        run_in_group(["sh", "-c", script], timeout=1)
    assert _all_gone(_pids(str(tmp_path / "pid"))) == []


@pytest.mark.parametrize("step", ["object", "link", "ptx"])
def test_timeout_stops_the_tool_and_its_children(step, hanging, monkeypatch, tmp_path):
    install, pids = hanging
    target = "cpu"
    if step == "object":
        monkeypatch.setenv(objects.LLVM_BIN_VAR, _llvm_bin_with_hanging_llc(install))
    elif step == "link":
        monkeypatch.setenv("CC", os.path.join(install("cc-bin", "cc"), "cc"))
    else:
        monkeypatch.setenv("LOWERLINE_CUDA_PATH", os.path.dirname(install("cuda/bin", "ptxas")))
        target = "cuda:sm_80"
    monkeypatch.setenv("LOWERLINE_COMPILE_TIMEOUT", "25")
    model, x = _linear()
    with pytest.raises(lowerline.CompileError, match="did not finish within 25 s"):
        lowerline.compile(model, x, target=target, cache_dir=str(tmp_path / "cache"))
    started = _pids(pids) + _pids(pids + ".worker")
    assert len(started) == 3, "the hanging tool did not run"
    assert _all_gone(started) == []


def test_killed_worker_leaves_no_children(hanging, monkeypatch, tmp_path):
    install, pids = hanging
    monkeypatch.setenv(objects.LLVM_BIN_VAR, _llvm_bin_with_hanging_llc(install))
    model, x = _linear()
    errors: list[BaseException] = []

    def compile_it() -> None:
        try:
            lowerline.compile(model, x, cache_dir=str(tmp_path / "cache"))
        except BaseException as err:
            errors.append(err)

    caller = threading.Thread(target=compile_it)
    caller.start()
    _wait_for(pids + ".worker")
    os.kill(_pids(pids + ".worker")[0], signal.SIGKILL)
    caller.join(60)
    assert not caller.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], lowerline.CompileError)
    assert "SIGKILL" in str(errors[0])
    assert _all_gone(_pids(pids)) == []


CALLER = """
import sys, torch, lowerline
model = torch.nn.Linear(5, 3).eval()
lowerline.compile(model, torch.randn(2, 5), cache_dir=sys.argv[1])
"""


def test_ctrl_c_in_the_caller_stops_everything(hanging, tmp_path):
    install, pids = hanging
    env = {**os.environ, objects.LLVM_BIN_VAR: _llvm_bin_with_hanging_llc(install)}
    caller = subprocess.Popen(
        [sys.executable, "-c", CALLER, str(tmp_path / "cache")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for(pids + ".worker")
        caller.send_signal(signal.SIGINT)
        _, stderr = caller.communicate(timeout=120)
    finally:
        caller.kill()
    assert "KeyboardInterrupt" in stderr
    assert _all_gone(_pids(pids) + _pids(pids + ".worker")) == []
