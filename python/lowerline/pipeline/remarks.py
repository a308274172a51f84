"""What passes decided and refused, as records: ``Remark``.

A decision-making pass (tile and fuse, vectorize, Winograd) reports each
choice it made about an op, and each op it refused or left as plain loops,
as a ``Remark``: the pass flag, the op's name, its location and a message.
``publish`` hands the records to every open ``collecting`` block (the compile
worker turns the ``FALLBACK`` ones into ``CompiledModule.fallbacks``) and,
with the pass's ``explain`` option, prints them to stderr as MLIR remarks::

    model.py:12:8: remark: linalg.matmul: g0: matmul, tiles: ... [lowerline-tile-and-fuse]

Why not ``Location.emit_remark``: the Python bindings can emit errors only
(``Location.emit_error``), so remarks are formatted here the way MLIR prints
them (``file:line:col: remark: ...``, then a ``note: called from`` per caller
of a call-site location).

Records are plain data (JSON round trip) and this module never imports MLIR:
the user's process, which must not load MLIR, reads them from the compile
cache. Functions that take an ``ir.Operation`` only read ``name`` and
``location`` from it.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mlir import ir

# What a remark says about its op:
DECISION = "decision"  # transformed as described (tiled, fused, rewritten)
REFUSAL = "refusal"  # a rewrite refused; the op is handled another way (its own nest)
FALLBACK = "fallback"  # left as plain (scalar) loops: not tiled or not vectorized
KINDS = (DECISION, REFUSAL, FALLBACK)

# A file location as MLIR prints it: "file":line:col.
_FILE_LOC = re.compile(r'"((?:[^"\\]|\\.)*)":(\d+):(\d+)')


@dataclass(frozen=True)
class Remark:
    """One pass's decision or refusal about one op.

    ``frames`` are the ``file:line:col`` positions of the op's location,
    innermost first (a call-site location from torch: the torch function,
    then the lines of ``forward`` that called it); empty when unknown.
    """

    pass_flag: str
    op: str
    message: str
    kind: str = DECISION
    frames: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"remark kind {self.kind!r} is not one of {', '.join(KINDS)}")

    @property
    def location(self) -> str:
        """Where MLIR would print the remark: the innermost ``file:line:col``."""
        return self.frames[0] if self.frames else ""

    @property
    def source_line(self) -> str:
        """The outermost ``file:line:col``: for a torch model, the line of the
        exported module's ``forward`` the op comes from."""
        return self.frames[-1] if self.frames else ""

    def format(self) -> str:
        """The remark as mlir-opt prints one: ``loc: remark: ...``, then the callers."""
        where = f"{self.location}: " if self.location else ""
        lines = [f"{where}remark: {self.op}: {self.message} [{self.pass_flag}]"]
        lines += [f"{caller}: note: called from" for caller in self.frames[1:]]
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "frames": list(self.frames)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Remark:
        return cls(**{**data, "frames": tuple(data.get("frames", ()))})


def frames_of(location: Any) -> tuple[str, ...]:
    """Every ``file:line:col`` inside an MLIR location (names, call sites,
    fused), innermost first, as MLIR prints it; line 0 (a module parsed from
    text) says nothing and is left out."""
    found = _FILE_LOC.finditer(str(location))
    return tuple(f"{m[1]}:{m[2]}:{m[3]}" for m in found if m[2] != "0")


def about(op: ir.Operation, pass_flag: str, message: str, kind: str = DECISION) -> Remark:
    """A remark on ``op`` (read now: the pass may erase the op afterwards)."""
    return Remark(pass_flag, op.name, message, kind, frames_of(op.location))


# The lists that ``collecting`` blocks gather into, innermost last.
_SINKS: ContextVar[tuple[list[Remark], ...]] = ContextVar("lowerline_remark_sinks", default=())


@contextmanager
def collecting() -> Iterator[list[Remark]]:
    """Gather every remark published inside the block into the yielded list."""
    records: list[Remark] = []
    token = _SINKS.set((*_SINKS.get(), records))
    try:
        yield records
    finally:
        _SINKS.reset(token)


@contextmanager
def muted() -> Iterator[None]:
    """Remarks published inside the block reach no ``collecting`` block: a
    copy of the IR lowered once more (the explorer's numerics) would report
    every decision twice."""
    token = _SINKS.set(())
    try:
        yield
    finally:
        _SINKS.reset(token)


def publish(records: Iterable[Remark], explain: bool = False) -> None:
    """Hand ``records`` to the open ``collecting`` blocks; with ``explain``
    (a pass's option), also print them to stderr as MLIR remarks."""
    records = list(records)
    for sink in _SINKS.get():
        sink.extend(records)
    if explain and records:
        sys.stderr.write("".join(r.format() + "\n" for r in records))
        sys.stderr.flush()
