"""Parse MLIR's textual pass-pipeline syntax into a tree.

lowerline-opt needs its own parser because lowerline's Python passes cannot be
named inside a string given to ``PassManager.parse`` (see DESIGN.md). The tree
keeps MLIR's syntax exactly: every element remembers its offset in the original
string so errors can point at it, and ``PassElement.text()`` gives back the
element as MLIR would read it.

Grammar (MLIR's PassRegistry.cpp)::

    pipeline ::= anchor '(' element (',' element)* ')'
    element  ::= pipeline | name options?
    options  ::= '{' ... '}'        (balanced braces, quotes respected)
"""

from __future__ import annotations

from dataclasses import dataclass, field

_DELIMITERS = set("(){},")


class PipelineSyntaxError(ValueError):
    """A malformed pipeline string; ``pos`` is the 0-based offset of the fault."""

    def __init__(self, message: str, pos: int):
        super().__init__(message)
        self.message = message
        self.pos = pos


@dataclass
class PassElement:
    """One pass or named pipeline, with its raw option text (inside the braces)."""

    name: str
    options: str
    pos: int

    def text(self) -> str:
        return f"{self.name}{{{self.options}}}" if self.options else self.name


@dataclass
class NestedPipeline:
    """``anchor(elements...)``: run ``elements`` on each ``anchor`` op nested one level down."""

    anchor: str
    elements: list[PassElement | NestedPipeline] = field(default_factory=list)
    pos: int = 0

    def text(self) -> str:
        return f"{self.anchor}({','.join(e.text() for e in self.elements)})"


# Anchors nested deeper than this are refused (MLIR's op nesting is far
# shallower; the parser recurses once per level).
MAX_PIPELINE_DEPTH = 64


class _Scanner:
    def __init__(self, text: str):
        self.text = text
        self.pos = 0
        self.depth = 0

    def skip_space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def peek(self) -> str:
        self.skip_space()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def expect(self, char: str, what: str) -> None:
        if self.peek() != char:
            found = repr(self.peek()) if self.peek() else "end of pipeline"
            raise PipelineSyntaxError(f"expected '{char}' {what}, found {found}", self.pos)
        self.pos += 1

    def name(self) -> tuple[str, int]:
        self.skip_space()
        start = self.pos
        while (
            self.pos < len(self.text)
            and self.text[self.pos] not in _DELIMITERS
            and not self.text[self.pos].isspace()
        ):
            self.pos += 1
        if start == self.pos:
            found = repr(self.text[start]) if start < len(self.text) else "end of pipeline"
            raise PipelineSyntaxError(f"expected a pass or anchor name, found {found}", start)
        return self.text[start : self.pos], start

    def braced(self) -> str:
        """Consume ``{...}`` (already at '{') and return what is inside."""
        start = self.pos
        depth = 0
        quote = ""
        while self.pos < len(self.text):
            char = self.text[self.pos]
            self.pos += 1
            if quote:
                quote = "" if char == quote else quote
            elif char in "\"'":
                quote = char
            elif char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
                if depth == 0:
                    return self.text[start + 1 : self.pos - 1].strip()
        raise PipelineSyntaxError("unbalanced '{' in pass options", start)


def _parse_elements(scanner: _Scanner) -> list[PassElement | NestedPipeline]:
    elements: list[PassElement | NestedPipeline] = []
    if scanner.peek() == ")":
        return elements
    while True:
        name, pos = scanner.name()
        if scanner.peek() == "(":
            elements.append(_parse_nested(scanner, name, pos))
        else:
            options = scanner.braced() if scanner.peek() == "{" else ""
            elements.append(PassElement(name, options, pos))
        if scanner.peek() != ",":
            return elements
        scanner.pos += 1


def _parse_nested(scanner: _Scanner, anchor: str, pos: int) -> NestedPipeline:
    if scanner.depth >= MAX_PIPELINE_DEPTH:
        raise PipelineSyntaxError(f"pipeline nested deeper than {MAX_PIPELINE_DEPTH} anchors", pos)
    scanner.expect("(", f"after anchor '{anchor}'")
    scanner.depth += 1
    nested = NestedPipeline(anchor, _parse_elements(scanner), pos)
    scanner.depth -= 1
    scanner.expect(")", f"to close '{anchor}('")
    return nested


def parse_pipeline(text: str) -> NestedPipeline:
    """Parse a whole ``anchor(...)`` pipeline, as given to ``--pass-pipeline``."""
    scanner = _Scanner(text)
    anchor, pos = scanner.name()
    if scanner.peek() != "(":
        raise PipelineSyntaxError(
            "expected the pipeline to be wrapped in its anchor op, e.g. 'builtin.module(...)'",
            pos,
        )
    pipeline = _parse_nested(scanner, anchor, pos)
    if scanner.peek():
        raise PipelineSyntaxError("unexpected text after the pipeline", scanner.pos)
    return pipeline


def parse_elements(text: str) -> list[PassElement | NestedPipeline]:
    """Parse a comma-separated element list (the body of a named pipeline)."""
    scanner = _Scanner(text)
    elements = _parse_elements(scanner)
    if scanner.peek():
        raise PipelineSyntaxError("unexpected text in pipeline", scanner.pos)
    return elements
