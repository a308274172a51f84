"""Collect MLIR diagnostics, print them like mlir-opt, and verify expectations.

``DiagnosticCollector`` is attached to a context with errors routed to
handlers (``emit_error_diagnostics``), so parse errors, verifier errors and
pass remarks all arrive in one list. ``verify_expectations`` implements
mlir-opt's ``--verify-diagnostics``: ``// expected-error {{...}}`` with
``@+N``, ``@-N``, ``@above`` and ``@below`` designators, for errors, warnings,
remarks and notes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mlir import ir

from lowerline.pipeline.source import SOURCE_PLACEHOLDER

_SEVERITY = {
    ir.DiagnosticSeverity.ERROR: "error",
    ir.DiagnosticSeverity.WARNING: "warning",
    ir.DiagnosticSeverity.NOTE: "note",
    ir.DiagnosticSeverity.REMARK: "remark",
}
_FILE_LOC = re.compile(r'"((?:[^"\\]|\\.)*)":(\d+):(\d+)')


@dataclass
class Diag:
    severity: str
    file: str | None
    line: int
    col: int
    message: str

    def format(self) -> str:
        where = f"{self.file}:{self.line}:{self.col}: " if self.file else ""
        return f"{where}{self.severity}: {self.message}"


def _split_location(location: ir.Location) -> tuple[str | None, int, int]:
    """The first file:line:col inside ``location`` (names, call sites, fused)."""
    match = _FILE_LOC.search(str(location))
    if not match:
        return None, 0, 0
    return match.group(1), int(match.group(2)), int(match.group(3))


class DiagnosticCollector:
    """Gathers every diagnostic of a context, notes flattened after their parent."""

    def __init__(self, context: ir.Context):
        self.diags: list[Diag] = []
        # Locations from the parser carry a placeholder file name (source.py).
        self.source_name: str | None = None
        context.emit_error_diagnostics = True
        self._handle = context.attach_diagnostic_handler(self._on_diagnostic)

    def _on_diagnostic(self, diagnostic: ir.Diagnostic) -> bool:
        self._add(diagnostic)
        return True

    def _add(self, diagnostic: ir.Diagnostic) -> None:
        file, line, col = _split_location(diagnostic.location)
        if file == SOURCE_PLACEHOLDER and self.source_name is not None:
            file = self.source_name
        severity = _SEVERITY[diagnostic.severity]
        self.diags.append(Diag(severity, file, line, col, diagnostic.message))
        for note in diagnostic.notes:
            self._add(note)

    def take(self) -> list[Diag]:
        diags, self.diags = self.diags, []
        return diags

    def detach(self) -> None:
        self._handle.detach()


_EXPECTED = re.compile(
    r"expected-(error|warning|remark|note)\s*(?:@([+-]\d+|above|below))?\s*\{\{(.*?)\}\}"
)


@dataclass
class Expectation:
    severity: str
    line: int  # the line the diagnostic must be on
    message: str
    source_line: int  # where the expected-* comment is
    matched: bool = False


def parse_expectations(text: str, first_line: int = 1) -> list[Expectation]:
    """Find ``expected-*`` annotations in ``text`` whose first line is ``first_line``."""
    lines = text.splitlines()
    designated = [_EXPECTED.search(line) is not None for line in lines]
    found = []
    for index, line in enumerate(lines):
        for match in _EXPECTED.finditer(line):
            target = _target_line(match.group(2), index, designated)
            found.append(
                Expectation(match.group(1), target + first_line, match.group(3), index + first_line)
            )
    return found


def _target_line(designator: str | None, index: int, designated: list[bool]) -> int:
    if designator is None:
        return index
    if designator == "below":
        target = index + 1
        while target < len(designated) and designated[target]:
            target += 1
        return target
    if designator == "above":
        target = index - 1
        while target > 0 and designated[target]:
            target -= 1
        return target
    return index + int(designator)


# The note MLIR attaches to a diagnostic on an op ("see current operation: ...").
# mlir-opt turns it off under --verify-diagnostics; the bindings cannot, so
# verification drops it instead.
_OP_NOTE = "see current operation:"


def _without_op_notes(diags: list[Diag]) -> list[Diag]:
    return [d for d in diags if not (d.severity == "note" and d.message.startswith(_OP_NOTE))]


def verify_expectations(diags: list[Diag], expectations: list[Expectation], file: str) -> list[str]:
    """Match diagnostics against expectations; return mlir-opt style complaints."""
    problems = []
    for diag in _without_op_notes(diags):
        match = next(
            (
                e
                for e in expectations
                if not e.matched
                and e.severity == diag.severity
                and e.line == diag.line
                and e.message in diag.message
            ),
            None,
        )
        if match is not None:
            match.matched = True
        elif diag.file is None or diag.line == 0:
            problems.append(f"{file}: error: unexpected {diag.severity}: {diag.message}")
        else:
            problems.append(
                f"{diag.file}:{diag.line}:{diag.col}: error: unexpected {diag.severity}: "
                f"{diag.message}"
            )
    for e in expectations:
        if not e.matched:
            problems.append(
                f'{file}:{e.source_line}: error: expected {e.severity} "{e.message}" '
                "was not produced"
            )
    return problems
