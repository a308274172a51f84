"""``embedding`` and ``index_select`` as one bounds check per index, then a
row gather with no check in its body, before import.

torch-mlir lowers ``aten.embedding`` (and ``aten.gather``, which
``index_select`` used to become) with a bounds-check ``cf.assert`` per
output element: 1600x64 checks for an embedding bag at batch 8. The assert
in the loop body keeps the vectorizer off, so every gather was a scalar
loop. Its ``index_select`` has no check at all (a bad index read outside
the tensor).

Here each index is checked once: ``torch.gather`` of ``arange(n)`` at the
flat index, whose lowering keeps torch-mlir's two checks and messages
("index must be smaller than dim size", "index must be larger or equal to
0") and the source line of the op, now over the indices only. Its result is
the index itself, and the index is *read through* it, so the rows are read
only after the check and, when a check fails (lowerline-report-failed-asserts
yields zero for the guarded value), at index 0: never outside the tensor.
No table is written: ``lowerline-fold-iota-extracts`` reads ``arange`` at
the index as the index itself, clamped into the table.
The rows are then torch-mlir's unchecked ``index_select`` of the checked
index, a generic whose body reads a whole contiguous row at a computed
offset: ``lowerline-read-gather-indices`` reads the row index in the body,
and the vectorizer then reads each row with one contiguous
``vector.transfer_read``.

``torch.gather`` whose index is one line expanded along every other dim
(``gather(x, 0, ids[:, None].expand(-1, n))``: stride 0 there, the sizes of
``x``) is the same row gather, and becomes one; any other gather keeps
torch-mlir's check per element.

``embedding``'s ``padding_idx`` and ``scale_grad_by_freq`` only change the
gradient, so the forward is the same for every value of them.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import Any

import torch

aten = torch.ops.aten

# Set while an entry traces its own unchecked index_select: the nested call
# must stay the op (torch-mlir's lowering), not come back here.
_ROWS_ONLY = contextvars.ContextVar("lowerline_rows_only", default=False)


def checked_index(index: torch.Tensor, size: int) -> torch.Tensor:
    """``index`` flattened, each entry asserted to lie in ``[0, size)`` once;
    0 in place of an entry whose check failed."""
    flat = index.reshape(-1).to(torch.int64)
    return torch.gather(torch.arange(size, dtype=torch.int64), 0, flat)


def _rows(x: torch.Tensor, dim: int, index: torch.Tensor) -> torch.Tensor:
    """torch-mlir's index_select, with no check: ``index`` is checked."""
    token = _ROWS_ONLY.set(True)
    try:
        return aten.index_select.default(x, dim, index)
    finally:
        _ROWS_ONLY.reset(token)


def index_select(x: torch.Tensor, dim: int, index: torch.Tensor) -> Any:
    if _ROWS_ONLY.get() or x.dim() == 0:
        return NotImplemented
    dim %= x.dim()
    return _rows(x, dim, checked_index(index, x.shape[dim]))


def embedding(
    weight: torch.Tensor,
    indices: torch.Tensor,
    padding_idx: int = -1,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Any:
    if weight.dim() != 2:
        return NotImplemented  # torch refuses it; keep the op and its error
    rows = _rows(weight, 0, checked_index(indices, weight.shape[0]))
    return rows.reshape(*indices.shape, weight.shape[1])


def _is_expanded_line(x: torch.Tensor, dim: int, index: torch.Tensor) -> bool:
    """Whether ``index`` repeats one line along ``dim`` over all of ``x``'s
    other dims (a view with stride 0 there)."""
    return all(
        index.shape[d] == x.shape[d] and (index.stride(d) == 0 or index.shape[d] == 1)
        for d in range(x.dim())
        if d != dim
    )


def gather(x: torch.Tensor, dim: int, index: torch.Tensor, sparse_grad: bool = False) -> Any:
    # 1-D gathers stay: checked_index is one.
    if x.dim() < 2 or index.dim() != x.dim():
        return NotImplemented
    dim %= x.dim()
    if not _is_expanded_line(x, dim, index):
        return NotImplemented
    line = index[tuple(slice(None) if d == dim else 0 for d in range(x.dim()))]
    return _rows(x, dim, checked_index(line, x.shape[dim]))


def table() -> dict[Any, Callable[..., Any]]:
    """The entries, by ATen overload."""
    return {
        aten.index_select.default: index_select,
        aten.embedding.default: embedding,
        aten.gather.default: gather,
    }
