"""Run the whole conformance zoo and write ``bench/conformance.md`` and
``expected.json`` (each op's outcome; the ``long`` pytest tier checks its category).

    .venv/bin/python python/tests/zoo/conformance/report.py            # every op
    .venv/bin/python python/tests/zoo/conformance/report.py --ops mm,sort --out /tmp/c.md

One process, one op after another (the machine's other cores are left
alone); compiles go to a fresh cache. ``LOWERLINE_COMPILE_TIMEOUT`` bounds
each worker step (120 s here unless set).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(HERE))))
sys.path[:0] = [HERE, os.path.dirname(HERE)]
os.environ.setdefault("LOWERLINE_COMPILE_TIMEOUT", "120")
os.environ.setdefault(
    "LOWERLINE_CACHE_KEY",
    os.path.join(tempfile.mkdtemp(prefix="lowerline-conformance-key-"), "cache.key"),
)

import aten_ops  # noqa: E402
import op_outcome as outcome  # noqa: E402

EXPECTED = os.path.join(HERE, "expected.json")


def run_all(names: set[str] | None) -> tuple[list[outcome.Outcome], float]:
    cache = tempfile.mkdtemp(prefix="lowerline-conformance-cache-")
    cases = [c for c in aten_ops.op_cases() if names is None or c.name in names]
    start = time.monotonic()
    results = []
    for index, case in enumerate(cases, 1):
        result = outcome.run(case, cache)
        print(f"[{index}/{len(cases)}] {case.name}: {result.category} {result.detail[:120]}")
        sys.stdout.flush()
        results.append(result)
    return results, time.monotonic() - start


def _rate(results: list[outcome.Outcome]) -> str:
    passed = sum(r.passed for r in results)
    return f"{passed}/{len(results)} ({100.0 * passed / max(len(results), 1):.0f}%)"


def _table(rows: list[list[str]], header: list[str]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return lines


def _ops_section(title: str, text: str, results: list[outcome.Outcome]) -> list[str]:
    """A section: its title, a paragraph, and one row per op with its reason."""
    lines = ["", f"## {title}", ""] + ([text, ""] if text else [])
    rows = [[r.op, r.category, r.detail] for r in results]
    return lines + _table(rows, ["op", "category", "reason"])


def render(every: list[outcome.Outcome], seconds: float) -> str:
    variants = [r for r in every if r.op.endswith("[complex64]")]
    results = [r for r in every if r not in variants]
    counted = [r for r in results if r.counted]
    by_category = Counter(r.category for r in results)
    commit = subprocess.run(
        ["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    lines = [
        "# Conformance: every ATen op torch-mlir imports, through lowerline.compile",
        "",
        f"Generated {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC at {commit} by "
        "`.venv/bin/python python/tests/zoo/conformance/report.py` "
        f"(the last full run took {seconds / 60:.1f} min, one op at a time; `--ops` reruns "
        "some and keeps the rest). See DEVELOPERS.md.",
        "",
        "The op list is the installed torch-mlir's `torch` dialect (every `torch.aten.*` op, "
        f"{len(results)} names). Each op gets a one-op module with arguments generated from "
        "its ATen schema (or a small explicit spec), is compiled by `lowerline.compile`, "
        "called, and compared with eager torch (f32 `rtol=1e-4, atol=1e-5`, integers exact; "
        "random and uninitialized outputs: shape and dtype only).",
        "",
        "**Denominator**: the ops torch-mlir's linalg backend lowers (the op reached linalg "
        "or TMTensor), plus the families sort, scatter, index_put, cumsum, cumprod, "
        "masked_scatter, max_unpool and pooling with indices whatever torch-mlir does "
        f"with them: **{len(counted)} ops, {_rate(counted)} pass**.",
        "",
        "Ops outside the `torch.aten` namespace (`prims`, PT2E's `quantized_decomposed`) "
        "and whole modules are covered by torch-mlir's own e2e tests, run through "
        "`tools/upstream_e2e.py`: `bench/upstream-e2e.md` (counts per test file, every "
        "failure with its reason).",
        "",
        "## Outcomes",
        "",
    ]
    rows = [
        [cat, meaning, str(by_category.get(cat, 0)), str(sum(r.category == cat for r in counted))]
        for cat, meaning in outcome.CATEGORIES.items()
    ]
    lines += _table(rows, ["category", "meaning", "ops", "in the denominator"])
    lines += ["", "## Pass rate per op family (denominator only)", ""]
    families: dict[str, list[outcome.Outcome]] = defaultdict(list)
    for r in counted:
        families[aten_ops.coarse_family(r.op)].append(r)
    rows = [
        [family, _rate(rs), ", ".join(r.op for r in rs if not r.passed) or "-"]
        for family, rs in sorted(families.items())
    ]
    lines += _table(rows, ["family", "pass", "failing"])
    lines += _ops_section(
        "Failing ops of the denominator, with the reason", "", [r for r in counted if not r.passed]
    )
    lines += _ops_section(
        "Outside the denominator",
        "Ops torch-mlir's linalg backend leaves as torch ops, ops torch.export refuses, "
        "and ops no module was generated for (with the reason).",
        [r for r in results if not r.counted],
    )
    lines += _ops_section(
        "Complex variants",
        "Each elementwise op (ATen's `pointwise` tag) that eager torch computes on complex64 "
        "tensors, and the reductions, scans, joins, products and fills of "
        "`aten_ops.COMPLEX_VARIANTS`, run on complex64 inputs: "
        f"{_rate(variants)} pass (not in the denominator).",
        variants,
    )
    return "\n".join(lines) + "\n"


def _load(path: str) -> dict:
    if not os.path.exists(path):
        return {"seconds": 0.0, "outcomes": {}}
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", help="comma-separated op names: rerun these, keep the rest")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "conformance.md"))
    parser.add_argument("--expected", default=EXPECTED, help="the outcomes file (JSON)")
    args = parser.parse_args()
    names = set(args.ops.split(",")) if args.ops else None
    results, seconds = run_all(names)
    stored = _load(args.expected) if names else {"seconds": seconds, "outcomes": {}}
    stored["outcomes"].update({r.op: r.as_dict() for r in results})
    with open(args.expected, "w", encoding="utf-8") as handle:
        json.dump(stored, handle, indent=1, sort_keys=True)
        handle.write("\n")
    # The denominator's rule is applied again to every stored outcome.
    cases = {case.name: case for case in aten_ops.op_cases()}
    every = [
        outcome.Outcome(**{**e, "counted": outcome.counted(cases[e["op"]], e["category"])})
        for e in stored["outcomes"].values()
        if e["op"] in cases
    ]
    with open(args.out, "w", encoding="utf-8") as handle:
        handle.write(render(sorted(every, key=lambda r: r.op), stored["seconds"]))
    print(f"wrote {args.out} ({_rate([r for r in every if r.counted])} of the denominator)")


if __name__ == "__main__":
    main()
