"""Call a compiled shared library on torch tensors, without copies.

The CPU pipeline gives every function a C wrapper ``_mlir_ciface_<name>``
taking one pointer per memref argument, tensor results turned into trailing
out-parameters. A memref descriptor is ``{allocated, aligned, offset,
sizes[rank], strides[rank]}`` (no sizes or strides at rank 0); the
descriptors here point straight at the tensors' storage.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from functools import cache

import torch


@cache
def _descriptor_class(rank: int) -> type[ctypes.Structure]:
    fields = [
        ("allocated", ctypes.c_void_p),
        ("aligned", ctypes.c_void_p),
        ("offset", ctypes.c_int64),
    ]
    if rank:
        fields += [("sizes", ctypes.c_int64 * rank), ("strides", ctypes.c_int64 * rank)]
    return type(f"MemRef{rank}D", (ctypes.Structure,), {"_fields_": fields})


def descriptor(tensor: torch.Tensor) -> ctypes.Structure:
    """A memref descriptor viewing ``tensor`` (which must be contiguous)."""
    rank = tensor.dim()
    pointer = tensor.data_ptr()
    if rank == 0:
        return _descriptor_class(0)(pointer, pointer, 0)
    cls = _descriptor_class(rank)
    return cls(
        pointer,
        pointer,
        0,
        (ctypes.c_int64 * rank)(*tensor.shape),
        (ctypes.c_int64 * rank)(*tensor.stride()),
    )


class NativeFunction:
    """``_mlir_ciface_<entry>`` of a shared library, called on torch tensors."""

    def __init__(
        self, library: str, entry: str, outputs: Sequence[tuple[tuple[int, ...], torch.dtype]]
    ):
        self.library = library
        self._lib = ctypes.CDLL(library)
        self._function = getattr(self._lib, f"_mlir_ciface_{entry}")
        self._function.restype = None
        self._outputs = list(outputs)

    def __call__(self, inputs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        outputs = [torch.empty(shape, dtype=dtype) for shape, dtype in self._outputs]
        # The descriptors must outlive the call: keep them in a list.
        descriptors = [descriptor(t) for t in (*inputs, *outputs)]
        self._function(*[ctypes.byref(d) for d in descriptors])
        return outputs
