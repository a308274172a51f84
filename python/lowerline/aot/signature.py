"""The compiled entry point as a C program sees it: named, typed, shaped
tensors in and out, and the workspace.

The entry ``_mlir_ciface_main`` takes one memref descriptor per argument:
the user's tensor inputs (numbers are baked in), a trailing seed when the
model draws random numbers (``driver.seed``), then its results as
out-parameters, then the arena (``lowerline-plan-arena``), whose size the
compile worker reports (``protocol.arena_plan``).
"""

from __future__ import annotations

import keyword
import math
import re
from dataclasses import dataclass
from typing import Any

import torch

from lowerline.api import SEED_INPUT
from lowerline.errors import LowerlineError
from lowerline.frontend.export import Program

# torch dtype -> (C element type, what the header says about it).
C_TYPES: dict[torch.dtype, tuple[str, str]] = {
    torch.float32: ("float", "float32"),
    torch.float64: ("double", "float64"),
    torch.int64: ("int64_t", "int64"),
    torch.int32: ("int32_t", "int32"),
    torch.int16: ("int16_t", "int16"),
    torch.int8: ("int8_t", "int8"),
    torch.uint8: ("uint8_t", "uint8"),
    torch.bool: ("uint8_t", "bool, one byte each, 0 or 1"),
    torch.float16: ("uint16_t", "float16 bits"),
    torch.bfloat16: ("uint16_t", "bfloat16 bits"),
}

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# C keywords (C11, and bool of stdbool.h).
_C_KEYWORDS = (
    "auto break case char const continue default do double else enum extern float for goto "
    "if inline int long register restrict return short signed sizeof static struct switch "
    "typedef union unsigned void volatile while bool"
)
_RESERVED = frozenset(_C_KEYWORDS.split(" "))


class ExportSignatureError(LowerlineError, ValueError):
    """The model's inputs or outputs cannot be passed through the C API."""


@dataclass(frozen=True)
class CTensor:
    """One tensor of the C API: a struct field of pointer type."""

    name: str  # the struct field, a C identifier
    dtype: torch.dtype
    shape: tuple[int, ...]
    what: str  # where it comes from, for the header's comment

    @property
    def ctype(self) -> str:
        return C_TYPES[self.dtype][0]

    @property
    def elements(self) -> int:
        return math.prod(self.shape)

    @property
    def describe(self) -> str:
        dims = "".join(f"[{d}]" for d in self.shape) or " (a scalar)"
        return f"{C_TYPES[self.dtype][1]}{dims}"


@dataclass(frozen=True)
class Signature:
    name: str  # the C prefix: name_run, name_inputs, NAME_WORKSPACE_BYTES
    inputs: list[CTensor]
    outputs: list[CTensor]
    workspace_bytes: int  # with a scratch slot per thread for the parallel tiles
    lower_bound_bytes: int
    num_threads: int  # the threads the code was built for; > 1 calls the OpenMP runtime
    baked: list[str]  # number inputs torch.export baked in, "name = value"
    constants: list[str]  # outputs that are constants, not in the struct
    # The workspace's failure word (protocol.FAILURE_RECORD); None: the library's slot.
    failure_record: int | None = None


def check_name(name: str) -> str:
    """``name`` if it is a usable C prefix, else ValueError saying why."""
    if not isinstance(name, str) or not _IDENTIFIER.fullmatch(name):
        raise ValueError(
            f"name must be a C identifier (letters, digits, '_', not starting with a digit), "
            f"got {name!r}"
        )
    if name in _RESERVED or keyword.iskeyword(name):
        raise ValueError(f"name {name!r} is a keyword; pick another")
    return name


def _field(raw: str, taken: set[str]) -> str:
    """A unique C identifier for the input called ``raw``."""
    base = re.sub(r"[^A-Za-z0-9_]", "_", raw) or "input"
    if base[0].isdigit() or base in _RESERVED:
        base = "_" + base
    field, index = base, 1
    while field in taken:
        field, index = f"{base}_{index}", index + 1
    taken.add(field)
    return field


def _tensor(name: str, dtype: Any, shape: Any, what: str) -> CTensor:
    if dtype not in C_TYPES:
        raise ExportSignatureError(
            f"{what}: dtype {dtype} has no C type in exported artifacts "
            f"(supported: {', '.join(str(d).removeprefix('torch.') for d in C_TYPES)})"
        )
    return CTensor(name, dtype, tuple(int(d) for d in shape), what)


def _check_no_state(program: Program, meta: dict) -> None:
    """Exported code holds no state: refuse a forward that writes its inputs
    or buffers (lowerline.compile copies those back after each call)."""
    names = [spec.name for spec in program.inputs]
    written = [names[i] for i in sorted(program.mutated_inputs)] + sorted(program.state)
    if written or any(r["kind"] != "output" for r in meta["results"]):
        raise ExportSignatureError(
            f"forward writes into {', '.join(written) or 'its inputs or buffers'}: exported "
            "artifacts keep no state between calls; return the new values instead"
        )


def build(name: str, program: Program, meta: dict, num_threads: int) -> Signature:
    """The C API of the compiled entry ``meta`` describes (``_compile_artifact``),
    built for ``num_threads``."""
    _check_no_state(program, meta)
    taken: set[str] = set()
    inputs, baked = [], []
    for spec in program.inputs:
        if not spec.is_tensor:
            baked.append(f"{spec.name} = {spec.value!r}")
            continue
        field = _field(spec.name, taken)
        inputs.append(_tensor(field, spec.dtype, spec.shape, f"forward argument {spec.name}"))
    if meta.get("arguments") and meta["arguments"][-1] == SEED_INPUT:
        seed = _field("seed", taken)
        inputs.append(_tensor(seed, torch.int64, (), "the seed of the model's random ops"))
    outputs, constants = [], []
    results = iter(meta["results"])
    for index, kind in enumerate(program.outputs):
        if kind[0] == "constant":
            constants.append(f"output {index} = {kind[1]!r}")
            continue
        result = next(results)
        dtype = getattr(torch, result["dtype"])
        field = _field(f"output{index}", taken)
        what = f"output {index}" + (" (a number: a scalar)" if kind[0] == "number" else "")
        outputs.append(_tensor(field, dtype, result["shape"], what))
    arena = meta.get("arena") or {"bytes": 0, "lower_bound": 0}
    return Signature(
        name,
        inputs,
        outputs,
        arena["bytes"],
        arena["lower_bound"],
        num_threads,
        baked,
        constants,
        arena.get("failure_record"),
    )
