"""Compiled outputs against eager, as rows of the explorer's numerics table."""

from __future__ import annotations

import math
from typing import Any

from lowerline.driver.tolerance import for_dtype, worst_mismatch


def compare(expected: Any, actual: Any, stage: str = "library") -> list[dict[str, Any]]:
    """One row per flattened output: its largest difference from eager, the
    tolerance of its dtype and whether every element is inside it."""
    import torch
    from torch.utils import _pytree as pytree

    rows = []
    pairs = zip(pytree.tree_leaves(expected), pytree.tree_leaves(actual), strict=True)
    for index, (e, a) in enumerate(pairs):
        e, a = torch.as_tensor(e), torch.as_tensor(a)
        diff = float((e.double() - a.double()).abs().max()) if e.numel() else 0.0
        rows.append(
            {
                "stage": stage,
                "output": f"#{index} {str(e.dtype).removeprefix('torch.')}{list(e.shape)}",
                "max_abs_diff": diff if math.isfinite(diff) else str(diff),  # JSON has no NaN
                "tolerance": for_dtype(e.dtype).describe(),
                "ok": worst_mismatch([e], [a]) is None,
            }
        )
    return rows
