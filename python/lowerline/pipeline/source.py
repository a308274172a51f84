"""Read ``.mlir`` input the way mlir-opt does: split on ``// -----``, parse
with the file's name in every location, and wrap top-level ops in a module.

``Module.parse`` gives mlir-opt's top-level rules (an implicit module, or the
user's single ``builtin.module``; aliases like ``#map = ...``), but names
every location ``"-"``. So the parsed module's op and block argument locations
are renamed to the input's name afterwards, and the diagnostic collector does
the same for parser errors (``SOURCE_PLACEHOLDER``). Each split chunk is
padded with blank lines so that its locations keep the line numbers of the
whole file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mlir import ir

from lowerline import weights

SPLIT_MARKER = re.compile(r"^\s*// -----", re.MULTILINE)
# The file name the bindings' Module.parse gives every location.
SOURCE_PLACEHOLDER = "-"


# Brackets nested deeper than this are refused before MLIR's parser sees
# them: it recurses per level and overflows the C stack (measured: 3000
# nested regions, or 100k parentheses, killed lowerline-opt with SIGSEGV;
# 2000 regions, about 4000 brackets, still parsed).
MAX_NESTING = 1000


class NestingTooDeep(ValueError):
    """The input nests brackets deeper than ``MAX_NESTING``; its error was
    emitted on the context at the offending bracket."""


@dataclass
class Chunk:
    text: str
    first_line: int  # 1-based line of the chunk's first line in the file


def split_input(text: str, split: bool) -> list[Chunk]:
    if not split:
        return [Chunk(text, 1)]
    chunks = []
    start = 0
    for marker in SPLIT_MARKER.finditer(text):
        chunks.append(Chunk(text[start : marker.start()], text.count("\n", 0, start) + 1))
        line_end = text.find("\n", marker.end())
        start = len(text) if line_end < 0 else line_end + 1
    chunks.append(Chunk(text[start:], text.count("\n", 0, start) + 1))
    return chunks


def _renamed(loc: ir.Location, name: str, cache: dict[str, ir.Location]) -> ir.Location:
    key = str(loc)
    if key in cache:
        return cache[key]
    new = loc
    if loc.is_a_file():
        if loc.filename == SOURCE_PLACEHOLDER:
            new = ir.Location.file(name, loc.start_line, loc.start_col, context=loc.context)
    elif loc.is_a_name():
        new = ir.Location.name(loc.name_str, _renamed(loc.child_loc, name, cache), loc.context)
    elif loc.is_a_callsite():
        callee = _renamed(loc.callee, name, cache)
        new = ir.Location.callsite(callee, [_renamed(loc.caller, name, cache)], loc.context)
    elif loc.is_a_fused():
        parts = [_renamed(part, name, cache) for part in loc.locations]
        new = ir.Location.fused(parts, context=loc.context)
    cache[key] = new
    return new


def _rename_locations(module: ir.Module, name: str) -> None:
    cache: dict[str, ir.Location] = {}

    def visit(op: ir.Operation) -> ir.WalkResult:
        op.location = _renamed(op.location, name, cache)
        for region in op.regions:
            for block in region.blocks:
                for arg in block.arguments:
                    arg.set_location(_renamed(arg.location, name, cache))
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)


def too_deep(text: str) -> tuple[int, int] | None:
    """The 1-based (line, column) of the first bracket of ``text`` nested
    deeper than ``MAX_NESTING`` (strings and ``//`` comments skipped), or None."""
    depth, line, line_start, i, n = 0, 1, 0, 0, len(text)
    while i < n:
        char = text[i]
        if char == "\n":
            line, line_start = line + 1, i + 1
        elif char == '"':
            i += 1
            while i < n and text[i] != '"' and text[i] != "\n":
                i += 2 if text[i] == "\\" else 1
        elif char == "/" and text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        elif char in "([{":
            depth += 1
            if depth > MAX_NESTING:
                return line, i - line_start + 1
        elif char in ")]}":
            depth -= 1
        i += 1
    return None


def parse_chunk(chunk: Chunk, source_name: str, context: ir.Context) -> ir.Module:
    """Parse one chunk into a module; raises ir.MLIRError on bad input, and
    ``NestingTooDeep`` on input nested too deeply to parse safely."""
    if (where := too_deep(chunk.text)) is not None:
        line, col = where[0] + chunk.first_line - 1, where[1]
        message = f"brackets nested deeper than {MAX_NESTING} levels: refused before parsing"
        ir.Location.file(source_name, line, col, context=context).emit_error(message)
        raise NestingTooDeep(message)
    padding = "\n" * (chunk.first_line - 1)
    module = ir.Module.parse(padding + chunk.text, context=context)
    # Passes that rewrite weights need their bytes, which the bindings cannot read back.
    weights.remember_from_text(chunk.text)
    if source_name != SOURCE_PLACEHOLDER:
        _rename_locations(module, source_name)
    return module
