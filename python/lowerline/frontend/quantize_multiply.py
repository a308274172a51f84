"""Quantize as eager torch does: ``x * f32(1 / scale)``, not ``x / scale``.

torch's ``quantized_decomposed`` kernels (the reference of PT2E graphs and of
``lowerline.quant.Int8``, whose graphs hold the same ops) multiply by the
reciprocal of the scale::

    quantize_per_tensor:  round(x * inv) + zero_point, inv = 1.0 / scale
                          (a double, rounded to float32 by the tensor-scalar
                          multiply)
    quantize_per_channel: round(x * (1.0 / scales)) + zero_points
                          (float32 scales: the float32 reciprocal; float64
                          scales: the whole product in double)

torch-mlir lowers both with ``arith.divf`` by the scale, which rounds
``x / scale`` once where torch rounds ``1 / scale`` and then the product: at a
rounding tie the two differ by one step (docs/quantization.md). A rewrite of
every ``divf`` before a ``roundeven`` would change a user's own
``round(x / s)``, so the quantizes are picked out where they are still known,
in the FX graph, and the mark is carried through torch-mlir by the only thing
an FX node hands to the ops it becomes, its location:

1. ``tag``: each quantize node's stack trace gets one more, innermost frame,
   ``File "<lowerline.quantize>"``; the FX importer makes it the callee of the
   node's call-site location, which torch-mlir's lowering copies to the
   ``linalg.generic`` it emits;
2. ``rewrite``: in each generic so located whose body is torch-mlir's quantize
   (``divf`` of the input by the scale, ``roundeven``), the division becomes
   the multiply by torch's reciprocal; a per-tensor one is marked
   ``lowerline.quantize`` with its scale (``protocol.QUANTIZE``). The QDQ
   matchers (lowerline-fold-qdq-matmul's ``match_requantize``) take a
   multiply only in a marked generic; per channel, which they never fold,
   stays unmarked.

A generic not in that form keeps torch-mlir's division (within one step, as
before). Runs in the import worker (torch-mlir's MLIR).
"""

from __future__ import annotations

from typing import Any

import numpy as np

# The file name of the frame ``tag`` adds; not a path, so never a user's file.
TAG = "<lowerline.quantize>"
# lowerline.pipeline.protocol.QUANTIZE: its name, spelt here because the worker
# loads torch-mlir's MLIR, not the ``mlir`` package the protocol imports.
QUANTIZE_ATTR = "lowerline.quantize"
# The frame's line number: 1 for a per-tensor quantize, 2 for a per-channel one
# (their float64 scales round differently in torch).
_PER_TENSOR, _PER_CHANNEL = 1, 2


def _quantize_ops() -> set:
    import torch

    ops = torch.ops.quantized_decomposed
    return {
        ops.quantize_per_tensor.default,
        ops.quantize_per_tensor.tensor,
        ops.quantize_per_tensor.tensor2,
        ops.quantize_per_channel.default,
    }


def tag(graph: Any) -> int:
    """Add the quantize frame to each quantize node of the FX ``graph``; the
    number tagged."""
    targets = _quantize_ops()
    count = 0
    for node in graph.nodes:
        if node.op != "call_function" or node.target not in targets:
            continue
        trace = node.meta.get("stack_trace") or ""
        if TAG in trace:
            continue
        kind = _PER_CHANNEL if "per_channel" in str(node.target) else _PER_TENSOR
        frame = f'  File "{TAG}", line {kind}, in quantize\n'
        node.meta["stack_trace"] = (
            trace if trace.endswith("\n") or not trace else trace + "\n"
        ) + frame
        count += 1
    return count


def rewrite(module: Any) -> int:
    """Turn each tagged quantize generic of torch-mlir's linalg ``module`` into
    the multiply form and mark it; the number rewritten."""
    count = 0
    for op in _walk(module.operation):
        where = str(op.location)
        if op.name == "linalg.generic" and TAG in where:
            count += _rewrite_generic(op, f'"{TAG}":{_PER_CHANNEL}:' in where)
    return count


def _walk(op: Any):
    for region in op.regions:
        for block in region.blocks:
            for child in block.operations:
                yield child.operation
                yield from _walk(child.operation)


def _defining(value: Any, name: str) -> Any:
    from torch_mlir import ir

    if isinstance(value, ir.OpResult) and value.owner.name == name:
        return value.owner
    return None


def _float_constant(value: Any) -> float | None:
    from torch_mlir import ir

    op = _defining(value, "arith.constant")
    attr = op.attributes["value"] if op is not None else None
    return ir.FloatAttr(attr).value if isinstance(attr, ir.FloatAttr) else None


def _scaled_input(block: Any) -> Any:
    """The ``divf`` of the quantize's input (block argument 0, extended to f32
    from a narrower float) by its scale, feeding a ``roundeven``; or None."""
    for op in block.operations:
        if op.name != "arith.divf":
            continue
        lhs = op.operands[0]
        extend = _defining(lhs, "arith.extf")
        if extend is not None:
            lhs = extend.operands[0]
        users = [use.owner.name for use in op.results[0].uses]
        if lhs == block.arguments[0] and users == ["math.roundeven"]:
            return op
    return None


def _rewrite_generic(generic: Any, per_channel: bool) -> int:
    from torch_mlir import ir

    block = generic.regions[0].blocks[0]
    divide = _scaled_input(block)
    if divide is None or str(divide.results[0].type) != "f32":
        return 0
    scale = divide.operands[1]
    truncate = _defining(scale, "arith.truncf")
    wide = truncate.operands[0] if truncate is not None else None
    constant = _float_constant(wide if wide is not None else scale)
    if constant is None and wide is not None:
        # A float64 scale read in the body: per channel torch computes in
        # double; per tensor (the ``.tensor`` overloads) torch-mlir has no
        # lowering today, so there is no such generic to rewrite.
        return _rewrite_double(divide, wide) if per_channel else 0
    with ir.InsertionPoint(divide), divide.location:
        inverse = _per_tensor_inverse(constant) if constant is not None else _reciprocal(scale)
        product = _arith().MulFOp(divide.operands[0], inverse).result
    divide.results[0].replace_all_uses_with(product)
    divide.erase()
    if truncate is not None and not list(truncate.results[0].uses):
        truncate.erase()
    if constant is not None:  # per tensor: the form the QDQ matchers take
        scale_attr = ir.FloatAttr.get(
            ir.F64Type.get(), float(np.float32(constant)), loc=generic.location
        )
        generic.attributes[QUANTIZE_ATTR] = scale_attr
    return 1


def _arith() -> Any:
    from torch_mlir.dialects import arith

    return arith


def _per_tensor_inverse(scale: float) -> Any:
    """torch's ``1.0 / scale`` in double, rounded to float32."""
    from torch_mlir import ir

    f32 = ir.F32Type.get()
    inverse = float(np.float32(1.0 / scale))
    return _arith().ConstantOp(f32, ir.FloatAttr.get(f32, inverse)).result


def _reciprocal(scale: Any) -> Any:
    """``1.0 / scale`` of a scale read in the body (a per-channel element),
    correctly rounded in its own type, as torch's ``reciprocal``."""
    from torch_mlir import ir

    one = _arith().ConstantOp(scale.type, ir.FloatAttr.get(scale.type, 1.0)).result
    return _arith().DivFOp(one, scale).result


def _rewrite_double(divide: Any, wide: Any) -> int:
    """Float64 per-channel scales: torch multiplies and rounds in double
    (``x * (1.0 / scales)`` promotes to float64), so the rounded product is
    computed in f64 and narrowed once it is an integer."""
    from torch_mlir import ir

    arith = _arith()
    from torch_mlir.dialects import math

    rounded = next(iter(divide.results[0].uses)).owner
    f32, f64 = ir.F32Type.get(), ir.F64Type.get()
    with ir.InsertionPoint(rounded), rounded.location:
        x = arith.ExtFOp(f64, divide.operands[0]).result
        inverse = _reciprocal(wide)
        product = math.RoundEvenOp(arith.MulFOp(x, inverse).result).result
        narrowed = arith.TruncFOp(f32, product).result
    rounded.results[0].replace_all_uses_with(narrowed)
    rounded.erase()
    divide.erase()
    return 1
