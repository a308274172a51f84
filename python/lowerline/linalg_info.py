"""Reading linalg ops from Python: indexing maps, iterator kinds, a short name.

Shared by the passes that inspect linalg ops (tile-and-fuse, fuse-elementwise,
vectorize), so that each reads the attributes the same way.
"""

from __future__ import annotations

from mlir import ir


def indexing_maps(op: ir.Operation) -> list[ir.AffineMap]:
    return [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]


def iterator_kinds(op: ir.Operation) -> list[str]:
    """``["parallel", "reduction", ...]`` of a ``linalg.generic``."""
    return [
        str(a).split("<")[-1].rstrip(">") for a in ir.ArrayAttr(op.attributes["iterator_types"])
    ]


def all_parallel(op: ir.Operation) -> bool:
    return all(kind == "parallel" for kind in iterator_kinds(op))


def describe(op: ir.Operation) -> str:
    """``linalg.matmul at "file.mlir":4:8``: for explain output."""
    loc = str(op.location)
    return f"{op.name} at {loc[4:-1] if loc.startswith('loc(') else loc}"
