"""The import worker: ExportedProgram -> linalg on tensors, in its own process.

Run as ``python -m lowerline.frontend.import_worker``. It stays alive between
compiles (importing torch and torch_mlir costs seconds) and answers one JSON
line per request line ``{"job": DIR}``. For each job it reads
``DIR/program.pt2`` and writes:

* ``DIR/weights/<n>.bin``: every parameter, buffer and constant tensor, raw
  bytes in function-argument order (weights travel as bytes, never as text);
* ``DIR/torch.mlir`` and ``DIR/linalg.mlir``: the torch-backend and
  linalg-on-tensors IR of ``@main``, whose arguments are the weights, the
  buffers ``forward`` writes into (state) and the tensor user inputs, in the
  exported program's order, and whose results are the new values of the
  mutated buffers and inputs followed by the user's outputs;
* the reply: argument and result layout, or the list of unsupported ops.

torch-mlir's TMTensor sort, scatter and scan ops cross as stand-ins that
upstream MLIR can parse (``lowerline.tm_*``, see ``_stand_in_tm_tensor_ops``).

This is the only module that imports ``torch_mlir``; its LLVM (24) never
shares a process with the ``mlir`` bindings (22) that generate code.
"""

from __future__ import annotations

import json
import operator
import os
import re
import sys
import traceback
from collections import Counter, defaultdict
from typing import Any

from lowerline.processes import die_with_parent

TORCH_BACKEND = (
    "builtin.module(func.func(torch-match-quantized-custom-ops),"
    "torchdynamo-export-to-torch-backend-pipeline{extra-library=})"
)
LINALG_BACKEND = "builtin.module(torch-backend-to-linalg-on-tensors-backend-pipeline)"
# Dialects whose ops the upstream MLIR 22 parser and lowerline's pipeline accept.
# affine: torch-mlir computes sizes of dynamic dims with affine.apply.
UPSTREAM_DIALECTS = frozenset(
    {
        "builtin",
        "func",
        "arith",
        "math",
        "linalg",
        "tensor",
        "scf",
        "cf",
        "complex",
        "ml_program",
        "affine",
    }
)
# torch-mlir's TMTensor ops that lowerline lowers (lowerline-lower-tm-tensor),
# the stand-in each crosses as (declared in dialects/lowerline.irdl.mlir) and
# the properties it keeps, as attributes. Other tm_tensor ops (topk,
# attention) stay and are reported as unsupported.
TM_TENSOR_STAND_INS = {
    "tm_tensor.scan": ("lowerline.tm_scan", ("dimension", "inclusive")),
    "tm_tensor.scatter": ("lowerline.tm_scatter", ("dimension_map", "unique_indices")),
    "tm_tensor.sort": ("lowerline.tm_sort", ("dimension",)),
}
# The operand groups (inputs, outputs) each stand-in takes: scan one input
# and (output, accumulator); scatter (updates, indices) and the original;
# sort its keys and values as outputs only.
_TM_TENSOR_SEGMENTS = {"tm_tensor.scan": (1, 2), "tm_tensor.scatter": (2, 1)}
_FRAME = re.compile(r'"([^"]+)":(\d+):\d+')
# A frame of an FX node's ``stack_trace`` (Python's traceback format).
_TRACE_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


class ImportFailure(Exception):
    def __init__(self, kind: str, message: str, **extra: Any):
        super().__init__(message)
        self.reply = {"ok": False, "kind": kind, "message": message, **extra}


def _user_frame(location: str, torch_dirs: tuple[str, ...]) -> str | None:
    """The first file:line of a location that is not inside torch itself."""
    # The quantize tag (frontend.quantize_multiply) is no file of the user's.
    frames = [f for f in _FRAME.findall(location) if not f[0].startswith("<lowerline.")]
    for path, line in frames:
        if not path.startswith(torch_dirs):
            return f"{path}:{line}"
    return f"{frames[0][0]}:{frames[0][1]}" if frames else None


def _weight_bytes(tensor) -> bytes:
    import torch

    flat = tensor.detach().contiguous().reshape(-1)
    return flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b""


def _prepare_graph(ep, job: str) -> dict[str, Any]:
    """Drop unused non-tensor inputs and constant outputs; write the weights.

    Buffers that forward writes into (``graph_signature.buffers_to_mutate``)
    are not weights but arguments (``"state"``): their values change from
    call to call, so the library must not bake them in.
    """
    import torch

    signature = ep.graph_signature
    mutated_buffers = set(signature.buffers_to_mutate.values())
    kinds = {spec.arg.name: spec for spec in signature.input_specs}
    tensors = {**ep.state_dict, **ep.constants}
    graph = ep.graph_module.graph
    args: list[dict[str, Any]] = []
    user_index = -1
    os.makedirs(os.path.join(job, "weights"), exist_ok=True)
    for node in list(graph.nodes):
        if node.op != "placeholder":
            continue
        spec = kinds[node.name]
        value = node.meta.get("val")
        if spec.kind.name == "USER_INPUT":
            user_index += 1
            if not isinstance(value, torch.Tensor):
                if node.users:
                    raise ImportFailure(
                        "unsupported",
                        f"input '{node.name}' is a {type(value).__name__} used as a value "
                        "in the graph; only tensors can be runtime inputs",
                    )
                graph.erase_node(node)
                continue
            args.append(
                {
                    "kind": "input",
                    "name": node.name,
                    "user_index": user_index,
                    "shape": _sizes(value.shape),
                }
            )
            continue
        if spec.target in mutated_buffers:
            args.append({"kind": "state", "name": spec.target})
            continue
        tensor = tensors[spec.target]
        path = os.path.join(job, "weights", f"{len(args)}.bin")
        with open(path, "wb") as handle:
            handle.write(_weight_bytes(tensor))
        args.append(
            {
                "kind": "weight",
                "name": spec.target,
                "file": path,
                "shape": list(tensor.shape),
                "dtype": str(tensor.dtype).removeprefix("torch."),
            }
        )
    results = _prepare_results(ep, graph, args)
    graph.lint()
    return {"args": args, "results": results}


def _sizes(shape) -> list[int | str]:
    """A shape for the reply: a dynamic dim as its expression's text (``s0``,
    ``2*s0``), which the caller evaluates at each call (``runtime.sizes``)."""
    return [size if isinstance(size, int) else str(size) for size in shape]


def _prepare_results(ep, graph, args: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The library's results, in order: the new value of every mutated buffer
    and input (what the caller writes back), then the user's outputs (number
    outputs are 0-d tensors already: ``lowerline.frontend.export``); constant
    outputs are dropped (the caller has them)."""
    import torch

    inputs = {arg["name"]: arg["user_index"] for arg in args if arg["kind"] == "input"}
    output = next(n for n in graph.nodes if n.op == "output")
    kept, results = [], []
    for spec, value in zip(ep.graph_signature.output_specs, output.args[0], strict=True):
        if not isinstance(value, torch.fx.Node):
            continue
        kind = spec.kind.name
        if kind == "BUFFER_MUTATION":
            entry: dict[str, Any] = {"kind": "state", "name": spec.target}
        elif kind == "USER_INPUT_MUTATION":
            entry = {"kind": "input", "user_index": inputs[spec.target]}
        elif kind == "USER_OUTPUT":
            entry = {"kind": "output"}
        else:
            raise ImportFailure("unsupported", f"unsupported output kind {kind} ('{value.name}')")
        val = value.meta.get("val")
        if not isinstance(val, torch.Tensor):
            raise ImportFailure(
                "unsupported", f"output '{value.name}' is a {type(val).__name__}, not a tensor"
            )
        entry.update(shape=_sizes(val.shape), dtype=str(val.dtype).removeprefix("torch."))
        if kind == "USER_INPUT_MUTATION":
            _check_written_shape(spec.target, entry["shape"], args)
        kept.append(value)
        results.append(entry)
    output.args = (tuple(kept),)
    return results


def _check_written_shape(name: str, shape: list, args: list[dict[str, Any]]) -> None:
    """Refuse a write into an input of another shape: an ``out=`` argument
    that torch.export's trace resized (``torch.arange(12, out=x)`` with ``x``
    of 3x4 is written as 12 elements; eager's ``arange`` keeps ``x``'s shape
    when the count matches, other out= kernels resize). lowerline writes
    mutations back into the caller's tensor and resizes none."""
    before = next(arg["shape"] for arg in args if arg.get("name") == name)
    if before != shape:
        raise ImportFailure(
            "unsupported",
            f"forward writes a value of shape {shape} into its input '{name}' of shape "
            f"{before} (an out= argument resized); lowerline writes mutations back in place "
            "and resizes no input: pass an out= tensor of the result's shape",
        )


def _drop_bool_range_checks(graph) -> None:
    """Drop ``torch.sym_ite`` nodes that feed only run-time range assertions.

    ``bool(t)`` in strict export reads the value as an int through
    ``sym_ite(b, 1, 0)`` and asserts ``0 <= it <= 1`` (``aten._assert_scalar``),
    which holds for any bool; torch-mlir cannot import ``sym_ite``. Assertions
    of the user's own (``torch._check``) are kept.
    """
    import torch

    for node in list(graph.nodes):
        if node.op != "call_function" or node.target is not torch.sym_ite:
            continue
        chain = _assertion_chain(node)
        if chain is None:
            continue
        for dead in reversed(list(graph.nodes)):
            if dead in chain:
                graph.erase_node(dead)
    # The reads (``aten._local_scalar_dense``) now unused: the bool itself is
    # returned as a tensor (lowerline.frontend.export), and torch-mlir imports
    # the read of a bool with a wrong type.
    for node in list(graph.nodes):
        if node.target is torch.ops.aten._local_scalar_dense.default and not node.users:
            graph.erase_node(node)


def _sym_floats_as_aten(graph) -> None:
    """``torch.sym_float(n)`` (an int read from a tensor made a float, as in
    ``float(a) >= int(b)``) as ``aten.Float.Scalar(n)``, the op torch-mlir's
    importer itself promotes mixed number operands with: it imports no
    ``sym_float`` node ("Unimplemented call_function"). Then the comparisons
    of floats that torch-mlir does not define or lower (``_float_comparison``)."""
    import torch

    for node in graph.nodes:
        if node.op == "call_function" and node.target is torch.sym_float:
            node.target = torch.ops.aten.Float.Scalar
    for node in list(graph.nodes):
        if node.op == "call_function" and node.target in (operator.le, operator.lt, operator.ne):
            _float_comparison(graph, node)


def _float_comparison(graph, node) -> None:
    """``a <= b``, ``a < b`` and ``a != b`` of numbers, one of them a float,
    in ops torch-mlir defines and lowers: its importer makes
    ``aten.le.float``, ``aten.lt.float`` and ``aten.ne.float`` of them; it
    defines no ``le`` or ``ne`` and has no linalg lowering of ``lt`` (it
    lowers ``ge``, ``gt`` and ``eq``, but neither ``aten.__not__`` nor
    ``aten.eq.bool``). An int operand is made a float first. ``a <= b`` is
    ``b >= a``, ``a < b`` is ``b > a``; ``a != b`` is ``int(a == b) == 0``,
    true for a NaN as ``!=`` is (``_ordered_number_comparisons`` makes the
    ``==`` false for a NaN). Other kinds of operands are left as they are."""
    import torch

    kinds = [_number_kind(arg) for arg in node.args]
    if float not in kinds or not all(kind in (int, float) for kind in kinds):
        return
    with graph.inserting_before(node):
        a, b = (_as_float(graph, arg, kind) for arg, kind in zip(node.args, kinds, strict=True))
    if node.target is operator.le:
        node.target, node.args = operator.ge, (b, a)
        return
    if node.target is operator.lt:
        node.target, node.args = operator.gt, (b, a)
        return
    with graph.inserting_before(node):
        equal = graph.call_function(torch.ops.aten.eq.float, (a, b))
        as_int = graph.call_function(torch.ops.aten.Int.bool, (equal,))
    equal.meta = dict(node.meta)
    as_int.meta = {**node.meta, "val": 0}
    node.target, node.args = torch.ops.aten.eq.int, (as_int, 0)


def _as_float(graph, arg, kind: type | None):
    """A number argument as a float: an int constant converted, an int node
    through ``aten.Float.Scalar`` (inserted at the graph's insertion point)."""
    import torch

    if kind is float:
        return arg
    if not hasattr(arg, "meta"):
        return float(arg)
    promoted = graph.call_function(torch.ops.aten.Float.Scalar, (arg,))
    value = arg.meta.get("val")
    promoted.meta = {**arg.meta, "val": torch.sym_float(value)}
    return promoted


# arith.cmpf predicates (MLIR's CmpFPredicate values): the unordered ones
# torch-mlir gives number comparisons (ueq, ugt, uge, ult, ule) and their
# ordered twins (oeq, ogt, oge, olt, ole: false when an operand is a NaN).
_ORDERED = {8: 1, 9: 2, 10: 3, 11: 4, 12: 5}


def _ordered_number_comparisons(module) -> None:
    """Comparisons of numbers (not tensors) with Python's meaning for a NaN.

    torch-mlir lowers ``aten.{eq,gt,ge}.float`` (and the comparisons of a
    float with an int) to ``arith.cmpf`` with unordered predicates, true
    when an operand is a NaN: ``float(nan) >= 1`` was true compiled and false
    in eager. Python's ``==``, ``<``, ``<=``, ``>``, ``>=`` are false for a
    NaN (its ``!=`` is true: ``une``, kept). Only scalar comparisons outside
    linalg bodies are number comparisons: inside a body, unordered
    predicates are deliberate (a ReLU selects ``ugt`` to keep a NaN)."""
    from torch_mlir import ir

    found: list = []

    def visit(op):
        if op.name == "arith.cmpf" and _outside_payloads(op):
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    for op in found:
        predicate = ir.IntegerAttr(op.attributes["predicate"])
        if predicate.value in _ORDERED:
            ordered = _ORDERED[predicate.value]
            op.attributes["predicate"] = ir.IntegerAttr.get(predicate.type, ordered)


def _outside_payloads(op) -> bool:
    """The op compares scalars and sits in no linalg (or other payload)
    region: its ancestors up to the function are control flow only."""
    from torch_mlir import ir

    if any(isinstance(v.type, ir.ShapedType) for v in op.operands):
        return False
    parent = op.parent
    while parent is not None and parent.name != "func.func":
        if not parent.name.startswith("scf."):
            return False
        parent = parent.parent
    return parent is not None


def _number_kind(arg) -> type | None:
    """``int`` or ``float``, the kind of a number argument (a constant or a
    node whose value is a symbolic number); None for anything else, a bool
    included."""
    import torch

    value = arg.meta.get("val") if hasattr(arg, "meta") else arg
    if isinstance(value, torch.SymFloat | float):
        return float
    if isinstance(value, torch.SymInt | int) and not isinstance(value, bool):
        return int
    return None


def _assertion_chain(node) -> set | None:
    """``node`` and every node using it, if all of them end in assertions; else None."""
    import torch

    chain, pending = {node}, list(node.users)
    while pending:
        user = pending.pop()
        if user in chain:
            continue
        chain.add(user)
        if user.target is torch.ops.aten._assert_scalar.default:
            continue
        if not user.users or user.op != "call_function":
            return None
        pending.extend(user.users)
    return chain


# Ops torch-mlir leaves behind around a failure (casts to builtin tensors,
# constants, list builders, terminators): never the cause of one.
COLLATERAL = re.compile(
    r"^(torch_c\.|torch\.constant\.|torch\.prim\.(ListConstruct|TupleConstruct)$|"
    r"torch\.vtensor\.literal$|.*\.yield$)"
)
# A pattern's own diagnostic and the op it names (MLIRError's text):
#   error: "f.py":3:0: unimplemented: Only integer/float dtype supported
#    note: "f.py":3:0: see current operation: %1 = "torch.aten.mul.Scalar"(...
# A diagnostic's location: a file's line (one op), a call site (an op made
# by a helper of the user's code: ``callsite("lib.py":3:0 at "model.py":9:0)``)
# or a word.
_DIAGNOSTIC = re.compile(
    r"error: (?:callsite\([^\n]*?\)|\"[^\"]*\"(?::\d+)*|\S+): (?P<message>[^\n]+)\n\s*note: [^\n]*?"
    r"see current operation: [^\n]*?\"(?P<op>[\w.]+)\"\("
)


def _reasons(error: str) -> dict[str, str]:
    """Op name -> the first specific diagnostic torch-mlir gave for it (not
    the conversion framework's generic "failed to legalize")."""
    found: dict[str, str] = {}
    for match in _DIAGNOSTIC.finditer(error):
        message = match["message"].strip()
        if not message.startswith("failed to legalize"):
            found.setdefault(match["op"], message)
    return found


def _reason(name: str, diagnostics: dict[str, str]) -> str:
    """Why ``name`` is still there after torch-mlir's linalg backend."""
    dialect = name.split(".", 1)[0]
    if dialect == "tm_tensor":
        return f"torch-mlir lowers it to TMTensor ({name}), in a form lowerline does not lower yet"
    if dialect != "torch":
        return f"torch-mlir makes it {name}, a {dialect} op lowerline does not take"
    if name in diagnostics:
        return f"torch-mlir's linalg lowering rejects this use of it: {diagnostics[name]}"
    return "torch-mlir has no lowering of it to linalg"


def _failing_ops(error: str) -> set[str]:
    """The ops torch-mlir's diagnostics name (``see current operation``)."""
    return {match["op"] for match in _DIAGNOSTIC.finditer(error)}


def _op_name(op) -> str:
    """The op's name; for ``torch.operator`` (an op torch-mlir's registry
    does not define) the name it carries, ``torch.aten.i0``."""
    if op.name == "torch.operator" and "name" in op.attributes:
        return str(op.attributes["name"]).strip('"')
    return op.name


def _unsupported_ops(
    module, torch_dirs: tuple[str, ...], error: str = "", named_only: bool = False
) -> list[dict[str, Any]]:
    """Ops outside ``UPSTREAM_DIALECTS``, each with its count, user source
    lines and ``reason``; ops left around a failure (``COLLATERAL``) are not
    listed: a failure that leaves only those is torch-mlir's own.

    Where a pass failed (``error``), the conversion was rolled back and
    every op it would have converted is still there, most of them fine (one
    op once left 37 behind): only the ops the diagnostics name, the root
    causes, are listed, with the ops of other dialects (TMTensor), which are
    never collateral. Where the diagnostics name none of them, all are (none
    with ``named_only``: before torch-mlir's linalg lowering every op is
    still a torch op, and none is to blame unless named).
    """
    counts: Counter[str] = Counter()
    places: dict[str, list[str]] = defaultdict(list)
    unknown: set[str] = set()  # torch.operator: ops torch-mlir has no definition of
    left = [op for op in _left_over(module) if not COLLATERAL.match(op.name)]
    keep = root_causes([op.name for op in left], _failing_ops(error), named_only)
    for op, kept in zip(left, keep, strict=True):
        if not kept:
            continue
        name = _op_name(op)
        if name != op.name:
            unknown.add(name)
        counts[name] += 1
        frame = _user_frame(str(op.location), torch_dirs)
        if frame and frame not in places[name]:
            places[name].append(frame)
    diagnostics = _reasons(error)
    return [
        {
            "op": k,
            "count": counts[k],
            "where": places[k],
            "reason": UNKNOWN_OP if k in unknown else _reason(k, diagnostics),
        }
        for k in sorted(counts)
    ]


HIGHER_ORDER_OP = (
    "a higher-order op calling a subgraph (its body): lowerline imports one graph "
    "and lowers no control flow or subgraph calls"
)


def _refuse_higher_order_ops(graph, torch_dirs: tuple[str, ...]) -> None:
    """Refuse ``torch.ops.higher_order.*`` nodes that call subgraphs
    (``while_loop``, ``cond``, ``map``, ...), naming them: their bodies are
    submodules, which the importer's one-graph import
    (``import_stateless_graph``) does not bring along, so torch-mlir failed
    with a bare ``KeyError``. Those without one (``auto_functionalized``)
    are torch-mlir's to import."""
    counts: Counter = Counter()
    places = defaultdict(list)
    for node in graph.nodes:
        if _calls_subgraph(node):
            name = f"torch.ops.higher_order.{node.target.name()}"
            counts[name] += 1
            frames = [
                f"{path}:{line}"
                for path, line in _TRACE_FRAME.findall(node.meta.get("stack_trace") or "")
                if not path.startswith((*torch_dirs, "<"))
            ]
            if frames:
                places[name].append(frames[-1])  # the innermost frame of the user's
    if counts:
        ops = [
            {"op": k, "count": counts[k], "where": places[k], "reason": HIGHER_ORDER_OP}
            for k in sorted(counts)
        ]
        raise ImportFailure("unsupported", "unsupported ops", ops=ops)


def _calls_subgraph(node) -> bool:
    """Whether ``node`` is a higher-order op with a submodule argument."""
    import torch
    from torch._ops import HigherOrderOperator

    if node.op != "call_function" or not isinstance(node.target, HigherOrderOperator):
        return False
    module = node.graph.owning_module
    arguments, _ = torch.utils._pytree.tree_flatten((node.args, node.kwargs))
    return any(
        isinstance(arg, torch.fx.Node)
        and arg.op == "get_attr"
        and isinstance(getattr(module, str(arg.target), None), torch.fx.GraphModule)
        for arg in arguments
    )


UNKNOWN_OP = "torch-mlir has no definition of this op (it imports it as torch.operator)"


def root_causes(names: list[str], named: set[str], named_only: bool) -> list[bool]:
    """Which of the ops left (``names``) to report after a failure whose
    diagnostics name the ops ``named`` (``_unsupported_ops``)."""
    roots = [name in named or not name.startswith("torch.") for name in names]
    if any(name in named for name in names) or named_only:
        return roots
    return [True] * len(names)


def _left_over(module) -> list:
    """The ops outside ``UPSTREAM_DIALECTS`` in ``module``, in order, except
    the TMTensor ops that cross (lowered later, also when the pipeline
    failed on other ops)."""
    found: list = []

    def visit(op):
        name = op.name
        if name.split(".", 1)[0] in UPSTREAM_DIALECTS or name.startswith("lowerline.tm_"):
            return
        if not _crosses(op):
            found.append(op)

    def walk(op):
        for region in op.regions:
            for block in region.blocks:
                for child in block.operations:
                    visit(child.operation)
                    walk(child.operation)

    walk(module.operation)
    return found


def _crosses(op) -> bool:
    """Whether ``op`` is a TMTensor op with the operand groups its stand-in takes."""
    if op.name not in TM_TENSOR_STAND_INS:
        return False
    if not all(map(_is_constant, _captures(op))):
        return False
    segments = list(op.attributes["operandSegmentSizes"])
    if op.name == "tm_tensor.sort":
        return segments[0] == 0 and segments[1] in (1, 2)
    return tuple(segments) == _TM_TENSOR_SEGMENTS[op.name]


def _captures(op) -> list:
    """The values ``op``'s region uses but does not define, once each."""
    block = op.regions[0].blocks[0]
    defined = list(block.arguments)
    captured: list = []
    for child in block.operations:
        for value in child.operands:
            if value not in defined and value not in captured:
                captured.append(value)
        defined.extend(child.results)
    return captured


def _is_constant(value) -> bool:
    owner = getattr(value, "owner", None)
    return getattr(owner, "name", None) == "arith.constant"


def _outline_combiner(op, name: str, module) -> None:
    """Move the one block of ``op``'s region into ``func.func private @name``,
    its ``tm_tensor.yield`` becoming ``func.return``; the constants it uses
    from outside are copied in (``_crosses`` admits no other captures)."""
    from torch_mlir import ir
    from torch_mlir.dialects import func

    block = op.regions[0].blocks[0]
    captured = _captures(op)
    body = list(block.operations)
    terminator = body[-1]
    signature = ([a.type for a in block.arguments], [v.type for v in terminator.operands])
    with ir.InsertionPoint(module.body), op.location:
        combiner = func.FuncOp(name, signature, visibility="private")
        entry = combiner.add_entry_block()
    for old, new in zip(block.arguments, entry.arguments, strict=True):
        old.replace_all_uses_with(new)
    copies = [(value, value.owner.clone(ip=ir.InsertionPoint(entry)).result) for value in captured]

    def inside(value):
        return next((copy for outer, copy in copies if outer == value), value)

    for child in body[:-1]:
        entry.append(child)
        for number, value in enumerate(child.operands):
            child.operands[number] = inside(value)
    with ir.InsertionPoint(entry), op.location:
        func.ReturnOp([inside(value) for value in terminator.operands])


def _stand_in_tm_tensor_ops(module) -> None:
    """Replace the TMTensor ops lowerline lowers by their stand-ins.

    torch-mlir prints TMTensor ops in a custom syntax upstream MLIR cannot
    parse, and their generic form keeps their attributes in properties,
    which an unregistered op's reader cannot see. The stand-ins are
    unregistered here, so they print in generic form with plain attributes,
    and IRDL declares them on the other side.
    """
    from torch_mlir import ir

    found: list = []

    def visit(op):
        if _crosses(op):
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    module.context.allow_unregistered_dialects = True
    for number, op in enumerate(found):
        name, kept = TM_TENSOR_STAND_INS[op.name]
        combiner = f"__tm_tensor_combiner_{number}"
        _outline_combiner(op, combiner, module)
        attributes = {key: op.attributes[key] for key in kept}
        attributes["combiner"] = ir.FlatSymbolRefAttr.get(combiner, context=module.context)
        stand_in = ir.Operation.create(
            name,
            results=[result.type for result in op.results],
            operands=list(op.operands),
            attributes=attributes,
            loc=op.location,
            ip=ir.InsertionPoint(op),
        )
        for old, new in zip(op.results, stand_in.results, strict=True):
            old.replace_all_uses_with(new)
        op.erase()


def _run_backend(pipeline: str, module, torch_dirs: tuple[str, ...], named_only: bool) -> None:
    """Run one of torch-mlir's pipelines; its failure is an ``ImportFailure``
    listing the unsupported ops, or torch-mlir's own where none is to blame."""
    from torch_mlir.passmanager import PassManager

    try:
        PassManager.parse(pipeline).run(module.operation)
    except Exception as err:
        ops = _unsupported_ops(module, torch_dirs, str(err), named_only)
        if not ops:
            raise ImportFailure("import", f"torch-mlir failed: {err}") from None
        raise ImportFailure("unsupported", "unsupported ops", ops=ops) from None


def import_job(job: str) -> dict[str, Any]:
    import torch
    from torch_mlir import ir
    from torch_mlir.dialects import torch as torch_d
    from torch_mlir.extras.fx_importer import FxImporter

    from lowerline.frontend import quantize_multiply, quantized
    from lowerline.frontend.decompositions import decompose
    from lowerline.frontend.dynamic import size_oblivious

    torch_dirs = (os.path.dirname(torch.__file__), os.path.dirname(os.path.dirname(ir.__file__)))
    quantized.register_ops()  # before the load, which looks the ops up by name
    ep = torch.export.load(os.path.join(job, "program.pt2"))
    exported_shapes = _output_shapes(ep.graph)
    # Re-tracing a batch-1 example of a dynamic dim must not specialize it to 1 either.
    with size_oblivious(bool(ep.range_constraints)):
        ep = decompose(ep)
    _drop_bool_range_checks(ep.graph)
    _sym_floats_as_aten(ep.graph)
    _refuse_higher_order_ops(ep.graph, torch_dirs)
    quantize_multiply.tag(ep.graph)  # the quantizes, picked out for rewrite() below
    layout = _prepare_graph(ep, job)
    context = ir.Context()
    torch_d.register_dialect(context)
    importer = FxImporter(context=context)
    importer.import_stateless_graph(ep.graph_module.graph, func_name="main")
    module = importer.module
    with context:
        _run_backend(TORCH_BACKEND, module, torch_dirs, named_only=True)
        _write(job, "torch.mlir", module)
        _run_backend(LINALG_BACKEND, module, torch_dirs, named_only=False)
        _ordered_number_comparisons(module)
        quantize_multiply.rewrite(module)  # x * f32(1 / scale), as eager torch
    _stand_in_tm_tensor_ops(module)
    ops = _unsupported_ops(module, torch_dirs)
    if ops:
        raise ImportFailure("unsupported", "unsupported ops", ops=ops)
    # The new values of mutated buffers and inputs come first (_prepare_results);
    # the program before decompositions writes them in place, not as outputs.
    writes = [tuple(r["shape"]) for r in layout["results"] if r["kind"] != "output"]
    _check_output_shapes(module, writes + exported_shapes, ir)
    _mark_dynamic_ranges(module, ep, ir)
    _write(job, "linalg.mlir", module)
    return {"ok": True, **layout}


def _output_shapes(graph) -> list[tuple[int | str, ...]]:
    """The shapes of the graph's tensor outputs (constants left out, as
    ``_prepare_graph`` leaves them out of ``@main``)."""
    import torch

    output = next(n for n in graph.nodes if n.op == "output")
    return [
        tuple(_sizes(r.meta["val"].shape))
        for r in output.args[0]
        if isinstance(r, torch.fx.Node) and isinstance(r.meta.get("val"), torch.Tensor)
    ]


def _main(module, ir):
    return next(
        op
        for op in module.body.operations
        if "sym_name" in op.attributes and ir.StringAttr(op.attributes["sym_name"]).value == "main"
    )


# lowerline.pipeline.protocol.DYNAMIC_RANGES: its name, spelt here because the
# worker loads torch-mlir's MLIR, not the ``mlir`` package the protocol imports.
DYNAMIC_RANGES = "lowerline.dynamic_ranges"


def _dynamic_ranges(ep) -> list[int]:
    """[argument, dim, min, max] of each dynamic dim of ``@main``'s arguments
    (the graph's placeholders, in order) whose range has a finite maximum."""
    from lowerline.frontend.dynamic import range_end

    ranges = {str(symbol): r for symbol, r in ep.range_constraints.items()}
    placeholders = [n for n in ep.graph.nodes if n.op == "placeholder"]
    flat: list[int] = []
    for argument, node in enumerate(placeholders):
        for dim, size in enumerate(getattr(node.meta.get("val"), "shape", ())):
            bounds = None if isinstance(size, int) else ranges.get(str(size))
            high = None if bounds is None else range_end(bounds.upper)
            if bounds is not None and high is not None:
                flat += [argument, dim, range_end(bounds.lower) or 0, high]
    return flat


def _mark_dynamic_ranges(module, ep, ir) -> None:
    """The dynamic dims' ranges on ``@main``, for ``lowerline-plan-arena`` to
    plan buffers of dynamic size at their maxima."""
    flat = _dynamic_ranges(ep)
    if flat:
        _main(module, ir).attributes[DYNAMIC_RANGES] = ir.DenseI64ArrayAttr.get(
            flat, context=module.context
        )


def _check_output_shapes(module, exported: list[tuple[int | str, ...]], ir) -> None:
    """``@main``'s results have torch.export's shapes, or the compile stops.

    The caller allocates each output from the exported shape and the library
    writes the shape it was compiled for: a decomposition or lowering that
    disagrees with eager (a lowerline bug) would write past the end of the
    caller's tensor. Seen: a convolution with no input channels, whose ATen
    result also has no output channels.
    """
    main = _main(module, ir)
    results = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value).results
    compiled = [tuple(ir.ShapedType(t).shape) for t in results]
    # A dynamic dim (an expression's text) is ``?`` in the IR.
    dynamic = ir.ShapedType.get_dynamic_size()
    expected = [tuple(dynamic if isinstance(d, str) else d for d in s) for s in exported]
    if compiled != expected:
        raise ImportFailure(
            "import",
            f"the compiled outputs have shapes {compiled}, torch.export's are {exported}: "
            "a lowering disagrees with eager PyTorch (a lowerline bug; please report it)",
        )


def _write(job: str, name: str, module) -> None:
    with open(os.path.join(job, name), "w", encoding="utf-8") as handle:
        handle.write(module.operation.get_asm(enable_debug_info=True))


def serve(requests, replies) -> None:
    for line in requests:
        request = json.loads(line)
        try:
            reply = import_job(request["job"])
        except ImportFailure as failure:
            reply = failure.reply
        except Exception as err:  # report, keep serving the next compile
            reply = {
                "ok": False,
                "kind": "import",
                "message": f"{type(err).__name__}: {err}",
                "traceback": traceback.format_exc(),
            }
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


def warm_up() -> None:
    """Import what every job needs before the first one arrives.

    The worker is started ahead of its first job (``ImportWorker.prestart``)
    so that these seconds overlap ``torch.export`` in the caller; imported
    lazily inside ``import_job`` they would run after it.
    """
    import torch  # noqa: F401
    from torch_mlir.dialects import torch as torch_d  # noqa: F401
    from torch_mlir.extras.fx_importer import FxImporter  # noqa: F401
    from torch_mlir.passmanager import PassManager  # noqa: F401

    from lowerline.frontend import decompositions, quantized  # noqa: F401


def main() -> None:
    die_with_parent()
    # Replies use the original stdout; anything libraries print goes to stderr.
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    warm_up()
    serve(sys.stdin, replies)


if __name__ == "__main__":
    main()
