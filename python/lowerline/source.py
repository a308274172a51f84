"""Read ``.mlir`` input the way mlir-opt does: split on ``// -----``, parse
with the file's name in every location, and wrap top-level ops in a module.

The bindings' ``Module.parse`` names every location ``"-"``, so text is parsed
with ``Operation.parse(source_name=...)``, which wants exactly one top-level
op. The text is therefore parsed inside ``module {`` ... ``}``; as in mlir-opt,
a single top-level ``builtin.module`` written by the user becomes the root
itself. Each split chunk is padded with blank lines so that locations keep the
line numbers of the whole file; the wrapper's ``module {`` sits on one of those
blank lines, except for the first chunk, where it shifts line 1 by
``WRAPPER_SHIFT`` columns (the diagnostic collector undoes that).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mlir import ir

SPLIT_MARKER = re.compile(r"^\s*// -----", re.MULTILINE)
_WRAPPER = "module {"
WRAPPER_SHIFT = len(_WRAPPER)


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


def parse_chunk(chunk: Chunk, source_name: str, context: ir.Context) -> ir.Operation:
    """Parse one chunk into a builtin.module op; raises ir.MLIRError on bad input."""
    padding = "\n" * (chunk.first_line - 1)
    text = f"{_WRAPPER}{padding}{chunk.text}\n}}"
    wrapper = ir.Operation.parse(text, source_name=source_name, context=context).operation
    body = wrapper.regions[0].blocks[0].operations
    if len(body) == 1 and body[0].operation.name == "builtin.module":
        return body[0].operation.detach_from_parent().operation
    return wrapper
