"""Calibration and the QDQ graph: a float model in, its PT2E-style int8 graph out.

``quantize_model`` exports the float model with ``torch.export``, writes
attention out as its two batch matmuls (lowerline.quant.attention), finds
the layers to quantize (``aten.linear`` and ``aten.conv{1,2,3}d`` on a weight
parameter, ``aten.matmul``/``bmm`` of two activations with batch dims), runs
the exported graph on the calibration batches with an observer on every
activation such a layer reads or writes, and then inserts what torchao's
``convert_pt2e`` would have left:

    x -> quantize_per_tensor -> dequantize_per_tensor -> linear/conv (+ ReLU)
      -> quantize_per_tensor -> dequantize_per_tensor -> ...
    w (int8, per output channel) -> dequantize_per_channel -^

The graph then takes the PT2E path as it is (lowerline-fold-qdq-matmul and
the other graph-stage folds). Each layer's output is quantized too (after its
ReLU when one follows): every integer kernel ends in a requantize, and
``quant_report`` has an output scale to count errors in.

A batch matmul's operands are activations on both sides: the first takes
the configured type, the second (attention's keys and values) symmetric s8,
and a softmax output the fixed u8 grid of [0, 1] (``SOFTMAX_QPARAMS``). A
value moved or picked out of an observed one by layout ops alone (q, k and
v out of the packed in-projection, the heads put back together for the
out-projection) takes that one's parameters instead of its own: its pair
then repeats the one before the layout ops, which the graph stage removes,
where an observer of its own would have made a requantize step.

Calibration runs, by default, the exported float graph
(``torch.fx.Interpreter``): eager float arithmetic on the same graph gives
the observers the same values as compiled code up to float rounding, without
a compile of its own. ``Int8(calibrate_on="compiled")`` compiles that graph
with lowerline instead, every observed value one of its outputs
(``observer_module``), and runs the batches through the compiled code: one
more compile (docs/quantization.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import fx

from lowerline.quant.attention import decompose_attention
from lowerline.quant.config import Int8
from lowerline.quant.observers import (
    Fixed,
    Observer,
    QParams,
    qparams,
    quantized_ops,
    weight_qparams,
)

aten = torch.ops.aten
# Op -> its kind (Int8.skip's names); every one takes (input, weight, bias, ...)
# with the output channels on the weight's axis 0.
LAYER_OPS = {
    aten.linear.default: "linear",
    aten.conv1d.default: "conv",
    aten.conv2d.default: "conv",
    aten.conv3d.default: "conv",
}
# An activation after a layer that its integer kernel computes (the fold's
# epilogue): ReLU, and the clamps (ReLU6 exports as hardtanh) that the folds
# put into the requantize range. Observed after it, the output's range is
# the clamped one.
# A batch matmul of two activations (attention's q @ k^T and p @ v, once
# lowerline.quant.attention has written them out).
BATCH_MATMUL_OPS = (aten.matmul.default, aten.bmm.default)
# Ops that move or pick elements without changing them: a value reached from
# a quantized one through these alone is on the same grid, so it takes the
# same parameters (no observer of its own, no requantize; the graph stage's
# lowerline-sink-qdq-through-layout-ops removes the pair that then repeats).
LAYOUT_OPS = (
    aten.view.default,
    aten.reshape.default,
    aten._unsafe_view.default,
    aten.transpose.int,
    aten.permute.default,
    aten.t.default,
    aten.unflatten.int,
    aten.flatten.using_ints,
    aten.unsqueeze.default,
    aten.squeeze.dim,
    aten.squeeze.dims,
    aten.select.int,
    aten.slice.Tensor,
    aten.contiguous.default,
    aten.clone.default,
)
SOFTMAX_OPS = (aten._softmax.default, aten.softmax.int)
# A softmax output is in [0, 1]: u8 with 255 steps over that range and zero
# point 0, fixed (no observer), the usual choice for attention weights.
SOFTMAX_QPARAMS = qparams(0.0, 1.0, "u8")
FUSED_ACTIVATIONS = (
    aten.relu.default,
    aten.relu_.default,
    aten.hardtanh.default,
    aten.hardtanh_.default,
    aten.relu6.default,
    aten.clamp.default,
)


@dataclass
class Layer:
    """One quantized layer of the QDQ graph."""

    name: str  # the module's qualified name, else the op node's
    kind: str  # "linear", "conv" or "matmul"
    op: fx.Node
    # The float values its input quantizes read: one, or a batch matmul's two.
    sources: tuple[fx.Node, ...]
    result: fx.Node  # the dequantize of its output
    inputs: tuple[QParams, ...] = ()
    output: QParams | None = None
    # Its nodes from the input quantizes to the output dequantize, in graph order.
    nodes: list[fx.Node] = field(default_factory=list)

    @property
    def source(self) -> fx.Node:
        return self.sources[0]

    @property
    def input(self) -> QParams | None:
        return self.inputs[0] if self.inputs else None


@dataclass
class QuantizedModel:
    """A float model's QDQ graph and what calibration decided."""

    graph: fx.GraphModule
    float_module: torch.nn.Module
    config: Int8
    layers: list[Layer]
    skipped: list[str]  # layers left in float, by name
    seconds: float  # export, calibration and the rewrite


def quantize_model(
    module: torch.nn.Module,
    example_inputs: tuple,
    config: Int8,
    compile_model: Callable[..., Any] | None = None,
) -> QuantizedModel:
    """``module`` calibrated on ``config.calibration`` as a QDQ graph module.

    ``compile_model(module, *inputs, **options)``: lowerline.compile with the
    caller's options, for ``config.calibrate_on == "compiled"``."""
    if not isinstance(config, Int8):
        raise TypeError(f"quantize takes a lowerline.quant.Int8, got {type(config).__name__}")
    if config.calibrate_on == "compiled" and compile_model is None:
        raise ValueError("Int8(calibrate_on='compiled') needs lowerline.compile to run it")
    start = time.perf_counter()
    graph = _export(module, config.calibration[0], example_inputs)
    if not config.skips_kind("matmul", None):
        decompose_attention(graph)
    found = _layers(graph)
    if not found:
        raise ValueError(
            "Int8: the model has no linear or convolution layer on a weight attribute: "
            "nothing to quantize"
        )
    skipped = _skipped(found, config)
    layers = [layer for layer in found if layer.name not in skipped]
    observers, aliases = _observers(layers, config)
    if compile_model is not None and config.calibrate_on == "compiled":
        _calibrate_compiled(graph, observers, config.calibration, compile_model)
    else:
        _calibrate(graph, observers, config.calibration)
    params = {node: obs.qparams() for node, obs in observers.items()}
    params.update({alias: params[origin] for alias, origin in aliases.items()})
    _rewrite(graph, layers, params)
    return QuantizedModel(
        graph=graph,
        float_module=module,
        config=config,
        layers=layers,
        skipped=sorted(skipped),
        seconds=time.perf_counter() - start,
    )


def _rewrite(graph: fx.GraphModule, layers: list[Layer], params: dict[fx.Node, QParams]) -> None:
    """Quantize/dequantize pairs on the observed values, int8 weights; each
    layer learns its qparams and nodes."""
    pairs = {node: _insert_pair(graph.graph, node, p) for node, p in params.items()}
    for index, layer in enumerate(layers):
        if layer.kind != "matmul":
            _quantize_weight(graph, layer.op, index)
        output = _output_value(layer.op)
        layer.inputs = tuple(params[source] for source in layer.sources)
        layer.output = params[output]
        layer.result = pairs[output]
    graph.graph.eliminate_dead_code()
    graph.graph.lint()
    graph.recompile()
    _drop_unused_attributes(graph)
    for layer in layers:
        layer.nodes = _layer_nodes(layer)


def _export(module: torch.nn.Module, batch: tuple, example_inputs: tuple) -> fx.GraphModule:
    """The float model as an FX graph module, its batch dimensions dynamic where
    torch.export can keep them so (calibration batches of other sizes run on it)."""
    dims = tuple(
        {0: torch.export.Dim.AUTO} if isinstance(v, torch.Tensor) and v.dim() else None
        for v in batch
    )
    try:
        exported = torch.export.export(module, batch, dynamic_shapes=dims)
    except Exception:  # a model torch.export keeps only static: export it so
        exported = torch.export.export(module, tuple(example_inputs))
    return exported.module()


def _layers(graph: fx.GraphModule) -> list[Layer]:
    """Every linear and convolution on a weight parameter and every batch
    matmul of two activations, in graph order."""
    found: list[Layer] = []
    for node in graph.graph.nodes:
        if node.op != "call_function" or len(node.args) < 2:
            continue
        if _is_batch_matmul(node):
            name = _matmul_name(node, found)
            found.append(Layer(name, "matmul", node, (node.args[0], node.args[1]), node))
            continue
        kind = LAYER_OPS.get(node.target)
        if kind is None or not _is_parameter(node.args[1]):
            continue
        if not isinstance(node.args[0], fx.Node):
            continue
        name, _ = _module_of(node)
        found.append(Layer(name=name, kind=kind, op=node, sources=(node.args[0],), result=node))
    return found


def _is_batch_matmul(node: fx.Node) -> bool:
    """A matmul of two activations with batch dimensions on both (what
    lowerline-fold-qdq-batch-matmul folds; a 2-D one has no such fold)."""
    if node.target not in BATCH_MATMUL_OPS:
        return False
    operands = node.args[:2]
    if not all(isinstance(a, fx.Node) and not _is_parameter(a) for a in operands):
        return False
    values = [a.meta.get("val") for a in operands if isinstance(a, fx.Node)]
    return all(isinstance(v, torch.Tensor) and v.dim() >= 3 for v in values)


def _matmul_name(node: fx.Node, found: list[Layer]) -> str:
    """``<module>.matmul<i>``, the module's i-th batch matmul: a module's two
    attention matmuls apart in the report, both left in float by skipping
    the module's name."""
    name, module_type = _module_of(node)
    if module_type is None:
        return name
    index = sum(layer.name.startswith(f"{name}.matmul") for layer in found)
    return f"{name}.matmul{index}"


def _is_parameter(node: Any) -> bool:
    return isinstance(node, fx.Node) and node.op == "get_attr"


def _module_of(node: fx.Node) -> tuple[str, str | None]:
    """(qualified module name, ``"pkg.Class"``) of the module that called ``node``'s
    op; the node's own name when it was called outside any submodule."""
    stack = node.meta.get("nn_module_stack") or {}
    if stack:
        path, module_type = list(stack.values())[-1]
        if path:
            return path, module_type if isinstance(module_type, str) else None
    return node.name, None


def _skipped(layers: list[Layer], config: Int8) -> set[str]:
    """The layers ``config.skip`` leaves in float; unknown names are an error."""
    names = [layer.name for layer in layers]
    wanted = config.skipped_names()
    unknown = sorted(n for n in wanted if not any(x == n or x.startswith(n + ".") for x in names))
    if unknown:
        raise ValueError(
            f"Int8: skip names {', '.join(unknown)}, which no quantizable layer has; "
            f"layers: {', '.join(names) or 'none'}"
        )
    skipped = set()
    for layer in layers:
        _, module_type = _module_of(layer.op)
        by_name = any(layer.name == n or layer.name.startswith(n + ".") for n in wanted)
        if by_name or config.skips_kind(layer.kind, module_type):
            skipped.add(layer.name)
    return skipped


def _output_value(op: fx.Node) -> fx.Node:
    """The value a layer's output quantize reads: its activation's (ReLU,
    clamp) when that is the only user."""
    users = list(op.users)
    if len(users) == 1 and users[0].target in FUSED_ACTIVATIONS:
        return users[0]
    return op


def _observers(
    layers: list[Layer], config: Int8
) -> tuple[dict[fx.Node, Observer | Fixed], dict[fx.Node, fx.Node]]:
    """One observer per value a quantized layer reads or writes (shared
    between layers), and the values that take another one's parameters:
    (observers, alias -> the observed value it was moved or picked from)."""
    values: dict[fx.Node, str] = {}  # value -> its activation type
    for layer in layers:
        for position, value in enumerate(layer.sources):
            # A batch matmul's second operand (keys, values): symmetric s8.
            symmetric = layer.kind == "matmul" and position == 1
            values.setdefault(value, "s8" if symmetric else config.activations)
        values.setdefault(_output_value(layer.op), config.activations)
    observers: dict[fx.Node, Observer | Fixed] = {}
    aliases: dict[fx.Node, fx.Node] = {}
    for value, activations in values.items():
        origin = _layout_origin(value)
        if origin is not value and origin in values:
            aliases[value] = origin
        elif value.target in SOFTMAX_OPS:
            observers[value] = Fixed(SOFTMAX_QPARAMS)
        else:
            observers[value] = Observer(
                config.observer, activations, config.percentile, config.averaging_constant
            )
    for alias, origin in aliases.items():
        while origin in aliases:
            origin = aliases[origin]
        aliases[alias] = origin
    return observers, aliases


def _layout_origin(value: fx.Node) -> fx.Node:
    """The value ``value`` was moved or picked from by layout ops alone."""
    while value.op == "call_function" and value.target in LAYOUT_OPS:
        source = value.args[0]
        if not isinstance(source, fx.Node):
            break
        value = source
    return value


class _Watcher(fx.Interpreter):
    """Runs the float graph and shows each observed value to its observer."""

    def __init__(self, graph: fx.GraphModule, observers: dict[fx.Node, Observer | Fixed]):
        super().__init__(graph)
        self.observers = observers

    def run_node(self, n: fx.Node) -> Any:
        result = super().run_node(n)
        observer = self.observers.get(n)
        if observer is not None:
            observer.observe(result)
        return result


def _calibrate(
    graph: fx.GraphModule,
    observers: dict[fx.Node, Observer | Fixed],
    batches: tuple[tuple, ...],
) -> None:
    watcher = _Watcher(graph, observers)
    with torch.no_grad():
        for index, batch in enumerate(batches):
            try:
                watcher.run(*batch)
            except Exception as err:  # named with the batch, then re-raised
                raise ValueError(
                    f"Int8: calibration batch {index} does not run through the model: {err}"
                ) from err


def observer_module(graph: fx.GraphModule, values: list[fx.Node]) -> fx.GraphModule:
    """The float graph with ``values`` as its outputs (nothing else computed)."""
    new = fx.Graph()
    env: dict[fx.Node, fx.Node] = {}
    new.graph_copy(graph.graph, env)
    new.output(tuple(env[value] for value in values))
    module = fx.GraphModule(graph, new, class_name="ObserverModel")
    module.graph.eliminate_dead_code()  # needs the owning module (purity of its calls)
    module.recompile()
    return module


def _calibrate_compiled(
    graph: fx.GraphModule,
    observers: dict[fx.Node, Observer | Fixed],
    batches: tuple[tuple, ...],
    compile_model: Callable[..., Any],
) -> None:
    """Run the batches through lowerline's compiled float graph, every observed
    value one of its outputs: the observers see what compiled code computes."""
    values = list(observers)
    module = observer_module(graph, values)
    shapes = {tuple(getattr(v, "shape", None) for v in batch) for batch in batches}
    compiled = compile_model(module, *batches[0], max_specializations=len(shapes) + 1)
    for index, batch in enumerate(batches):
        try:
            seen = compiled(*batch)
        except (TypeError, ValueError, RuntimeError) as err:
            raise ValueError(
                f"Int8: calibration batch {index} does not run through the model: {err}"
            ) from err
        for value, tensor in zip(values, seen, strict=True):
            observers[value].observe(tensor)


def _insert_pair(graph: fx.Graph, value: fx.Node, params: QParams) -> fx.Node:
    """A quantize/dequantize pair after ``value``; every op and output that read it
    reads the dequantize (torch.export's input guards, a ``call_module``, still
    see the input)."""
    ops = quantized_ops()
    with graph.inserting_after(value):
        quantize = graph.call_function(ops.quantize_per_tensor.default, (value, *params.args))
    with graph.inserting_after(quantize):
        dequantize = graph.call_function(
            ops.dequantize_per_tensor.default, (quantize, *params.args)
        )
    value.replace_all_uses_with(
        dequantize, delete_user_cb=lambda user: user.op != "call_module" and user is not quantize
    )
    return dequantize


def _quantize_weight(graph: fx.GraphModule, op: fx.Node, index: int) -> None:
    """``op``'s weight as int8 per output channel, dequantized in the graph."""
    source = op.args[1]
    assert isinstance(source, fx.Node) and isinstance(source.target, str)  # _layers' check
    weight = graph
    for part in source.target.split("."):  # a parameter, a buffer or a constant
        weight = getattr(weight, part)
    assert isinstance(weight, torch.Tensor)
    stored, scales, zero_points = weight_qparams(weight)
    names = []
    for suffix, tensor in (("weight", stored), ("scale", scales), ("zero_point", zero_points)):
        name = f"_lowerline_quant_{index}_{suffix}"
        graph.register_buffer(name, tensor)
        names.append(name)
    with graph.graph.inserting_before(op):
        attrs = [graph.graph.get_attr(name) for name in names]
        dequantize = graph.graph.call_function(
            quantized_ops().dequantize_per_channel.default, (*attrs, 0, -128, 127, torch.int8)
        )
    op.replace_input_with(source, dequantize)


def _drop_unused_attributes(graph: fx.GraphModule) -> None:
    """Remove the float weights no node reads any more (they would travel as weights)."""
    used = {node.target for node in graph.graph.nodes if node.op == "get_attr"}
    for name, _ in list(graph.named_parameters()):
        if name not in used:
            owner, _, attr = name.rpartition(".")
            delattr(graph.get_submodule(owner) if owner else graph, attr)


def _layer_nodes(layer: Layer) -> list[fx.Node]:
    """The layer's nodes from its input quantize to its output dequantize."""
    nodes: set[fx.Node] = set()

    def collect(node: fx.Node) -> None:
        if node in nodes or node in layer.sources:
            return
        nodes.add(node)
        for arg in node.all_input_nodes:
            collect(arg)

    collect(layer.result)
    order = {node: i for i, node in enumerate(layer.op.graph.nodes)}
    return sorted(nodes, key=order.__getitem__)
