"""The two worker processes behind ``lowerline.compile``.

* The import worker (torch + torch_mlir) is started once and reused: its
  start-up costs seconds. If it dies, the next compile starts a new one.
* The compile worker (the ``mlir`` bindings, LLVM with assertions on) runs
  once per compile, so that an abort inside a pass kills only it; its exit
  status, ``progress.log`` and stderr become a ``CompileError``.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from typing import Any

from lowerline.errors import LowerlineError


class CompileError(LowerlineError):
    """A compile failed. Names the stage and pass, carries MLIR's diagnostics,
    a reproducer file and the ``lowerline-opt`` command that reproduces it."""

    def __init__(
        self,
        stage: str,
        message: str,
        pass_name: str | None = None,
        diagnostics: list[str] | None = None,
        reproducer: str | None = None,
        command: str | None = None,
    ):
        self.stage = stage
        self.pass_name = pass_name
        self.diagnostics = diagnostics or []
        self.reproducer = reproducer
        self.command = command
        where = f"stage '{stage}'" + (f", pass '{pass_name}'" if pass_name else "")
        lines = [f"lowerline.compile failed in {where}: {message}", *self.diagnostics]
        if reproducer:
            lines.append(f"reproducer: {reproducer}")
        if command:
            lines.append(f"reproduce with: {command}")
        super().__init__("\n".join(lines))


class UnsupportedOpsError(CompileError):
    """The model uses ops that cannot be lowered; lists all of them at once."""

    def __init__(self, ops: list[dict[str, Any]]):
        self.ops = ops
        lines = [
            f"  {op['op']} (x{op['count']})"
            + (f" at {', '.join(op['where'][:5])}" if op["where"] else "")
            for op in ops
        ]
        total = len(ops)
        super().__init__(
            "import",
            f"{total} unsupported op{'s' if total != 1 else ''}:\n" + "\n".join(lines),
        )


class ImportWorker:
    """A long-lived ``python -m lowerline.frontend.import_worker``."""

    _lock = threading.Lock()
    _process: subprocess.Popen | None = None
    _log: str | None = None

    @classmethod
    def _start(cls) -> subprocess.Popen:
        log_fd, cls._log = tempfile.mkstemp(prefix="lowerline-import-", suffix=".log")
        process = subprocess.Popen(
            [sys.executable, "-m", "lowerline.frontend.import_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log_fd,
            text=True,
        )
        os.close(log_fd)
        return process

    @classmethod
    def run(cls, job: str) -> dict[str, Any]:
        with cls._lock:
            if cls._process is None or cls._process.poll() is not None:
                cls._process = cls._start()
            process = cls._process
            try:
                process.stdin.write(json.dumps({"job": job}) + "\n")
                process.stdin.flush()
                line = process.stdout.readline()
            except BrokenPipeError:
                line = ""
            if not line:
                cls._process = None
                raise CompileError("import", f"the import worker died{cls._log_tail()}")
        return json.loads(line)

    @classmethod
    def _log_tail(cls) -> str:
        if not cls._log or not os.path.exists(cls._log):
            return ""
        with open(cls._log, encoding="utf-8", errors="replace") as handle:
            tail = handle.read()[-2000:].strip()
        return f":\n{tail}" if tail else ""

    @classmethod
    def stop(cls) -> None:
        process, cls._process = cls._process, None
        if process is not None and process.poll() is None:
            process.stdin.close()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()


atexit.register(ImportWorker.stop)


def _read_json(path: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def _last_progress(job: str) -> tuple[str, str | None]:
    stage, pass_name = "linalg", None
    path = os.path.join(job, "progress.log")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                kind, _, what = line.rstrip("\n").partition(" ")
                if kind == "stage":
                    stage, pass_name = what, None
                elif kind == "pass":
                    pass_name = what
    return stage, pass_name


def run_compile_worker(job: str, failures_dir: str) -> dict[str, Any]:
    """Run the compile worker on ``job``; raise CompileError on any failure."""
    done = subprocess.run(
        [sys.executable, "-m", "lowerline.compile_worker", job],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode == 0:
        return _read_json(os.path.join(job, "result.json"))
    stage, pass_name = _last_progress(job)
    error_path = os.path.join(job, "error.json")
    current_path = os.path.join(job, "current-stage.json")
    if done.returncode > 0 and os.path.exists(error_path):
        error = _read_json(error_path)
        message, diagnostics = error["summary"], error["diagnostics"]
    else:
        message = _death(done.returncode)
        diagnostics = [line for line in done.stderr.splitlines() if line.strip()][-12:]
    reproducer = command = None
    if os.path.exists(current_path):
        current = _read_json(current_path)
        reproducer = _keep_reproducer(current["input"], failures_dir, stage)
        command = f"lowerline-opt {reproducer} --pass-pipeline='{current['pipeline']}'"
    raise CompileError(stage, message, pass_name, diagnostics, reproducer, command)


def _death(returncode: int) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"the compiler crashed ({name}); the calling process is unaffected"
    return f"the compile worker exited with status {returncode}"


def _keep_reproducer(stage_input: str, failures_dir: str, stage: str) -> str:
    os.makedirs(failures_dir, exist_ok=True)
    fd, path = tempfile.mkstemp(prefix=f"{stage}-", suffix=".mlir", dir=failures_dir)
    with os.fdopen(fd, "w", encoding="utf-8") as out, open(stage_input, encoding="utf-8") as src:
        out.write(src.read())
    return path
