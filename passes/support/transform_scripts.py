"""Applying transform-dialect scripts from passes.

lowerline's decision-making passes write a transform script (text) and apply
it to the payload module with the transform interpreter. A failed
application is reported as the first diagnostic line instead of an error on
the context, so the pass can decide what a failure means (leave the op as it
is, or fail).
"""

from __future__ import annotations

import re

from mlir import ir
from mlir.dialects.transform import interpreter

ANY = "!transform.any_op"
FOR = '!transform.op<"scf.for">'
# The location a diagnostic line starts with ("loc(...): "): the caller
# reports the failure on the op it concerns.
_LOCATION = re.compile(r"^\s*loc\(.*?\): ")


def canonicalize(handle: str) -> str:
    """Script text: canonicalization patterns applied to the ops under ``handle``."""
    return (
        f"  transform.apply_patterns to {handle} {{\n"
        f"    transform.apply_patterns.canonicalization\n"
        f"  }} : {ANY}\n"
    )


def peel(loop: str, first: str, rest: str) -> str:
    """Script text: the ``scf.for`` ``loop`` peeled into its full iterations
    ``first`` and the partial last one ``rest``."""
    return (
        f"  {loop}_for = transform.cast {loop} : {ANY} to {FOR}\n"
        f"  {first}, {rest} = transform.loop.peel {loop}_for : ({FOR}) -> ({ANY}, {ANY})\n"
    )


def sequence(body: str) -> str:
    """A module holding ``@__transform_main`` with ``body`` (uses ``%root``)."""
    return (
        "module attributes {transform.with_named_sequence} {\n"
        f"transform.named_sequence @__transform_main(%root: {ANY} {{transform.readonly}}) {{\n"
        f"{body}  transform.yield\n}}\n}}\n"
    )


class _Quiet:
    """Collects the diagnostics of one application instead of reporting them."""

    def __init__(self, context: ir.Context):
        self.messages: list[str] = []
        self._context = context

    def __enter__(self) -> _Quiet:
        self._handle = self._context.attach_diagnostic_handler(self._on)
        return self

    def _on(self, diagnostic: ir.Diagnostic) -> bool:
        self.messages.append(diagnostic.message.splitlines()[0])
        return True

    def __exit__(self, *exc: object) -> None:
        self._handle.detach()


def apply_script(payload: ir.Operation, body: str) -> str | None:
    """Apply one transform sequence to ``payload``; None on success, else the
    first diagnostic line. A failure may leave part of the script applied; the
    transform ops keep the IR valid when they fail."""
    script = ir.Module.parse(sequence(body), payload.context)
    entry = script.body.operations[0]
    with _Quiet(payload.context) as quiet:
        try:
            interpreter.apply_named_sequence(payload, entry, script)
        except ValueError as err:
            lines = [*quiet.messages, *str(err).splitlines()[1:]] or [str(err)]
            return _LOCATION.sub("", lines[0].removeprefix("Diagnostic message at ")).strip()
    return None
