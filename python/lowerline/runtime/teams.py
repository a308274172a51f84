"""How many threads a call's OpenMP teams use: the cores no other thread runs on.

A team is only as fast as its latest thread. When another thread keeps a
core busy (another process, or another thread pool of this process: ONNX
Runtime's or torch's OpenMP pool spinning after their own work), the worker
that lands on that core runs in the scheduler's slices of milliseconds and
the calling thread waits for it at the end of every parallel region: a
batch-1 MLP took 114 us a call at 2 threads against 36 us at 1
(bench/busy-core.md, issue 14). Handing the late worker's tiles to the
caller (``schedule(dynamic)``) does not help, as the region's join barrier
still waits for the worker to arrive.

So every call of multithreaded code first refreshes a process-wide limit on
team sizes, at most every ``SAMPLE_SECONDS`` (sooner right after teams
shrank, see ``SHRUNK_SAMPLE_SECONDS``): the machine's runnable
threads (``/proc/loadavg``'s fourth field), less the calling thread and
lowerline's own OpenMP workers that are running (this process's threads
named ``openmp_worker``, as Intel's libiomp5 names its workers; they spin
for the block time after a region and must not count as load), are the
other threads; the limit is the cores they leave free, at least 1 and at
most the cores this process may run on. Every library's
``__kmpc_push_num_threads`` (``runtime_support.c``) caps each region's
compiled ``num_threads`` by it, so a 2-thread build runs its regions on 1
thread while the second core is taken, and on 2 once it is free again.

OpenMP's own dynamic teams (``omp_set_dynamic``, ``LOWERLINE_OMP_DYNAMIC=1``)
do not do this well: Intel's runtime counts the machine's threads at most once
a second and keeps the count for that long, so a count taken while torch's
pool was spinning for a few milliseconds shrank teams for a whole second.

``LOWERLINE_OMP_TEAMS=fixed`` turns the check off (teams of the compiled
size); the default is ``load``. Where ``/proc`` cannot be read, teams keep
their compiled size. The count is of the whole machine against its CPU
count: a container that sees the host's ``/proc/loadavg`` counts the host's
threads (teams then shrink more than they need to).
"""

from __future__ import annotations

import ctypes
import os
import time
from collections.abc import Callable

TEAMS_ENV = "LOWERLINE_OMP_TEAMS"
# How stale a sample may be: a sample reads one to four small /proc files,
# 6-30 us of CPU (measured), too much for every call of a 20 us model.
SAMPLE_SECONDS = 0.1
# ... right after teams shrank: a pool that spins after its own work
# (torch's libgomp spins some milliseconds) frees its core soon, and a call
# on fewer threads than there are free cores loses up to half its speed at
# 2 threads. The wait doubles at each sample that finds the cores still
# taken, back to SAMPLE_SECONDS: on a machine that stays loaded, sampling
# every 10 ms cost an encoder call 7% more CPU time (measured: a sample
# before every call, 1.18-1.23 ms against 1.06-1.14 ms, far more than the
# sample's own CPU time; why was not measured).
SHRUNK_SAMPLE_SECONDS = 0.01
# The name Intel's OpenMP runtime (libiomp5, which compiled code runs on)
# gives its worker threads (/proc/<pid>/task/<tid>/comm).
OPENMP_WORKER = "openmp_worker"


def teams_mode() -> str:
    """``load`` (teams sized by the machine's free cores) or ``fixed``."""
    value = os.environ.get(TEAMS_ENV, "load")
    if value not in ("load", "fixed"):
        raise ValueError(
            f"{TEAMS_ENV} takes 'load' (teams use the cores no other thread runs on) or 'fixed'"
        )
    return value


def free_cores(runnable: int, ours: int, cores: int, usable: int) -> int:
    """The team size for a call: the cores that the machine's ``runnable``
    threads leave free once ``ours`` (the calling thread and lowerline's
    running workers) are left out, at least 1 and at most ``usable`` (the
    cores this process may run on)."""
    others = max(0, runnable - ours)
    return max(1, min(usable, cores - others))


def _read(path: str) -> str:
    """A small /proc file's text (os.read: a third of open()'s cost)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 4096).decode("ascii", errors="replace")
    finally:
        os.close(fd)


def _name_and_state(stat: str) -> tuple[str, str]:
    """``tid (comm) state ...`` of a thread's stat: comm may hold spaces and
    parentheses, so it ends at the last ``)``."""
    name, _, rest = stat.partition("(")[2].rpartition(")")
    return name, rest[1:2]


class ProcReader:
    """What the limit needs from ``/proc`` (``root``: a fake one in tests).

    Which of this process's threads are OpenMP workers is looked up again
    when the process's thread count changes (``/proc/self/stat``) and every
    ``RESCAN_SAMPLES`` samples (a worker names itself after it starts); in
    between, a sample reads a few small files, not one per thread."""

    RESCAN_SAMPLES = 10

    def __init__(self, root: str = "/proc"):
        self.root = root
        self._tasks = os.path.join(root, "self", "task")
        self._workers: list[str] = []
        self._threads: int | None = None  # the thread count the worker list was made at
        self._samples = 0

    def runnable(self) -> int:
        """The machine's runnable threads, this one included (``/proc/loadavg``:
        ``1min 5min 15min runnable/total lastpid``)."""
        fields = _read(os.path.join(self.root, "loadavg")).split()
        if len(fields) < 4 or not fields[3].partition("/")[0].isdigit():
            raise OSError(f"unexpected {self.root}/loadavg: {' '.join(fields)!r}")
        return int(fields[3].partition("/")[0])

    def workers(self) -> int:
        """This process's OpenMP workers, running or not."""
        self._samples += 1
        threads = self._thread_count()
        if threads != self._threads or self._samples % self.RESCAN_SAMPLES == 0:
            self._workers = self._find_workers()
            self._threads = threads
        return len(self._workers)

    def running_workers(self) -> int:
        """Of ``workers()`` (which must come first), those running now."""
        count = 0
        for tid in self._workers:
            try:
                stat = _read(os.path.join(self._tasks, tid, "stat"))
            except OSError:  # the thread ended since the listing
                continue
            count += _name_and_state(stat)[1] == "R"
        return count

    def _thread_count(self) -> int:
        """This process's threads (``/proc/self/stat``'s field 20), or -1."""
        try:
            stat = _read(os.path.join(self.root, "self", "stat"))
        except OSError:
            return -1
        fields = stat.rpartition(")")[2].split()  # from field 3, the state
        return int(fields[17]) if len(fields) > 17 and fields[17].isdigit() else -1

    def _find_workers(self) -> list[str]:
        workers = []
        for tid in os.listdir(self._tasks):
            try:
                stat = _read(os.path.join(self._tasks, tid, "stat"))
            except OSError:
                continue
            if _name_and_state(stat)[0] == OPENMP_WORKER:
                workers.append(tid)
        return workers


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class TeamLimit:
    """The process's cap on team sizes: an int32 that every loaded library
    reads at each parallel region (``lowerline_set_team_limit``); 0 caps
    nothing. ``refresh()`` runs at the start of each call and samples when
    the last sample is older than ``interval``, or, once the limit fell
    below the usable cores, than ``shrunk_interval``, doubling at each
    sample that keeps it there."""

    def __init__(
        self,
        reader: ProcReader | None = None,
        cores: int | None = None,
        usable: Callable[[], int] = usable_cores,
        interval: float = SAMPLE_SECONDS,
        shrunk_interval: float = SHRUNK_SAMPLE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.reader = reader or ProcReader()
        self.cores = cores or os.cpu_count() or 1
        self._usable = usable
        self.interval = interval
        self.shrunk_interval = shrunk_interval
        self._clock = clock
        self.cell = ctypes.c_int32(0)
        self.enabled = True
        self._next = 0.0  # when the next call samples
        self._wait = 0.0  # the last wait while shrunk (0: not shrunk)

    @property
    def value(self) -> int:
        return self.cell.value

    def refresh(self) -> None:
        now = self._clock()
        if now < self._next:
            return
        usable = self._usable()
        limit = self.sample(usable) if self.enabled else 0
        self.cell.value = limit
        if 0 < limit < min(usable, self.cores):  # shrunk: sample again soon
            self._wait = min(self.interval, 2 * self._wait or self.shrunk_interval)
        else:
            self._wait = 0.0
        self._next = now + (self._wait or self.interval)

    def sample(self, usable: int | None = None) -> int:
        """The limit from ``/proc`` now; 0 (no cap) where it cannot be read."""
        reader = self.reader
        try:
            runnable = reader.runnable()
            ours = 1  # the caller, which runs this
            # Each worker's state is a file to read: skip them where they
            # cannot change the answer (only the caller runs, or the others
            # take every core but the caller's even if all workers run).
            if runnable > 1 and runnable - reader.workers() < self.cores:
                ours += reader.running_workers()
        except OSError:
            return 0
        return free_cores(runnable, ours, self.cores, usable or self._usable())

    def set_enabled(self, enabled: bool) -> None:
        """Turn the check on or off; the next call samples (or uncaps)."""
        self.enabled = enabled
        self._next = 0.0
        self._wait = 0.0


LIMIT = TeamLimit()


def attach(lib: ctypes.CDLL) -> bool:
    """Point ``lib``'s team sizes at ``LIMIT``; whether its calls must refresh
    it (multithreaded code, linked with the limit, ``LOWERLINE_OMP_TEAMS=load``)."""
    if not hasattr(lib, "__kmpc_fork_call") or not hasattr(lib, "lowerline_set_team_limit"):
        return False  # single-threaded, or not OpenMP
    if teams_mode() == "fixed":
        return False
    lib.lowerline_set_team_limit.restype = None
    lib.lowerline_set_team_limit(ctypes.byref(LIMIT.cell))
    return True
