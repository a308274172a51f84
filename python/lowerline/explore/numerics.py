"""Compiled outputs against eager, as rows of the explorer's numerics table:
the library's, and every stage's IR run on the same inputs by the compile
worker (``driver.stage_numerics``), whose inputs are written here."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

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


def write_probe_inputs(folder: str, args: list[dict[str, Any]], flat: Sequence[Any]) -> bool:
    """Write the library's arguments (the import worker's ``args`` without
    the weights) from the caller's flat inputs to ``folder/input-<n>.npy``;
    False, writing nothing, when one is a buffer the model writes (its value
    is the module's state, not an input)."""
    if any(arg["kind"] not in ("weight", "input") for arg in args):
        return False
    os.makedirs(folder, exist_ok=True)
    inputs = [arg for arg in args if arg["kind"] == "input"]
    for index, arg in enumerate(inputs):
        array = flat[arg["user_index"]].detach().cpu().numpy()
        np.save(os.path.join(folder, f"input-{index}.npy"), np.ascontiguousarray(array))
    return True


def write_expected(folder: str, expected: Sequence[Any]) -> None:
    """Eager's tensor outputs, flattened, as ``folder/expected-<n>.npy``
    (what ``lowerline bisect`` compares each pass's output with)."""
    os.makedirs(folder, exist_ok=True)
    for index, tensor in enumerate(expected):
        array = np.ascontiguousarray(tensor.detach().cpu().numpy())
        np.save(os.path.join(folder, f"expected-{index}.npy"), array)


def load_probe(probe: dict[str, Any] | None) -> dict[str, Any]:
    """Each stage's outputs (arrays, read now: the files go with the
    compile's workspace) or its error."""
    loaded: dict[str, Any] = {}
    for stage, result in (probe or {}).items():
        if "outputs" in result:
            loaded[stage] = [np.load(path) for path in result["outputs"]]
        else:
            loaded[stage] = result["error"]
    return loaded


def stage_rows(expected: Any, probed: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """Rows for every stage whose IR ran, and notes for those that did not."""
    import torch
    from torch.utils import _pytree as pytree

    leaves = [leaf for leaf in pytree.tree_leaves(expected) if isinstance(leaf, torch.Tensor)]
    rows: list[dict[str, Any]] = []
    notes = []
    for stage, outputs in probed.items():
        if isinstance(outputs, str):
            notes.append(f"numerics of stage {stage}: its IR did not run ({outputs})")
        elif len(outputs) != len(leaves):
            notes.append(
                f"numerics of stage {stage}: {len(outputs)} results, eager has {len(leaves)}"
            )
        else:
            rows += compare(leaves, [torch.from_numpy(o) for o in outputs], stage)
    return rows, notes
