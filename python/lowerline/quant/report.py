"""``quant_report``: each quantized layer compiled on its own against its QDQ
float reference, and the whole compiled model against the float model.

Per layer, the nodes from its input quantize to its output dequantize are
copied out of the QDQ graph into a module of their own (``layer_module``),
which lowerline compiles like any model: the same graph-stage folds see the
same pattern, so a layer that folds in the model folds here, and its graph IR
tells whether it became an integer kernel (an i8 x i8 contraction) or stayed
float. Its input is what that layer read on each calibration batch in the
QDQ graph run eagerly (``torch.fx.Interpreter``); its reference is that
module run eagerly: torch's own ``quantized_decomposed`` kernels around the
float op. Both outputs are multiples of the output scale, so their largest
difference divided by it counts rounding steps: at most 1 is one rounding
step (a value next to a tie, the bias added in i32), more is a bug.

End to end: the compiled quantized model against the float model (the
quantization error) and against the QDQ graph run eagerly (the compiler's
own error) on the calibration batches.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import fx
from torch.utils import _pytree as pytree

from lowerline.quant.calibrate import Layer, QuantizedModel

# A linalg contraction of two i8 operands: what a folded layer computes.
_INTEGER_KERNEL = re.compile(
    r"linalg\.([\w.]+)(?: \{[^}]*\})? ins\([^)]*:\s*tensor<[^>]*xi8>, tensor<[^>]*xi8>\)"
)


@dataclass(frozen=True)
class LayerReport:
    name: str
    kind: str  # "linear", "conv" or "matmul"
    kernel: str  # the integer op it became (``linalg.matmul i8``), or "float"
    max_steps: float  # the largest |compiled - reference| / output scale
    output_scale: float
    batches: int


@dataclass(frozen=True)
class QuantReport:
    layers: tuple[LayerReport, ...]
    skipped: tuple[str, ...]
    # Compiled quantized model against the float model, and against its QDQ graph run eagerly.
    max_abs_error: float
    mean_abs_error: float
    float_max_abs: float  # the float model's largest output, for scale
    max_abs_error_vs_qdq: float
    calibrate_seconds: float

    @property
    def ok(self) -> bool:
        """Whether every layer is within one rounding step of its reference."""
        return all(layer.max_steps <= 1.0 for layer in self.layers)

    def __str__(self) -> str:
        lines = [f"int8 layers: {len(self.layers)} (max error in output steps, must be <= 1)"]
        width = max([len(layer.name) for layer in self.layers] + [5])
        for layer in self.layers:
            flag = "" if layer.max_steps <= 1.0 else "  OVER ONE STEP"
            lines.append(
                f"  {layer.name:<{width}} {layer.kind:<6} {layer.kernel:<28} "
                f"{layer.max_steps:5.2f} steps (scale {layer.output_scale:.3g}){flag}"
            )
        if self.skipped:
            lines.append(f"left in float: {', '.join(self.skipped)}")
        lines.append(
            f"end to end against the float model: max |error| {self.max_abs_error:.4g}, "
            f"mean {self.mean_abs_error:.4g} (float outputs up to {self.float_max_abs:.4g})"
        )
        lines.append(
            f"end to end against the QDQ graph run eagerly: max |error| "
            f"{self.max_abs_error_vs_qdq:.4g}"
        )
        lines.append(f"calibration (export, observers, rewrite): {self.calibrate_seconds:.2f} s")
        return "\n".join(lines)


# (module, example inputs) -> a compiled module (lowerline.compile with the model's options).
Compiler = Callable[..., Any]


def quant_report(quantized: QuantizedModel, compiled: Any, compile_layer: Compiler) -> QuantReport:
    """Check every layer of ``quantized`` and the whole ``compiled`` model."""
    batches = quantized.config.calibration
    inputs = _layer_inputs(quantized, batches)
    layers = tuple(
        _check_layer(quantized.graph, layer, [inputs[s] for s in layer.sources], compile_layer)
        for layer in quantized.layers
    )
    errors = _end_to_end(quantized, compiled, batches)
    return QuantReport(
        layers=layers,
        skipped=tuple(quantized.skipped),
        calibrate_seconds=quantized.seconds,
        **errors,
    )


def layer_module(graph: fx.GraphModule, layer: Layer) -> fx.GraphModule:
    """``layer``'s nodes of the QDQ graph as a module of one input per float
    value its input quantizes read (a batch matmul has two) and one output
    (its output dequantize)."""
    new = fx.Graph()
    env: dict[fx.Node, fx.Node] = {
        source: new.placeholder(f"x{index}") for index, source in enumerate(layer.sources)
    }
    for node in layer.nodes:
        env[node] = new.node_copy(node, lambda n: env[n])
    new.output(env[layer.result])
    return fx.GraphModule(graph, new, class_name=f"Layer_{layer.op.name}")


class _Recorder(fx.Interpreter):
    """Runs the QDQ graph and keeps the values of ``wanted`` nodes."""

    def __init__(self, graph: fx.GraphModule, wanted: set[fx.Node]):
        super().__init__(graph)
        self.wanted = wanted
        self.seen: dict[fx.Node, torch.Tensor] = {}

    def run_node(self, n: fx.Node) -> Any:
        result = super().run_node(n)
        if n in self.wanted:
            self.seen[n] = result
        return result


def _layer_inputs(
    quantized: QuantizedModel, batches: tuple[tuple, ...]
) -> dict[fx.Node, list[torch.Tensor]]:
    """Each layer's input on each calibration batch, in the QDQ graph."""
    wanted = {source for layer in quantized.layers for source in layer.sources}
    found: dict[fx.Node, list[torch.Tensor]] = {node: [] for node in wanted}
    with torch.no_grad():
        for batch in batches:
            recorder = _Recorder(quantized.graph, wanted)
            recorder.run(*batch)
            for node, value in recorder.seen.items():
                found[node].append(value.contiguous())
    return found


def _check_layer(
    graph: fx.GraphModule,
    layer: Layer,
    inputs: list[list[torch.Tensor]],
    compile_layer: Compiler,
) -> LayerReport:
    """``inputs``: per source of the layer, its value on each batch."""
    assert layer.output is not None
    module = layer_module(graph, layer)
    batches = list(zip(*inputs, strict=True))
    compiled = compile_layer(module, *batches[0], max_specializations=len(batches) + 1)
    worst = 0.0
    with torch.no_grad():
        for batch in batches:
            expected, got = module(*batch), compiled(*batch)
            worst = max(worst, float((got.double() - expected.double()).abs().max()))
    return LayerReport(
        name=layer.name,
        kind=layer.kind,
        kernel=integer_kernel(compiled.ir("graph")),
        max_steps=round(worst / layer.output.scale, 3),  # both are multiples of the scale
        output_scale=layer.output.scale,
        batches=len(batches),
    )


def integer_kernel(graph_ir: str) -> str:
    """The integer contraction in a layer's graph-stage IR (``linalg.matmul i8``), or
    ``"float"`` when the layer was not folded."""
    found = _INTEGER_KERNEL.search(graph_ir)
    return f"linalg.{found.group(1)} i8" if found else "float"


def _end_to_end(quantized: QuantizedModel, compiled: Any, batches: tuple[tuple, ...]) -> dict:
    worst = worst_qdq = float_max = 0.0
    total = count = 0.0
    with torch.no_grad():
        for batch in batches:
            reference = _tensors(quantized.float_module(*batch))
            eager_qdq = _tensors(quantized.graph(*batch))
            got = _tensors(compiled(*batch))
            for ref, qdq, out in zip(reference, eager_qdq, got, strict=True):
                error = (out.double() - ref.double()).abs()
                worst = max(worst, float(error.max()))
                total += float(error.sum())
                count += error.numel()
                float_max = max(float_max, float(ref.abs().max()))
                worst_qdq = max(worst_qdq, float((out.double() - qdq.double()).abs().max()))
    return {
        "max_abs_error": worst,
        "mean_abs_error": total / max(count, 1),
        "float_max_abs": float_max,
        "max_abs_error_vs_qdq": worst_qdq,
    }


def _tensors(output: Any) -> list[torch.Tensor]:
    return [
        leaf
        for leaf in pytree.tree_leaves(output)
        if isinstance(leaf, torch.Tensor) and leaf.is_floating_point() and leaf.numel()
    ]
