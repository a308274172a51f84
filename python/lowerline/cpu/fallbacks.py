"""Which ops the tiled stage left as plain loops, and why.

After the tiled stage every op that was tiled and vectorized has become
vector code: a linalg op still in the module is lowered by
``convert-linalg-to-loops`` to scalar loops (the loops stage). That makes
the module itself the list of fallbacks, whatever the passes said; the
passes' ``FALLBACK`` remarks (``lowerline.pipeline.remarks``) give the
reasons. An op that a pass reported but that is gone by the end of the stage
(folded, or vectorized after all) is no fallback; an op left without a
remark says so, which a test treats like any unexpected fallback. A pass
of a later stage that still leaves an op as loops (``lowerline-amx-tiles``
refusing a contraction marked for tiles) publishes its own ``FALLBACK``
remark, which is added when the compile ends.

``Watch`` is what the compile worker uses: it collects the remarks of the
stages and reads the module when the tiled stage is done.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

from mlir import ir

from lowerline.pipeline.pass_api import ops_matching
from lowerline.pipeline.protocol import AMX_TILES
from lowerline.pipeline.remarks import FALLBACK, Remark, collecting, frames_of

STAGE = "tiled"
STAGE_FLAG = "lowerline-to-tiled"  # the stage's named pipeline: remarks made here
NO_REASON = "left as loops: no pass reported why"
TILING_OFF = "left as loops: the tiled stage is off (tile=False)"


def _left_as_loops(op: ir.Operation) -> bool:
    # The ops inside a linalg op's body (linalg.yield, linalg.index) go with
    # it; an AMX contraction becomes tiles in the loops stage (lowerline-amx-tiles).
    if AMX_TILES.has(op):
        return False
    return op.name.startswith("linalg.") and op.name not in ("linalg.yield", "linalg.index")


def left_as_loops(module: ir.Operation, published: list[Remark], tiled: bool) -> list[Remark]:
    """One ``FALLBACK`` remark per (op, location, reason) still in ``module``
    after the tiled stage; ``published``: the remarks of the stage's passes;
    ``tiled``: whether the stage tiled at all (``CpuOptions.tile``)."""
    reasons: dict[tuple[str, tuple[str, ...]], list[Remark]] = {}
    for remark in published:
        if remark.kind == FALLBACK:
            reasons.setdefault((remark.op, remark.frames), []).append(remark)
    found = []
    for op in ops_matching(module, _left_as_loops):
        name, frames = op.name, frames_of(op.location)
        default = Remark(STAGE_FLAG, name, NO_REASON if tiled else TILING_OFF, FALLBACK, frames)
        found += reasons.get((name, frames)) or [default]
    return _unique(found)


def reported(published: list[Remark]) -> list[Remark]:
    """The ``FALLBACK`` remarks of ``published``, each once (the GPU stages,
    whose ops outside groups are mapped to threads, not left as loops)."""
    return _unique([remark for remark in published if remark.kind == FALLBACK])


def _unique(remarks: list[Remark]) -> list[Remark]:
    """Each (op, location, reason) once: a tiled op's pieces share all three."""
    unique: dict[tuple, Remark] = {}
    for remark in remarks:
        unique.setdefault((remark.op, remark.frames, remark.message), remark)
    return list(unique.values())


class Watch:
    """Collects remarks while the stages run (``with Watch(...) as watch``) and
    the fallbacks once the tiled stage is done (``after_stage``, the stage
    runner's hook); ``json()`` is what ``result.json`` records.

    ``tiled``: ``CpuOptions.tile``; None for a GPU compile, whose fallbacks
    are the passes' remarks alone.
    """

    def __init__(self, tiled: bool | None):
        self.tiled = tiled
        self.fallbacks: list[Remark] = []
        self._published: list[Remark] = []
        # How many remarks the tiled stage's end had seen: a pass of a later
        # stage that still leaves an op as loops (lowerline-amx-tiles refusing
        # a contraction) reports a FALLBACK of its own after that point.
        self._seen_at_tiled: int | None = None
        self._collecting = collecting()

    def __enter__(self) -> Watch:
        self._published = self._collecting.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._collecting.__exit__(exc_type, exc, traceback)
        if self.tiled is None:
            self.fallbacks = reported(self._published)
        elif self._seen_at_tiled is not None:
            later = reported(self._published[self._seen_at_tiled :])
            self.fallbacks = _unique(self.fallbacks + later)

    def after_stage(self, stage: str, module: ir.Module) -> None:
        if stage == STAGE and self.tiled is not None:
            self.fallbacks = left_as_loops(module.operation, self._published, self.tiled)
            self._seen_at_tiled = len(self._published)

    def json(self) -> list[dict[str, Any]]:
        return [remark.to_json() for remark in self.fallbacks]
