"""Dynamic dims: one artifact for a range of input sizes.

``lowerline.compile(model, x, dynamic={"x": {0: (1, 64)}})`` names, per
top-level tensor argument of ``forward``, the dims whose size varies and the
inclusive range each may take; ``dynamic_shapes=`` passes torch.export's own
specification (``torch.export.Dim``) through as it is. Either way
torch.export traces the dims as symbols, torch-mlir imports them as ``?``
dims, and the ranges are read back from the exported program
(``range_constraints``), the one source of truth for both spellings.

A batch-1 example does not specialize the dim to 1: the export runs with
torch's size-oblivious tracing (``backed_size_oblivious``), which treats a
symbolic size as "not known to be 0 or 1".

This module runs in the user's process: torch only, no MLIR.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class DynamicDim:
    """One dynamic dim of a flat input: its index, torch's symbol, and its
    inclusive range (``high`` None: no upper bound)."""

    dim: int
    symbol: str
    low: int
    high: int | None

    def describe(self) -> str:
        return f"[{self.low}, {'inf' if self.high is None else self.high}]"

    def holds(self, size: int) -> bool:
        return size >= self.low and (self.high is None or size <= self.high)


def _range(name: str, dim: Any, bounds: Any) -> tuple[int, int]:
    if (
        not isinstance(bounds, tuple | list)
        or len(bounds) != 2
        or not all(type(b) is int for b in bounds)
    ):
        raise TypeError(
            f"dynamic[{name!r}][{dim!r}] takes a (min, max) pair of ints, got {bounds!r}"
        )
    low, high = bounds
    if low < 0 or high < low:
        raise ValueError(f"dynamic[{name!r}][{dim!r}]: the range ({low}, {high}) is empty or < 0")
    return low, high


def _dims_of(name: str, value: Any, dims: Any) -> dict[int, torch.export.Dim]:
    """The torch.export ``Dim`` of each dim of one tensor argument."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(
            f"dynamic[{name!r}]: {name} is a {type(value).__name__}; dynamic dims are for "
            "top-level tensor arguments (use dynamic_shapes= for containers)"
        )
    if not isinstance(dims, dict):
        raise TypeError(f"dynamic[{name!r}] takes {{dim: (min, max)}}, got {dims!r}")
    found = {}
    for dim, bounds in dims.items():
        if type(dim) is not int or not -value.dim() <= dim < value.dim():
            raise ValueError(f"dynamic[{name!r}]: {name} has {value.dim()} dims, no dim {dim!r}")
        low, high = _range(name, dim, bounds)
        dim %= value.dim()
        size = value.shape[dim]
        if not low <= size <= high:
            raise ValueError(
                f"dynamic[{name!r}]: the example {name} has size {size} in dim {dim}, "
                f"outside its range [{low}, {high}]"
            )
        # torch.export refuses a Dim of max < 2 or equal bounds: such a dim is static.
        if high >= 2 and high > low:
            found[dim] = torch.export.Dim(f"{_identifier(name)}_{dim}", min=low, max=high)
    return found


def _identifier(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)


def export_dynamic_shapes(names: list[str], args: tuple, dynamic: dict[str, Any]) -> dict[str, Any]:
    """``dynamic`` as torch.export's ``dynamic_shapes`` for ``forward(*args)``
    whose positional parameters are ``names``."""
    if not isinstance(dynamic, dict):
        raise TypeError(f"dynamic takes {{argument: {{dim: (min, max)}}}}, got {dynamic!r}")
    unknown = sorted(set(dynamic) - set(names))
    if unknown:
        raise ValueError(
            f"dynamic names {', '.join(map(repr, unknown))}, not an argument of forward "
            f"(arguments: {', '.join(names)})"
        )
    return {
        name: _dims_of(name, value, dynamic[name]) if name in dynamic else None
        for name, value in zip(names, args, strict=True)
    }


@contextlib.contextmanager
def size_oblivious(active: bool) -> Iterator[None]:
    """Trace with torch's size-oblivious semantics when dims are dynamic: a
    batch-1 example must not specialize its batch dim to 1."""
    if not active:
        yield
        return
    from torch.fx.experimental import _config

    # torch's config modules get patch() from install_config_module, unseen by mypy.
    with _config.patch(backed_size_oblivious=True):  # type: ignore[attr-defined]
        yield


def range_end(value: Any) -> int | None:
    """A range end as an int; None for torch's infinity."""
    number = float(value)
    return None if math.isinf(number) else int(number)


def input_dims(exported: torch.export.ExportedProgram) -> list[tuple[DynamicDim, ...]]:
    """The dynamic dims of each user input of ``exported``, in order (empty
    for static inputs and numbers). An input dim that is an expression of
    another's symbol (``2*s0``) is refused: its size cannot be read alone."""
    ranges = {str(symbol): r for symbol, r in exported.range_constraints.items()}
    users = [
        spec.arg.name
        for spec in exported.graph_signature.input_specs
        if spec.kind.name == "USER_INPUT"
    ]
    nodes = {node.name: node for node in exported.graph.nodes if node.op == "placeholder"}
    found = []
    for name in users:
        value = nodes[name].meta.get("val") if name in nodes else None
        dims: list[DynamicDim] = []
        for index, size in enumerate(getattr(value, "shape", ())):
            if isinstance(size, int):
                continue
            symbol = str(size)
            if symbol not in ranges:
                raise ValueError(
                    f"input {name} dim {index} has the size {symbol}, an expression of other "
                    "dims: give each dynamic dim its own torch.export.Dim"
                )
            bounds = ranges[symbol]
            dims.append(
                DynamicDim(index, symbol, range_end(bounds.lower) or 0, range_end(bounds.upper))
            )
        found.append(tuple(dims))
    return found
