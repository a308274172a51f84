"""``lowerline-collapse-expanded-elementwise``: an elementwise op over
(b, m, n) that reads a (b*m, n) result through ``tensor.expand_shape`` runs
over (b*m, n) instead, and its own result is expanded after it.

Why: torch computes ``nn.Linear`` on a (batch, sequence, features) input as
a 2-D ``addmm`` between two views, so torch-mlir's IR for a transformer's
MLP is::

    %h = linalg.matmul (520x192, 192x768) ; bias add over 520x768
    %e = tensor.expand_shape %h : 520x768 into 8x65x768
    %g = linalg.generic (GELU) ins(%e) : 8x65x768
    %c = tensor.collapse_shape %g : 8x65x768 into 520x768 ; next matmul

The reshape between the bias add and the GELU (and between the second
projection and the residual add) keeps ``lowerline-fuse-elementwise`` from
merging them and ``lowerline-tile-and-fuse`` from running them as the
matmul's epilogue: each was a separate pass over the whole activation (the
GELU alone moved 3.2 MB per call of a batch-8 ViT block). Collapsed, the
GELU reads the bias add directly, the two fuse, and the chain runs on the
matmul's register tiles. Upstream has the rewrite in C++
(``populateFoldReshapeOpsByCollapsingPatterns``) but registers it only in a
test pass (``-test-linalg-elementwise-fusion-patterns``); no registered pass
or transform op applies it.

Matched: a generic with one result over static (b, m, n), all loops
parallel, no ``linalg.index`` in its body, reading an ``expand_shape`` that
splits the first dim of a 2-D tensor in two; every operand either reads b
and m together and in order (it is collapsed too) or neither (a bias over
n). The collapsed operands must already be contiguous values (function
arguments, results of linalg ops, empties, constants and other expands), so
no collapse makes a copy. Anything else is left alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from lowerline.passes.graph.collapse_broadcast_batch_matmul import (
    _collapsible,
    _reads_rows,
    collapse_generic,
    expand_rows,
)
from lowerline.passes.support.linalg_info import indexing_maps
from lowerline.pipeline.pass_api import Pass, ops_matching

# Producers whose results are whole, contiguous tensors: a collapse of them
# is a view. (An extract_slice may be strided across the collapsed dims.)
_CONTIGUOUS = ("tensor.empty", "tensor.expand_shape", "arith.constant")


def _rows_expanded(value: ir.Value) -> ir.Value | None:
    """The 2-D source of ``value`` when it is an expand_shape of its first
    dim into two, else None."""
    owner = value.owner if isinstance(value, ir.OpResult) else None
    if owner is None or owner.name != "tensor.expand_shape":
        return None
    groups = [[ir.IntegerAttr(i).value for i in g] for g in owner.attributes["reassociation"]]
    return owner.operands[0] if groups == [[0, 1], [2]] else None


def _contiguous(value: ir.Value) -> bool:
    if isinstance(value, ir.BlockArgument):
        return True
    name = value.owner.name
    return name.startswith("linalg.") or name in _CONTIGUOUS


def collapse_expanded(op: ir.Operation) -> bool:
    """Rewrite ``op`` over the collapsed rows; whether it was."""
    result = op.results[0].type if len(op.results) == 1 else None
    if not isinstance(result, ir.RankedTensorType) or result.rank != 3:
        return False
    shape = list(result.shape)
    sources = [(v, _rows_expanded(v)) for v in op.operands]
    expanded = [(v, s) for v, s in sources if s is not None]
    if not expanded or not _collapsible(op, shape):
        return False
    for value, amap in zip(op.operands, indexing_maps(op), strict=True):
        if _reads_rows(amap) is not None and not _contiguous(value):
            return False
    replaced, by = expanded[0]
    with ir.InsertionPoint(op), op.location:
        value = collapse_generic(op, replaced, by)
        rows = expand_rows(value, shape, replaced)
    op.results[0].replace_all_uses_with(rows)
    op.erase()
    return True


@dataclass(frozen=True)
class CollapseExpandedElementwise(Pass):
    flag = "lowerline-collapse-expanded-elementwise"
    summary = "Run an elementwise op that reads a row-expanded 2-D result over the 2-D rows"
    anchor = "func.func"

    def run(self, op: ir.Operation) -> None:
        for generic in ops_matching(op, lambda o: o.name == "linalg.generic"):
            collapse_expanded(generic)
