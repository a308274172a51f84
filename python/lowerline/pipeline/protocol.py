"""The attributes lowerline's passes hand to each other, each declared once.

A pass that decides something a later pass acts on leaves it on the IR as a
discardable attribute (``lowerline-tile-and-fuse`` leaves each tile's vector
shape in ``lowerline.vector_sizes`` for ``lowerline-vectorize``). Those
attributes are the protocol between passes; this module is its only
definition. Each ``Attr`` declares:

- the attribute's name and value kind (``StringAttr``, ``IntegerAttr`` of
  i64, ``DenseI64ArrayAttr``, ``FloatAttr`` of f64, ``UnitAttr``) and the
  Python value it stands for (``str``, ``int``, ``list[int]``, ``float``,
  ``True``);
- the ops that may carry it (op names, or ``dialect.*``);
- the passes that set it and the passes that read it.

Passes go through ``get``/``set``/``has``/``remove`` and, inside transform
scripts, ``entry`` (the ``name = value`` text of an attribute dictionary);
nobody spells a name. ``check`` rejects IR carrying a ``lowerline.*``
attribute that is not declared, has the wrong kind of value or sits on an op
that may not carry it, with an error on that op's location: the pass adapter
(``pass_api.python_pass_manager``) runs it after every lowerline pass when
``LOWERLINE_CHECK_PROTOCOL=1``, which the lit and pytest suites set. IRDL
cannot do this: it verifies the ops of a dialect it declares, not a
misspelt discardable attribute on an upstream op.

The values stay builtin attributes (not ``#lowerline.*`` ones from
``lowerline.dialects``) because upstream transform ops produce and match
them: ``transform.annotate`` writes ``lowerline.gpu_threads`` from a
builtin ``array<i64: ...>`` parameter.

May import MLIR only; the pass adapter imports this module lazily (the
user's process must not load MLIR).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from mlir import ir

PREFIX = "lowerline."

T = TypeVar("T")


@dataclass(frozen=True)
class Kind(Generic[T]):
    """How one Python value type is stored as one builtin attribute type."""

    spelling: str  # for errors: what a correct value looks like
    accepts: Callable[[ir.Attribute], bool]
    to_attr: Callable[[T], ir.Attribute]
    from_attr: Callable[[ir.Attribute], T]
    text: Callable[[T], str]  # the value as MLIR prints it (transform scripts)


def _is_i64(attr: ir.Attribute) -> bool:
    if not isinstance(attr, ir.IntegerAttr):
        return False
    t = attr.type
    return isinstance(t, ir.IntegerType) and t.width == 64 and t.is_signless


def _i64(value: int) -> ir.Attribute:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), value)


STRING: Kind[str] = Kind(
    'a string ("...")',
    lambda a: isinstance(a, ir.StringAttr),
    ir.StringAttr.get,
    lambda a: ir.StringAttr(a).value,
    json.dumps,  # MLIR's string escapes agree with JSON's for the tags we write
)
I64: Kind[int] = Kind(
    "an i64 integer (N : i64)",
    _is_i64,
    _i64,
    lambda a: ir.IntegerAttr(a).value,
    lambda v: f"{v} : i64",
)
I64_ARRAY: Kind[list[int]] = Kind(
    "an i64 array (array<i64: ...>)",
    lambda a: isinstance(a, ir.DenseI64ArrayAttr),
    ir.DenseI64ArrayAttr.get,
    lambda a: list(ir.DenseI64ArrayAttr(a)),
    lambda v: f"array<i64: {', '.join(map(str, v))}>",
)
F64: Kind[float] = Kind(
    "an f64 float (X : f64)",
    lambda a: isinstance(a, ir.FloatAttr) and isinstance(a.type, ir.F64Type),
    lambda v: ir.FloatAttr.get(ir.F64Type.get(), v),
    lambda a: ir.FloatAttr(a).value,
    lambda v: f"{v!r} : f64",
)
UNIT: Kind[bool] = Kind(
    "a unit attribute (no value)",
    lambda a: isinstance(a, ir.UnitAttr),
    lambda _: ir.UnitAttr.get(),
    lambda _: True,
    lambda _: "unit",
)

DECLARED: dict[str, Attr] = {}


@dataclass(frozen=True)
class Attr(Generic[T]):
    """One protocol attribute: its declaration and its typed accessors."""

    name: str
    kind: Kind[T]
    on: tuple[str, ...]  # op names (or "dialect.*") that may carry it
    set_by: tuple[str, ...]
    read_by: tuple[str, ...]
    doc: str = field(default="", compare=False)

    def has(self, op: ir.Operation) -> bool:
        return self.name in op.attributes

    def get(self, op: ir.Operation, default: T | None = None) -> T | None:
        """The value on ``op``, ``default`` when absent."""
        if self.name not in op.attributes:
            return default
        return self.kind.from_attr(op.attributes[self.name])

    def require(self, op: ir.Operation) -> T:
        """The value on ``op``, which an earlier pass (``set_by``) must have
        set: its absence is a bug in the pipeline, reported as one."""
        value = self.get(op)
        if value is None:
            setters = ", ".join(self.set_by)
            raise LookupError(f"{op.name} has no '{self.name}' (set by {setters})")
        return value

    def set(self, op: ir.Operation, value: T) -> None:
        """Store ``value`` on ``op``; a unit attribute set to False is removed."""
        if self.kind is UNIT and not value:
            self.remove(op)
            return
        op.attributes[self.name] = self.kind.to_attr(value)

    def remove(self, op: ir.Operation) -> None:
        if self.name in op.attributes:
            del op.attributes[self.name]

    def entry(self, value: T) -> str:
        """``name = value`` as in an attribute dictionary: for
        ``transform.structured.match attributes{...}`` in scripts."""
        return f"{self.name} = {self.kind.text(value)}"

    def may_sit_on(self, op_name: str) -> bool:
        return any(
            op_name == pattern or (pattern.endswith(".*") and op_name.startswith(pattern[:-1]))
            for pattern in self.on
        )


def declare(
    name: str,
    kind: Kind[T],
    on: tuple[str, ...],
    set_by: tuple[str, ...],
    read_by: tuple[str, ...],
    doc: str,
) -> Attr[T]:
    """Declare a protocol attribute (once: a second declaration is a bug)."""
    if not name.startswith(PREFIX) or name in DECLARED:
        raise ValueError(f"protocol attribute {name!r} is misnamed or declared twice")
    attr = Attr(name, kind, on, set_by, read_by, doc)
    DECLARED[name] = attr
    return attr


_TILE = "lowerline-tile-and-fuse"
_GPU_TILE = "lowerline-gpu-tile-and-fuse"
_VECTORIZE = "lowerline-vectorize"
_DISTRIBUTE = "lowerline-gpu-distribute"
_LAUNCH = "lowerline-gpu-map-to-launch"
_LINALG = ("linalg.*",)

# -- CPU tiling -> vectorization
OP_TAG = declare(
    "lowerline.op",
    STRING,
    _LINALG,
    (_TILE, _GPU_TILE),
    (_TILE, _GPU_TILE),
    "A fusion group member (g0.root, g0.fill, g0.c1) for the group's transform "
    "script to match; removed by the same pass.",
)
LAST = declare(
    "lowerline.last",
    STRING,
    _LINALG,
    (_TILE, _GPU_TILE),
    (_TILE, _GPU_TILE),
    "The group's last op (its name): the parallel loop is tiled from it; removed by the same pass.",
)
VECTOR_SIZES = declare(
    "lowerline.vector_sizes",
    I64_ARRAY,
    _LINALG,
    (_TILE,),
    ("lowerline-pack-weights", _VECTORIZE),
    "The vector shape of one tile (tiling clones keep it); removed by lowerline-vectorize.",
)
CONTRACT = declare(
    "lowerline.contract",
    UNIT,
    _LINALG,
    (_TILE,),
    ("lowerline-pack-weights", _VECTORIZE),
    "A contraction tile: vectorized as a vector.contract (FMA outer products); "
    "its constant B may be packed.",
)
EXACT_ROWS = declare(
    "lowerline.exact_rows",
    UNIT,
    _LINALG,
    (_TILE,),
    (_VECTORIZE,),
    "A tile of a dynamic M's row piece (any row count below the register tile's): "
    "its loops that index no operand's innermost dim are vectorized at their own "
    "size, not the planned one with a mask.",
)
VECTORIZE_ME = declare(
    "lowerline.vectorize_me",
    I64,
    _LINALG,
    (_VECTORIZE,),
    (_VECTORIZE,),
    "The op a vectorize script matches (its index); removed by the same pass.",
)
AMX_TILES = declare(
    "lowerline.amx_tiles",
    UNIT,
    ("linalg.generic",),
    ("lowerline-amx-matmul",),
    (_TILE, "lowerline-amx-tiles"),
    "An int8 contraction over B packed for AMX: left alone by tile-and-fuse "
    "(one-shot-bufferize keeps it), lowered to tile loops on buffers and removed "
    "with its op by lowerline-amx-tiles.",
)

# -- GPU tiling -> distribution -> launch -> host buffers
GPU_THREADS = declare(
    "lowerline.gpu_threads",
    I64_ARRAY,
    ("scf.forall",),
    (_GPU_TILE,),
    (_DISTRIBUTE,),
    "On block foralls: the planned thread grid per dim (0: not split); "
    "bufferization keeps a forall's attributes. Removed by lowerline-gpu-distribute.",
)
NUM_RESULTS = declare(
    "lowerline.num_results",
    I64,
    ("func.func", "llvm.func"),
    (_GPU_TILE,),
    ("lowerline-gpu-host-buffers",),
    "On functions: how many trailing arguments are results (out-parameters after "
    "bufferization), to be copied back to the host. GPU code emulated on the CPU "
    "makes no host buffers: there it stays, on the llvm.func.",
)
GPU_BUFFERS = declare(
    "lowerline.gpu_buffers",
    I64_ARRAY,
    ("func.func", "llvm.func"),
    ("lowerline-gpu-host-buffers",),
    ("lowerline-gpu-host-buffers",),
    "On entry functions that launch kernels: [weights bytes, scratch bytes] of their two "
    "trailing memref<?xi8> device buffers (256-byte aligned, cuMemAlloc's): the weights, "
    "written once by @<name>_weights, and the call's scratch. lowerline-gpu-host-buffers "
    "skips a function that has it; kept on the llvm.func, where the driver reads it "
    "(gpu_buffers_plan).",
)
GPU_TAG = declare(
    "lowerline.gpu",
    STRING,
    _LINALG,
    (_DISTRIBUTE,),
    (_DISTRIBUTE,),
    "An op a distribution script matches; removed by the same pass.",
)
GPU_BLOCK_THREADS = declare(
    "lowerline.gpu_block_threads",
    I64,
    ("scf.forall",),
    (_DISTRIBUTE,),
    (_LAUNCH,),
    "On block foralls: threads per block (the launch's block size).",
)
GPU_LAUNCH = declare(
    "lowerline.gpu_launch",
    STRING,
    ("scf.forall",),
    (_LAUNCH,),
    (_LAUNCH,),
    "The block forall a launch script matches (consumed: it becomes a gpu.launch).",
)

# -- CPU bufferized stage -> driver (the call's arena)
ARENA = declare(
    "lowerline.arena",
    I64_ARRAY,
    ("func.func", "llvm.func"),
    ("lowerline-plan-arena",),
    ("lowerline-plan-arena",),
    "On entry functions: [bytes, lower bound] of the trailing memref<?xi8> arena "
    "argument (64-byte aligned) holding the planned buffers, and the most planned "
    "bytes live at one point. lowerline-plan-arena skips a function that has it; "
    "kept on the llvm.func, where the driver reads it (arena_plan).",
)

# -- import worker -> lowerline-plan-arena (buffers of dynamic size)
# Setters that are not passes: the import worker writes the module the passes
# start from (with torch-mlir's MLIR, so it spells the name itself).
IMPORT_WORKER = "import worker (lowerline.frontend.import_worker)"
OUTSIDE_PASSES = (IMPORT_WORKER,)
DYNAMIC_RANGES = declare(
    "lowerline.dynamic_ranges",
    I64_ARRAY,
    ("func.func", "llvm.func"),  # left on: the function keeps its attributes
    (IMPORT_WORKER,),
    ("lowerline-bound-dynamic-dims", "lowerline-plan-arena"),
    "On an entry function compiled for dynamic input sizes: [argument, dim, min, max] "
    "per dynamic dim of an argument with a bounded range, flattened. "
    "lowerline-bound-dynamic-dims clamps those dims' sizes to the ranges (the integer "
    "range analysis then folds torch-mlir's size checks); "
    "lowerline-plan-arena sizes a buffer whose dynamic sizes follow those dims at the "
    "ranges' maxima, so it lives in the arena (a view of the call's actual size).",
)

QUANTIZE = declare(
    "lowerline.quantize",
    F64,
    ("linalg.generic",),
    (IMPORT_WORKER, "lowerline-sink-qdq-through-layout-ops"),
    (
        "lowerline-sink-qdq-through-layout-ops",
        "lowerline-fold-qdq-matmul",
        "lowerline-fold-qdq-conv",
        "lowerline-fold-qdq-batch-matmul",
    ),
    "On a per-tensor quantize generic the frontend emitted as eager torch computes it, "
    "round(x * f32(1 / scale)) + zero point (lowerline.frontend.quantize_multiply): the "
    "scale. The QDQ matchers take a multiply before the rounding only in a generic so "
    "marked (an unmarked one is a user's own arithmetic); the sink pass rebuilds a moved "
    "quantize marked. Left on: fusion drops it with the op.",
)

FAILURE_RECORD = declare(
    "lowerline.failure_record",
    I64,
    ("func.func", "llvm.func"),
    ("lowerline-report-failed-asserts",),
    ("lowerline-report-failed-asserts",),
    "On entry functions: the byte offset in the call's arena of an 8-byte word "
    "where a failed run-time check stores its message's address (first failure "
    "wins, compare-and-swap), which the caller zeroes before the call and reads "
    "after it; -1: the function has no run-time check. Absent: failures go to the "
    "library's slot (lowerline_failed_check), which the caller must hold a lock on "
    "for the call's duration. Kept on the llvm.func, where the driver reads it.",
)


# The alignment of the arena's base that the planned offsets assume (bytes:
# a cache line, and the widest vector the targets load).
ARENA_ALIGNMENT = 64


def arena_plan(module: ir.Operation, name: str) -> dict[str, int] | None:
    """The arena the function ``@name`` at the top of ``module`` takes as its
    trailing argument: ``{"bytes", "lower_bound"}``, with ``"failure_record"``
    (``FAILURE_RECORD``) where the function has one; None if it takes none."""
    for op in module.regions[0].blocks[0].operations:
        op = op.operation
        if (
            "sym_name" not in op.attributes
            or ir.StringAttr(op.attributes["sym_name"]).value != name
        ):
            continue
        plan = ARENA.get(op)
        if plan is None:
            return None
        arena = {"bytes": plan[0], "lower_bound": plan[1]}
        record = FAILURE_RECORD.get(op)
        if record is not None:  # absent: failures go to the library's slot
            arena["failure_record"] = record
        return arena
    return None


# The function an entry's weights buffer is written by (lowerline-gpu-host-buffers).
WEIGHTS_SUFFIX = "_weights"


def gpu_buffers_plan(module: ir.Operation, name: str) -> dict[str, int | str] | None:
    """The device buffers the GPU function ``@name`` at the top of ``module``
    takes as its trailing arguments: ``{"weights", "scratch"}`` (bytes) and
    ``"upload"``, the function that fills the weights; None if it takes none."""
    for op in module.regions[0].blocks[0].operations:
        op = op.operation
        if "sym_name" in op.attributes and ir.StringAttr(op.attributes["sym_name"]).value == name:
            sizes = GPU_BUFFERS.get(op)
            if sizes is None:
                return None
            return {"weights": sizes[0], "scratch": sizes[1], "upload": name + WEIGHTS_SUFFIX}
    return None


def problem(name: str, attr: ir.Attribute, op_name: str) -> str | None:
    """Why ``name = attr`` on an ``op_name`` op breaks the protocol, or None."""
    declared = DECLARED.get(name)
    if declared is None:
        close = difflib.get_close_matches(name, DECLARED, n=1)
        hint = (
            f"did you mean '{close[0]}'?" if close else f"declared: {', '.join(sorted(DECLARED))}"
        )
        return f"unknown lowerline attribute '{name}' ({hint})"
    if not declared.kind.accepts(attr):
        return f"'{name}' must be {declared.kind.spelling}, not {attr}"
    if not declared.may_sit_on(op_name):
        return f"'{name}' may sit on {', '.join(declared.on)} only, not on {op_name}"
    return None


def problems_of(op: ir.Operation) -> list[str]:
    """The protocol problems of ``op``'s own ``lowerline.*`` attributes."""
    found = []
    for index in range(len(op.attributes)):
        named = op.attributes[index]
        if named.name.startswith(PREFIX):
            reason = problem(named.name, named.attr, op.name)
            if reason:
                found.append(reason)
    return found


def check(root: ir.Operation, after: str) -> bool:
    """Emit an error on every op under ``root`` (included) that breaks the
    protocol, naming the pass ``after`` which it was found; True when none."""
    clean = True

    def visit(op: ir.Operation) -> ir.WalkResult:
        nonlocal clean
        for reason in problems_of(op):
            op.location.emit_error(f"protocol check after {after}: {reason}")
            clean = False
        return ir.WalkResult.ADVANCE

    root.walk(visit)
    return clean
