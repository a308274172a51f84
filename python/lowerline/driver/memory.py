"""The memory bound of a compile: every worker process runs under it.

A compile that needs more memory than the machine has must end as a
``CompileError`` naming the stage and pass that was running, not as the
kernel's OOM killer picking a process (the user's, perhaps) nor as a machine
swapping itself to a halt (measured: random ops in training mode once drove
a compile worker to 23 GB). The bound is, in bytes, the first of:

* ``lowerline.compile(..., compile_memory=...)``;
* ``$LOWERLINE_COMPILE_MEMORY``;
* half of the memory this process may use (physical memory, or the cgroup's
  ``memory.max`` where that is lower).

Sizes are bytes or a number with a suffix: ``512M``, ``4G``, ``1.5G``
(``K``, ``M``, ``G``, ``T``, powers of 1024; ``B``/``iB`` allowed).

How it is enforced: ``MemoryWatch`` polls, from the parent, the resident
memory of the worker's whole process group (the worker and every tool it
starts, ``llc`` included) and kills the group once it is past the bound.
Not ``RLIMIT_AS``: torch, OpenMP and glibc's malloc arenas reserve address
space they never touch, so an address-space limit fails compiles that use
little memory. Not ``RLIMIT_DATA`` either: it counts the same reservations
once they are made writable, and an allocation failing inside LLVM aborts
the worker with no word of memory.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading

from lowerline.processes import kill_group

MEMORY_ENV = "LOWERLINE_COMPILE_MEMORY"
DEFAULT_FRACTION = 0.5
_SIZE = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*([KMGT]?)(?:I?B)?", re.IGNORECASE)
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_PAGE = os.sysconf("SC_PAGE_SIZE")


def parse_size(text: str, what: str) -> int:
    """Bytes from ``"4G"``, ``"512M"``, ``"1.5G"`` or ``"1048576"``;
    ValueError naming ``what`` (where the text came from) otherwise."""
    match = _SIZE.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"{what} takes a size in bytes such as 4G or 512M, got {text!r}")
    size = int(float(match.group(1)) * _UNITS[match.group(2).upper()])
    if size <= 0:
        raise ValueError(f"{what} must be more than 0 bytes, got {text!r}")
    return size


def available_memory() -> int:
    """The memory this process may use: physical memory, or the cgroup's
    limit (cgroup v2 ``memory.max``) where that is lower."""
    physical = os.sysconf("SC_PHYS_PAGES") * _PAGE
    try:
        with open("/sys/fs/cgroup/memory.max", encoding="ascii") as handle:
            limit = handle.read().strip()
    except OSError:
        return physical
    return min(physical, int(limit)) if limit.isdigit() else physical


def compile_memory(requested: int | str | None = None) -> int:
    """The bound in bytes: ``requested`` (bytes, or a size such as ``"4G"``),
    else ``$LOWERLINE_COMPILE_MEMORY``, else half of ``available_memory()``."""
    if requested is None:
        raw = os.environ.get(MEMORY_ENV, "")
        if not raw:
            return int(available_memory() * DEFAULT_FRACTION)
        return parse_size(raw, MEMORY_ENV)
    if isinstance(requested, str):
        return parse_size(requested, "compile_memory")
    if isinstance(requested, bool) or not isinstance(requested, int):
        raise TypeError(
            f"compile_memory takes bytes (an int) or a size such as '4G', got {requested!r}"
        )
    if requested <= 0:
        raise ValueError(f"compile_memory must be more than 0 bytes, got {requested}")
    return requested


def format_size(size: int) -> str:
    """``size`` bytes for a message: ``1.5 GiB``, ``300 MiB``."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.3g} {unit}"
    return f"{size} B"


def _stat_fields(pid: int) -> list[bytes] | None:
    """The fields of ``/proc/PID/stat`` after the command name (which may
    hold spaces and parentheses), or None for a process that is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            text = handle.read()
    except OSError:
        return None
    return text[text.rfind(b")") + 2 :].split()


def group_members(group: int) -> list[int]:
    """The processes whose process group is ``group``: one read of
    ``/proc/*/stat`` per process on the machine."""
    members = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(int(entry.name))
        if fields is not None and int(fields[2]) == group:  # fields: state, ppid, pgrp, ...
            members.append(int(entry.name))
    return members


def resident_bytes(pids: list[int]) -> int:
    """The resident memory of ``pids`` together (``VmRSS``, as ``/proc/PID/statm``
    gives it in pages); processes that are gone count 0."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/statm", "rb") as handle:
                total += int(handle.read().split()[1]) * _PAGE
        except (OSError, IndexError, ValueError):
            continue
    return total


class MemoryWatch:
    """Kill a worker's process group once its resident memory passes ``limit``.

    ``start(process)`` watches ``process``'s group (started with
    ``start_new_session``) from a thread until ``stop()`` (or the ``with``
    block's end). Resident memory is read every ``interval`` seconds for the
    known members; the members are looked up again every ``rescan`` seconds
    (a full ``/proc`` scan costs ~8 ms here, the members' reads microseconds).
    After a kill, ``exceeded`` is True and ``used`` the memory seen.
    """

    def __init__(self, limit: int, interval: float = 0.05, rescan: float = 0.5):
        self.limit = limit
        self.interval = interval
        self.rescan = rescan
        self.used = 0
        self.exceeded = False
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, process: subprocess.Popen) -> None:
        self._thread = threading.Thread(
            target=self._watch, args=(process,), name="lowerline-memory-watch", daemon=True
        )
        self._thread.start()

    def _watch(self, process: subprocess.Popen) -> None:
        members = group_members(process.pid) or [process.pid]
        ticks_per_scan = max(1, round(self.rescan / self.interval))
        tick = 0
        while True:
            used = resident_bytes(members)
            self.used = max(self.used, used)
            if used > self.limit:
                self.exceeded = True
                kill_group(process)
                return
            if self._done.wait(self.interval):
                return
            tick += 1
            if tick % ticks_per_scan == 0:
                members = group_members(process.pid) or [process.pid]

    def stop(self) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> MemoryWatch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def message(self, worker: str) -> str:
        """What a ``CompileError`` says of a worker this watch stopped."""
        return (
            f"the {worker} worker went past the compile memory limit "
            f"({format_size(self.used)} resident, limit {format_size(self.limit)}: "
            f"${MEMORY_ENV} or lowerline.compile(..., compile_memory=...)); it was stopped"
        )
