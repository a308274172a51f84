"""``lowerline-pack-weights``: store constant B matrices as the kernels read them.

Why: a register tile of a matmul reads an ``k x nr`` panel of B, one row of
``nr`` floats per step of k. In B's row-major layout those rows are ``N *
4`` bytes apart: for N = 512 or 1024 they all fall into a few L1 sets, so
the panel is evicted while it is being reused (measured: 35 GFLOP/s unpacked
against 80 packed on a 1024^3 f32 matmul here). Weights are constants, so
this pass stores B once, at compile time, as ``[N / nr, K, nr]``: each panel
contiguous. Upstream's ``linalg-block-pack-matmul`` and
``transform.structured.pack`` pack with ``linalg.pack`` ops that run on every
call (upstream cannot fold them for ``dense_resource`` weights, whose bytes
the bindings cannot read) and change the matmul into ``linalg.mmt4d``; this
pass packs the bytes once and only re-points the tiles already chosen by
``lowerline-tile-and-fuse``.

It runs after tiling and before vectorization. For each contraction tile
(``lowerline.contract``) whose B operand is a chain of unit-stride
``tensor.extract_slice``s of a constant with known bytes, whose tile width is
``nr`` and where ``nr`` divides N (a dynamic M's row pieces of at least
half the register tile's rows have its width and share its packed copy; a
tile wider than its group's register tile, a dynamic M's smaller row piece
of 2 or more rows, streams its panel once and is left alone; a 1-row piece
is packed at its own width, see ``_streams_once``)::

    %b = tensor.extract_slice %w[%k, %n] [1, 32] [1, 1] : tensor<784x512xf32> to tensor<1x32xf32>
        ==>
    %p = tensor.extract_slice %w.p32[%n floordiv 32, %k, 0] [1, 1, 32] [1, 1, 1]
           : tensor<16x784x32xf32> to tensor<1x32xf32>

Tiles of any other shape, non-constant B (attention), and weights whose
bytes are unknown are left alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mlir import ir
from mlir.dialects import affine, arith, tensor

from lowerline import weights
from lowerline.pipeline.pass_api import Pass, ops_matching
from lowerline.pipeline.protocol import CONTRACT, VECTOR_SIZES

_DYNAMIC = ir.ShapedType.get_dynamic_stride_or_offset()


@dataclass
class _Offset:
    """A sum of index values plus a constant."""

    values: list[ir.Value]
    constant: int = 0

    def add(self, static: int, dynamic: list[ir.Value]) -> None:
        if static == _DYNAMIC:
            self.values.append(dynamic.pop(0))
        else:
            self.constant += static


def _slice_chain(value: ir.Value) -> tuple[ir.Operation, list[_Offset]] | None:
    """Follow unit-stride 2-D extract_slices up to an arith.constant."""
    offsets = [_Offset([]), _Offset([])]
    while isinstance(value, ir.OpResult) and value.owner.name == "tensor.extract_slice":
        view = value.owner.opview
        statics = list(view.static_offsets)
        if len(statics) != 2 or any(s != 1 for s in view.static_strides):
            return None
        dynamic = list(view.offsets)
        for index in range(2):
            offsets[index].add(statics[index], dynamic)
        value = view.source
    if not isinstance(value, ir.OpResult) or value.owner.name != "arith.constant":
        return None
    return value.owner, offsets


def _index_of(offset: _Offset, divisor: int) -> ir.Value:
    """``(sum + constant) floordiv divisor`` as an index value."""
    syms = [ir.AffineSymbolExpr.get(i) for i in range(len(offset.values))]
    expr = ir.AffineConstantExpr.get(offset.constant)
    for s in syms:
        expr = expr + s
    if divisor != 1:
        expr = ir.AffineFloorDivExpr.get(expr, ir.AffineConstantExpr.get(divisor))
    amap = ir.AffineMap.get(0, len(syms), [expr])
    return affine.AffineApplyOp(amap, offset.values).result


def _streams_once(tile: ir.Operation, width: int) -> bool:
    """A tile wider than its group's register tile: a row piece of a matmul
    whose M is dynamic (``lowerline-tile-and-fuse``), which reads its
    ``k x width`` panel of B once, in rows of ``width`` contiguous floats,
    and is left unpacked: no copy of the weight per piece width.

    Except the 1-row piece, all a batch of 1 runs: its ``k x width`` panel
    read row by row at a stride of N floats costs what a packed panel does
    not (measured, 1 thread, 1x256 pieces of a 256x512 B at batch 1: 4.4 us
    unpacked against 2.7 us packed, the static batch-1 build's time). The
    2-row piece gained nothing packed at its own width (batch 2 within 2%),
    so it stores no copy; pieces of half the register tile's rows or more
    are not wider than it and read its packed copy."""
    planned = VECTOR_SIZES.get(tile)
    if planned is None or len(planned) < 2 or width <= planned[-2]:
        return False
    rows = ir.RankedTensorType(tile.results[0].type).shape[-2]
    return rows != 1


@dataclass(frozen=True)
class PackWeights(Pass):
    flag = "lowerline-pack-weights"
    summary = "Pack constant matmul B operands into contiguous k x nr panels at compile time"
    anchor = "func.func"

    def run(self, op: ir.Operation) -> None:
        tiles = ops_matching(op, lambda c: c.name == "linalg.matmul" and CONTRACT.has(c))
        packed: list[tuple[ir.Operation, int, ir.Value]] = []
        for tile in tiles:
            self._repoint(tile, packed, op)

    def _repoint(self, tile: ir.Operation, packed: list, func: ir.Operation) -> None:
        b = tile.operands[1]
        btype = ir.RankedTensorType(b.type)
        if not btype.has_static_shape or len(btype.shape) != 2:
            return
        ks, nr = btype.shape
        if _streams_once(tile, nr):
            return
        found = _slice_chain(b)
        if found is None:
            return
        constant, (k_off, n_off) = found
        ctype = ir.RankedTensorType(constant.results[0].type)
        n = ctype.shape[1]
        if nr <= 1 or n % nr or n == nr:
            return
        source = next((p for c, w, p in packed if c == constant and w == nr), None)
        if source is None:
            array = weights.value_of(constant.attributes["value"], ctype, bits=True)
            if array is None:
                return
            source = self._packed_constant(constant, array, nr, func)
            packed.append((constant, nr, source))
        with ir.InsertionPoint(tile), tile.location:
            panel = _index_of(n_off, nr)
            row = _index_of(k_off, 1)
            zero = arith.ConstantOp(ir.IndexType.get(), 0).result
            view = tensor.ExtractSliceOp(
                btype, source, [panel, row, zero], [], [],
                [_DYNAMIC] * 3, [1, ks, nr], [1, 1, 1],
            )  # fmt: skip
        tile.operands[1] = view.result

    def _packed_constant(
        self, constant: ir.Operation, array: np.ndarray, nr: int, func: ir.Operation
    ) -> ir.Value:
        k, n = array.shape
        layout = array.reshape(k, n // nr, nr).transpose(1, 0, 2)
        ctype = ir.RankedTensorType(constant.results[0].type)
        ptype = ir.RankedTensorType.get([n // nr, k, nr], ctype.element_type)
        name = weights.derived_name(constant.attributes["value"], f"p{nr}")
        entry = func.regions[0].blocks[0]
        with ir.InsertionPoint.at_block_begin(entry), constant.location:
            return arith.ConstantOp(ptype, weights.constant_attr(layout, ptype, name)).result
