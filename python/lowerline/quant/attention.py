"""Scaled dot product attention as its two batch matmuls, for quantization.

``torch.export`` keeps ``nn.MultiheadAttention``'s core as one
``aten.scaled_dot_product_attention`` node: the two batch matmuls in it
(``q @ k^T`` and ``p @ v``) have no value between them that an observer
could see or a quantize/dequantize pair could sit on. ``decompose_attention``
writes each such node out as the math it computes::

    s = matmul(q, transpose(k, -2, -1)) ; s = s * scale [+ mask]
    p = softmax(s, -1) ; out = matmul(p, v)

so that calibration finds the two matmuls as layers of two activations
(lowerline-fold-qdq-batch-matmul then folds each into an integer batch
matmul). The scale multiplies the scores after the matmul, not ``q`` and
``k`` before it as torch's math kernel does: the matmul's output quantize
then sees the raw scores, and the scaling stays in the float softmax.

Left as they are: dropout (``dropout_p`` not 0), ``is_causal``, grouped
query attention (``enable_gqa``) and a head size that is not a number
(nothing in the graph would compute the default scale).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import fx
from torch._guards import detect_fake_mode

aten = torch.ops.aten
SDPA = aten.scaled_dot_product_attention.default


def decompose_attention(graph: fx.GraphModule) -> int:
    """Rewrite every plain ``scaled_dot_product_attention`` of ``graph``; returns how many."""
    count = 0
    for node in list(graph.graph.nodes):
        if node.op == "call_function" and node.target is SDPA and _decomposable(node):
            _decompose(graph.graph, node)
            count += 1
    if count:
        graph.graph.lint()
        graph.recompile()
    return count


_POSITIONAL = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal")
_DEFAULTS = {
    "attn_mask": None,
    "dropout_p": 0.0,
    "is_causal": False,
    "scale": None,
    "enable_gqa": False,
}


def _arguments(node: fx.Node) -> dict[str, Any]:
    """The SDPA call's arguments by name, defaults filled in."""
    given = dict(zip(_POSITIONAL, node.args, strict=False))
    return {**_DEFAULTS, **given, **node.kwargs}


def _head_size(query: Any) -> int | None:
    value = query.meta.get("val") if isinstance(query, fx.Node) else None
    size = value.shape[-1] if isinstance(value, torch.Tensor) else None
    return size if isinstance(size, int) else None


def _decomposable(node: fx.Node) -> bool:
    args = _arguments(node)
    if args["dropout_p"] != 0.0 or args["is_causal"] or args["enable_gqa"]:
        return False
    return args["scale"] is not None or _head_size(args["query"]) is not None


def _decompose(graph: fx.Graph, node: fx.Node) -> None:
    args = _arguments(node)
    scale = args["scale"]
    if scale is None:
        scale = 1.0 / math.sqrt(_head_size(args["query"]) or 1)
    mask = args["attn_mask"]
    with graph.inserting_before(node):
        steps = _Steps(graph, node)
        keys = steps.call(aten.transpose.int, args["key"], -2, -1)
        scores = steps.call(aten.matmul.default, args["query"], keys)
        scores = steps.call(aten.mul.Tensor, scores, float(scale))
        if isinstance(mask, fx.Node) and _is_bool(mask):
            # SDPA's boolean mask keeps the True entries; masked_fill fills them.
            dropped = steps.call(aten.logical_not.default, mask)
            scores = steps.call(aten.masked_fill.Scalar, scores, dropped, -math.inf)
        elif isinstance(mask, fx.Node):
            scores = steps.call(aten.add.Tensor, scores, mask)
        weights = steps.call(aten._softmax.default, scores, -1, False)
        out = steps.call(aten.matmul.default, weights, args["value"])
    node.replace_all_uses_with(out)
    graph.erase_node(node)


def _is_bool(node: fx.Node) -> bool:
    value = node.meta.get("val")
    return isinstance(value, torch.Tensor) and value.dtype == torch.bool


class _Steps:
    """Adds ops in place of an SDPA node: each carries the node's module stack
    (the layer name calibration reports) and its fake value (shapes, for the
    matmul's rank check), computed the way torch.export computed the others."""

    def __init__(self, graph: fx.Graph, origin: fx.Node):
        self.graph = graph
        self.origin = origin
        self.fake_mode = detect_fake_mode(_fake_values(origin))

    def call(self, target: Any, *args: Any) -> fx.Node:
        node = self.graph.call_function(target, args)
        for key in ("nn_module_stack", "stack_trace", "source_fn_stack"):
            if key in self.origin.meta:
                node.meta[key] = self.origin.meta[key]
        if self.fake_mode is not None:
            fake = [a.meta.get("val") if isinstance(a, fx.Node) else a for a in args]
            if not any(isinstance(a, fx.Node) and a.meta.get("val") is None for a in args):
                with self.fake_mode:
                    node.meta["val"] = target(*fake)
        return node


def _fake_values(node: fx.Node) -> list[Any]:
    return [a.meta["val"] for a in node.all_input_nodes if "val" in a.meta]
