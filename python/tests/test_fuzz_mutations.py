"""Mutation fuzzing of ``lowerline-opt``: whatever the input, exit status 0
or 1, a message with every 1, never a Python traceback, an internal error or
a hang.

Every ``.mlir`` lit input under ``test/`` is mutated with a seeded generator
(element types; dimensions to 0, 1, odd, huge and dynamic sizes; integer
literals in attributes and constants; deleted, duplicated and swapped lines;
swapped operands; truncation; random bytes) and run through ``lowerline-opt``
with the pipeline and flags of one of the file's own RUN lines.

Mutants of one file run as ``// -----`` chunks of one ``--split-input-file``
call (a process start per mutant would cost more than most pipelines); a call
that does not end cleanly (a crash, a time-out, a status other than 0/1) is
retried one mutant per call, so that every mutant is checked and a failure
names the mutant. An upstream abort isolated by the driver (exit 1,
"lowerline-opt crashed (SIGABRT) in pass ...") is an accepted outcome: the
driver's contract holds (``tools/opt.py``).

Size: ``LOWERLINE_FUZZ_MUTANTS`` mutants in all (default 300, the CI run:
a few minutes on 2 cores), spread over the files; ``LOWERLINE_FUZZ_SEED``
(default 20) picks them; ``LOWERLINE_FUZZ_TIMEOUT`` bounds one mutant
(seconds, default 60). The long mode, thousands of other mutants, is the
``long`` marker (``bash tools/dev.sh test --long``, or ``pytest -m long -n 2
python/tests/test_fuzz_mutations.py``; ``LOWERLINE_FUZZ_LONG_MUTANTS``,
default 4000).
"""

from __future__ import annotations

import os
import random
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

TEST_ROOT = Path(__file__).resolve().parents[2] / "test"
OPT = str(Path(sys.executable).with_name("lowerline-opt"))
MUTANTS = int(os.environ.get("LOWERLINE_FUZZ_MUTANTS", "300"))
SEED = int(os.environ.get("LOWERLINE_FUZZ_SEED", "20"))
TIMEOUT = float(os.environ.get("LOWERLINE_FUZZ_TIMEOUT", "60"))
# Flags of a RUN line that change what the driver does with the input; the
# others (output checks, IR printing, timing) do not matter here.
KEPT_FLAGS = ("--allow-unregistered-dialect",)
SPLIT = "// -----"

ELEMENT_TYPES = ["f32", "f16", "bf16", "f64", "i1", "i8", "i32", "i64", "index", "complex<f32>"]
SIZES = ["0", "1", "3", "17", "?", "2147483648", "1099511627776", "9223372036854775807"]
INTEGERS = ["0", "-1", "1", "7", "-2147483649", "4294967296", "99999999999999999999"]
TYPE_RE = re.compile(r"\b(f16|bf16|f32|f64|i1|i8|i16|i32|i64|index)\b")
DIMS_RE = re.compile(r"(?<=[<x])(\d+|\?)(?=x)")
INT_RE = re.compile(r"(?<![%#\w.^])-?\d+(?![\w.])")
SSA_RE = re.compile(r"%[\w]+(?:#\d+)?")


@dataclass(frozen=True)
class Run:
    pipeline: str | None
    flags: tuple[str, ...]


def run_lines(text: str) -> list[str]:
    """The file's RUN commands, continuation lines joined."""
    commands, current = [], ""
    for match in re.finditer(r"//\s*RUN:(.*)", text):
        part = match.group(1).strip()
        if part.endswith("\\"):
            current += part[:-1] + " "
            continue
        commands.append(current + part)
        current = ""
    return commands


def opt_runs(text: str) -> list[Run]:
    """The lowerline-opt invocations on ``%s`` of the RUN lines."""
    runs = []
    for command in run_lines(text):
        for segment in command.split("|"):
            try:
                words = shlex.split(segment)
            except ValueError:
                continue
            if "lowerline-opt" not in words or "%s" not in words:
                continue
            pipeline = next(
                (w.split("=", 1)[1] for w in words if w.startswith("--pass-pipeline=")), None
            )
            runs.append(Run(pipeline, tuple(w for w in words if w in KEPT_FLAGS)))
    return runs


def lit_inputs() -> list[Path]:
    return sorted(p for p in TEST_ROOT.rglob("*.mlir"))


# --- mutations: each takes the text and a generator, returns the mutant ----


def _pick_line(lines: list[str], rng: random.Random, pattern: re.Pattern | None = None) -> int:
    """A random line that is code (not a comment), matching ``pattern``; -1 if none."""
    candidates = [
        i
        for i, line in enumerate(lines)
        if line.strip()
        and not line.lstrip().startswith("//")
        and (pattern is None or pattern.search(line))
    ]
    return rng.choice(candidates) if candidates else -1


def _replace_one(text: str, rng: random.Random, pattern: re.Pattern, values: list[str]) -> str:
    lines = text.split("\n")
    i = _pick_line(lines, rng, pattern)
    if i < 0:
        return text
    matches = list(pattern.finditer(lines[i]))
    m = rng.choice(matches)
    lines[i] = lines[i][: m.start()] + rng.choice(values) + lines[i][m.end() :]
    return "\n".join(lines)


def change_type(text: str, rng: random.Random) -> str:
    return _replace_one(text, rng, TYPE_RE, ELEMENT_TYPES)


def change_dim(text: str, rng: random.Random) -> str:
    return _replace_one(text, rng, DIMS_RE, SIZES)


def change_integer(text: str, rng: random.Random) -> str:
    return _replace_one(text, rng, INT_RE, INTEGERS)


def delete_line(text: str, rng: random.Random) -> str:
    lines = text.split("\n")
    i = _pick_line(lines, rng)
    return text if i < 0 else "\n".join(lines[:i] + lines[i + 1 :])


def duplicate_line(text: str, rng: random.Random) -> str:
    lines = text.split("\n")
    i = _pick_line(lines, rng)
    return text if i < 0 else "\n".join(lines[: i + 1] + lines[i:])


def swap_lines(text: str, rng: random.Random) -> str:
    lines = text.split("\n")
    i, j = _pick_line(lines, rng), _pick_line(lines, rng)
    if min(i, j) < 0:
        return text
    lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines)


def swap_operands(text: str, rng: random.Random) -> str:
    lines = text.split("\n")
    pattern = re.compile(r"%[\w]+.*%[\w]+")
    i = _pick_line(lines, rng, pattern)
    if i < 0:
        return text
    # Operands only: the names after '=' (the results keep theirs).
    head, eq, tail = lines[i].partition("=")
    body = tail if eq else head
    names = SSA_RE.findall(body)
    if len(set(names)) < 2:
        return text
    a, b = rng.sample(sorted(set(names)), 2)
    swapped = SSA_RE.sub(
        lambda m: b if m.group(0) == a else a if m.group(0) == b else m.group(0), body
    )
    lines[i] = head + eq + swapped if eq else swapped
    return "\n".join(lines)


def truncate(text: str, rng: random.Random) -> str:
    return text[: rng.randrange(len(text) + 1)]


def random_bytes(text: str, rng: random.Random) -> str:
    at = rng.randrange(len(text) + 1)
    noise = "".join(
        chr(rng.choice([0, 7, 27, *range(32, 127), 0xFFFD, 0x1F600]))
        for _ in range(rng.randint(1, 8))
    )
    return text[:at] + noise + text[at:]


MUTATIONS = [
    change_type,
    change_dim,
    change_dim,
    change_integer,
    delete_line,
    duplicate_line,
    swap_lines,
    swap_operands,
    truncate,
    random_bytes,
]


def mutants(path: Path, count: int, rng: random.Random) -> list[tuple[str, str]]:
    """``count`` (description, text) mutants of one chunk of ``path`` each,
    one to three mutations apiece."""
    chunks = [c for c in re.split(rf"^\s*{SPLIT}.*$", path.read_text(), flags=re.M) if c.strip()]
    out = []
    for _ in range(count):
        index = rng.randrange(len(chunks))
        text, applied = chunks[index], []
        for _ in range(rng.randint(1, 3)):
            mutation = rng.choice(MUTATIONS)
            text = mutation(text, rng)
            applied.append(mutation.__name__)
        # A mutant never contains the split marker: one mutant, one chunk.
        text = text.replace(SPLIT, "// ----")
        out.append((f"{path.name} chunk {index}: {', '.join(applied)}", text))
    return out


# --- running -----------------------------------------------------------------


def run_opt(run: Run, text: str, timeout: float) -> tuple[int | None, str]:
    """(exit status, stderr) of lowerline-opt on ``text``; None on a time-out."""
    command = [OPT, "--split-input-file", *run.flags]
    if run.pipeline is not None:
        command.append(f"--pass-pipeline={run.pipeline}")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOWERLINE_")}
    env["LOWERLINE_CHECK_PROTOCOL"] = "1"
    try:
        done = subprocess.run(
            command,
            input=text.encode("utf-8", "surrogatepass"),
            capture_output=True,
            timeout=timeout,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return None, ""
    return done.returncode, done.stderr.decode(errors="replace")


def problem(code: int | None, stderr: str) -> str | None:
    """What breaks the driver's contract, or None."""
    if code is None:
        return "hang"
    if code not in (0, 1):
        return f"exit status {code}"
    if "Traceback (most recent call last)" in stderr:
        return "Python traceback"
    if "internal error" in stderr:
        return "internal error"
    if code == 1 and "error" not in stderr:
        return "exit status 1 without a message"
    return None


def check_batch(run: Run, batch: list[tuple[str, str]]) -> list[str]:
    """Run the batch as one call; if it ends uncleanly, each mutant alone."""
    text = f"\n{SPLIT}\n".join(t for _, t in batch)
    code, stderr = run_opt(run, text, TIMEOUT * len(batch))
    if problem(code, stderr) is None and "lowerline-opt crashed" not in stderr:
        return []
    failures = []
    for name, mutant in batch:
        code, stderr = run_opt(run, mutant, TIMEOUT)
        found = problem(code, stderr)
        if found is not None:
            failures.append(
                f"{found}: {name} (pipeline {run.pipeline!r})\n{stderr[-2000:]}\n"
                f"--- mutant ---\n{mutant[:3000]}"
            )
    return failures


INPUTS = lit_inputs()
PER_FILE = -(-MUTANTS // max(len(INPUTS), 1))


def test_every_lit_input_is_fuzzed():
    """The fuzz covers the lit inputs (a moved test/ folder must not make it vacuous)."""
    assert len(INPUTS) >= 50
    assert sum(bool(opt_runs(p.read_text())) for p in INPUTS) >= 40


IDS = [str(p.relative_to(TEST_ROOT)) for p in INPUTS]


def check_file(path: Path, count: int, seed: str) -> None:
    rng = random.Random(f"{seed}:{path.relative_to(TEST_ROOT)}")
    runs = opt_runs(path.read_text()) or [Run(None, ())]
    run = rng.choice(runs)
    failures = check_batch(run, mutants(path, count, rng))
    assert not failures, "\n\n".join(failures)


@pytest.mark.parametrize("path", INPUTS, ids=IDS)
def test_mutants_keep_the_exit_contract(path: Path):
    check_file(path, PER_FILE, str(SEED))


@pytest.mark.long
@pytest.mark.parametrize("path", INPUTS, ids=IDS)
def test_many_mutants_keep_the_exit_contract(path: Path):
    """The long mode (``pytest -m long``, ``tools/dev.sh test --long``):
    ``LOWERLINE_FUZZ_LONG_MUTANTS`` (default 4000) other mutants."""
    count = int(os.environ.get("LOWERLINE_FUZZ_LONG_MUTANTS", "4000"))
    check_file(path, -(-count // len(INPUTS)), f"long:{SEED}")


def test_problem_flags_contract_breaks():
    """The checker itself: each broken contract is caught."""
    assert problem(None, "") == "hang"
    assert problem(134, "") == "exit status 134"
    assert problem(1, "Traceback (most recent call last):\n") == "Python traceback"
    assert problem(2, "lowerline-opt: internal error: KeyError") == "exit status 2"
    assert problem(1, "") == "exit status 1 without a message"
    assert problem(1, "x.mlir:1:1: error: bad") is None
    assert problem(0, "") is None
