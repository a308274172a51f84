"""The arena plan of ``lowerline-plan-arena``, read back from the printed IR.

The pass leaves its decisions in the IR itself: the entry function's
``lowerline.arena = array<i64: bytes, lower bound>`` and, for every planned
buffer, ``%v = memref.view %arena[%offset][]``. The explorer plots each
buffer's bytes against its live range, in lines of the function: from the
view to the last line that uses it or a view of it (a use inside a loop body
is that body's line, close to the pass's own position of the op holding it).

Per-thread scratch slots (views of the arena inside parallel loops, at an
offset computed from the thread number) are counted, not plotted: their
offsets are known only when the code runs.

Read from text, not from the pass: the explorer also reads ``.mlir``
pipelines run by ``lowerline-opt``, and the plan needs no record of its own.
"""

from __future__ import annotations

import re
from typing import Any

PASS = "lowerline-plan-arena"

_ARENA_ATTR = re.compile(r"lowerline\.arena = array<i64: (\d+), (\d+)>")
_FUNC = re.compile(r"^(\s*)func\.func (?:\w+ )?@([\w$.]+)\(")
_ARENA_ARG = re.compile(r"(%[\w$.]+): memref<\?xi8>")
_CONSTANT = re.compile(r"^\s*(%[\w$.]+) = arith\.constant (-?\d+) : index")
_VIEW = re.compile(
    r"^\s*(%[\w$.]+) = memref\.view (%[\w$.]+)\[(%[\w$.]+)\]\[[^\]]*\] : .* to (memref<[^>]*>)"
)
_DERIVED = re.compile(
    r"^\s*(%[\w$.]+)(?::\d+)? = memref\.(?:subview|cast|expand_shape|collapse_shape|"
    r"reinterpret_cast|transpose|view) (%[\w$.]+)"
)
_BYTES = {"i1": 1, "i8": 1, "f8": 1, "i16": 2, "f16": 2, "bf16": 2, "i32": 4, "f32": 4}
_BYTES |= {"i64": 8, "f64": 8, "index": 8}


def _uses(name: str) -> re.Pattern[str]:
    return re.compile(re.escape(name) + r"(?![\w$.])")


def type_bytes(memref: str) -> int | None:
    """Bytes of a static ``memref<AxBxT>``; None if dynamic or unknown."""
    parts = memref.removeprefix("memref<").removesuffix(">").split(",")[0].split("x")
    element = _BYTES.get(parts[-1].strip())
    if element is None or any(not p.isdigit() for p in parts[:-1]):
        return None
    count = 1
    for p in parts[:-1]:
        count *= int(p)
    return count * element


def _function_end(lines: list[str], start: int, indent: str) -> int:
    closing = indent + "}"
    for index in range(start + 1, len(lines)):
        if lines[index].rstrip() == closing:
            return index
    return len(lines) - 1


def read_plan(lines: list[str]) -> dict[str, Any] | None:
    """The first function with an arena: its name, the arena's size and
    lower bound, and each planned buffer (name, type, offset, bytes, first
    and last line relative to the function). None if no function has one."""
    for index, line in enumerate(lines):
        func = _FUNC.match(line)
        attr = _ARENA_ATTR.search(line)
        if func is None or attr is None:
            continue
        args = _ARENA_ARG.findall(line)
        end = _function_end(lines, index, func[1])
        body = lines[index + 1 : end]
        return {
            "function": func[2],
            "bytes": int(attr[1]),
            "lower_bound": int(attr[2]),
            "lines": len(body),
            "buffers": _buffers(body, args[-1]) if args else [],
            "per_thread": _per_thread(body, args[-1]) if args else 0,
        }
    return None


def _buffers(body: list[str], arena: str) -> list[dict[str, Any]]:
    constants = {m[1]: int(m[2]) for line in body if (m := _CONSTANT.match(line))}
    buffers = []
    for start, line in enumerate(body):
        view = _VIEW.match(line)
        if view is None or view[2] != arena or view[3] not in constants:
            continue
        buffers.append(
            {
                "name": view[1],
                "type": view[4],
                "offset": constants[view[3]],
                "bytes": type_bytes(view[4]) or 0,
                "start": start,
                "end": _last_use(body, start, view[1]),
            }
        )
    return buffers


def _per_thread(body: list[str], arena: str) -> int:
    """Views of the arena at offsets that are not constants."""
    constants = {m[1] for line in body if (m := _CONSTANT.match(line))}
    views = [m for line in body if (m := _VIEW.match(line)) and m[2] == arena]
    return sum(view[3] not in constants for view in views)


def _last_use(body: list[str], start: int, name: str) -> int:
    """The last line using ``name`` or a view derived from it."""
    names = [_uses(name)]
    last = start
    for index in range(start + 1, len(body)):
        line = body[index]
        if not any(p.search(line) for p in names):
            continue
        last = index
        derived = _DERIVED.match(line)
        if derived and any(p.fullmatch(derived[2]) for p in names):
            names.append(_uses(derived[1]))
    return last
