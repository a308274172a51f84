"""Team sizes from the machine's load (runtime/teams.py, runtime_support.c).

The decision is tested on fake ``/proc`` folders and a fake clock; the
libraries' side on compiled code: which OpenMP workers a call starts, and
that calls compute the same while another thread keeps a core busy.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest
import torch

import lowerline
from lowerline.runtime import teams


def fake_proc(root, runnable: int, threads: dict[int, tuple[str, str]]) -> teams.ProcReader:
    """A /proc with ``runnable`` threads running on the machine and this
    process's ``threads`` as ``{tid: (name, state)}``."""
    (root / "loadavg").write_text(f"3.10 2.00 1.50 {runnable}/321 4242\n")
    for tid, (name, state) in threads.items():
        task = root / "self" / "task" / str(tid)
        task.mkdir(parents=True, exist_ok=True)
        (task / "stat").write_text(f"{tid} ({name}) {state} 1 {tid} {tid} 0 -1 4194368 0\n")
    # Field 20, the thread count, is the 18th after the name.
    rest = ["R", *["0"] * 16, str(len(threads)), "0"]
    (root / "self" / "stat").write_text(f"1000 (python) {' '.join(rest)}\n")
    return teams.ProcReader(str(root))


def limit_of(reader: teams.ProcReader, cores: int = 2, usable: int = 2) -> int:
    return teams.TeamLimit(reader, cores=cores, usable=lambda: usable).sample()


CALLER = (1000, ("python", "R"))


@pytest.mark.parametrize(
    ("runnable", "threads", "expected"),
    [
        # Nothing else runs: both cores.
        (1, dict([CALLER]), 2),
        # lowerline's own worker spinning after a region is no load.
        (2, dict([CALLER, (1001, ("openmp_worker", "R"))]), 2),
        # Another process runs: one core left.
        (2, dict([CALLER, (1001, ("openmp_worker", "S"))]), 1),
        # Another pool of this process spins (ONNX Runtime's, torch's).
        (3, dict([CALLER, (1001, ("openmp_worker", "R")), (1002, ("python", "R"))]), 1),
        # More load than cores: still one thread, the caller's.
        (9, dict([CALLER]), 1),
    ],
    ids=["quiet", "own-worker-spins", "other-process", "other-pool", "overloaded"],
)
def test_the_limit_is_the_cores_other_threads_leave(tmp_path, runnable, threads, expected):
    assert limit_of(fake_proc(tmp_path, runnable, threads)) == expected


def test_a_worker_name_with_spaces_and_parentheses_is_read(tmp_path):
    # comm is free text: "(openmp_worker)" inside another name is not a worker.
    threads = dict([CALLER, (1001, ("x) (openmp_worker", "R")), (1002, ("openmp_worker", "R"))])
    reader = fake_proc(tmp_path, 3, threads)
    assert (reader.workers(), reader.running_workers()) == (1, 1)


def test_the_limit_stays_within_the_cores_this_process_may_use(tmp_path):
    reader = fake_proc(tmp_path, 1, dict([CALLER]))
    assert limit_of(reader, cores=16, usable=2) == 2
    assert limit_of(reader, cores=16, usable=16) == 16


def test_a_worker_started_after_a_sample_is_found(tmp_path):
    reader = fake_proc(tmp_path, 2, dict([CALLER]))
    assert (reader.workers(), reader.running_workers()) == (0, 0)
    fake_proc(tmp_path, 2, dict([CALLER, (1001, ("openmp_worker", "R"))]))
    assert (reader.workers(), reader.running_workers()) == (1, 1)


@pytest.mark.parametrize(
    "loadavg", ["", "0.1 0.2 0.3\n", "0.1 0.2 0.3 x/9 1\n"], ids=["empty", "short", "garbled"]
)
def test_an_unreadable_proc_caps_nothing(tmp_path, loadavg):
    reader = fake_proc(tmp_path, 1, dict([CALLER]))
    (tmp_path / "loadavg").write_text(loadavg)
    assert limit_of(reader) == 0
    assert limit_of(teams.ProcReader(str(tmp_path / "missing"))) == 0


class CountingReader(teams.ProcReader):
    def __init__(self, runnable: int):
        self.load = runnable
        self.samples = 0

    def runnable(self) -> int:
        self.samples += 1
        return self.load

    def workers(self) -> int:
        return 0

    def running_workers(self) -> int:
        return 0


def test_calls_sample_at_most_once_an_interval():
    now = [10.0]
    reader = CountingReader(runnable=2)
    limit = teams.TeamLimit(
        reader, cores=2, usable=lambda: 2, interval=0.1, shrunk_interval=0.01, clock=lambda: now[0]
    )

    def after(seconds: float) -> tuple[int, int]:
        now[0] += seconds
        limit.refresh()
        return reader.samples, limit.value

    assert after(0) == (1, 1)
    # Shrunk: sampled again after 10 ms, then 20, 40, 80 and 100 ms.
    for samples, wait in enumerate((0.01, 0.02, 0.04, 0.08, 0.1, 0.1), start=2):
        assert after(wait - 0.001) == (samples - 1, 1)
        assert after(0.001) == (samples, 1)
    reader.load = 1  # the other thread stopped: seen at the next sample
    assert after(0.1) == (8, 2)
    reader.load = 2  # a full team is sampled at the long interval only
    assert after(0.05) == (8, 2)
    assert after(0.05) == (9, 1)
    assert after(0.01) == (10, 1)  # and shrunk again: soon


def test_turning_the_check_off_uncaps_at_the_next_call():
    limit = teams.TeamLimit(CountingReader(runnable=5), cores=2, usable=lambda: 2)
    limit.refresh()
    assert limit.value == 1
    limit.set_enabled(False)
    limit.refresh()
    assert limit.value == 0


def test_the_default_mode_sizes_teams_by_load(monkeypatch):
    monkeypatch.delenv(teams.TEAMS_ENV, raising=False)
    assert teams.teams_mode() == "load"


def test_a_bad_mode_is_a_clear_error(monkeypatch):
    monkeypatch.setenv(teams.TEAMS_ENV, "auto")
    with pytest.raises(ValueError, match="LOWERLINE_OMP_TEAMS takes 'load'"):
        teams.teams_mode()


# A first call starts the OpenMP workers its team needs: none at 1 thread.
WORKERS = """
import os, torch, lowerline
from lowerline.runtime import teams

class Load(teams.ProcReader):
    def __init__(self, runnable):
        self.load = runnable
    def runnable(self):
        return self.load
    def workers(self):
        return 0
    def running_workers(self):
        return 0

def workers():
    names = [open(f"/proc/self/task/{t}/comm").read().strip() for t in os.listdir("/proc/self/task")]
    return names.count(teams.OPENMP_WORKER)

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU()).eval()
x = torch.randn(64, 256)
teams.LIMIT.reader = Load(1 + os.cpu_count())  # every core taken by other threads
compiled = lowerline.compile(model, x, num_threads=2)
torch.testing.assert_close(compiled(x), model(x).detach())
busy = workers()
teams.LIMIT.reader = Load(1)  # only the caller runs
teams.LIMIT.set_enabled(True)  # samples at the next call
torch.testing.assert_close(compiled(x), model(x).detach())
print(busy, teams.LIMIT.value, workers())
"""


def _workers_after_calls(cache_dir: str, **env: str) -> list[int]:
    environment = {**os.environ, "LOWERLINE_CACHE_DIR": cache_dir, **env}
    done = subprocess.run(
        [sys.executable, "-c", WORKERS], capture_output=True, text=True, env=environment
    )
    assert done.returncode == 0, done.stderr
    return [int(n) for n in done.stdout.split()[-3:]]


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="a 2-thread team needs 2 cores")
def test_a_busy_machine_runs_the_regions_on_the_caller_alone(cache_dir):
    busy, limit, quiet = _workers_after_calls(cache_dir, LOWERLINE_OMP_TEAMS="load")
    assert busy == 0  # the 2-thread code ran on 1 thread: no worker was started
    assert limit >= 2 and quiet == 1  # cores free again: a 2-thread team


def test_fixed_teams_ignore_the_load(cache_dir):
    busy, _, _ = _workers_after_calls(cache_dir, LOWERLINE_OMP_TEAMS="fixed")
    assert busy == 1


def test_calls_compute_the_same_while_a_torch_thread_spins(cache_dir, monkeypatch):
    monkeypatch.setenv(teams.TEAMS_ENV, "load")  # the default (conftest fixes teams)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(96, 128), torch.nn.GELU(), torch.nn.Linear(128, 32))
    model = model.eval()
    x = torch.randn(16, 96)
    compiled = lowerline.compile(model, x, num_threads=2)
    expected = model(x).detach()
    stop = threading.Event()

    def spin() -> None:  # torch ops back to back, the GIL released inside each
        a = torch.randn(128, 128)
        while not stop.is_set():
            a = torch.tanh(a @ a)

    spinner = threading.Thread(target=spin)
    spinner.start()
    try:
        for _ in range(200):
            torch.testing.assert_close(compiled(x), expected, rtol=1e-5, atol=1e-5)
    finally:
        stop.set()
        spinner.join()


class _Function(torch.nn.Module):
    def __init__(self, function):
        super().__init__()
        self.function = function

    def forward(self, x):
        return self.function(x)


# Kernels whose parallel work is not one tile per row: a long row's halves
# reduced apart then combined, a first-axis reduction split by columns,
# Chan-merged moments (of many rows and of one row split in runs), group
# norm's rows, Winograd, attention.
TEAM_CASES = {
    "softmax_long_row": (lambda: _Function(lambda x: torch.softmax(x, -1)), (1, 50257)),
    "sum_long_row": (lambda: _Function(lambda x: x.sum(-1)), (1, 131072)),
    "var_long_rows": (lambda: _Function(lambda x: x.var(-1)), (2, 393216)),
    "sum_first_axis": (lambda: _Function(lambda x: x.sum(0)), (4096, 16)),
    "group_norm": (lambda: torch.nn.GroupNorm(2, 64), (1, 64, 25, 51)),
    # One row longer than the cores' L2s hold in halves: its blocks split in
    # runs across the threads, merged in order; the normalization by halves.
    "group_norm_one_long_row": (lambda: torch.nn.GroupNorm(1, 4), (1, 4, 200003)),
    "layer_norm_one_long_row": (lambda: torch.nn.LayerNorm(800001), (1, 800001)),
    "cnn": (
        lambda: torch.nn.Sequential(
            torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(16, 8, 3)
        ),
        (8, 3, 13, 15),
    ),
    "encoder": (
        lambda: torch.nn.TransformerEncoderLayer(32, 4, 64, batch_first=True, dropout=0.0),
        (3, 17, 32),
    ),
}


@pytest.mark.parametrize("case", sorted(TEAM_CASES))
def test_every_team_size_computes_the_same_bits(case, cache_dir, monkeypatch):
    """The 2-thread code run by a team the limit shrank to 1 (a busy
    machine) gives the same bits as the whole team: work is split by tile,
    never by thread, so no per-thread part is left unwritten."""
    monkeypatch.setenv(teams.TEAMS_ENV, "load")  # the default (conftest fixes teams)
    monkeypatch.setattr(teams.LIMIT, "refresh", lambda: None)  # the cell is set below
    make, shape = TEAM_CASES[case]
    torch.manual_seed(0)
    model = make().eval()
    x = torch.randn(shape) + 3  # an offset: moments are not of centered data
    compiled = lowerline.compile(model, x, num_threads=2)
    results = {}
    try:
        for limit in (0, 1, 2, 1):
            teams.LIMIT.cell.value = limit
            results.setdefault(limit, []).append(compiled(x).clone())
    finally:
        teams.LIMIT.cell.value = 0
    whole = results[0][0]
    assert all(torch.equal(whole, each) for outs in results.values() for each in outs)
    torch.testing.assert_close(whole, model(x).detach(), rtol=2e-4, atol=2e-4)
