"""What a call does around the library, shared by compiled modules
(``lowerline.api``) and saved ones loaded without the compiler
(``lowerline.saved``): input checks and their errors, which baked-in number
and which aliasing a call has, a library argument (input, buffer or seed)
and a flat output.

Imports torch and nothing of the compiler.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from lowerline.frontend.export import InputSpec

# In Specialization.arguments: the seed of the model's random ops.
SEED_INPUT = -1


def number_key(value: bool | int | float) -> tuple:
    """Which baked-in number a call passes. Floats by their bits: 0.0 and -0.0
    give different results (1 / x) and NaN must find its own specialization."""
    if isinstance(value, bool):
        return (bool, value)
    if isinstance(value, int):
        return (int, int(value))
    return (float, float(value).hex())


def argument(source: int | str, flat: Any, state: dict[str, torch.Tensor]) -> torch.Tensor:
    """One library argument: a user input or a buffer, contiguous; or, for
    SEED_INPUT, a seed drawn from torch's default generator as torch's own
    random ops draw theirs, so ``torch.manual_seed(s)`` before a call makes its
    random numbers reproducible and two calls differ."""
    if source == SEED_INPUT:
        return torch.randint(2**62, ())
    value = flat[source] if isinstance(source, int) else state[source]
    return value if value.is_contiguous() else value.contiguous()


def output(kind: tuple, tensors: Any) -> Any:
    """One flat output: the next tensor, a number from the next (0-d) tensor, or a constant."""
    if kind[0] == "tensor":
        return next(tensors)
    if kind[0] == "number":
        return kind[1](next(tensors).item())  # int, float or bool, as eager's item()
    return kind[1]


def aliases(flat: tuple | list, positions: list[int]) -> tuple:
    """Which tensor inputs share memory: ``(i, j, same)`` for each pair of flat
    inputs whose bytes overlap, ``same`` when they are the same view (one
    tensor passed twice). Empty when none do (the usual call).

    torch.export traces a tensor passed twice as one input (the graph reads
    the second only), so a call with other aliasing needs another specialization.
    """
    spans = []
    for index in positions:
        tensor = flat[index]
        extent = span_bytes(tensor)
        if extent == 0:
            continue
        start = tensor.data_ptr()
        spans.append((start, start + extent, index, tensor))
    if len(spans) < 2:
        return ()
    spans.sort(key=lambda span: span[0])
    found: list[tuple[int, int, bool]] = []
    live: list[tuple[int, int, int, torch.Tensor]] = []
    for span in spans:
        live = [other for other in live if other[1] > span[0]]
        for other in live:
            same = other[0] == span[0] and same_view(other[3], span[3])
            found.append((min(other[2], span[2]), max(other[2], span[2]), same))
        live.append(span)
    return tuple(sorted(found))


def span_bytes(tensor: torch.Tensor) -> int:
    """How many bytes from its data pointer ``tensor`` reaches; 0 when empty."""
    if tensor.numel() == 0:
        return 0
    strides = zip(tensor.shape, tensor.stride(), strict=True)
    extent = 1 + sum((size - 1) * stride for size, stride in strides)  # in elements
    return extent * tensor.element_size()


def same_view(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and a.stride() == b.stride()


def tensor_error(spec: InputSpec, value: Any) -> Exception:
    """Why ``value`` cannot be passed for the tensor input ``spec``."""
    if not isinstance(value, torch.Tensor):
        return TypeError(
            f"{spec.name}: expected a tensor ({spec.dtype}), got {type(value).__name__}"
        )
    if value.dtype != spec.dtype:
        return TypeError(f"{spec.name}: expected dtype {spec.dtype}, got {value.dtype}")
    if value.device.type != "cpu":
        return ValueError(f"{spec.name}: expected a tensor on cpu, got one on {value.device}")
    if value.requires_grad:
        return ValueError(
            f"{spec.name}: expected a tensor that does not require grad, got one that does; "
            "compiled modules are for inference (pass x.detach() or call under torch.no_grad())"
        )
    return ValueError(f"{spec.name}: expected a dense (strided) tensor, got a {value.layout} one")


def number_or_error(spec: InputSpec, value: Any) -> bool | int | float:
    """``value`` as a plain bool, int or float for the number input ``spec``, or TypeError.

    A bool stays a bool and a number stays a number; subclasses (numpy
    scalars) become the plain type."""
    if isinstance(spec.value, bool):
        if isinstance(value, bool):
            return bool(value)
        raise TypeError(f"{spec.name}: expected a bool, got {type(value).__name__} {value!r}")
    if isinstance(value, int) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, float):
        return float(value)
    raise TypeError(f"{spec.name}: expected an int or a float, got {type(value).__name__}")


def call_key(
    specs: list[InputSpec],
    flat: tuple | list,
    tensor_positions: list[int],
    shared_symbols: bool = False,
) -> tuple:
    """Check every input of a flat call against ``specs``; return the call's
    key: shapes (-1 for a dynamic dim, once in its range), numbers, and which
    tensor inputs (at ``tensor_positions``) share memory. ``shared_symbols``:
    some dynamic dims of different inputs are one size, which the call must
    give them."""
    key: list[Any] = []
    for spec, value in zip(specs, flat, strict=True):
        if spec.is_tensor:
            if (
                not isinstance(value, torch.Tensor)
                or value.dtype != spec.dtype
                or not value.is_cpu
                or value.requires_grad
                or value.layout != torch.strided
            ):
                raise tensor_error(spec, value)
            key.append(dynamic_shape(spec, value.shape) if spec.dynamic else value.shape)
        else:
            if type(value) not in (bool, int, float) or (type(value) is bool) != (
                type(spec.value) is bool
            ):
                value = number_or_error(spec, value)
            key.append(number_key(value))
    if shared_symbols:
        check_shared_symbols(specs, flat)
    key.append(aliases(flat, tensor_positions) if len(tensor_positions) > 1 else ())
    return tuple(key)


def dynamic_shape(spec: InputSpec, shape: torch.Size) -> tuple[int, ...]:
    """A call's shape of an input with dynamic dims (``lowerline.compile(...,
    dynamic=...)``) as a key holds it: -1 for each dynamic dim, once its size
    is checked against its range (ValueError naming the input, dim, range)."""
    for dim in spec.dynamic:
        if dim.dim >= len(shape):
            raise ValueError(
                f"{spec.name} has {len(shape)} dims, compiled with a dynamic dim {dim.dim}"
            )
        size = shape[dim.dim]
        if not dim.holds(size):
            raise ValueError(
                f"{spec.name} has size {size} in dim {dim.dim}, outside the dynamic range "
                f"{dim.describe()} it was compiled for"
            )
    varying = {d.dim for d in spec.dynamic}
    return tuple(-1 if i in varying else size for i, size in enumerate(shape))


def check_shared_symbols(specs: list[InputSpec], flat: tuple | list) -> None:
    """Inputs whose dims share one symbol (one ``torch.export.Dim``) have equal sizes there."""
    seen: dict[str, tuple[str, int, int]] = {}
    for spec, value in zip(specs, flat, strict=True):
        for dim in spec.dynamic:
            size = value.shape[dim.dim]
            first = seen.setdefault(dim.symbol, (spec.name, dim.dim, size))
            if first[2] != size:
                raise ValueError(
                    f"{spec.name} has size {size} in dim {dim.dim} but {first[0]} has "
                    f"{first[2]} in dim {first[1]}: they were compiled as one dynamic size"
                )
