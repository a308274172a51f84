"""The explorer's page: one self-contained HTML file from a pass trace.

Input: what ``pipeline.trace.PassTrace`` recorded (the module printed after
every pass, with locations) and, where there are some, the remarks, the
numerics against eager and the model's source. Output: ``template.html``
with the data inlined as JSON; the page's script does the rest (no network,
no framework: it opens from disk).

The work done here rather than in the browser, so the page opens fast:

* locations are resolved to the outermost ``file:line`` (a torch model's
  ``forward`` line) and cut from the op lines: the text reads as IR does
  without ``--mlir-print-debuginfo``, each line keeps its source link, and a
  renumbered ``#loc`` alias does not show as a change;
* large ``dense<...>`` payloads are shortened (the trace elides resource
  blobs already; a literal in a ``.mlir`` input may still be megabytes);
* each pass's line diff against the previous text (``difflib``);
* op counts per stage, and the arena plan read from the IR after
  ``lowerline-plan-arena``.

No MLIR here: the user's process, which never loads MLIR, writes the page.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from lowerline.explore import memory_plan

# Text between the brackets of ``dense<...>`` longer than this is shortened.
DENSE_LIMIT = 96
# A model source file larger than this is not inlined.
SOURCE_LIMIT = 1 << 20

_LOC_ALIAS = re.compile(r"^#(loc\d*) = loc\((.*)\)$")
_LOC_SUFFIX = re.compile(r" loc\((#loc\d*|.*)\)$")
_LOC_REF = re.compile(r"#loc\d*")
_FILE_LOC = re.compile(r'"((?:[^"\\]|\\.)*)":(\d+):(\d+)')
_OP_NAME = re.compile(r'^\s*(?:%[^=]*= )?"?([a-z_][\w$]*\.[\w.$]+)"?(?:\s|\(|<|\{|$)')


@dataclass
class ExploreData:
    """Everything the page shows besides the passes' IR."""

    title: str
    remarks: list[dict[str, Any]] = field(default_factory=list)
    numerics: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def shorten_dense(line: str, limit: int = DENSE_LIMIT) -> str:
    """``line`` with each ``dense<...>`` payload longer than ``limit``
    characters replaced by its size."""
    out, start = [], 0
    while (at := line.find("dense<", start)) >= 0:
        end = _closing_angle(line, at + len("dense<"))
        payload = end - at - len("dense<")
        out.append(line[start : at + len("dense<")])
        if payload > limit:
            out.append(f"\u2026 {payload} chars elided \u2026")
        else:
            out.append(line[at + len("dense<") : end])
        start = end
    out.append(line[start:])
    return "".join(out)


def _closing_angle(line: str, start: int) -> int:
    """The index of the ``>`` that closes the ``<`` before ``start`` (the
    line's end if none), skipping quoted text."""
    depth, quoted, i = 1, False, start
    while i < len(line):
        c = line[i]
        if quoted:
            if c == "\\":
                i += 1
            elif c == '"':
                quoted = False
        elif c == '"':
            quoted = True
        elif c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return len(line)


def _source_of(body: str, aliases: dict[str, str], depth: int = 0) -> str | None:
    """The outermost ``file:line`` of a location's text: ``#loc`` aliases
    expanded; for a call site, the caller's line (the model's)."""
    frames = [f"{m[1]}:{m[2]}" for m in _FILE_LOC.finditer(body) if m[2] != "0"]
    found = frames[-1] if frames else None
    if depth < 16:
        for ref in _LOC_REF.findall(body):
            inner = _source_of(aliases.get(ref[1:], ""), aliases, depth + 1)
            found = inner or found
    return found


@dataclass
class CleanText:
    lines: list[str]
    sources: dict[int, str]  # line index -> "file:line"


def clean_ir(text: str) -> CleanText:
    """Cut locations from ``text`` (keeping each op line's source line) and
    shorten large constants."""
    raw = text.rstrip("\n").split("\n")
    aliases: dict[str, str] = {}
    body = []
    for line in raw:
        match = _LOC_ALIAS.match(line)
        if match:
            aliases[match[1]] = match[2]
        else:
            body.append(line)
    lines, sources = [], {}
    for index, line in enumerate(body):
        match = _LOC_SUFFIX.search(line)
        if match:
            where = _source_of(match[1], aliases)
            if where:
                sources[index] = where
            line = line[: match.start()]
        lines.append(shorten_dense(line))
    return CleanText(lines, sources)


def op_counts(lines: list[str]) -> dict[str, int]:
    """How many ops of each name the printed IR holds."""
    counts = Counter(m[1] for line in lines if (m := _OP_NAME.match(line)))
    return dict(counts.most_common())


def line_diff(before: list[str], after: list[str]) -> dict[str, Any]:
    """Lines of ``after`` that are new, and lines of ``before`` that are gone
    (each with the index in ``after`` it stood before)."""
    added: list[int] = []
    removed: list[list[Any]] = []
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "insert"):
            added.extend(range(j1, j2))
        if tag in ("replace", "delete"):
            removed.extend([j1, line] for line in before[i1:i2])
    return {"added": added, "removed": removed}


def page_data(trace: dict[str, Any], data: ExploreData) -> dict[str, Any]:
    """The JSON the page reads, from a trace (``PassTrace.to_json``)."""
    texts: list[dict[str, Any]] = []
    passes = []
    current: CleanText | None = None
    for record in trace["passes"]:
        entry = {k: record[k] for k in ("stage", "label", "seconds")}
        if record["ir"] is not None:
            cleaned = clean_ir(record["ir"])
            if current is None or cleaned.lines != current.lines:
                entry["diff"] = line_diff(current.lines if current else [], cleaned.lines)
                texts.append({"lines": cleaned.lines, "sources": cleaned.sources})
            current = cleaned
        entry["text"] = len(texts) - 1
        entry["changed"] = "diff" in entry and len(passes) > 0
        passes.append(entry)
    return {
        "title": data.title,
        "passes": passes,
        "texts": texts,
        "stages": _stages(passes, texts),
        "remarks": data.remarks,
        "memory": _memory(passes, texts),
        "numerics": data.numerics,
        "notes": data.notes,
        "sources": _sources(texts),
    }


def _stages(passes: list[dict[str, Any]], texts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per stage: wall seconds, pass count and op counts after its last pass."""
    stages: dict[str, dict[str, Any]] = {}
    for entry in passes:
        stage = stages.setdefault(entry["stage"], {"name": entry["stage"], "seconds": 0.0})
        stage["seconds"] += entry["seconds"]
        stage["passes"] = stage.get("passes", 0) + 1
        stage["text"] = entry["text"]
    for stage in stages.values():
        stage["ops"] = op_counts(texts[stage.pop("text")]["lines"]) if texts else {}
    return list(stages.values())


def _memory(passes: list[dict[str, Any]], texts: list[dict[str, Any]]) -> dict[str, Any] | None:
    for entry in passes:
        if memory_plan.PASS in entry["label"] and entry["text"] >= 0:
            return memory_plan.read_plan(texts[entry["text"]]["lines"])
    return None


def _sources(texts: list[dict[str, Any]]) -> dict[str, list[str]]:
    """The lines of every readable source file the IR's locations name."""
    files = {where.rsplit(":", 1)[0] for t in texts for where in t["sources"].values()}
    found = {}
    for path in sorted(files):
        if os.path.isfile(path) and os.path.getsize(path) <= SOURCE_LIMIT:
            with open(path, encoding="utf-8", errors="replace") as handle:
                found[path] = handle.read().split("\n")
    return found


def render(trace: dict[str, Any], data: ExploreData) -> str:
    """The page: the template with the data inlined (``</`` escaped, so the
    IR's text cannot close the script element)."""
    template = resources.files("lowerline.explore").joinpath("template.html").read_text("utf-8")
    payload = json.dumps(page_data(trace, data), separators=(",", ":"))
    payload = payload.replace("</", "<\\/").replace("<!--", "<\\!--")
    return template.replace("/*LOWERLINE_DATA*/null", payload, 1)


def write_report(path: str, trace: dict[str, Any], data: ExploreData) -> str:
    """Write the page to ``path``; returns the path."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(render(trace, data))
    return path
