"""Eager quantized modules (``torch.ao.quantization.convert``'s output) as
float modules with ``quantized_decomposed`` quantize/dequantize pairs,
rewritten in the caller's copy of the model before torch.export.

torch.export refuses these modules: their weights are packed parameters
(``LinearPackedParams``, ``Conv2dPackedParams``) and quantized tensors flow
between them. Each supported module becomes the QDQ graph a PT2E quantizer
leaves, which the QDQ folds turn into integer kernels:

    nnq.Linear(x) (quantized x, packed per-channel weight, output s, z)
    ->  xd = dequantize(x); w = dequantize_per_channel(w_int, sw, zw)
        y = linear(xd, w, bias) [relu]; quantize(y, s, z) -> dequantize

Activations flow as their dequantized float values. The quantization of
each one (scale, zero point, dtype) is remembered by the tensor's identity
while torch.export traces (``Activations``): a module's output carries its
own; an op of the model's code that keeps eager's parameters (a reshape,
ReLU, max or average pooling, ...) passes them on. A quantized module whose
input was computed by such an op quantizes it again at those parameters,
as eager's quantized op would have, so the folds see ``quantize ->
dequantize`` before every integer kernel (exact for values on the grid).

Supported: ``Quantize``, ``DeQuantize``, ``Linear``, ``Conv1d/2d/3d``
(grouped, depthwise, zero padding), ``LinearReLU``, ``ConvReLU1d/2d/3d``,
``QFunctional`` ``add``/``add_relu``/``mul``/``cat``, ``ReLU6``,
``Hardswish``. Any other quantized module is refused, every one named.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, ClassVar

import torch
import torch.ao.nn.intrinsic.quantized as nniq
import torch.ao.nn.quantized as nnq
import torch.nn.functional as F
from torch.utils import _pytree as pytree

from lowerline.frontend import eager_quantized as eq

# (scale, zero point, quantized dtype) of an activation
Params = tuple[float, int, torch.dtype]


class Activations:
    """The quantization of the activations torch.export has traced so far, by
    tensor identity (the tensor is kept, so its id is not reused)."""

    # Ops that keep their input's quantization in eager torch (the quantized
    # kernel writes its output at the input's scale and zero point).
    KEEPING: ClassVar[frozenset[str]] = frozenset(
        {
            "reshape",
            "view",
            "flatten",
            "permute",
            "transpose",
            "t",
            "contiguous",
            "squeeze",
            "unsqueeze",
            "__getitem__",
            "relu",
            "relu_",
            "max_pool1d",
            "max_pool2d",
            "max_pool3d",
            "avg_pool1d",
            "avg_pool2d",
            "avg_pool3d",
            "adaptive_avg_pool1d",
            "adaptive_avg_pool2d",
            "adaptive_avg_pool3d",
            "adaptive_max_pool1d",
            "adaptive_max_pool2d",
            "dropout",
            "clone",
            "expand",
            "chunk",
            "split",
            "narrow",
            "select",
            "mean",
            "interpolate",
            "upsample_nearest2d",
            "pixel_shuffle",
            "pad",
        }
    )

    def __init__(self) -> None:
        self.known: dict[int, tuple[torch.Tensor, Params, bool]] = {}

    def mark(self, value: torch.Tensor, params: Params, fresh: bool) -> None:
        """``fresh``: ``value`` is a dequantize's output (on the grid, marked)."""
        self.known[id(value)] = (value, params, fresh)

    def lookup(self, value: Any) -> tuple[Params, bool] | None:
        found = self.known.get(id(value))
        if found is None or found[0] is not value:
            return None
        return found[1], found[2]

    # What eager code may ask of a quantized module's output.
    READS: ClassVar[frozenset[Any]] = frozenset(
        {torch.Tensor.int_repr, torch.Tensor.q_scale, torch.Tensor.q_zero_point}
    )

    def read(self, func: Any, args: tuple, kwargs: dict) -> Any:
        """``int_repr()``, ``q_scale()``, ``q_zero_point()`` of an activation
        with known parameters (its integers: quantized again, exact on the grid)."""
        if func not in self.READS or not args or (found := self.lookup(args[0])) is None:
            return NotImplemented
        (scale, zero_point, dtype), _ = found
        if func is torch.Tensor.q_scale:
            return scale
        if func is torch.Tensor.q_zero_point:
            return zero_point
        low, high, stored = eq.RANGES[dtype]
        ops = eq._decomposed()
        return ops.quantize_per_tensor(args[0], scale, zero_point, low, high, stored)

    def observe(self, func: Any, args: tuple, kwargs: dict, result: Any) -> None:
        if getattr(func, "__name__", None) not in self.KEEPING or not self.known:
            return
        source = next(
            (found for leaf in pytree.tree_leaves(args) if (found := self.lookup(leaf))), None
        )
        if source is None:
            return
        for leaf in pytree.tree_leaves(result):
            if isinstance(leaf, torch.Tensor) and leaf.is_floating_point():
                self.mark(leaf, source[0], fresh=False)


# The activations of each export in progress (its Tracing mode).
_BY_MODE: weakref.WeakKeyDictionary[eq.Tracing, Activations] = weakref.WeakKeyDictionary()


def _activations() -> Activations | None:
    mode = eq.active()
    if mode is None:
        return None
    if mode not in _BY_MODE:
        activations = _BY_MODE[mode] = Activations()
        mode.readers.append(activations.read)
        mode.observers.append(activations.observe)
    return _BY_MODE[mode]


def _qdq(x: torch.Tensor, params: Params) -> torch.Tensor:
    """``x`` quantized and dequantized as torch's decomposed ops do, remembered."""
    scale, zero_point, dtype = params
    low, high, stored = eq.RANGES[dtype]
    ops = eq._decomposed()
    q = ops.quantize_per_tensor(x, scale, zero_point, low, high, stored)
    out = ops.dequantize_per_tensor(q, scale, zero_point, low, high, stored)
    _remember(out, params)
    return out


def _remember(value: torch.Tensor, params: Params) -> None:
    activations = _activations()
    if activations is not None:
        activations.mark(value, params, fresh=True)


def _quantized_input(x: torch.Tensor) -> tuple[torch.Tensor, Params | None]:
    """``x`` as a quantized module reads it: quantized again at the
    parameters an op of the model's code passed on (as eager computed it)."""
    activations = _activations()
    found = activations.lookup(x) if activations is not None else None
    if found is None:
        return x, None
    params, fresh = found
    return (x if fresh else _qdq(x, params)), params


def _number(value: Any) -> float:
    return float(value.item() if isinstance(value, torch.Tensor) else value)


def _output_params(module: torch.nn.Module, input_params: Params | None) -> Params:
    dtype = input_params[2] if input_params is not None else torch.quint8
    return (_number(module.scale), int(_number(module.zero_point)), dtype)


class Quantize(torch.nn.Module):
    """``nnq.Quantize``: eager's own quantize arithmetic, then dequantize."""

    def __init__(self, module: nnq.Quantize) -> None:
        super().__init__()
        if module.dtype not in eq.RANGES:
            _refuse(f"Quantize to {module.dtype}")
        self.params: Params = (_number(module.scale), int(_number(module.zero_point)), module.dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale, zero_point, dtype = self.params
        out = eq.dequantize_tensor(eq.quantize_ints(x, scale, zero_point, dtype), *self.params)
        _remember(out, self.params)
        return out


class DeQuantize(torch.nn.Module):
    """``nnq.DeQuantize``: the float value (already dequantized)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _quantized_input(x)[0]


class _WeightedLayer(torch.nn.Module):
    """A quantized Linear or convolution: its integer weight and per-tensor or
    per-channel scales as buffers, its float bias, its output parameters."""

    weight_int: torch.Tensor
    weight_scales: torch.Tensor
    weight_zero_points: torch.Tensor
    bias: torch.Tensor | None

    def __init__(self, module: Any, relu: bool) -> None:
        super().__init__()
        weight, bias = module.weight(), module.bias()
        self.register_buffer("weight_int", weight.int_repr())
        self.weight_dtype = weight.dtype
        if weight.qscheme() in (torch.per_channel_affine, torch.per_channel_symmetric):
            self.register_buffer("weight_scales", weight.q_per_channel_scales().float())
            self.register_buffer("weight_zero_points", weight.q_per_channel_zero_points())
            self.weight_axis: int | None = weight.q_per_channel_axis()
        else:
            self.weight_scale, self.weight_zero_point = weight.q_scale(), weight.q_zero_point()
            self.weight_axis = None
        self.register_buffer("bias", None if bias is None else bias.detach().float())
        self.scale, self.zero_point, self.relu = module.scale, module.zero_point, relu

    def weight(self) -> torch.Tensor:
        if self.weight_axis is None:
            return eq.dequantize_tensor(
                self.weight_int, self.weight_scale, self.weight_zero_point, self.weight_dtype
            )
        return eq.dequantize_channels(
            self.weight_int,
            self.weight_scales,
            self.weight_zero_points,
            self.weight_axis,
            self.weight_dtype,
        )

    def compute(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x, params = _quantized_input(x)
        y = self.compute(x)
        return _qdq(torch.relu(y) if self.relu else y, _output_params(self, params))


class Linear(_WeightedLayer):
    def compute(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.weight(), self.bias)


class Conv(_WeightedLayer):
    FUNCTIONS: ClassVar[dict[int, Callable[..., torch.Tensor]]] = {
        2: F.conv2d,
        3: F.conv3d,
    }

    def __init__(self, module: Any, relu: bool) -> None:
        super().__init__(module, relu)
        if module.padding_mode != "zeros":
            _refuse(f"{type(module).__name__} with padding_mode={module.padding_mode!r}")
        self.options = {
            "stride": module.stride,
            "padding": module.padding,
            "dilation": module.dilation,
            "groups": module.groups,
        }
        # A 1-D convolution is computed as a 2-D one of height 1: the
        # convolution folds take 2-D convolutions only.
        self.one_dimensional = len(module.kernel_size) == 1
        if self.one_dimensional:
            self.weight_int = self.weight_int.unsqueeze(2)
            self.options["stride"] = (1, *module.stride)
            self.options["padding"] = (0, *module.padding)
            self.options["dilation"] = (1, *module.dilation)
        self.conv = self.FUNCTIONS[2 if self.one_dimensional else len(module.kernel_size)]

    def compute(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x, self.weight(), self.bias, **self.options)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.one_dimensional:
            return super().forward(x)
        out = super().forward(x.unsqueeze(2))
        activations = _activations()
        params = activations.lookup(out) if activations is not None else None
        result = out.squeeze(2)
        if params is not None:  # a layout op of a dequantize's output: still fresh
            _remember(result, params[0])
        return result


class QFunctional(torch.nn.Module):
    """``nnq.QFunctional``: the float op, quantized at the module's output
    parameters (eager requantizes its inputs' integers to them)."""

    def __init__(self, module: nnq.QFunctional) -> None:
        super().__init__()
        self.scale, self.zero_point = module.scale, module.zero_point

    def _read(self, xs: list[torch.Tensor]) -> tuple[list[torch.Tensor], Params | None]:
        pairs = [_quantized_input(x) for x in xs]
        return [value for value, _ in pairs], next((p for _, p in pairs if p), None)

    def add(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        (a, b), params = self._read([x, y])
        return _qdq(a + b, _output_params(self, params))

    def add_relu(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        (a, b), params = self._read([x, y])
        return _qdq(torch.relu(a + b), _output_params(self, params))

    def mul(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        (a, b), params = self._read([x, y])
        return _qdq(a * b, _output_params(self, params))

    def cat(self, xs: list[torch.Tensor], dim: int = 0) -> torch.Tensor:
        values, params = self._read(list(xs))
        return _qdq(torch.cat(values, dim=dim), _output_params(self, params))

    def __getattr__(self, name: str) -> Any:
        if name in ("add_scalar", "mul_scalar", "matmul"):
            _refuse(f"QFunctional.{name}")
        return super().__getattr__(name)


class ReLU6(torch.nn.Module):
    """``nnq.ReLU6``: clamps the integers, so the output keeps the input's parameters."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x, params = _quantized_input(x)
        y = F.relu6(x)
        return y if params is None else _qdq(y, params)


class Hardswish(torch.nn.Module):
    def __init__(self, module: nnq.Hardswish) -> None:
        super().__init__()
        self.scale, self.zero_point = module.scale, module.zero_point

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x, params = _quantized_input(x)
        return _qdq(F.hardswish(x), _output_params(self, params))


def _refuse(what: str) -> None:
    raise eq.Refused(f"{what} is not supported in an eager quantized model")


_REWRITES: dict[type, Callable[[Any], torch.nn.Module]] = {
    nnq.Quantize: Quantize,
    nnq.DeQuantize: lambda m: DeQuantize(),
    nnq.Linear: lambda m: Linear(m, relu=False),
    nniq.LinearReLU: lambda m: Linear(m, relu=True),
    nnq.Conv1d: lambda m: Conv(m, relu=False),
    nnq.Conv2d: lambda m: Conv(m, relu=False),
    nnq.Conv3d: lambda m: Conv(m, relu=False),
    nniq.ConvReLU1d: lambda m: Conv(m, relu=True),
    nniq.ConvReLU2d: lambda m: Conv(m, relu=True),
    nniq.ConvReLU3d: lambda m: Conv(m, relu=True),
    nnq.QFunctional: QFunctional,
    nnq.ReLU6: lambda m: ReLU6(),
    nnq.Hardswish: Hardswish,
}
# Modules of the quantized packages whose forward is float code torch.export traces.
_FLOAT = (nnq.FloatFunctional, nnq.FXFloatFunctional, nnq.MaxPool2d, nnq.Dropout)
_QUANTIZED_PACKAGES = ("torch.ao.nn.quantized", "torch.ao.nn.intrinsic.quantized")


def rewrite(module: torch.nn.Module) -> torch.nn.Module:
    """``module`` (a copy: changed in place) with each eager quantized module
    replaced; the new root, if the root itself is one. Unsupported quantized
    modules raise one ``ValueError`` naming each (path and kind)."""
    refused: list[str] = []
    root = _rewrite(module, "", refused)
    if refused:
        raise ValueError(
            f"eager quantized modules lowerline does not compile: {', '.join(refused)} "
            f"(supported: {', '.join(sorted({t.__name__ for t in _REWRITES}))})"
        )
    return root


def _rewrite(module: torch.nn.Module, path: str, refused: list[str]) -> torch.nn.Module:
    kind = type(module)
    if kind in _REWRITES:
        try:
            return _REWRITES[kind](module)
        except ValueError as err:
            refused.append(f"{path or 'the model'} ({err})")
            return module
    if _is_quantized(kind):
        refused.append(f"{path or 'the model'} ({kind.__module__}.{kind.__name__})")
        return module
    for name, child in list(module.named_children()):
        new = _rewrite(child, f"{path}.{name}" if path else name, refused)
        if new is not child:
            setattr(module, name, new)
    return module


def _is_quantized(kind: type) -> bool:
    if issubclass(kind, _FLOAT) or ".reference" in kind.__module__:
        return False
    return kind.__module__.startswith(_QUANTIZED_PACKAGES)


def has_quantized(module: torch.nn.Module) -> bool:
    """Whether ``module`` holds an eager quantized module or tensor."""
    return any(_is_quantized(type(m)) for m in module.modules()) or any(
        t.is_quantized for t in [*module.parameters(), *module.buffers()]
    )
