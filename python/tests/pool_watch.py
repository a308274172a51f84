"""Watching a runtime pool (``lowerline.runtime.native.Pool``) while calls
run at once: which call holds which buffer, and whether two ever share one.

Used in pytest's process (test_arena.py) and in the subprocesses of the GPU
tests (test_gpu_launches.py), which put this folder on ``sys.path``.
"""

from __future__ import annotations

import threading


class SharingWatch:
    """A pool's ``watch``: the first take of each of ``callers`` threads
    waits until all of them hold a buffer, so that that many calls are in
    flight at once whatever the scheduling. ``shared``: addresses taken
    while another call held them; ``held``: those not given back."""

    def __init__(self, callers: int):
        self.held: set[int] = set()
        self.shared: list[int] = []
        self._lock = threading.Lock()
        self._together = threading.Barrier(callers, timeout=120)
        self._callers = callers
        self._takes = 0

    def __call__(self, event: str, address: int) -> None:
        with self._lock:
            if event == "give":
                self.held.discard(address)
                return
            if address in self.held:
                self.shared.append(address)
            self.held.add(address)
            self._takes += 1
            wait = self._takes <= self._callers
        if wait:
            self._together.wait()
