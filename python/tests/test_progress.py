"""The live progress line of ``lowerline compile``, ``explore`` and ``export``: shown on
a terminal (a pty here), quiet on a pipe, a file or with ``--quiet``."""

from __future__ import annotations

import io
import os
import pty
import re
import select
import subprocess
import sys
import time

import pytest

from lowerline.driver import progress

TINY_MODEL = """\
import torch

model = torch.nn.Sequential(torch.nn.Linear(5, 3), torch.nn.Tanh()).eval()
example_inputs = (torch.randn(1, 5),)
"""


def _read_all(fd: int, seconds: float = 0.5) -> bytes:
    out = b""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.05)
        if ready:
            try:
                out += os.read(fd, 65536)
            except OSError:  # the other side closed
                break
    return out


def _worker_log(path, *lines: str) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        handle.write("".join(line + "\n" for line in lines))


def test_a_terminal_sees_the_stage_and_pass_then_a_clean_line(tmp_path):
    master, slave = pty.openpty()
    log = tmp_path / "progress.log"
    with open(slave, "w", encoding="utf-8") as terminal, progress.shown(terminal) as shown:
        assert shown
        with progress.following("compile", str(log)):
            _worker_log(log, "stage tiled", "pass func.func(lowerline-vectorize)")
            time.sleep(4 * progress.INTERVAL)
            first = _read_all(master, 0.2).decode()
            _worker_log(log, "stage bufferized", "pass one-shot-bufferize")
            time.sleep(4 * progress.INTERVAL)
        rest = _read_all(master, 0.3).decode()
    os.close(master)
    assert "\r\x1b[K" in first
    assert "compile  tiled  func.func(lowerline-vectorize)" in first
    assert "bufferized  one-shot-bufferize" in rest
    # The line is erased when the step ends: the next output starts clean.
    assert rest.endswith("\r\x1b[K")


def test_quiet_on_a_pipe_a_file_and_with_quiet(tmp_path):
    log = tmp_path / "progress.log"
    _worker_log(log, "stage graph", "pass cse")
    master, slave = pty.openpty()
    text = io.StringIO()
    with open(slave, "w", encoding="utf-8") as terminal:
        for stream, quiet in ((text, False), (terminal, True)):
            with progress.shown(stream, quiet=quiet) as shown:
                assert not shown
                with progress.following("compile", str(log)):
                    time.sleep(3 * progress.INTERVAL)
    assert text.getvalue() == ""
    assert _read_all(master, 0.2) == b""
    os.close(master)
    # Outside any `shown` block, nothing either.
    with progress.following("compile", str(log)):
        pass


def _lowerline(args: list[str], tmp_path, **streams) -> subprocess.Popen:
    env = {**os.environ, "LOWERLINE_CACHE_DIR": str(tmp_path / "cache")}
    command = [sys.executable, "-m", "lowerline.tools.cli", *args]
    return subprocess.Popen(command, env=env, cwd=tmp_path, **streams)


def _on_a_terminal(args: list[str], tmp_path) -> tuple[int, str]:
    """Run ``lowerline ARGS`` with a pty as stdout and stderr: its exit code
    and everything it wrote."""
    master, slave = pty.openpty()
    process = _lowerline(args, tmp_path, stdout=slave, stderr=slave)
    os.close(slave)
    out = b""
    while process.poll() is None:
        out += _read_all(master, 0.5)
    out += _read_all(master, 0.5)
    os.close(master)
    return process.returncode, out.decode(errors="replace")


def test_compile_on_a_terminal_shows_stages_and_passes(tmp_path):
    model = tmp_path / "tiny.py"
    model.write_text(TINY_MODEL)
    returncode, text = _on_a_terminal(["compile", str(model), "--runs", "1"], tmp_path)
    assert returncode == 0, text
    # The import (torch-mlir) takes seconds; of the compile's stages, which
    # ones last long enough for a 0.1 s look depends on the machine.
    assert "\r\x1b[Kimport" in text
    assert re.search(r"\r\x1b\[Kcompile  (graph|tiled|bufferized|loops|llvm|object)", text)
    assert "largest difference from eager" in text


def test_compile_to_a_pipe_prints_no_progress(tmp_path):
    model = tmp_path / "tiny.py"
    model.write_text(TINY_MODEL)
    done = _lowerline(
        ["compile", str(model), "--runs", "1"],
        tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    stdout, stderr = done.communicate(timeout=600)
    assert done.returncode == 0, stderr
    assert b"\r" not in stdout + stderr
    assert b"largest difference from eager" in stdout


@pytest.mark.parametrize("quiet", [False, True])
def test_export_on_a_terminal_shows_progress_unless_quiet(tmp_path, quiet):
    model = tmp_path / "tiny.py"
    model.write_text(TINY_MODEL)
    args = ["export", str(model), "-o", str(tmp_path / "out")] + (["--quiet"] if quiet else [])
    returncode, text = _on_a_terminal(args, tmp_path)
    assert returncode == 0, text
    assert (tmp_path / "out" / "tiny.h").exists()
    assert ("\r\x1b[Kimport" in text) is not quiet
