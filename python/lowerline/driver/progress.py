"""A live progress line on a terminal: which stage and pass a compile is in.

The compile worker already writes a line to ``progress.log`` before every
stage and every pass (so that a worker that dies can be blamed on a pass).
While ``shown`` is open on a terminal, each worker step is ``following``
that file from a thread and rewrites one line of the terminal::

    compile  tiled  func.func(lowerline-vectorize)  3.2 s

Nothing is written when the stream is not a terminal (a pipe, a file, CI's
log) or with ``quiet``: output stays the same for scripts. Plain ``\\r`` and
``ESC[K`` (erase to the end of the line): no dependency for one line.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import threading
import time
from collections.abc import Iterator
from contextvars import ContextVar
from typing import TextIO

# Seconds between two looks at the log.
INTERVAL = 0.1
_ERASE = "\r\x1b[K"

_STREAM: ContextVar[TextIO | None] = ContextVar("lowerline_progress", default=None)


def is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or closed
        return False


@contextlib.contextmanager
def shown(stream: TextIO | None = None, quiet: bool = False) -> Iterator[bool]:
    """Show progress on ``stream`` (default: stderr) inside the block, when
    it is a terminal and not ``quiet``; yields whether it is shown."""
    stream = stream or sys.stderr
    enabled = not quiet and is_terminal(stream)
    token = _STREAM.set(stream if enabled else None)
    try:
        yield enabled
    finally:
        _STREAM.reset(token)


@contextlib.contextmanager
def following(step: str, log_path: str | None = None) -> Iterator[None]:
    """While the block runs, show ``step`` and, from the worker's
    ``log_path`` (``stage NAME`` / ``pass LABEL`` lines), its stage and
    pass; the line is erased when the block ends. Nothing without ``shown``."""
    stream = _STREAM.get()
    if stream is None:
        yield
        return
    line = _Line(stream, step, log_path)
    thread = threading.Thread(target=line.loop, name="lowerline-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        line.done.set()
        thread.join()


class _Line:
    def __init__(self, stream: TextIO, step: str, log_path: str | None):
        self.stream = stream
        self.step = step
        self.log_path = log_path
        self.offset = 0
        self.stage = ""
        self.pass_label = ""
        self.start = time.monotonic()
        self.done = threading.Event()

    def loop(self) -> None:
        while True:
            self._read()
            self._write(self.text())
            if self.done.wait(INTERVAL):
                break
        self._write("")

    def _read(self) -> None:
        """Take the lines the worker added since the last look."""
        if self.log_path is None or not os.path.exists(self.log_path):
            return
        with open(self.log_path, encoding="utf-8", errors="replace") as handle:
            handle.seek(self.offset)
            chunk = handle.read()
        complete = chunk.rfind("\n") + 1  # a line still being written waits
        self.offset += len(chunk[:complete].encode("utf-8"))
        for entry in chunk[:complete].splitlines():
            kind, _, what = entry.partition(" ")
            if kind == "stage":
                self.stage, self.pass_label = what, ""
            elif kind == "pass":
                self.pass_label = what

    def text(self) -> str:
        seconds = time.monotonic() - self.start
        parts = [self.step, self.stage, self.pass_label, f"{seconds:.1f} s"]
        text = "  ".join(p for p in parts if p)
        width = shutil.get_terminal_size((100, 24)).columns - 1
        return text if len(text) <= width else text[: width - 1] + "\u2026"

    def _write(self, text: str) -> None:
        try:
            self.stream.write(_ERASE + text)
            self.stream.flush()
        except (OSError, ValueError):  # the terminal went away: stop showing
            self.done.set()
