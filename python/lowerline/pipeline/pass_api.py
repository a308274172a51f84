"""lowerline's pass infrastructure: the pass base class, named pipelines, and
the one adapter that hands Python passes to MLIR's PassManager (the name ->
pass table is ``lowerline.pipeline.registry``).

A pass is a frozen dataclass whose fields are its textual options::

    @dataclass(frozen=True)
    class WidenI1Memrefs(Pass):
        flag = "lowerline-widen-i1-memrefs"
        summary = "..."
        def run(self, op): ...

``run`` raises ``PassFailed`` after emitting its errors on the offending ops'
locations. It is the only module that calls ``PassManager.add(callable)``;
with ``LOWERLINE_CHECK_PROTOCOL=1`` (the test suites set it) it also checks
the attributes each pass leaves against ``lowerline.pipeline.protocol``.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from lowerline.pipeline.options import format_options

if TYPE_CHECKING:  # the registry itself must not load MLIR: the user's process imports it
    from mlir import ir
    from mlir import passmanager as mlir_pm


# Set to 1 to check every lowerline pass's output against the protocol.
CHECK_PROTOCOL_ENV = "LOWERLINE_CHECK_PROTOCOL"


class PassFailed(Exception):
    """Raised by ``Pass.run`` after it emitted its diagnostics.

    The contract is MLIR's for a failed pass: the pipeline stops and the IR is
    discarded. A pass may fail after rewriting part of the IR (GPU distribution
    finds unmappable ops while it maps the others), so nothing downstream may
    use it: ``lowerline-opt`` writes no output (test/opt/output-file-on-failure),
    the compile worker reports an error, and every reproducer is the failed
    stage's *input*, not the IR the pass left. A pass that can decide before
    rewriting should (most do).
    """


def resolve_target(lookup: Callable[[str], Any], name: str, op: ir.Operation) -> Any:
    """``lookup(name)`` (a target description), or an error on ``op`` naming
    the known targets and ``PassFailed``: a pass's ``target`` option."""
    try:
        return lookup(name)
    except ValueError as err:
        op.location.emit_error(str(err))
        raise PassFailed() from None


def defined_functions(module: ir.Operation) -> list[ir.Operation]:
    """The ``func.func`` ops at the top of ``module`` that have a body."""
    return [
        op.operation
        for op in module.regions[0].blocks[0].operations
        if op.operation.name == "func.func" and op.operation.regions[0].blocks
    ]


@dataclass(frozen=True)
class Pass:
    """Base of lowerline's passes. Subclasses are frozen dataclasses."""

    flag: ClassVar[str]
    summary: ClassVar[str]
    # The op the pass runs on ("builtin.module", "func.func"), or None for any op.
    anchor: ClassVar[str | None] = None

    def run(self, op: ir.Operation) -> None:
        raise NotImplementedError

    def text(self) -> str:
        options = format_options(self)
        return f"{self.flag}{{{options}}}" if options else self.flag


@dataclass(frozen=True)
class NamedPipeline:
    """A pipeline usable as a pass name: ``build(options)`` returns its elements."""

    flag: str
    summary: str
    options: type
    build: Callable[[Any], str]
    # Fields of ``options`` this pipeline reads: the ones it accepts and lists.
    uses: tuple[str, ...] = ()
    anchor: str = "builtin.module"


def ops_matching(root: ir.Operation, predicate: Callable[[ir.Operation], bool]) -> list:
    """Every op nested in ``root`` (``root`` included) for which ``predicate``
    holds, in walk order. Collect first, then rewrite: walking while erasing
    is unsafe."""
    from mlir import ir

    found: list = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if predicate(op):
            found.append(op)
        return ir.WalkResult.ADVANCE

    root.walk(visit)
    return found


def check_protocol(p: Pass, op: ir.Operation) -> None:
    """After ``p`` ran on ``op``: with ``LOWERLINE_CHECK_PROTOCOL=1``, an error
    on each op carrying an undeclared or mistyped ``lowerline.*`` attribute
    and ``PassFailed``. Off by default: it walks the whole IR after every pass,
    a cost the tests pay and compiles do not."""
    if os.environ.get(CHECK_PROTOCOL_ENV, "") in ("", "0"):
        return
    from lowerline.pipeline import protocol

    if not protocol.check(op, p.flag):
        raise PassFailed()


def python_pass_manager(p: Pass, anchor: str, context: ir.Context) -> mlir_pm.PassManager:
    """A PassManager on ``anchor`` ops that runs the Python pass ``p``.

    The pass is added as an op-agnostic pass: the bindings' ``op_name=`` makes
    the pass unschedulable, and a pass anchored on func.func inside a module
    pass manager aborts (measured on the 22.1 bindings), so scheduling is done
    by lowerline's own scheduler and this manager only ever sees anchor ops.
    Running through a PassManager (rather than calling ``run`` directly) keeps
    MLIR's verifier after the pass; the protocol check (when enabled) runs
    before it.
    """

    from mlir import passmanager as mlir_pm

    def callback(op: ir.Operation, handle: mlir_pm.ExternalPass) -> None:
        try:
            with op.context, op.location:
                p.run(op)
                check_protocol(p, op)
        except PassFailed:
            handle.signal_pass_failure()
        except Exception as err:  # a bug in the pass must not cross into C++
            # Exceptions raised inside MLIR callbacks arrive wrapped with a
            # traceback in the message; the last line names the real error.
            reason = str(err).strip().splitlines()[-1] if str(err).strip() else type(err).__name__
            if os.environ.get("LOWERLINE_DEBUG"):
                traceback.print_exc()
            op.location.emit_error(f"internal error in {p.flag}: {reason}")
            handle.signal_pass_failure()

    with context:
        manager = mlir_pm.PassManager(anchor)
        manager.add(callback, name=type(p).__name__, argument=p.flag, description=p.summary)
    return manager
