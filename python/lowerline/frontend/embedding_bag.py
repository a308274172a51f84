"""``EmbeddingBag`` in mean and max mode, and sums with a padding id, weights or
a last offset, as ops torch-mlir lowers, before import.

torch.export keeps ``aten._embedding_bag`` (``_embedding_bag_forward_only``
in inference), which torch-mlir's importer renames to
``embedding_bag.padding_idx``; its linalg lowering takes only ``mode="sum"``,
and fails with a ``padding_idx``, ``per_sample_weights`` or
``include_last_offset``.
``nn.EmbeddingBag(mode="mean")`` on a 2-D batch of ids, the usual text
classifier, failed with that op, the ``arange`` of its offsets and a ``view``
reported as having no lowering. A plain sum stays with torch-mlir.

These entries write ATen's definition (``aten/src/ATen/native/EmbeddingBag.cpp``):
bag ``b`` holds the ids ``indices[offsets[b]:offsets[b + 1]]`` (the last bag
runs to the end, or ``offsets`` ends with the total when
``include_last_offset``); ids equal to ``padding_idx`` take no part (a mean
does not count them); an empty bag gives zeros. Each id's bag comes from a
running count of the bag starts (``_bags``), the rows from ``embedding``
(with its bounds checks), and the per-bag sums and maxima from
``index_add``/``scatter_reduce``, which lowerline lowers itself.

The extra outputs are ATen's bookkeeping, which ``F.embedding_bag`` drops:
``offset2bag`` is each id's bag, ``bag_size`` the ids counted per bag, and
``max_indices`` (max mode) the row chosen for each output element (the
smallest id among equal maxima); in mean mode it is ``bag_size``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

aten = torch.ops.aten

SUM, MEAN, MAX = 0, 1, 2


def _bags(indices: torch.Tensor, offsets: torch.Tensor, include_last_offset: bool):
    """Each id's bag and the number of bags.

    An id's bag is the number of bags starting at or before its position,
    less one (ATen's ``offset2bag``; an empty bag, equal offsets, is skipped
    over). Counted in O(ids + bags): each bag adds one at its start, and a
    running sum over the positions counts the starts so far. Not
    ``bucketize`` of the positions into the offsets: torch-mlir lowers it as
    an ids x bags comparison and an argmax over it, 1600 x 8 at batch 8 of
    the suite's bag model and quadratic in the batch for fixed-length bags.
    """
    bags = offsets.numel() - 1 if include_last_offset else offsets.numel()
    n = indices.numel()
    # A start past the last id (empty trailing bags) lands in the extra slot
    # n, which no id reads; a negative start counts for every position, as in
    # a comparison of each position with it.
    starts = offsets[:bags].to(torch.int64).clamp(0, n)
    marks = torch.zeros(n + 1, dtype=torch.int64)
    marks = marks.index_add(0, starts, torch.ones(bags, dtype=torch.int64))
    return torch.cumsum(marks[:n], 0) - 1, bags


def embedding_bag(
    weight: torch.Tensor,
    indices: torch.Tensor,
    offsets: torch.Tensor,
    scale_grad_by_freq: bool = False,
    mode: int = SUM,
    sparse: bool = False,
    per_sample_weights: torch.Tensor | None = None,
    include_last_offset: bool = False,
    padding_idx: int | None = -1,
) -> Any:
    padding = -1 if padding_idx is None else padding_idx
    padded = padding >= 0
    plain_sum = mode == SUM and not (
        padded or include_last_offset or per_sample_weights is not None
    )
    if plain_sum or indices.dim() != 1 or weight.dim() != 2:
        return NotImplemented
    bag, bags = _bags(indices, offsets, include_last_offset)
    # ATen's -1 and None both mean "no padding id" here (nn.EmbeddingBag
    # passes -1 for None; a negative padding_idx of the module is normalized).
    keep = torch.ones_like(indices, dtype=torch.bool)
    if padded:
        keep = torch.ne(indices, padding)
    rows = aten.embedding.default(weight, indices)
    counts = torch.zeros(bags, dtype=torch.int64).index_add(0, bag, keep.to(torch.int64))
    if mode in (SUM, MEAN):
        if per_sample_weights is not None:  # sum mode only (ATen checks)
            rows = rows * per_sample_weights.unsqueeze(1)
        if padded:
            rows = torch.where(keep.unsqueeze(1), rows, torch.zeros((), dtype=weight.dtype))
        # The bags' sums as an index_add of whole rows, which lowerline
        # combines with vectors (lowerline-lower-tm-tensor). Not a segment sum
        # from a cumsum's differences: that rounds differently from ATen and
        # loses small bags next to large sums.
        sums = torch.zeros(bags, weight.shape[1], dtype=weight.dtype).index_add(0, bag, rows)
        if mode == SUM:
            return sums, bag, counts, counts
        out = sums / counts.clamp(min=1).unsqueeze(1).to(weight.dtype)
        return out, bag, counts, counts
    return _max_bags(weight, indices, rows, bag, bags, keep, counts)


def _max_bags(weight, indices, rows, bag, bags, keep, counts) -> tuple:
    width = weight.shape[1]
    spread = bag.unsqueeze(1).expand(-1, width)
    lowest = torch.full((), float("-inf"), dtype=weight.dtype)
    candidates = torch.where(keep.unsqueeze(1), rows, lowest)
    start = torch.full((bags, width), float("-inf"), dtype=weight.dtype)
    maxima = start.scatter_reduce(0, spread, candidates, "amax", include_self=True)
    filled = counts.unsqueeze(1) > 0
    out = torch.where(filled, maxima, torch.zeros((), dtype=weight.dtype))
    # The row each maximum came from: the smallest id that reached it.
    hits = keep.unsqueeze(1) & (rows == maxima.gather(0, spread))
    sentinel = torch.full((), torch.iinfo(torch.int64).max, dtype=torch.int64)
    ids = torch.where(hits, indices.unsqueeze(1).expand(-1, width), sentinel)
    chosen = torch.full((bags, width), torch.iinfo(torch.int64).max, dtype=torch.int64)
    chosen = chosen.scatter_reduce(0, spread, ids, "amin", include_self=True)
    max_indices = torch.where(filled, chosen, torch.full((), -1, dtype=torch.int64))
    return out, bag, counts, max_indices


def table() -> dict[Any, Callable[..., Any]]:
    """The entries, by ATen overload."""
    return {
        aten._embedding_bag.default: embedding_bag,
        aten._embedding_bag_forward_only.default: embedding_bag,
        aten.embedding_bag.padding_idx: embedding_bag,
    }
