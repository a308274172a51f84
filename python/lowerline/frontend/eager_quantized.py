"""Eager quantized tensors (``torch.quint8``/``qint8``) as float and
``quantized_decomposed`` ops, in the caller's process.

A quantized tensor cannot be traced (``quantize_per_channel`` and
``int_repr`` fail in torch.export: "quantized nyi in meta tensors") nor
saved for the import worker (no serialized form). So while torch.export
traces, ``tracing()`` stands a ``QuantizedValue`` in for each one: the
integer tensor as an ordinary int8/uint8 tensor, and its scale(s) and zero
point(s). ``torch.quantize_per_tensor``/``quantize_per_channel`` make one
(eager's arithmetic, below), a quantized parameter or buffer of the module
becomes one (``quantized_attributes``: its integers a buffer), and it
answers ``dequantize()`` (``quantized_decomposed.dequantize_per_*``, which
the QDQ folds read), ``int_repr()``, ``q_scale()``, ``q_zero_point()``,
``q_per_channel_scales()``/``zero_points()``/``axis()``, ``qscheme()``,
``dtype``, ``shape`` and ``size()``. Anything else that reads one is refused,
named (``Refused``, a ``ValueError``; the export makes it an ``ExportError``).

Eager torch's x86 kernels (measured, docs/quantization.md) quantize per
tensor as ``rint(fma(x, 1.0f / f32(scale), zero_point))`` (the zero point
added before the one rounding), per channel as
``rint(f32(x * (1.0f / f32(s))) + zero_point)``, and dequantize as
``f32(q - zero_point) * f32(scale)``. The per-tensor fused multiply-add is
written in double (exact: a float32 product and a small integer). These
quantizes are not torch's decomposed ones (the zero point is added after
rounding there), so they stay float arithmetic, unmarked.

``decompose`` does the same, after export, for a strict export (TorchDynamo
keeps ``aten.quantize_per_tensor``; ``tracing()`` serves non-strict only).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import torch
from torch.overrides import TorchFunctionMode

aten = torch.ops.aten
# quantized dtype -> (quant_min, quant_max, the integer dtype that stores it)
RANGES = {torch.quint8: (0, 255, torch.uint8), torch.qint8: (-128, 127, torch.int8)}


def _decomposed() -> Any:
    import torch.ao.quantization.fx._decomposed  # defines the quantized_decomposed ops

    return torch.ops.quantized_decomposed


class Refused(ValueError):
    """Eager quantized code lowerline does not compile (raised while tracing)."""


def refusal(err: BaseException) -> Refused | None:
    """The ``Refused`` that caused ``err`` (torch.export may wrap it), if any."""
    seen: BaseException | None = err
    while seen is not None:
        if isinstance(seen, Refused):
            return seen
        if "QuantizedValue'> in output" in str(seen):  # torch.export's own check
            return Refused(_refusal("the model's output (return q.dequantize())"))
        seen = seen.__cause__ or seen.__context__
    return None


def _range(dtype: torch.dtype, what: str) -> tuple[int, int, torch.dtype]:
    if dtype not in RANGES:
        raise Refused(f"{what} to {dtype} is not supported (quint8, qint8)")
    return RANGES[dtype]


def _stored(clamped: torch.Tensor, stored: torch.dtype) -> torch.Tensor:
    """Float integers already clamped to ``stored``'s range, as ``stored``.
    Through int32: torch-mlir converts float to uint8 with ``fptosi`` to i8,
    whose result above 127 is poison, so LLVM dropped the clamp at 255
    (measured: 265.6 stored as 10 instead of 255)."""
    return clamped.to(torch.int32).to(stored)


def quantize_ints(
    x: torch.Tensor, scale: float, zero_point: int, dtype: torch.dtype
) -> torch.Tensor:
    """``torch.quantize_per_tensor(x, scale, zero_point, dtype).int_repr()``
    as eager torch computes it."""
    low, high, stored = _range(dtype, "torch.quantize_per_tensor")
    inverse = float(np.float32(1.0) / np.float32(scale))
    fused = (x.to(torch.float32).to(torch.float64) * inverse + zero_point).to(torch.float32)
    return _stored(torch.clamp(torch.round(fused), low, high), stored)


def dequantize_tensor(
    q: torch.Tensor, scale: float, zero_point: int, dtype: torch.dtype
) -> torch.Tensor:
    low, high, stored = _range(dtype, "a quantized tensor")
    return _decomposed().dequantize_per_tensor(
        q, float(np.float32(scale)), int(zero_point), low, high, stored
    )


def _along(values: torch.Tensor, axis: int, ndim: int) -> torch.Tensor:
    """``values`` (one per channel) shaped to broadcast along ``axis``."""
    shape = [1] * ndim
    shape[axis] = -1
    return values.reshape(shape)


def quantize_channel_ints(
    x: torch.Tensor, scales: torch.Tensor, zero_points: torch.Tensor, axis: int, dtype: torch.dtype
) -> torch.Tensor:
    """``torch.quantize_per_channel(...).int_repr()`` as eager torch computes it."""
    low, high, stored = _range(dtype, "torch.quantize_per_channel")
    axis = axis % x.dim()
    inverse = _along(1.0 / scales.to(torch.float32), axis, x.dim())
    shifted = x.to(torch.float32) * inverse + _along(zero_points.to(torch.float32), axis, x.dim())
    return _stored(torch.clamp(torch.round(shifted), low, high), stored)


def dequantize_channels(
    q: torch.Tensor, scales: torch.Tensor, zero_points: torch.Tensor, axis: int, dtype: torch.dtype
) -> torch.Tensor:
    low, high, stored = _range(dtype, "a quantized tensor")
    return _decomposed().dequantize_per_channel(
        q, scales.to(torch.float32), zero_points.to(torch.int64), axis % q.dim(), low, high, stored
    )


class QuantizedValue:
    """A quantized tensor while torch.export traces: its integers (``ints()``,
    an ordinary tensor) and quantization parameters: numbers per tensor;
    tensors, or functions that read them, per channel (``axis`` set)."""

    def __init__(
        self,
        ints: Callable[[], torch.Tensor],
        dtype: torch.dtype,
        scale: Any,
        zero_point: Any,
        axis: int | None = None,
    ) -> None:
        # ints is read at each use: a module's buffer must be read through the
        # module while torch.export traces (it swaps in its own tensors).
        self.ints, self.dtype = ints, dtype
        self._scale, self._zero_point, self.axis = scale, zero_point, axis

    @property
    def scale(self) -> Any:
        return self._scale() if callable(self._scale) else self._scale

    @property
    def zero_point(self) -> Any:
        return self._zero_point() if callable(self._zero_point) else self._zero_point

    @property
    def shape(self) -> torch.Size:
        return self.ints().shape

    def size(self, dim: int | None = None) -> Any:
        return self.ints().size() if dim is None else self.ints().size(dim)

    def dim(self) -> int:
        return self.ints().dim()

    def dequantize(self) -> torch.Tensor:
        if self.axis is None:
            return dequantize_tensor(self.ints(), self.scale, self.zero_point, self.dtype)
        return dequantize_channels(self.ints(), self.scale, self.zero_point, self.axis, self.dtype)

    def int_repr(self) -> torch.Tensor:
        return self.ints()

    def qscheme(self) -> torch.qscheme:
        return torch.per_tensor_affine if self.axis is None else torch.per_channel_affine

    def q_scale(self) -> float:
        self._per_tensor("q_scale")
        return float(self.scale)

    def q_zero_point(self) -> int:
        self._per_tensor("q_zero_point")
        return int(self.zero_point)

    def q_per_channel_scales(self) -> torch.Tensor:
        self._per_channel("q_per_channel_scales")
        return self.scale

    def q_per_channel_zero_points(self) -> torch.Tensor:
        self._per_channel("q_per_channel_zero_points")
        return self.zero_point

    def q_per_channel_axis(self) -> int:
        self._per_channel("q_per_channel_axis")
        return int(self.axis or 0)

    def _per_tensor(self, method: str) -> None:
        if self.axis is not None:
            raise Refused(f"{method}() of a tensor quantized per channel")

    def _per_channel(self, method: str) -> None:
        if self.axis is None:
            raise Refused(f"{method}() of a tensor quantized per tensor")

    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: tuple = (), kwargs: Any = None) -> Any:
        # Makes torch's argument parser hand calls on a quantized value here
        # (and to the Tracing mode first) instead of failing with a TypeError.
        if func in _HANDLED:
            return _HANDLED[func](*args, **(kwargs or {}))
        raise Refused(_refusal(getattr(func, "__name__", str(func))))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # Python's and torch's own probes (hasattr) stay probes
            raise AttributeError(name)
        raise Refused(_refusal(f"Tensor.{name}"))


def _refusal(reader: str) -> str:
    return (
        f"a quantized tensor is read by {reader}: lowerline compiles a quantized "
        "tensor's dequantize(), int_repr(), q_scale(), q_zero_point() and "
        "q_per_channel_*() (or eager quantized modules)"
    )


def _quantize_per_tensor(x: torch.Tensor, scale: Any, zero_point: Any, dtype: Any) -> Any:
    if isinstance(scale, torch.Tensor) or isinstance(zero_point, torch.Tensor):
        raise Refused(
            "torch.quantize_per_tensor with a tensor scale or zero point "
            "(dynamic quantization) is not supported: pass numbers"
        )
    ints = quantize_ints(x, scale, zero_point, dtype)
    return QuantizedValue(lambda: ints, dtype, float(scale), int(zero_point))


def _quantize_per_channel(
    x: torch.Tensor, scales: torch.Tensor, zero_points: torch.Tensor, axis: int, dtype: Any
) -> Any:
    ints = quantize_channel_ints(x, scales, zero_points, axis, dtype)
    return QuantizedValue(lambda: ints, dtype, scales, zero_points, axis % x.dim())


def _dequantize(x: Any) -> Any:
    """``torch.dequantize``: a float tensor is returned as it is (as eager does)."""
    return x.dequantize() if isinstance(x, QuantizedValue) else x


# Calls that make or read a quantized tensor in eager code.
_HANDLED: dict[Any, Callable[..., Any]] = {
    torch.quantize_per_tensor: _quantize_per_tensor,
    torch.quantize_per_channel: _quantize_per_channel,
    torch.dequantize: _dequantize,
    torch.Tensor.dequantize: _dequantize,
}


class Tracing(TorchFunctionMode):
    """Eager quantized tensors as ``QuantizedValue`` while torch.export traces.
    Eager quantized modules use the hooks: ``readers`` may answer a call
    (anything but ``NotImplemented``) before it runs, ``observers`` see
    every call that ran and its result."""

    def __init__(self) -> None:
        super().__init__()
        self.readers: list[Callable[[Any, tuple, dict], Any]] = []
        self.observers: list[Callable[[Any, tuple, dict, Any], None]] = []

    def __torch_function__(
        self, func: Any, types: Any, args: tuple = (), kwargs: Any = None
    ) -> Any:
        kwargs = kwargs or {}
        if func in _HANDLED:
            return _HANDLED[func](*args, **kwargs)
        # torch names the types with __torch_function__ among the arguments:
        # cheaper than walking every call's arguments.
        if any(issubclass(t, QuantizedValue) for t in types):
            raise Refused(_refusal(getattr(func, "__name__", str(func))))
        for read in self.readers:
            answer = read(func, args, kwargs)
            if answer is not NotImplemented:
                return answer
        result = func(*args, **kwargs)
        for observe in self.observers:
            observe(func, args, kwargs, result)
        return result


_ACTIVE: list[Tracing] = []


def active() -> Tracing | None:
    """The ``Tracing`` mode of the export in progress, if any."""
    return _ACTIVE[-1] if _ACTIVE else None


@contextlib.contextmanager
def tracing() -> Iterator[Tracing]:
    mode = Tracing()
    _ACTIVE.append(mode)
    try:
        with mode:
            yield mode
    finally:
        _ACTIVE.pop()


def quantized_attributes(module: torch.nn.Module) -> None:
    """Each quantized parameter or buffer of ``module`` (a copy: changed in
    place) replaced by a ``QuantizedValue`` whose integers (and per-channel
    scales and zero points) are buffers beside it, so torch.export lifts them."""
    for owner in module.modules():
        for store in (owner._parameters, owner._buffers):
            for name, value in list(store.items()):
                if value is not None and value.is_quantized:
                    del store[name]
                    object.__setattr__(owner, name, _as_buffers(owner, name, value.detach()))


def _as_buffers(owner: torch.nn.Module, name: str, value: torch.Tensor) -> QuantizedValue:
    if value.dtype not in RANGES:
        raise Refused(
            f"the quantized tensor {name} is {value.dtype}: lowerline takes quint8, qint8"
        )

    def read(suffix: str) -> Callable[[], torch.Tensor]:
        return lambda: getattr(owner, f"{name}_{suffix}")

    owner.register_buffer(f"{name}_int_repr", value.int_repr())
    if value.qscheme() in (torch.per_tensor_affine, torch.per_tensor_symmetric):
        return QuantizedValue(read("int_repr"), value.dtype, value.q_scale(), value.q_zero_point())
    if value.qscheme() not in (torch.per_channel_affine, torch.per_channel_symmetric):
        raise Refused(f"the quantized tensor {name} is {value.qscheme()}: not supported")
    owner.register_buffer(f"{name}_scales", value.q_per_channel_scales().to(torch.float32))
    owner.register_buffer(f"{name}_zero_points", value.q_per_channel_zero_points())
    axis = value.q_per_channel_axis()
    return QuantizedValue(read("int_repr"), value.dtype, read("scales"), read("zero_points"), axis)


def _quantize(x: torch.Tensor, scale: float, zero_point: int, dtype: torch.dtype) -> torch.Tensor:
    """The quantized tensor's dequantized values, as eager torch computes them."""
    return dequantize_tensor(quantize_ints(x, scale, zero_point, dtype), scale, zero_point, dtype)


def _dequantize_node(x: torch.Tensor) -> torch.Tensor:
    return x  # _quantize already returned the dequantized values


def decompose(exported: Any) -> Any:
    """``exported`` with its eager quantize -> dequantize pairs rewritten; a
    quantized tensor read by anything else is refused, named."""
    quantizes = [n for n in exported.graph.nodes if n.target == aten.quantize_per_tensor.default]
    if not quantizes:
        return exported
    for node in quantizes:
        others = sorted({str(u.target) for u in node.users if u.target != aten.dequantize.self})
        if others:
            raise Refused(
                "a quantized tensor (torch.quantize_per_tensor) is read by "
                f"{', '.join(others)}: lowerline compiles quantize -> dequantize only"
            )
    table = {aten.quantize_per_tensor.default: _quantize, aten.dequantize.self: _dequantize_node}
    return exported.run_decompositions(table)
