"""``torch.compile(model, backend="lowerline", options={...})``.

TorchDynamo hands the backend one FX graph per captured region (several
around graph breaks) with fake example inputs. ``torch.export`` cannot run
while Dynamo traces, so ``backend`` only checks the graph (inference only,
inputs it can pass) and returns a ``LoweredGraph``: at its first real call,
outside tracing, it compiles the graph with ``lowerline.compile`` on the real
inputs, the same driver as ever (export here, torch-mlir and MLIR in their
workers, the cache), and calls the compiled library from then on.

Parameters and buffers reach the graph as inputs (Dynamo lifts them: its
default ``inline_inbuilt_nn_modules``) or as ``get_attr`` nodes. Lifted ones
are made attributes of the graph again, so they are weights baked into the
library (packed and folded at compile time) and buffers ``forward`` writes
into stay the module's own state. A weight replaced or changed in place
(``load_state_dict``, an optimizer step) since the compile is seen by its
version counter and compiles the graph again; ``.data`` writes are not seen.

Symbolic sizes (Dynamo's dynamic shapes: ``dynamic=True``, or its automatic
dynamic graph after a second shape) become lowerline's dynamic dims: a
tensor input whose size is a plain symbol of Dynamo's is compiled with a
``torch.export.Dim`` of that symbol's range (one ``Dim`` per symbol, shared
by the inputs that share it), and a size Dynamo passes as an int input is
read from the tensor it measures inside the graph: one artifact serves every
size Dynamo's guards let through (``_DynamicSizes``). A graph whose symbolic
sizes are not all such (a size that is an expression of a symbol, an int
input no tensor dim gives) is compiled per concrete shape, as with
``dynamic=False``: each shape one specialization (at most
``max_specializations``).

Registered for ``backend="lowerline"`` through the ``torch_dynamo_backends``
entry point (pyproject.toml): no ``import lowerline`` needed first.
"""

from __future__ import annotations

import operator
import os
import threading
from collections.abc import Sequence
from typing import Any

import torch
from torch._dynamo.source import is_from_unspecialized_param_buffer_source
from torch._dynamo.symbolic_convert import InstructionTranslator

from lowerline import api
from lowerline.driver import workers
from lowerline.errors import LowerlineError
from lowerline.frontend.dynamic import range_end
from lowerline.frontend.fastpath import FAST_PATHS

# What a graph input may be besides a tensor: numbers, symbolic or not.
_NUMBERS = (bool, int, float, torch.SymInt, torch.SymFloat, torch.SymBool)


class TrainingGraphError(LowerlineError):
    """Dynamo handed over a graph that needs autograd or runs modules in training mode."""


def backend(
    gm: torch.fx.GraphModule,
    example_inputs: Sequence[Any],
    *,
    options: dict[str, Any] | None = None,
    mode: str | None = None,
) -> LoweredGraph:
    """The torch.compile backend: checks ``gm`` now, compiles it at its first call.

    ``options`` are ``lowerline.compile``'s keywords (``target``,
    ``num_threads``, ``cache_dir``, ``dump_dir``, ``max_specializations``...);
    ``dump_dir`` gets a folder per graph, named after Dynamo's compile id.
    """
    if mode not in (None, "default"):
        raise ValueError(
            f"the lowerline backend has no mode '{mode}'; pass lowerline.compile's "
            "keywords as options={...} instead"
        )
    options = dict(options or {})
    if not all(isinstance(key, str) for key in options):
        raise TypeError(f"options takes a dict of keyword names, got {options!r}")
    placeholders = list(gm.graph.find_nodes(op="placeholder"))
    if len(placeholders) != len(example_inputs):
        raise ValueError(
            f"the graph has {len(placeholders)} inputs but Dynamo passed "
            f"{len(example_inputs)} example inputs"
        )
    _refuse_training(gm, placeholders, example_inputs)
    for node, value in zip(placeholders, example_inputs, strict=True):
        if not isinstance(value, (torch.Tensor, *_NUMBERS)):
            raise TypeError(
                f"graph input {_source_name(node)} is a {type(value).__name__}: lowerline "
                "compiles graphs of tensor and number inputs only"
            )
    weights = [
        index
        for index, node in enumerate(placeholders)
        if isinstance(example_inputs[index], torch.Tensor) and _is_module_state(node)
    ]
    numbers = [index for index, node in enumerate(placeholders) if _is_punned_number(node)]
    sizes = _DynamicSizes.find(placeholders, set(weights), options)
    if "dump_dir" in options:
        compile_id = str(gm.meta.get("dynamo_compile_id", "graph")).replace("/", "_")
        options["dump_dir"] = os.path.join(options["dump_dir"], f"graph-{compile_id}")
    # The graph is compiled at its first call: the workers start now.
    workers.prestart_workers()
    return LoweredGraph(gm, weights, numbers, options, sizes)


class LoweredGraph:
    """One Dynamo graph, compiled by lowerline at its first call.

    ``compiled``: the ``lowerline.CompiledModule`` (None before the first
    call); ``compiles``: how many times the graph was compiled (more than one
    only when its weights changed)."""

    def __init__(
        self,
        gm: torch.fx.GraphModule,
        weights: list[int],
        numbers: list[int],
        options: dict[str, Any],
        sizes: _DynamicSizes | None = None,
    ):
        self._gm = gm
        self._options = options
        self._weights = weights  # positions of the lifted parameters and buffers
        self._numbers = frozenset(numbers)  # positions of numbers passed as 0-d tensors
        self._sizes = sizes  # Dynamo's symbolic sizes as dynamic dims, if all can be
        count = len(list(gm.graph.find_nodes(op="placeholder")))
        derived = set(sizes.derived) if sizes else set()
        self._inputs = [i for i in range(count) if i not in set(weights) | derived]
        # Nothing to pick out of or convert in the call: pass it as it is.
        self._as_is = len(self._inputs) == count and not numbers
        # (position, tensor, version) of every weight baked into the library.
        self._baked: list[tuple[int, torch.Tensor, int]] = []
        self._lock = threading.Lock()  # one compile at a time
        self.compiled: api.CompiledModule | None = None
        self.compiles = 0

    def __call__(self, *args: Any) -> Any:
        compiled = self.compiled
        if compiled is None or not self._weights_unchanged(args):
            compiled = self._compile(args)
        if self._as_is:
            return compiled(*args)
        return compiled(*self._user_inputs(args))

    def _user_inputs(self, args: tuple) -> list[Any]:
        """The call's inputs of the compiled graph: no weights, numbers as numbers."""
        return [args[i].item() if i in self._numbers else args[i] for i in self._inputs]

    def _weights_unchanged(self, args: tuple) -> bool:
        """The call passes the weights the library holds, unchanged since."""
        for position, tensor, version in self._baked:
            if args[position] is not tensor or _version(tensor) != version:
                return False
        return True

    def _compile(self, args: tuple) -> api.CompiledModule:
        with self._lock:
            if self.compiled is not None and self._weights_unchanged(args):
                return self.compiled  # another thread compiled it meanwhile
            weights = {_attribute(self._gm, i): args[i] for i in self._weights}
            numbers = {_placeholder(self._gm, i) for i in self._numbers}
            derived = self._sizes.derived if self._sizes else {}
            module = _exportable(self._gm, weights, numbers, derived)
            options = dict(self._options)
            if self._sizes is not None:
                options["dynamic_shapes"] = self._sizes.dynamic_shapes(self._inputs)
            compiled = api.compile(module, *self._user_inputs(args), **options)
            # A buffer the graph writes into is state the library updates at
            # every call (its version moves), not a baked weight.
            state = {
                name
                for specialization in compiled.specializations
                for name in specialization.arguments
                if isinstance(name, str)
            }
            self._baked = [
                (i, args[i], _version(args[i]))
                for i in self._weights
                if _attribute(self._gm, i) not in state
            ]
            self.compiled = compiled
            self.compiles += 1
            return compiled


def _refuse_training(
    gm: torch.fx.GraphModule, placeholders: list[torch.fx.Node], example_inputs: Sequence[Any]
) -> None:
    """TrainingGraphError for a graph that autograd would differentiate or
    that runs modules in training mode: lowerline compiles inference only."""
    if torch.is_grad_enabled():
        for node, value in zip(placeholders, example_inputs, strict=True):
            if isinstance(value, torch.Tensor) and value.requires_grad:
                raise TrainingGraphError(
                    f"lowerline compiles inference graphs only: {_source_name(node)} requires "
                    "grad and grad mode is on, so this graph would need autograd; call the "
                    "model under torch.no_grad() or torch.inference_mode()"
                )
    training = _training_modules(gm)
    if training:
        raise TrainingGraphError(
            f"lowerline compiles inference graphs only: {', '.join(training)} "
            f"{'is' if len(training) == 1 else 'are'} in training mode; call model.eval() "
            "before torch.compile"
        )


def _training_modules(gm: torch.fx.GraphModule) -> list[str]:
    """The modules of the frame Dynamo is tracing that are in training mode,
    by their path (``L['self'].fc``). Dynamo names them in ``nn_module_stack``
    only for ops inside submodules, so the frame's own modules (``self``)
    are looked at too. Empty outside a Dynamo trace."""
    try:
        tx = InstructionTranslator.current_tx()
    except AttributeError:  # this thread never traced
        return []
    if tx is None:
        return []
    frame = tx.output.root_tx
    scope = {"L": frame.f_locals, "G": frame.f_globals}
    found = {
        f"L[{name!r}]": value
        for name, value in frame.f_locals.items()
        if isinstance(value, torch.nn.Module)
    }
    for node in gm.graph.nodes:
        for path, _ in (node.meta.get("nn_module_stack") or {}).values():
            if path not in found:
                found[path] = _lookup(path, scope)
    return sorted(
        path
        for path, module in found.items()
        if isinstance(module, torch.nn.Module) and module.training
    )


def _lookup(path: str, scope: dict[str, Any]) -> Any:
    """The object a Dynamo source name (``L['self'].layers[0]``) names, or None.

    Dynamo evaluates these names the same way for its guards; no builtins are
    reachable from them."""
    try:
        return eval(path, {"__builtins__": {}}, scope)  # names Dynamo wrote, as its guards do
    except Exception:  # a name we cannot resolve: Dynamo may rename its locals
        return None


def _is_module_state(node: torch.fx.Node) -> bool:
    """Whether a graph input is a module's parameter or buffer Dynamo lifted."""
    grapharg = node.meta.get("grapharg")
    return grapharg is not None and is_from_unspecialized_param_buffer_source(grapharg.source)


def _source_name(node: torch.fx.Node) -> str:
    """Where a graph input came from in the user's code (``L['x']``), else its name."""
    grapharg = node.meta.get("grapharg")
    return grapharg.source.name if grapharg is not None else node.name


def _is_punned_number(node: torch.fx.Node) -> bool:
    """Whether a graph input is a Python float Dynamo passes as a 0-d tensor
    (dynamic shapes make float attributes such as ``Dropout.p`` inputs) and
    reads only with ``.item()``: torch.export cannot trace past such a read
    (``p < 0`` on an unknown value), so it is passed as the number it is."""
    grapharg = node.meta.get("grapharg")
    return (
        grapharg is not None
        and grapharg.pass_arg_as_tensor
        and bool(node.users)
        and all(_is_item(user) for user in node.users)
    )


def _is_item(node: torch.fx.Node) -> bool:
    return node.op == "call_method" and node.target == "item"


def _placeholder(gm: torch.fx.GraphModule, index: int) -> str:
    return list(gm.graph.find_nodes(op="placeholder"))[index].name


def _attribute(gm: torch.fx.GraphModule, index: int) -> str:
    """The attribute name of the lifted weight at placeholder ``index``."""
    return f"lifted_{_placeholder(gm, index)}"


def _version(tensor: torch.Tensor) -> int:
    """Its version counter (bumped by every in-place write); -1 for inference
    tensors, which have none (and cannot be written outside inference mode)."""
    return -1 if tensor.is_inference() else tensor._version


class _DynamicSizes:
    """Dynamo's symbolic sizes of one graph as lowerline's dynamic dims.

    ``dims``: graph input position -> {dim: (symbol, low, high)} for tensor
    inputs whose size is a plain symbol; ``derived``: position of an int input
    that is such a size -> (position of the tensor, dim) it is read from."""

    def __init__(self, dims: dict[int, dict[int, tuple[str, int, int | None]]], derived: dict):
        self.dims = dims
        self.derived: dict[int, tuple[int, int]] = derived

    @classmethod
    def find(
        cls, placeholders: list[torch.fx.Node], weights: set[int], options: dict[str, Any]
    ) -> _DynamicSizes | None:
        """None when the graph has no symbolic size, when the caller gave its
        own dynamic dims, or when a symbolic size is not a plain symbol of a
        tensor input's dim (those graphs are compiled per shape)."""
        if "dynamic" in options or "dynamic_shapes" in options:
            return None
        dims: dict[int, dict[int, tuple[str, int, int | None]]] = {}
        where: dict[str, tuple[int, int]] = {}
        for index, node in enumerate(placeholders):
            value = node.meta.get("example_value")
            if index in weights or not isinstance(value, torch.Tensor):
                continue
            for dim, size in enumerate(value.shape):
                # A size Dynamo specialized (guarded to one value) is static.
                if isinstance(size, int) or size.node.maybe_as_int() is not None:
                    continue
                found = _symbol_range(size)
                if found is None:
                    return None
                dims.setdefault(index, {})[dim] = found
                where.setdefault(found[0], (index, dim))
        derived = {}
        for index, node in enumerate(placeholders):
            value = node.meta.get("example_value")
            if isinstance(value, torch.SymInt):
                if str(value) not in where:
                    return None
                derived[index] = where[str(value)]
        return cls(dims, derived) if dims else None

    def dynamic_shapes(self, inputs: list[int]) -> tuple:
        """torch.export's ``dynamic_shapes`` for the compiled graph's inputs
        (graph input positions ``inputs``): one ``Dim`` per symbol."""
        made: dict[str, Any] = {}

        def dim(symbol: str, low: int, high: int | None) -> Any:
            if symbol not in made:
                made[symbol] = torch.export.Dim(symbol, min=low, max=high)
            return made[symbol]

        return tuple(
            {d: dim(*spec) for d, spec in self.dims[i].items()} if i in self.dims else None
            for i in inputs
        )


def _symbol_range(size: torch.SymInt) -> tuple[str, int, int | None] | None:
    """A size that is one of Dynamo's symbols alone: its name and range."""
    expr = size.node.expr
    if not getattr(expr, "is_Symbol", False):  # sympy's own test, without importing sympy
        return None
    bounds = size.node.shape_env.var_to_range.get(expr)
    if bounds is None:
        return None
    return str(expr), range_end(bounds.lower) or 0, range_end(bounds.upper)


def _exportable(
    gm: torch.fx.GraphModule,
    weights: dict[str, torch.Tensor],
    numbers: set[str],
    derived: dict[int, tuple[int, int]] | None = None,
) -> torch.fx.GraphModule:
    """``gm`` as lowerline.compile takes it: the lifted weights read by
    ``get_attr`` from attributes of the same names (parameters or buffers, the
    very tensors, not copies), so ``torch.export`` sees them as the module's
    and lowerline bakes them in; the ``numbers`` inputs are numbers, their
    ``.item()`` reads gone; torch's fused inference kernels, which Dynamo
    traces and torch.export does not, written out (frontend.fastpath); the
    ``derived`` int inputs (position -> (tensor position, dim)) read from
    their tensors' sizes."""
    root = torch.nn.Module()
    graph = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    placeholders = list(gm.graph.find_nodes(op="placeholder"))
    derived = derived or {}
    for index, node in enumerate(placeholders):
        if index not in derived and f"lifted_{node.name}" not in weights:
            env[node] = graph.node_copy(node, lambda arg: env[arg])
    for index, (source, dim) in derived.items():
        size = graph.call_function(torch.ops.aten.sym_size.int, (env[placeholders[source]], dim))
        env[placeholders[index]] = size
    for node in gm.graph.nodes:
        if node in env:
            continue
        name = f"lifted_{node.name}"
        if node.op == "placeholder" and name in weights:
            env[node] = graph.get_attr(name)
            continue
        if _is_item(node) and node.args[0].name in numbers:
            env[node] = env[node.args[0]]
            continue
        if node.op in ("get_attr", "call_module"):
            _set_path(root, node.target, operator.attrgetter(node.target)(gm))
        env[node] = graph.node_copy(node, lambda arg: env[arg])
        if node.op == "call_function" and node.target in FAST_PATHS:
            env[node].target = FAST_PATHS[node.target]
    for name, tensor in weights.items():
        _set_path(root, name, tensor)
    return torch.fx.GraphModule(root, graph)


def _set_path(root: torch.nn.Module, path: str, value: Any) -> None:
    """``root.a.b.c = value``, creating the modules on the way; a tensor that
    is not a Parameter becomes a buffer (what torch.export treats as state)."""
    *parents, leaf = path.split(".")
    owner = root
    for part in parents:
        if not hasattr(owner, part):
            owner.add_module(part, torch.nn.Module())
        owner = getattr(owner, part)
    if isinstance(value, torch.Tensor) and not isinstance(value, torch.nn.Parameter):
        owner.register_buffer(leaf, value)
    else:
        setattr(owner, leaf, value)
