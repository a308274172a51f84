"""Comparisons of a tensor with a number of another kind, made one kind
before import.

torch-mlir's folders of ``aten.{eq,ne,lt,le,gt,ge}.Scalar`` misread a
constant tensor compared with a number of the other kind (measured on the
installed torch-mlir, ``canonicalize`` of a splat ``vtensor.literal``):

* a float tensor with an int: ``full_like(x, 3.0, dtype=float64) == 0``
  folds to all true, ``3.0 <= 0`` to true, and repeated runs of the same
  module fold ``3.0 != 0`` to true or false at random (an uninitialized
  read), in float32 too;
* an integer tensor with a float (``full_like(x, 3, dtype=int64) < 3.5``):
  the folder crashes the import worker (a segmentation fault).

The tensor is constant whenever the model fills it (``full``,
``full_like``, ``ones``) or torch-mlir folds its producer, so real float64
models meet it. Here the comparison is written in the kind eager computes
it in (``torch.result_type`` of the tensor and the number, as
TensorIterator does): the number converted to that kind (``0`` to
``0.0``), the tensor converted when its own dtype differs (an int64 tensor
compared with 3.5 is compared in the default float type). The result is
the same as eager's bit for bit; torch-mlir's folders then see operands of
one kind, which they read correctly. Complex operands are left to
``complex_ops``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

aten = torch.ops.aten

COMPARISONS = (
    aten.eq.Scalar,
    aten.ne.Scalar,
    aten.lt.Scalar,
    aten.le.Scalar,
    aten.gt.Scalar,
    aten.ge.Scalar,
)


def _in_kind(number: bool | int | float, dtype: torch.dtype) -> bool | int | float:
    """``number`` as the Python number of ``dtype``'s kind."""
    if dtype.is_floating_point:
        return float(number)
    if dtype == torch.bool:
        return bool(number)
    return int(number)


def one_kind(op: Any) -> Callable[..., Any]:
    """The entry of comparison ``op``: the tensor and the number in one kind,
    or ``NotImplemented`` (the op kept) when they already are, when the
    number is symbolic (a SymInt: not a constant) or either is complex."""

    def decomposition(x: torch.Tensor, other: Any) -> Any:
        if not isinstance(other, (bool, int, float)) or x.is_complex():
            return NotImplemented
        dtype = torch.result_type(x, other)
        number = _in_kind(other, dtype)
        if dtype == x.dtype and type(number) is type(other):
            return NotImplemented
        return op(x.to(dtype), number)

    return decomposition


def table() -> dict[Any, Callable[..., Any]]:
    """The entries, by ATen overload."""
    return {op: one_kind(op) for op in COMPARISONS}
