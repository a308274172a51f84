"""``lowerline-hoist-thread-number``: one ``omp_get_thread_num`` call per
thread and parallel region, not one per tile.

Why: ``lowerline-plan-arena`` gives each thread a slot of the arena for the
scratch of a parallel loop's tiles, and reads the thread number in the loop
body (an ``llvm.call @omp_get_thread_num``, the only way to it: the OpenMP
dialect has no op for it). After ``convert-scf-to-openmp`` the body is an
``omp.loop_nest`` wrapped in a ``memref.alloca_scope``, which canonicalize
inlines only when nothing inside may allocate on the stack; a call of
unknown effects may (declaring ``memory_effects`` does not change that), so
the scope stays, and its region fails to lower once its loops are blocks
(``convert-scf-to-cf``: "expects region #0 to have 0 or 1 blocks").
Upstream's ``loop-invariant-code-motion`` does not move a call whose effects
it does not know, and nothing upstream knows that the thread number is the
same for a thread's whole parallel region.

This pass moves each such call in a worksharing loop nest to the top of its
``omp.parallel`` region, one call per region (a thread runs the region once
and keeps its number in it), which also saves a call per tile.

Before / after::

    omp.parallel {                            omp.parallel {
      omp.wsloop {                              %t = llvm.call @omp_get_thread_num()
        omp.loop_nest (%i) ... {                omp.wsloop {
          memref.alloca_scope {                   omp.loop_nest (%i) ... {
            %t = llvm.call @omp_get_thread_num()    memref.alloca_scope {
            (uses of %t)                              (uses of %t)
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from lowerline.passes.bufferization.plan_arena import THREAD_NUMBER
from lowerline.pipeline.pass_api import Pass, ops_matching


def _is_thread_number(op: ir.Operation) -> bool:
    callee = op.attributes.get("callee", None)
    return (
        op.name == "llvm.call"
        and isinstance(callee, ir.FlatSymbolRefAttr)
        and callee.value == THREAD_NUMBER
        and not op.operands
    )


def _enclosing(op: ir.Operation, name: str) -> ir.Operation | None:
    parent = op.parent
    while parent is not None and parent.name != name:
        parent = parent.parent
    return None if parent is None else parent.operation


@dataclass(frozen=True)
class HoistThreadNumber(Pass):
    flag = "lowerline-hoist-thread-number"
    summary = "Read the OpenMP thread number once per parallel region, not once per tile"
    anchor = "func.func"

    def run(self, op: ir.Operation) -> None:
        hoisted: dict[ir.Operation, ir.Value] = {}
        for call in ops_matching(op, _is_thread_number):
            if _enclosing(call, "omp.loop_nest") is None:
                continue  # already outside the loop
            region = _enclosing(call, "omp.parallel")
            if region is None:
                continue
            number = hoisted.get(region)
            if number is None:
                call.move_before(region.regions[0].blocks[0].operations[0])
                hoisted[region] = call.result
                continue
            call.result.replace_all_uses_with(number)
            call.erase()
