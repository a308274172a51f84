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
* each distinct text as a line diff against the one before (``difflib``):
  the page rebuilds the texts from it and marks what each pass changed;
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

from lowerline.errors import UsageError
from lowerline.explore import memory_plan

# Text between the brackets of ``dense<...>`` longer than this is shortened.
DENSE_LIMIT = 96
# The element of the template that holds the data.
_DATA_OPEN = '<script id="lowerline-data" type="application/json">'
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
    # ``bisect.json``: {"divergence": {stage, label, op, ...} or None} or {"error": ...}
    bisection: dict[str, Any] | None = None
    # explore.roofline: {"peak", "kernels" (rows), "wall_ns"}; None when not timed
    roofline: dict[str, Any] | None = None
    # quant_report() of a module compiled with quantize= (its dataclass as a
    # dict, with "ok"); None for float models
    quantization: dict[str, Any] | None = None


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


def strip_inline_locs(line: str) -> str:
    """``line`` without the locations printed inside it (block arguments,
    a function's arguments): ``%in: f32 loc(callsite(#loc1 at #loc9))``."""
    out, start = [], 0
    while (at := line.find(" loc(", start)) >= 0:
        out.append(line[start:at])
        start = _closing(line, at + len(" loc("), "(", ")") + 1
    out.append(line[start:])
    return "".join(out)


def _closing_angle(line: str, start: int) -> int:
    return _closing(line, start, "<", ">")


def _closing(line: str, start: int, opening: str, closing: str) -> int:
    """The index of the ``closing`` bracket that closes the ``opening`` one
    before ``start`` (the line's end if none), skipping quoted text."""
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
        elif c == opening:
            depth += 1
        elif c == closing:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return len(line)


class _Locations:
    """Resolves location text to the outermost ``file:line``: ``#loc``
    aliases expanded (each once), a call site's caller preferred (for a
    torch model, the line of its ``forward``)."""

    def __init__(self, aliases: dict[str, str]):
        self.aliases = aliases
        self.resolved: dict[str, str | None] = {}

    def source(self, body: str, depth: int = 0) -> str | None:
        frames = [f"{m[1]}:{m[2]}" for m in _FILE_LOC.finditer(body) if m[2] != "0"]
        found = frames[-1] if frames else None
        for ref in _LOC_REF.findall(body):
            found = self._alias(ref[1:], depth) or found
        return found

    def _alias(self, name: str, depth: int) -> str | None:
        if name not in self.resolved:
            deep = depth >= 32  # aliases do not nest this deep; never loop
            self.resolved[name] = (
                None if deep else self.source(self.aliases.get(name, ""), depth + 1)
            )
        return self.resolved[name]


@dataclass
class CleanText:
    lines: list[str]
    sources: dict[int, str]  # line index -> "file:line"


def clean_ir(text: str) -> CleanText:
    """Cut locations from ``text`` (keeping each op line's source line) and
    shorten large constants."""
    raw = text.rstrip("\n").split("\n")
    if "{-#" in raw:  # the resource section: elided blobs, nothing to read
        raw = raw[: raw.index("{-#")]
    aliases: dict[str, str] = {}
    body = []
    for line in raw:
        match = _LOC_ALIAS.match(line)
        if match:
            aliases[match[1]] = match[2]
        else:
            body.append(line)
    lines, sources = [], {}
    locations = _Locations(aliases)
    for index, line in enumerate(body):
        match = _LOC_SUFFIX.search(line)
        if match:
            where = locations.source(match[1])
            if where:
                sources[index] = where
            line = line[: match.start()]
        lines.append(shorten_dense(strip_inline_locs(line)))
    return CleanText(lines, sources)


def op_counts(lines: list[str]) -> dict[str, int]:
    """How many ops of each name the printed IR holds."""
    counts = Counter(m[1] for line in lines if (m := _OP_NAME.match(line)))
    return dict(counts.most_common())


def delta(before: list[str], after: list[str], sources: list[int]) -> list[list[Any]]:
    """``after`` as edits of ``before``, which is also the diff the page
    marks: ``[0, i, j]`` keeps lines ``i:j`` of ``before``, ``[1, i, j]``
    drops them (shown as removed), ``[2, line, source]`` adds a line (its
    source an index in the page's ``locs``, or -1). A pass changes a few
    lines of a large module: the page holds each distinct line once."""
    edits: list[list[Any]] = []
    matcher = difflib.SequenceMatcher(None, before, after)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            edits.append([0, i1, i2])
            continue
        if i2 > i1:
            edits.append([1, i1, i2])
        edits.extend([2, after[j], sources[j]] for j in range(j1, j2))
    return edits


def page_data(trace: dict[str, Any], data: ExploreData) -> dict[str, Any]:
    """The JSON the page reads, from a trace (``PassTrace.to_json``)."""
    texts: list[list[str]] = []  # the distinct texts, in full (op counts, memory plan)
    encoded: list[list[list[Any]]] = []
    locs: dict[str, int] = {}
    passes: list[dict[str, Any]] = []
    for record in trace["passes"]:
        changed = False
        if record["ir"] is not None:
            cleaned = clean_ir(record["ir"])
            if not texts or cleaned.lines != texts[-1]:
                sources = [-1] * len(cleaned.lines)
                for index, where in cleaned.sources.items():
                    sources[index] = locs.setdefault(where, len(locs))
                encoded.append(delta(texts[-1] if texts else [], cleaned.lines, sources))
                texts.append(cleaned.lines)
                changed = len(passes) > 0  # the first text is the input, not a change
        entry = {k: record[k] for k in ("stage", "label", "seconds")}
        passes.append({**entry, "text": len(texts) - 1, "changed": changed})
    return {
        "title": data.title,
        "passes": passes,
        "texts": encoded,
        "locs": list(locs),
        "stages": _stages(passes, texts),
        "remarks": data.remarks,
        "memory": _memory(passes, texts),
        "numerics": data.numerics,
        "notes": data.notes,
        "bisection": data.bisection,
        "roofline": data.roofline,
        "quantization": data.quantization,
        "sources": _sources(list(locs)),
    }


def _stages(passes: list[dict[str, Any]], texts: list[list[str]]) -> list[dict[str, Any]]:
    """Per stage: wall seconds, pass count and op counts after its last pass."""
    stages: dict[str, dict[str, Any]] = {}
    for entry in passes:
        stage = stages.setdefault(entry["stage"], {"name": entry["stage"], "seconds": 0.0})
        stage["seconds"] += entry["seconds"]
        stage["passes"] = stage.get("passes", 0) + 1
        stage["text"] = entry["text"]
    for stage in stages.values():
        text = stage.pop("text")
        stage["ops"] = op_counts(texts[text]) if text >= 0 else {}
    return list(stages.values())


def _memory(passes: list[dict[str, Any]], texts: list[list[str]]) -> dict[str, Any] | None:
    for entry in passes:
        if memory_plan.PASS in entry["label"] and entry["text"] >= 0:
            return memory_plan.read_plan(texts[entry["text"]])
    return None


def _sources(locs: list[str]) -> dict[str, list[str]]:
    """The lines of every readable source file the IR's locations name."""
    files = {where.rsplit(":", 1)[0] for where in locs}
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


def read_page(path: str) -> dict[str, Any]:
    """The data inlined in a page ``render`` wrote (tools and tests)."""
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    start = text.index(_DATA_OPEN) + len(_DATA_OPEN)
    return json.loads(text[start : text.index("</script>", start)])


def page_text(data: dict[str, Any], k: int) -> list[str]:
    """Text ``k`` of a page's data, rebuilt from its edits as the page does."""
    lines: list[str] = []
    for t in range(k + 1):
        before, lines = lines, []
        for edit in data["texts"][t]:
            if edit[0] == 0:
                lines += before[edit[1] : edit[2]]
            elif edit[0] == 2:
                lines.append(edit[1])
    return lines


def write_report(path: str, trace: dict[str, Any], data: ExploreData) -> str:
    """Write the page to ``path``; returns the path. A path that cannot be
    written is a ``UsageError`` naming it."""
    page = render(trace, data)
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(page)
    except OSError as err:
        raise UsageError(f"cannot write the explorer's page '{path}': {err.strerror}") from None
    return path
