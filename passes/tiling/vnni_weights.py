"""Constant int8 weights stored in the layout of the int8 dot-product
instructions (``vpdpbusd``, ``sdot``), so that a register tile loads its B
lanes as they are (lowerline.passes.tiling.int8_dot).

Both instructions read, in i32 lane ``n``, the 4 bytes ``B[k..k+3, n]``. A
row-major B (or lowerline-pack-weights' ``[N / nr, K, nr]`` panels) holds
those 4 bytes ``N`` (or ``nr``) apart, so every step of k would shuffle
``4 x nr`` bytes into lanes. Where B is a constant with known bytes, it is
stored once, at compile time, as ``[..., ceil(K / 4), 4 * N]``::

    packed[..., q, 4 * n + j] = B[..., 4 * q + j, n]    (0 past K)

and a tile's ``4 x nr`` block at ``(k, n0)`` (k a multiple of 4) is the
``4 * nr`` contiguous bytes at ``[..., k / 4, 4 * n0]``: one load per
register of columns. K is padded with zeros to a multiple of 4, so a
partial last step reads zero products, as the masked read did.

Upstream packs with ``linalg.pack`` (``transform.structured.pack``), which
runs on every call unless folded, and the bindings cannot fold it for
``dense_resource`` weights; nor does any upstream pattern pack for VNNI.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from mlir import ir
from mlir.dialects import affine, arith, vector

from lowerline import weights
from lowerline.passes.tiling.int8_corrections import AccumulatorLoop

_DYNAMIC = ir.ShapedType.get_dynamic_stride_or_offset()

# Bytes of k per i32 lane (INT8_DOT_K; not imported: lowerline.cpu.tile_plan
# imports nothing from passes, and this module is a leaf of int8_dot).
_K = 4


@dataclass
class _Offset:
    """A sum of index values plus a constant."""

    values: list[ir.Value] = field(default_factory=list)
    constant: int = 0

    def index(self, scale: int = 1, divisor: int = 1) -> ir.Value:
        """``(sum * scale) floordiv divisor`` as an index value (at the
        current insertion point)."""
        syms = [ir.AffineSymbolExpr.get(i) for i in range(len(self.values))]
        expr = ir.AffineConstantExpr.get(self.constant)
        for s in syms:
            expr = expr + s
        expr = expr * scale
        if divisor != 1:
            expr = ir.AffineFloorDivExpr.get(expr, ir.AffineConstantExpr.get(divisor))
        amap = ir.AffineMap.get(0, len(syms), [expr])
        return affine.AffineApplyOp(amap, self.values).result


@dataclass(frozen=True)
class _Block:
    """A ``4 x nr`` block of constant ``constant`` (rank r): ``lead`` the
    offsets of its r - 2 leading (unit) dims, ``k`` and ``n`` of the last two."""

    constant: ir.Operation
    lead: list[_Offset]
    k: _Offset
    n: _Offset
    n_in_bounds: bool


def _zero_indices(read: ir.Operation) -> bool:
    return all(_constant_int(i) == 0 for i in read.opview.indices)


def _constant_int(value: ir.Value) -> int | None:
    if isinstance(value, ir.OpResult) and value.owner.name == "arith.constant":
        attr = value.owner.attributes["value"]
        if isinstance(attr, ir.IntegerAttr):
            return ir.IntegerAttr(attr).value
    return None


def _add_offsets(view: ir.OpView, offsets: list[_Offset], dims: list[int]) -> None:
    """Add the slice's offsets of source dims ``dims`` to ``offsets``."""
    dynamic = list(view.offsets)
    for dim, static in enumerate(view.static_offsets):
        value = dynamic.pop(0) if static == _DYNAMIC else None
        if dim not in dims:
            continue
        target = offsets[dims.index(dim)]
        if value is None:
            target.constant += static
        else:
            target.values.append(value)


def _constant_block(rhs: ir.Value) -> _Block | None:
    """The constant block a dot tile's B operand reads: a
    ``vector.transfer_read`` at zero of unit-stride ``tensor.extract_slice``s
    of an ``arith.constant``, of which only the last may drop (leading, unit)
    dims; None for anything else."""
    read = _transfer_read(rhs)
    if read is None:
        return None
    in_bounds = [ir.BoolAttr(b).value for b in ir.ArrayAttr(read.attributes["in_bounds"])]
    amap = ir.AffineMapAttr(read.attributes["permutation_map"]).value
    if not _zero_indices(read) or amap != ir.AffineMap.get_minor_identity(amap.n_dims, 2):
        return None
    k, n = _Offset(), _Offset()
    value = read.opview.base
    lead: list[_Offset] = []
    while isinstance(value, ir.OpResult) and value.owner.name == "tensor.extract_slice":
        view = value.owner.opview
        rank = len(list(view.static_offsets))
        if any(s != 1 for s in view.static_strides):
            return None
        if rank != 2:
            if not _drops_leading_units(view):
                return None
            lead = [_Offset() for _ in range(rank - 2)]
            _add_offsets(view, [*lead, k, n], list(range(rank)))
            value = view.source
            break
        _add_offsets(view, [k, n], [0, 1])
        value = view.source
    if not isinstance(value, ir.OpResult) or value.owner.name != "arith.constant":
        return None
    # A masked read (a partial tile) may end past N: read the packed row
    # with padding then.
    return _Block(value.owner, lead, k, n, in_bounds[1] and read.parent.name != "vector.mask")


def _transfer_read(value: ir.Value) -> ir.Operation | None:
    """The ``vector.transfer_read`` giving ``value``, possibly inside a ``vector.mask``."""
    if not isinstance(value, ir.OpResult):
        return None
    owner = value.owner
    if owner.name == "vector.mask":
        owner = owner.regions[0].blocks[0].operations[0]
    return owner if owner.name == "vector.transfer_read" else None


def _drops_leading_units(view: ir.OpView) -> bool:
    """A rank-reducing slice that keeps its source's last two dims."""
    sizes = list(view.static_sizes)
    result = ir.RankedTensorType(view.result.type).shape
    return len(result) == 2 and all(s == 1 for s in sizes[:-2]) and sizes[-2:] == list(result)


def _multiple_of(offset: _Offset, step: int) -> bool:
    """Every term of ``offset`` is provably a multiple of ``step``: constants,
    and ``scf.for`` induction variables with such a lower bound and step."""
    return offset.constant % step == 0 and all(_value_multiple_of(v, step) for v in offset.values)


def _value_multiple_of(value: ir.Value, step: int) -> bool:
    known = _constant_int(value)
    if known is not None:
        return known % step == 0
    if isinstance(value, ir.OpResult) and value.owner.name == "affine.apply":
        # The identity map lowerline-pack-weights writes: ()[s0] -> (s0).
        amap = ir.AffineMapAttr(value.owner.attributes["map"]).value
        only = list(value.owner.operands)
        return str(amap) == "()[s0] -> (s0)" and _value_multiple_of(only[0], step)
    if not isinstance(value, ir.BlockArgument):
        return False
    loop = value.owner.owner
    if loop.name != "scf.for" or value.arg_number != 0:
        return False
    lower, loop_step = (_constant_int(loop.operands[i]) for i in (0, 2))
    return (
        lower is not None and loop_step is not None and lower % step == 0 and loop_step % step == 0
    )


class VnniWeights:
    """The packed copies of one module's constants (one per constant)."""

    def __init__(self) -> None:
        self._packed: dict[ir.Operation, tuple[ir.Value, ir.Value] | None] = {}
        self._totals: dict[tuple[ir.Operation, tuple[int, ...]], ir.Value | None] = {}

    def lanes(self, rhs: ir.Value, lanes: int) -> tuple[list[ir.Value], list[ir.Value]] | None:
        """Per register of columns, the ``<4 * lanes x i8>`` B bytes of a dot
        tile and the ``<lanes x i32>`` sums ``128 * (B[k, n] + .. + B[k + 3,
        n])`` (what reading A as u8 adds), both loaded from constants
        computed here (at the current insertion point); None when B is not
        such a block of a known constant."""
        block = _constant_block(rhs)
        if block is None or not _multiple_of(block.k, _K):
            return None
        packed = self._packed_of(block.constant)
        if packed is None:
            return None
        nr = ir.VectorType(rhs.type).shape[1]
        chunks = -(-nr // lanes)
        lead = [o.index() for o in block.lead]
        step = block.k.index(divisor=_K)
        in_bounds = block.n_in_bounds and nr % lanes == 0
        row = _read(
            packed[0], [*lead, step, block.n.index(scale=_K)], chunks * lanes * _K, in_bounds
        )
        sums = _read(packed[1], [*lead, step, block.n.index()], chunks * lanes, in_bounds)
        return _split(row, lanes * _K, chunks), _split(sums, lanes, chunks)

    def loop_totals(
        self, rhs: ir.Value, lanes: int, loop: AccumulatorLoop
    ) -> list[ir.Value] | None:
        """Per register of columns, the ``<lanes x i32>`` sums ``128 *
        sum_k B[k, n]`` over the k values ``loop`` steps through (what
        reading A as u8 adds over the whole loop), loaded from a constant
        computed here, before ``loop.init``; None unless B is a block of a
        known constant at k = the loop's induction variable plus a constant
        (lowerline.passes.tiling.int8_corrections)."""
        block = _constant_block(rhs)
        if block is None or len(block.k.values) != 1 or _iv_of(block.k.values[0]) != loop.iv:
            return None
        firsts = [block.k.constant + k for k in loop.values]
        if any(first % _K for first in firsts):
            return None
        offsets = [*block.lead, block.n]
        if not all(loop.available(v) for o in offsets for v in o.values):
            return None
        totals = self._totals_of(block.constant, tuple(first // _K for first in firsts))
        if totals is None:
            return None
        nr = ir.VectorType(rhs.type).shape[1]
        chunks = -(-nr // lanes)
        with ir.InsertionPoint(loop.init), loop.init.location:
            lead = [o.index() for o in block.lead]
            in_bounds = block.n_in_bounds and nr % lanes == 0
            row = _read(totals, [*lead, block.n.index()], chunks * lanes, in_bounds)
            return _split(row, lanes, chunks)

    def _totals_of(self, constant: ir.Operation, steps: tuple[int, ...]) -> ir.Value | None:
        key = (constant, steps)
        if key not in self._totals:
            self._totals[key] = _loop_totals(constant, steps)
        return self._totals[key]

    def _packed_of(self, constant: ir.Operation) -> tuple[ir.Value, ir.Value] | None:
        if constant not in self._packed:
            self._packed[constant] = _pack(constant)
        return self._packed[constant]


def _read(source: ir.Value, indices: list[ir.Value], width: int, in_bounds: bool) -> ir.Value:
    """``width`` elements of ``source``'s last dim at ``indices`` (zero past its end)."""
    element = ir.RankedTensorType(source.type).element_type
    vtype = ir.VectorType.get([width], element)
    zero = arith.constant(element, 0)
    rank = len(indices)
    return vector.transfer_read(
        vtype, source, indices, ir.AffineMap.get_minor_identity(rank, 1), zero,
        in_bounds=[in_bounds],
    )  # fmt: skip


def _split(whole: ir.Value, size: int, count: int) -> list[ir.Value]:
    """``count`` consecutive pieces of ``size`` lanes of ``whole``."""
    element = ir.VectorType(whole.type).element_type
    piece = ir.VectorType.get([size], element)
    return [
        vector.extract_strided_slice(piece, whole, [c * size], [size], [1]) for c in range(count)
    ]


def vnni_layout(array: np.ndarray) -> np.ndarray:
    """``[..., K, N]`` as ``[..., ceil(K / 4), 4 * N]``, zero past K."""
    *lead, k, n = array.shape
    steps = -(-k // _K)
    padded = np.zeros((*lead, steps * _K, n), dtype=array.dtype)
    padded[..., :k, :] = array
    grouped = padded.reshape(*lead, steps, _K, n)
    return np.ascontiguousarray(np.swapaxes(grouped, -1, -2)).reshape(*lead, steps, _K * n)


def step_sums(array: np.ndarray) -> np.ndarray:
    """``[..., K, N]`` i8 as ``[..., ceil(K / 4), N]`` i32: 128 times the sum
    of each step's 4 (zero-padded) rows."""
    layout = vnni_layout(array)
    *lead, steps, width = layout.shape
    grouped = layout.reshape(*lead, steps, width // _K, _K).astype(np.int32)
    return 128 * grouped.sum(axis=-1, dtype=np.int32)


def _pack(constant: ir.Operation) -> tuple[ir.Value, ir.Value] | None:
    """The VNNI layout of ``constant`` and its step sums, as constants next to it."""
    ctype = ir.RankedTensorType(constant.results[0].type)
    array = weights.value_of(constant.attributes["value"], ctype)
    if array is None or array.ndim < 2 or array.dtype != np.int8:
        return None
    return (
        _constant_next_to(constant, vnni_layout(array), "vnni"),
        _constant_next_to(constant, step_sums(array), "vnni_sums"),
    )


def _loop_totals(constant: ir.Operation, steps: tuple[int, ...]) -> ir.Value | None:
    """``[..., N]``: the step sums of ``constant`` (``[..., K, N]``) added
    over ``steps``, as a constant next to it."""
    ctype = ir.RankedTensorType(constant.results[0].type)
    array = weights.value_of(constant.attributes["value"], ctype)
    if array is None or array.ndim < 2 or array.dtype != np.int8:
        return None
    sums = step_sums(array)
    if any(not 0 <= step < sums.shape[-2] for step in steps):
        return None
    totals = sums[..., list(steps), :].sum(axis=-2, dtype=np.int32)
    first, last = (steps[0], steps[-1]) if steps else (0, -1)
    return _constant_next_to(constant, totals, f"vnni_totals{first}_{last}_{len(steps)}")


def _iv_of(value: ir.Value) -> ir.Value | None:
    """The ``scf.for`` induction variable ``value`` is (through the identity
    ``affine.apply`` lowerline-pack-weights writes), or None."""
    if isinstance(value, ir.OpResult) and value.owner.name == "affine.apply":
        amap = ir.AffineMapAttr(value.owner.attributes["map"]).value
        return _iv_of(value.owner.operands[0]) if str(amap) == "()[s0] -> (s0)" else None
    if isinstance(value, ir.BlockArgument) and value.arg_number == 0:
        return value if value.owner.owner.name == "scf.for" else None
    return None


def _constant_next_to(constant: ir.Operation, array: np.ndarray, suffix: str) -> ir.Value:
    element = ir.IntegerType.get_signless(8 * array.dtype.itemsize)
    ttype = ir.RankedTensorType.get(list(array.shape), element)
    name = weights.derived_name(constant.attributes["value"], suffix)
    with ir.InsertionPoint(constant), constant.location:
        return arith.ConstantOp(ttype, weights.constant_attr(array, ttype, name)).result
