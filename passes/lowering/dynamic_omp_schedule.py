"""``lowerline-dynamic-omp-schedule``: parallel tiles handed out one at a time.

Why: ``convert-scf-to-openmp`` emits ``omp.wsloop`` with the default static
schedule: each thread gets an equal, fixed share of the tiles. On a machine
whose cores are shared (virtual CPUs, other processes), one thread is often
late and the other waits for it at the loop's barrier (a ResNet basic
block's two convolutions here: ~4% of the samples in OpenMP's barrier wait,
and a wide spread between rounds). With ``schedule(dynamic)`` each thread
takes the next tile when it is done with one, at the cost of one atomic
increment per tile; lowerline's parallel tiles are coarse (one per core or
more, tens of microseconds or more each), so that cost does not show.
Upstream's ``convert-scf-to-openmp`` has no schedule option; this pass sets
the ``schedule_kind`` of the loops it made.

Loops of fewer than ``MIN_TILES`` tiles (or bounds not known at compile
time) keep the static schedule, as do loops that already name a schedule.

Not the cure for a busy core. With another process spinning on one of two
cores, a 2-thread batch-32 MLP (three regions of two tiles) took 2.2-7.4 ms
a call with the static schedule and 3.2-52 ms with ``schedule(dynamic)`` on
every loop (``MIN_TILES`` 2), against 0.38-0.40 ms at 1 thread (a loaded
machine, 2026-11-24): the calling thread does take the late worker's tiles,
but the region then ends with a join barrier that waits for the worker all
the same, until the scheduler gives it a slice of its core. What helps is a
smaller team: the runtime sizes each call's teams by the cores other
threads leave free (``lowerline.runtime.teams``, bench/busy-ab.md).

Before / after::

    omp.wsloop {                      omp.wsloop schedule(dynamic) {
      omp.loop_nest (%i) : ...          omp.loop_nest (%i) : ...
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from lowerline.passes.support.ir_constants import int_constant
from lowerline.pipeline.pass_api import Pass, ops_matching

# Fewer tiles than this: each thread gets one or two, nothing to balance, and
# the dispatch calls cost more than they save (a batch-1 MLP: +1 us a call).
MIN_TILES = 8


def trip_count(wsloop: ir.Operation) -> int | None:
    """Iterations of the loop nest in ``wsloop`` when its bounds are constants."""
    nest = wsloop.regions[0].blocks[0].operations[0]
    constants = [int_constant(v) for v in nest.operands]
    values = [v for v in constants if v is not None]
    if nest.name != "omp.loop_nest" or len(values) != len(constants) or len(values) % 3:
        return None
    rank = len(values) // 3
    lows, highs, steps = values[:rank], values[rank : 2 * rank], values[2 * rank :]
    count = 1
    for low, high, step in zip(lows, highs, steps, strict=True):
        count *= max(0, -(-(high - low) // step)) if step > 0 else 0
    return count


@dataclass(frozen=True)
class DynamicOmpSchedule(Pass):
    flag = "lowerline-dynamic-omp-schedule"
    summary = "Give OpenMP worksharing loops of many tiles schedule(dynamic)"
    anchor = "builtin.module"

    def run(self, op: ir.Operation) -> None:
        dynamic = ir.Attribute.parse("#omp<schedulekind dynamic>")
        for loop in ops_matching(op, lambda o: o.name == "omp.wsloop"):
            count = trip_count(loop)
            if "schedule_kind" not in loop.attributes and count and count >= MIN_TILES:
                loop.attributes["schedule_kind"] = dynamic
