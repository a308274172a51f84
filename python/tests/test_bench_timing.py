"""bench/timing.py's ``settle``: benchmarks wait for lowerline's workers to
finish warming up before their first timed call; ``settle_threads``: the
suite waits for a system's spinning threads after its block."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import threading
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))

import timing

# Busy for about a second of CPU, then says so and sleeps (no CPU) until killed.
BUSY_THEN_IDLE = """
import sys, time
start = time.process_time()
while time.process_time() - start < 1.0:
    pass
sys.stdout.write("idle\\n"); sys.stdout.flush()
time.sleep(60)
"""


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
def test_settle_waits_for_a_busy_child_and_not_for_an_idle_one():
    child = subprocess.Popen([sys.executable, "-c", BUSY_THEN_IDLE], stdout=subprocess.PIPE)
    try:
        # quiet=2 s: a child waiting for a core on a loaded machine uses no
        # CPU either, but not for that long.
        timing.settle(quiet=2.0, limit=60.0)
        ready, _, _ = select.select([child.stdout], [], [], 0)
        assert ready, "settle returned while the child was still busy"
        assert child.poll() is None  # idle, not finished: settle waited for CPU, not for exit
        assert timing.settle(quiet=0.3, limit=60.0) < 5.0
    finally:
        child.kill()
        child.wait()


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
def test_settle_threads_waits_for_a_spinning_thread_of_this_process():
    # Like a thread pool after its last task: spins for a while, then sleeps.
    spinning_until = time.monotonic() + 0.5
    spun, release = threading.Event(), threading.Event()

    def pool_thread():
        while time.monotonic() < spinning_until:
            pass
        spun.set()
        release.wait()  # asleep (state S), not running

    thread = threading.Thread(target=pool_thread)
    thread.start()
    try:
        timing.settle_threads(limit=60.0)
        assert spun.is_set(), "settle_threads returned while the thread was still spinning"
        assert timing.settle_threads(limit=60.0) < 5.0  # a sleeping thread is not waited for
    finally:
        release.set()
        thread.join()
