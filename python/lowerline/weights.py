"""The bytes behind constant tensors, so that passes can rewrite weights.

Weights reach the compiler as ``dense_resource`` constants whose blobs the
Python bindings can create (``get_from_buffer``) but not read back. Passes
that evaluate ops on weights at compile time (transposes, packing) look the
bytes up here instead:

- the compile worker remembers every weight it binds (memory-mapped, no copy);
- ``remember_from_text`` reads the ``dialect_resources`` section of a
  ``.mlir`` file (lowerline-opt and the lit tests);
- plain ``dense<...>`` constants are read from the attribute itself.

New constants made by a pass are remembered too, so a later pass can rewrite
them again.
"""

from __future__ import annotations

import itertools
import re

import numpy as np
from mlir import ir

# MLIR element type -> numpy dtype of a tensor's bytes.
NUMPY_DTYPES = {
    "f32": np.float32,
    "f64": np.float64,
    "f16": np.float16,
    "i64": np.int64,
    "i32": np.int32,
    "i16": np.int16,
    "i8": np.int8,
    "i1": np.bool_,  # stored one byte per element (lowerline-widen-i1-memrefs)
}

_BLOBS: dict[str, np.ndarray] = {}


# `name: "0x<alignment, 4 bytes LE><data>"` inside `{-# dialect_resources: {builtin: {...}} #-}`.
_ENTRY = re.compile(r'([A-Za-z_][\w.$-]*)\s*:\s*"0x([0-9A-Fa-f]*)"')


def remember(name: str, data: np.ndarray) -> None:
    """Record the bytes of blob ``name`` (any dtype; reinterpreted on lookup)."""
    _BLOBS[name] = np.asarray(data).reshape(-1).view(np.uint8)


def remember_from_text(text: str) -> None:
    """Record the blobs of a module's ``dialect_resources`` section, if any."""
    start = text.rfind("{-#")
    if start < 0 or "dialect_resources" not in text[start:]:
        return
    for name, hexdata in _ENTRY.findall(text[start:]):
        remember(name, np.frombuffer(bytes.fromhex(hexdata[8:]), dtype=np.uint8))


def blob(name: str) -> np.ndarray | None:
    """The bytes of blob ``name`` (uint8), or None when they are unknown."""
    return _BLOBS.get(name)


def resource_name(attr: ir.Attribute) -> str | None:
    """``w0`` for ``dense_resource<w0> : tensor<...>``; None for other attributes."""
    match = re.match(r"dense_resource<([^>]+)>", str(attr))
    return match.group(1) if match else None


_FRESH = itertools.count()


def derived_name(attr: ir.Attribute, suffix: str) -> str:
    """A name for a blob computed from constant ``attr``: ``w0.t10`` from
    ``dense_resource<w0>``, a fresh one for inline constants."""
    return f"{resource_name(attr) or f'lowerline_weight{next(_FRESH)}'}.{suffix}"


def numpy_dtype(element_type: ir.Type) -> np.dtype | None:
    kind = NUMPY_DTYPES.get(str(element_type))
    # i1 tensors are stored as bytes in lowerline's weights: not readable as bool here.
    return np.dtype(kind) if kind and kind is not np.bool_ else None


# Types numpy has no arithmetic for, as unsigned integers of their width:
# enough to move their elements (transposes, packing), not to compute with them.
_BIT_PATTERNS = {"bf16": np.uint16}


def value_of(
    attr: ir.Attribute, tensor_type: ir.RankedTensorType, bits: bool = False
) -> np.ndarray | None:
    """The constant's elements as an array, or None when its bytes are unknown.
    ``bits``: bf16 elements too, as their bit patterns (uint16), for passes
    that only move elements."""
    dtype = numpy_dtype(tensor_type.element_type)
    if dtype is None and bits and str(tensor_type.element_type) in _BIT_PATTERNS:
        if resource_name(attr) is None:
            return None  # an inline constant's elements would convert as numbers, not bits
        dtype = np.dtype(_BIT_PATTERNS[str(tensor_type.element_type)])
    if dtype is None or not tensor_type.has_static_shape:
        return None
    shape = tuple(tensor_type.shape)
    name = resource_name(attr)
    if name is not None:
        blob = _BLOBS.get(name)
        if blob is None or blob.size != int(np.prod(shape)) * dtype.itemsize:
            return None
        return blob.view(dtype).reshape(shape)
    if isinstance(attr, ir.DenseElementsAttr) or ir.DenseElementsAttr.isinstance(attr):
        dense = ir.DenseElementsAttr(attr)
        try:
            if dense.is_splat:
                return np.full(shape, np.array(dense.get_splat_value()), dtype=dtype)
            return np.array(dense, dtype=dtype, copy=True).reshape(shape)
        except (TypeError, ValueError, AttributeError):
            return None
    return None


def constant_attr(array: np.ndarray, tensor_type: ir.RankedTensorType, name: str) -> ir.Attribute:
    """A ``dense_resource`` attribute holding ``array`` (kept alive by the context)."""
    data = np.ascontiguousarray(array)
    attr = ir.DenseResourceElementsAttr.get_from_buffer(data, name, tensor_type, alignment=64)
    # MLIR renames a blob whose name is taken (``w0.t10`` -> ``w0.t10_1``).
    remember(resource_name(attr) or name, data)
    return attr
