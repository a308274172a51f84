"""The two worker processes behind ``lowerline.compile``.

* The import worker (torch + torch_mlir) is started once and reused: its
  start-up costs seconds. ``lowerline.compile`` (and the torch.compile
  backend) asks for it first thing (``ImportWorker.prestart``), so that its
  start-up overlaps ``torch.export`` in this process. If it dies, the next
  compile starts a new one.
* The compile worker (the ``mlir`` bindings, LLVM with assertions on) runs
  once per compile, so that an abort inside a pass kills only it; its exit
  status, ``progress.log`` and stderr become a ``CompileError``. One is
  started ahead too (``CompileWorkerSpare``): its interpreter and imports
  (about a second) overlap the export and the import, and it waits for its
  job on stdin.

``prestart_workers`` starts both; ``lowerline.compile`` and the torch.compile
backend call it first thing.

Both run under the compile memory bound (``lowerline.driver.memory``): a
worker whose process group grows past it is killed and reported as a
``CompileError`` (for the compile worker: with the stage and pass that was
running and the reproducer of that stage).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import queue
import select
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any, TextIO

from lowerline.driver import progress
from lowerline.driver.cache import REPRODUCER_NAME
from lowerline.driver.memory import MemoryWatch, compile_memory, parse_size
from lowerline.errors import LowerlineError
from lowerline.processes import kill_group, start_in_group, wait_in_group

# Worker processes started by this process, by kind ("import", "compile").
launches: Counter[str] = Counter()
# Jobs given to the workers, by kind: an honest observable of whether a
# compile was served from the cache (the import worker may have been started
# ahead of a compile that then hit the cache).
jobs: Counter[str] = Counter()


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


# ATen ops whose result's shape depends on the input's values: compiled code
# has static output shapes, so these cannot be lowered, only reported.
DATA_DEPENDENT_SHAPES = ("masked_select", "nonzero", "unique", "argwhere")


def _short_name(aten: str) -> str:
    return aten.removeprefix("aten.").removeprefix("torch.").split(".", 1)[0].strip("_")


class UnsupportedOpsError(CompileError):
    """The model uses ops that cannot be lowered; lists all of them at once.

    ``ops``: one dict per op with ``op`` (the ATen op of the user's program
    where it is known, else the MLIR op), ``count``, ``where`` (``file:line``
    of the user's source), ``mlir_op`` (what torch-mlir made of it) and
    ``reason`` (why it stopped there: no torch-mlir lowering, a lowering that
    rejects this use, or a TMTensor op lowerline does not lower).
    """

    def __init__(self, ops: list[dict[str, Any]]):
        self.ops = ops
        lines = []
        for op in ops:
            line = f"  {op['op']} (x{op['count']})"
            if op.get("where"):
                line += f" at {', '.join(op['where'][:5])}"
                if len(op["where"]) > 5:
                    line += f" and {len(op['where']) - 5} more places"
            if _short_name(op["op"]) in DATA_DEPENDENT_SHAPES:
                line += (
                    " [the size of its result depends on the data; compiled code has "
                    "static output shapes]"
                )
            elif op.get("reason"):  # the import worker's: which lowering is missing
                line += f" [{op['reason']}]"
            lines.append(line)
        total = len(ops)
        super().__init__(
            "import",
            f"the model uses {total} op{'s' if total != 1 else ''} that lowerline cannot "
            "compile (yet):\n" + "\n".join(lines),
        )


DEFAULT_TIMEOUT = 1800.0


def timeout_seconds() -> float:
    """How long one worker step may take (``LOWERLINE_COMPILE_TIMEOUT``, seconds)."""
    raw = os.environ.get("LOWERLINE_COMPILE_TIMEOUT", "")
    try:
        value = float(raw) if raw else DEFAULT_TIMEOUT
    except ValueError:
        message = f"LOWERLINE_COMPILE_TIMEOUT must be a number of seconds, got {raw!r}"
        raise ValueError(message) from None
    if value <= 0:
        raise ValueError(f"LOWERLINE_COMPILE_TIMEOUT must be positive, got {raw!r}")
    return value


class _Spawner:
    """One long-lived daemon thread that starts the import worker.

    The worker asks the kernel to kill it when its parent dies
    (``die_with_parent``), and for the kernel its parent is the *thread* that
    started it: a worker started by a short-lived thread (a prestart, a user's
    thread pool) would be killed when that thread ends. This thread lives as
    long as the process, so the worker does too.
    """

    def __init__(self) -> None:
        self.pid = os.getpid()
        self._requests: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        thread = threading.Thread(target=self._serve, name="lowerline-spawner", daemon=True)
        thread.start()

    def _serve(self) -> None:
        while True:
            self._requests.get()()

    def submit(self, task: Callable[[], None]) -> None:
        self._requests.put(task)

    def call(self, start: Callable[[], subprocess.Popen]) -> subprocess.Popen:
        """``start()`` run on this thread; its process, or its exception."""
        done = threading.Event()
        outcome: list[Any] = []

        def task() -> None:
            try:
                outcome.append(start())
            except BaseException as err:  # re-raised in the caller
                outcome.append(err)
            done.set()

        self.submit(task)
        done.wait()
        if isinstance(outcome[0], BaseException):
            raise outcome[0]
        return outcome[0]


_spawner: _Spawner | None = None
_spawner_lock = threading.Lock()


def _spawn(start: Callable[[], subprocess.Popen]) -> subprocess.Popen:
    """``start()`` on the spawner thread (``_Spawner``), started on first use
    and again in a forked child (threads do not survive a fork)."""
    global _spawner
    with _spawner_lock:
        if _spawner is None or _spawner.pid != os.getpid():
            _spawner = _Spawner()
        spawner = _spawner
    return spawner.call(start)


def prestart_workers() -> None:
    """Start the import worker and a compile worker for the next compile,
    unless they run already; return once their processes exist."""
    ImportWorker.prestart()
    CompileWorkerSpare.prestart()


class ImportWorker:
    """A long-lived ``python -m lowerline.frontend.import_worker``."""

    _lock = threading.Lock()
    _process: subprocess.Popen | None = None
    _owner: int | None = None  # the pid that started it: a forked child starts its own
    _log: str | None = None

    @classmethod
    def _start(cls) -> subprocess.Popen:
        launches["import"] += 1
        cls._owner = os.getpid()
        log_fd, cls._log = tempfile.mkstemp(prefix="lowerline-import-", suffix=".log")
        process = subprocess.Popen(
            [sys.executable, "-m", "lowerline.frontend.import_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log_fd,
            text=True,
            start_new_session=True,  # ended as a group (lowerline.processes)
        )
        os.close(log_fd)
        return process

    @classmethod
    def _running(cls) -> subprocess.Popen | None:
        """The worker, if this process started it and it is alive (call with ``_lock``)."""
        if cls._owner != os.getpid():  # inherited through fork: its pipes are shared
            cls._process = None
        if cls._process is not None and cls._process.poll() is not None:
            cls._process = None
        return cls._process

    @classmethod
    def pid(cls) -> int | None:
        """The running worker's process id, or None (none started, or it died)."""
        with cls._lock:
            process = cls._running()
        return None if process is None else process.pid

    @classmethod
    def prestart(cls) -> None:
        """Start the worker if none is running; return once its process exists.

        Its start-up (importing torch and torch_mlir, seconds) then runs while
        this process exports the model. A worker busy with another compile
        holds the lock: it is running, nothing to start.
        """
        if not cls._lock.acquire(blocking=False):
            return
        try:
            if cls._running() is None:
                cls._process = _spawn(cls._start)
        finally:
            cls._lock.release()

    @classmethod
    def run(cls, job: str, memory: int | None = None) -> dict[str, Any]:
        """Import ``job``; the worker's group may use ``memory`` bytes
        (None: ``memory.compile_memory()``) while it does."""
        limit_bytes = compile_memory(memory)
        with cls._lock, MemoryWatch(limit_bytes) as watch, progress.following("import"):
            process = cls._running()
            if process is None:
                process = cls._process = _spawn(cls._start)
            jobs["import"] += 1
            limit = timeout_seconds()
            # Started with stdin and stdout as pipes (_start).
            assert process.stdin is not None and process.stdout is not None
            watch.start(process)
            try:
                process.stdin.write(json.dumps({"job": job}) + "\n")
                process.stdin.flush()
                ready, _, _ = select.select([process.stdout], [], [], limit)
                line = process.stdout.readline() if ready else None
            except BrokenPipeError:
                line = ""
            except BaseException:
                # Ctrl-C mid-job: the worker's late answer would be read as
                # the next job's, so it is stopped with everything it started.
                kill_group(process)
                cls._process = None
                raise
            if line is None:  # a hang inside torch-mlir must not hang the caller
                kill_group(process)
                cls._process = None
                raise CompileError(
                    "import",
                    f"the import worker did not answer within {limit:g} s "
                    f"(LOWERLINE_COMPILE_TIMEOUT); it was stopped",
                )
            if not line:
                cls._process = None
                if watch.exceeded:
                    raise CompileError("import", watch.message("import"))
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
        if process is None or cls._owner != os.getpid():
            return
        if process.poll() is None and process.stdin is not None:
            process.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=5)
        kill_group(process)
        if cls._log:
            with contextlib.suppress(OSError):
                os.remove(cls._log)


atexit.register(ImportWorker.stop)


COMPILE_WORKER = [sys.executable, "-m", "lowerline.driver.compile_worker", "-"]


def _compile_environment() -> dict[str, str]:
    """The environment a compile worker depends on: all of it but torch's
    own variables, which torch.export sets in this process as it runs
    (``TORCHINDUCTOR_CACHE_DIR``) and the worker, which never loads torch,
    ignores."""
    return {key: value for key, value in os.environ.items() if not key.startswith("TORCH")}


class CompileWorkerSpare:
    """A compile worker started ahead of its job, for the next compile.

    Still one process per compile (an abort kills only its compile): the
    spare is given one job on stdin, and ``run_compile_worker`` ends its
    group as it ends any worker's. It is used only by the process that
    started it and only if the environment is still the one it inherited
    (a variable set since, such as ``LOWERLINE_LLVM_BIN``, would be missed);
    otherwise it is stopped and a new worker started.
    """

    _lock = threading.Lock()
    _process: subprocess.Popen | None = None
    _environment: dict[str, str] | None = None
    _owner: int | None = None

    @classmethod
    def _start(cls) -> subprocess.Popen:
        launches["compile"] += 1
        return start_in_group(COMPILE_WORKER, stdin=subprocess.PIPE)

    @classmethod
    def _usable(cls) -> subprocess.Popen | None:
        """The spare, if it can take a job now (call with ``_lock``); a stale one is stopped."""
        process = cls._process
        if process is None or cls._owner != os.getpid():
            return None
        if process.poll() is None and cls._environment == _compile_environment():
            return process
        cls.stop()
        return None

    @classmethod
    def prestart(cls) -> None:
        with cls._lock:
            if cls._usable() is None:
                cls._process = _spawn(cls._start)
                cls._owner, cls._environment = os.getpid(), _compile_environment()

    @classmethod
    def pid(cls) -> int | None:
        """The spare's process id, if there is one that can take a job."""
        with cls._lock:
            process = cls._usable()
        return None if process is None else process.pid

    @classmethod
    def take(cls) -> subprocess.Popen:
        """The spare, or a new compile worker; either way this caller's only."""
        with cls._lock:
            process = cls._usable()
            cls._process = None
        return process or _spawn(cls._start)

    @classmethod
    def stop(cls) -> None:
        process, cls._process = cls._process, None
        if process is not None and cls._owner == os.getpid():
            kill_group(process)
            process.wait()


atexit.register(CompileWorkerSpare.stop)


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


def run_compile_worker(job: str, failures_dir: str, memory: int | None = None) -> dict[str, Any]:
    """Run the compile worker on ``job``, its group within ``memory`` bytes
    (None: ``memory.compile_memory()``); raise CompileError on any failure."""
    jobs["compile"] += 1
    limit = timeout_seconds()
    process = CompileWorkerSpare.take()
    try:
        # The worker and every tool it starts are killed together when the
        # limit expires, the memory bound is passed or the caller is
        # interrupted (lowerline.processes).
        log = os.path.join(job, "progress.log")
        with MemoryWatch(compile_memory(memory)) as watch, progress.following("compile", log):
            done = wait_in_group(process, limit, watch.start, stdin_text=job + "\n")
    except subprocess.TimeoutExpired:
        stage, pass_name = _last_progress(job)
        raise CompileError(
            stage,
            f"the compile worker did not finish within {limit:g} s "
            "(LOWERLINE_COMPILE_TIMEOUT); it was stopped",
            pass_name,
        ) from None
    if done.returncode == 0:
        return _read_json(os.path.join(job, "result.json"))
    if os.environ.get("LOWERLINE_DEBUG"):
        sys.stderr.write(done.stderr)
    stage, pass_name = _last_progress(job)
    error_path = os.path.join(job, "error.json")
    current_path = os.path.join(job, "current-stage.json")
    if watch.exceeded:
        message, diagnostics = watch.message("compile"), []
    elif done.returncode > 0 and os.path.exists(error_path):
        error = _read_json(error_path)
        message, diagnostics = error["summary"], error["diagnostics"]
    else:
        message = _death(done.returncode)
        diagnostics = [line for line in done.stderr.splitlines() if line.strip()][-12:]
    reproducer = command = None
    current = _read_json(current_path) if os.path.exists(current_path) else None
    # current-stage.json names the step that was running and its input: a
    # pipeline replays with lowerline-opt, object emission with lowerline object.
    if current is not None and current.get("stage") == stage:
        reproducer, command, note = _reproduce(current, failures_dir)
        message += f" ({note})" if note else ""
    raise CompileError(stage, message, pass_name, diagnostics, reproducer, command)


def _reproduce(current: dict[str, Any], failures_dir: str) -> tuple[str | None, str | None, str]:
    """The reproducer file and command of the failed step ``current``, and a
    note for the error when either is missing or replays from an earlier stage."""
    step, note = _reproducer_step(current, reproducer_limit())
    if step is None:
        return None, None, note
    reproducer, not_saved = _keep_reproducer(step["input"], failures_dir, step["stage"])
    if reproducer is None:
        return None, None, not_saved
    if step["pipeline"] is None:
        command = f"lowerline object {shlex.quote(reproducer)} -o main.o"
        if step.get("target") not in (None, "host"):
            command += f" --target {shlex.quote(step['target'])}"
        return reproducer, command, note
    pipeline = shlex.quote(step["pipeline"])
    return reproducer, f"lowerline-opt {shlex.quote(reproducer)} --pass-pipeline={pipeline}", note


REPRODUCER_LIMIT_ENV = "LOWERLINE_REPRODUCER_MAX_BYTES"
DEFAULT_REPRODUCER_LIMIT = 64 << 20


def reproducer_limit() -> int:
    """The largest stage input kept as a reproducer, in bytes
    (``$LOWERLINE_REPRODUCER_MAX_BYTES``, a size such as ``64M``)."""
    raw = os.environ.get(REPRODUCER_LIMIT_ENV, "")
    return parse_size(raw, REPRODUCER_LIMIT_ENV) if raw.strip() else DEFAULT_REPRODUCER_LIMIT


def _size(path: str) -> int | None:
    try:
        return os.path.getsize(path)
    except OSError:
        return None


def _reproducer_step(current: dict[str, Any], limit: int) -> tuple[dict[str, Any] | None, str]:
    """The step whose input becomes the reproducer, and a note when it is
    not the failing step's own.

    A stage's input can be far larger than the program (a vector the size
    of a whole tensor, unrolled: 700 MB of LLVM dialect once). Weights are
    already elided from the dumps; what is left over ``limit`` is not kept.
    The latest earlier stage whose input fits is kept instead, with the
    pipelines from it through the failing stage as one (every stage a pass
    pipeline, anchored on the module), which replays the same failure; with
    none, (None, why).
    """
    size = _size(current["input"])
    if size is None or size <= limit:
        return current, ""
    steps = [*current.get("earlier", []), current]
    pipelines: list[str] = []
    for step in reversed(steps):
        body = _module_pipeline_body(step.get("pipeline"))
        if body is None:
            break
        if body:
            pipelines.insert(0, body)
        found = _size(step["input"])
        if found is not None and found <= limit:
            replay = {**step, "pipeline": f"builtin.module({','.join(pipelines)})"}
            return replay, (
                f"the '{current['stage']}' stage's input is {_mib(size)}, over the "
                f"reproducer limit ({REPRODUCER_LIMIT_ENV}); the reproducer is the "
                f"'{step['stage']}' stage's input and the command replays from there"
            )
    return None, (
        f"no reproducer: the '{current['stage']}' stage's input is {_mib(size)}, over "
        f"the reproducer limit of {_mib(limit)} ({REPRODUCER_LIMIT_ENV}), and no "
        "earlier stage's input fits it"
    )


def _mib(size: int) -> str:
    return f"{size / (1 << 20):.1f} MiB"


def _module_pipeline_body(pipeline: str | None) -> str | None:
    """The passes of ``builtin.module(...)`` (None for another anchor or no
    pipeline): what two such pipelines are run one after the other as."""
    if pipeline is None:
        return None
    text = pipeline.strip()
    if not text.startswith("builtin.module(") or not text.endswith(")"):
        return None
    return text[len("builtin.module(") : -1]


def _death(returncode: int) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"the compiler crashed ({name}); the calling process is unaffected"
    return f"the compile worker exited with status {returncode}"


MAX_REPRODUCERS = 32


def _keep_reproducer(stage_input: str, failures_dir: str, stage: str) -> tuple[str | None, str]:
    """Copy the failing stage's input to ``failures_dir``, keeping the newest few.

    Best effort: returns ``(path, "")``, or ``(None, why)`` when the disk is
    full or the folder read-only; the CompileError it serves must still reach
    the user with its stage and diagnostics, and no partial file is left.
    """
    try:
        os.makedirs(failures_dir, mode=0o700, exist_ok=True)
        _prune_reproducers(failures_dir)
        fd, path = tempfile.mkstemp(prefix=f"{stage}-", suffix=".mlir", dir=failures_dir)
    except OSError as err:
        return None, _not_saved(failures_dir, err)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            _copy_text(stage_input, out)
    except OSError as err:
        with contextlib.suppress(OSError):
            os.remove(path)
        return None, _not_saved(failures_dir, err)
    return path, ""


def _not_saved(failures_dir: str, err: OSError) -> str:
    return f"no reproducer: it could not be saved in {failures_dir} ({err.strerror or err})"


def _prune_reproducers(failures_dir: str) -> None:
    """Remove the oldest reproducers (only files lowerline named) beyond ``MAX_REPRODUCERS``."""
    kept = []
    for entry in os.scandir(failures_dir):
        if REPRODUCER_NAME.fullmatch(entry.name):
            with contextlib.suppress(OSError):  # removed meanwhile by another process
                kept.append((entry.stat().st_mtime, entry.path))
    for _, old in sorted(kept)[: max(0, len(kept) - MAX_REPRODUCERS + 1)]:
        with contextlib.suppress(OSError):
            os.remove(old)


def _copy_text(source: str, out: TextIO) -> None:
    """Copy the text of ``source`` to ``out`` (a seam for tests of a full disk)."""
    with open(source, encoding="utf-8") as src:
        out.write(src.read())
