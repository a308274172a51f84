"""The workers start at compile entry, so that their seconds of start-up
overlap torch.export (lowerline.driver.workers.prestart_workers); the import
worker started for one thread serves the next compile after that thread
ended; a compile worker started ahead is used only in the environment it
was started in.

No timings here: what is checked is the order of events (the worker process
exists while the model is being exported, before any job reached it) and how
many workers were started.
"""

from __future__ import annotations

import threading

import pytest
import torch

from lowerline import api
from lowerline.driver import workers
from lowerline.driver.workers import CompileWorkerSpare, ImportWorker
from lowerline.processes import kill_group


@pytest.fixture
def no_worker():
    """Each test starts from a process without workers."""
    ImportWorker.stop()
    CompileWorkerSpare.stop()
    yield
    ImportWorker.stop()
    CompileWorkerSpare.stop()


def _model(rows: int, cols: int) -> torch.nn.Module:
    torch.manual_seed(rows * 31 + cols)
    return torch.nn.Sequential(torch.nn.Linear(cols, rows), torch.nn.Tanh()).eval()


@pytest.mark.parametrize("batch", [1, 5])
def test_worker_exists_while_the_model_is_exported(no_worker, monkeypatch, batch):
    seen: list[tuple[int | None, int | None, dict[str, int]]] = []
    export = api.export_program

    def spy(module, args, *dynamic):
        seen.append((ImportWorker.pid(), CompileWorkerSpare.pid(), dict(workers.jobs)))
        return export(module, args, *dynamic)

    monkeypatch.setattr(api, "export_program", spy)
    launched, jobs = dict(workers.launches), dict(workers.jobs)
    model, x = _model(7, 13), torch.randn(batch, 13)
    compiled = api.compile(model, x, cache=False)
    torch.testing.assert_close(compiled(x), model(x).detach())
    ((importer, spare, jobs_at_export),) = seen
    # Both started before the export ran, with no job yet: ahead of their work.
    assert importer is not None and spare is not None
    assert jobs_at_export == jobs
    # The worker started ahead imported the model; the spare compiled it (one
    # compile worker started in all) and is gone with its job.
    assert ImportWorker.pid() == importer
    assert CompileWorkerSpare.pid() is None
    for kind in ("import", "compile"):
        assert workers.launches[kind] == launched.get(kind, 0) + 1
        assert workers.jobs[kind] == jobs.get(kind, 0) + 1


def test_a_bad_argument_starts_no_worker(no_worker):
    launched = dict(workers.launches)
    with pytest.raises(ValueError, match="max_specializations"):
        api.compile(_model(3, 5), torch.randn(2, 5), max_specializations=0)
    assert ImportWorker.pid() is None and CompileWorkerSpare.pid() is None
    assert dict(workers.launches) == launched


def test_worker_outlives_the_thread_that_first_needed_it(no_worker):
    """The worker dies with its parent (PR_SET_PDEATHSIG), and its parent is
    the thread that started it: started by a compile in a short-lived thread
    it would be killed when that thread ends, and the next compile would pay
    its start-up again."""
    results: list[BaseException | api.CompiledModule] = []

    def compile_in_thread() -> None:
        try:
            results.append(api.compile(_model(4, 9), torch.randn(3, 9), cache=False))
        except BaseException as err:  # reported below, in the test's thread
            results.append(err)

    thread = threading.Thread(target=compile_in_thread)
    thread.start()
    thread.join()
    (first,) = results
    assert isinstance(first, api.CompiledModule), first
    launched = workers.launches["import"]
    # Seconds of export and lowering: a worker killed with the thread is
    # gone (and reaped) by the time this compile needs it.
    model, x = _model(6, 11), torch.randn(2, 11)
    compiled = api.compile(model, x, cache=False)
    torch.testing.assert_close(compiled(x), model(x).detach())
    assert workers.launches["import"] == launched


def test_dynamo_backend_starts_the_worker_before_the_first_call(no_worker):
    from lowerline.dynamo import backend

    seen: list[int | None] = []

    def spy(gm, example_inputs):
        lowered = backend(gm, example_inputs)
        seen.append(ImportWorker.pid())  # the graph is compiled at its first call, later
        return lowered

    torch._dynamo.reset()
    model, x = _model(5, 8), torch.randn(4, 8)
    compiled = torch.compile(model, backend=spy)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x))
    assert seen and seen[0] is not None


def test_spare_compile_worker_is_not_used_in_a_changed_environment(no_worker, monkeypatch):
    """A spare inherited the environment of its start: a variable set since
    (LOWERLINE_LLVM_BIN, LOWERLINE_DEBUG...) would be missed, so a new worker
    takes the job and the stale spare is stopped."""
    CompileWorkerSpare.prestart()
    stale = CompileWorkerSpare._process
    assert stale is not None and CompileWorkerSpare.pid() == stale.pid
    monkeypatch.setenv("LOWERLINE_TEST_SPARE", "changed")
    taken = CompileWorkerSpare.take()
    try:
        assert taken.pid != stale.pid
        assert stale.poll() is not None  # stopped and reaped
    finally:
        kill_group(taken)
        taken.wait()
    # In an unchanged environment the spare is the one taken.
    CompileWorkerSpare.prestart()
    ready = CompileWorkerSpare.pid()
    taken = CompileWorkerSpare.take()
    try:
        assert taken.pid == ready
    finally:
        kill_group(taken)
        taken.wait()
