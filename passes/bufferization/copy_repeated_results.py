"""``lowerline-copy-repeated-results``: give each repeated returned allocation its own buffer.

Why: in LLVM 22, ``buffer-results-to-out-params{hoist-static-allocs}`` crashes
(SIGSEGV) when a function returns the same ``memref.alloc`` result more than
once: it replaces the allocation by the first out-parameter and erases it,
then reads the erased op for the second occurrence (llvm/llvm-project#219492,
fixed after 22 by #220232). A model returning one tensor twice (``return y,
y``) bufferizes to exactly that. Upstream has no pass that duplicates
returned buffers; this one does what the later upstream fix does, before the
buggy pass runs: every occurrence of an allocation after the first returns a
fresh allocation of its own, filled by a copy, so each out-parameter gets its
own buffer and the hoisting sees distinct allocations.

Before / after::

    %a = memref.alloc() : memref<4xf32>         %a = memref.alloc() : memref<4xf32>
    ...                                         ...
    return %a, %a                               %b = memref.alloc() : memref<4xf32>
                                                memref.copy %a, %b
                                                return %a, %b

Only results defined by ``memref.alloc`` are touched: a repeated function
argument or view is already copied into each out-parameter by the pass.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import memref

from lowerline.pipeline.pass_api import Pass, ops_matching


def _is_alloc(value: ir.Value) -> bool:
    return isinstance(value, ir.OpResult) and value.owner.name == "memref.alloc"


@dataclass(frozen=True)
class CopyRepeatedResults(Pass):
    flag = "lowerline-copy-repeated-results"
    summary = "Return a copy for every repeat of an allocation among a return's operands"
    anchor = "func.func"

    def run(self, op: ir.Operation) -> None:
        # The function's own returns (not those of functions nested in it).
        returns = ops_matching(op, lambda child: child.name == "func.return" and child.parent == op)
        for ret in returns:
            self._copy_repeats(ret)

    def _copy_repeats(self, ret: ir.Operation) -> None:
        seen: list[ir.Value] = []
        for index, value in enumerate(list(ret.operands)):
            if not _is_alloc(value):
                continue
            if value not in seen:
                seen.append(value)
                continue
            with ir.InsertionPoint(ret), ret.location:
                fresh = value.owner.clone().result
                memref.CopyOp(value, fresh)
            ret.operands[index] = fresh
