"""``lowerline-omp-loop-nowait``: no barrier after a parallel region's last loop.

Why: ``convert-scf-to-openmp`` turns each parallel loop nest into an
``omp.parallel`` region holding one ``omp.wsloop``, and a worksharing loop
without ``nowait`` ends with a barrier. The region's end is a barrier too
(the join, where the calling thread waits for its team), so every region
synchronizes its threads twice in a row: a batch-32 MLP's call runs three
regions, six barriers, where three do. Each barrier is another point where
a thread that the scheduler took off its core (a busy machine) holds the
others up. Upstream's conversion never sets ``nowait``, and no upstream pass
removes a barrier that the next one makes redundant.

Measured (2026-11-24, the 2-core machine loaded by other work, teams held
at 2 threads with ``LOWERLINE_OMP_DYNAMIC=0``, both builds in one process,
medians of 5-7 interleaved rounds): batch-1 MLP 212 -> 129 us a call,
batch-32 MLP 3.05 -> 0.68 ms, encoder layer 32.3 -> 26.6 ms. On a quiet
machine it is not measured yet; it only removes a barrier per region.

A loop gets ``nowait`` when it is the last op of its ``omp.parallel``
region (only the terminator follows). Loops with reductions are left alone:
lowerline's parallel tiles have none (they write disjoint tiles), and a
reduction's combining is not worth reasoning about for a barrier.

Before / after::

    omp.parallel {                    omp.parallel {
      omp.wsloop {                      omp.wsloop nowait {
        omp.loop_nest (%i) : ...          omp.loop_nest (%i) : ...
      }                                 }
      omp.terminator                    omp.terminator
    }                                 }
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from lowerline.pipeline.pass_api import Pass, ops_matching


def ends_its_region(wsloop: ir.Operation) -> bool:
    """Whether ``wsloop`` is the last op of an ``omp.parallel`` region, its
    terminator aside."""
    parent = wsloop.parent
    if parent is None or parent.name != "omp.parallel":
        return False
    block = wsloop.block
    operations = list(block.operations)
    last = operations[-2].operation if len(operations) >= 2 else None
    return last == wsloop and operations[-1].operation.name == "omp.terminator"


def has_reductions(wsloop: ir.Operation) -> bool:
    return "reduction_syms" in wsloop.attributes and len(wsloop.attributes["reduction_syms"]) > 0


@dataclass(frozen=True)
class OmpLoopNowait(Pass):
    flag = "lowerline-omp-loop-nowait"
    summary = "Drop the barrier of an OpenMP loop that ends its parallel region"
    anchor = "builtin.module"

    def run(self, op: ir.Operation) -> None:
        for loop in ops_matching(op, lambda o: o.name == "omp.wsloop"):
            if ends_its_region(loop) and not has_reductions(loop):
                loop.attributes["nowait"] = ir.UnitAttr.get()
