"""Processes a compile starts, and how they end: all together.

A worker runs in a process group (a session) of its own, and every tool it
starts (``mlir-translate``, ``opt``, ``llc``, ``cc``, ``ptxas``,
``fatbinary``) stays in that group. Whatever ends the worker's call in the
parent (a finished run, ``LOWERLINE_COMPILE_TIMEOUT``, an exception,
Ctrl-C, interpreter exit: ``_kill_running``) ends with ``kill_group``: SIGKILL to the whole
group, so no ``llc -O3`` keeps running after the compile that started it
(measured before this: orphaned ``llc`` children at 100% CPU minutes after
their worker was stopped). A group of its own also keeps the terminal's
Ctrl-C away from the workers: the caller receives it and stops them.

A worker also asks the kernel to kill it when its parent dies
(``die_with_parent``), for a caller that is itself killed with SIGKILL and
runs no clean-up; a tool that worker was running then finishes on its own.

Used by the driver (which starts the workers) and by the workers themselves
(the frontend's import worker too), hence at the top of the package.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from typing import Any

_PR_SET_PDEATHSIG = 1
# Groups of run_in_group calls still running (in other threads at exit).
_RUNNING: set[subprocess.Popen] = set()


def kill_group(process: subprocess.Popen) -> None:
    """SIGKILL every process left in ``process``'s group (started with
    ``start_new_session``), the leader included; nothing if none is left."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def start_in_group(command: list[str], stdin: int = subprocess.DEVNULL, **kwargs: Any):
    """``command`` started in a new process group, stdout and stderr piped
    (text); end it with ``wait_in_group``."""
    return subprocess.Popen(
        command,
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        **kwargs,
    )


def wait_in_group(
    process: subprocess.Popen,
    timeout: float | None = None,
    started: Callable[[subprocess.Popen], None] | None = None,
    stdin_text: str | None = None,
):
    """Wait for ``process`` (``start_in_group``), sending it ``stdin_text``,
    and kill its group as a whole when the call ends: on ``timeout``
    (``subprocess.TimeoutExpired`` is raised, as ``run`` does), on any
    exception including KeyboardInterrupt, and after a normal exit
    (grandchildren it left behind). ``started`` is called with the child
    first (a watch on its memory)."""
    with process:
        _RUNNING.add(process)
        try:
            if started is not None:
                started(process)
            stdout, stderr = process.communicate(stdin_text, timeout=timeout)
        except BaseException:
            kill_group(process)
            process.wait()
            raise
        finally:
            _RUNNING.discard(process)
        kill_group(process)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def run_in_group(
    command: list[str],
    timeout: float | None = None,
    started: Callable[[subprocess.Popen], None] | None = None,
    **kwargs: Any,
):
    """``subprocess.run(command, capture_output=True, text=True)`` with the
    child in a new process group, killed as a whole when the call ends
    (``wait_in_group``)."""
    return wait_in_group(start_in_group(command, **kwargs), timeout, started)


@atexit.register
def _kill_running() -> None:
    """At interpreter exit, compiles still running in other threads end too."""
    for process in list(_RUNNING):
        kill_group(process)


def die_with_parent() -> None:
    """Have the kernel SIGKILL this process when its parent exits (Linux; a
    no-op elsewhere). Called first thing by the worker processes."""
    if not sys.platform.startswith("linux"):
        return
    parent = os.getppid()
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def run_forked(body: Callable[[Callable[[str], None]], int]) -> tuple[int, int | None, str]:
    """Run ``body(report)`` in a forked child and wait for it.

    Returns ``(exit code, signal, last report)``: ``signal`` is the number of
    the signal that killed the child (an LLVM assertion's SIGABRT, a
    SIGSEGV), else None. ``report(line)`` sends one line to the parent, which
    keeps the last one, so a crash can be blamed on what the child was doing.
    Fork before anything starts threads (MLIR's thread pool belongs to a
    context, so: before creating one). The parent ignores SIGINT while it
    waits: Ctrl-C reaches the child, which exits 130 on its own.
    """
    read_fd, write_fd = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        os.close(read_fd)
        _child(body, write_fd)
    os.close(write_fd)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        last = _last_line(read_fd)
        _, status = os.waitpid(pid, 0)
    finally:
        signal.signal(signal.SIGINT, previous)
    if os.WIFSIGNALED(status):
        return 1, os.WTERMSIG(status), last
    return os.waitstatus_to_exitcode(status), None, last


def _child(body: Callable[[Callable[[str], None]], int], write_fd: int) -> None:  # pragma: no cover
    code = 1
    try:
        die_with_parent()

        def report(line: str) -> None:
            os.write(write_fd, (line + "\n").encode())

        code = body(report)
    finally:
        # os._exit skips interpreter teardown (atexit hooks belong to the parent).
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


def _last_line(read_fd: int) -> str:
    """Read the pipe to its end (the child exited); the last complete line."""
    tail = b""
    with os.fdopen(read_fd, "rb") as reader:
        while block := reader.read(65536):
            tail = (tail + block)[-65536:]
    lines = tail.split(b"\n")
    complete = lines[-2] if len(lines) > 1 else b""
    return complete.decode(errors="replace")
