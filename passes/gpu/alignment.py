"""Proving that a thread's vector access is aligned, from the IR alone.

GPU vector loads (``ld.global.v4.f32``: 16 bytes) need 16-byte aligned
addresses. The kernels are lowered with ``use-vector-alignment`` (every
vector load and store is assumed aligned to its size), so a vector access
may only be generated where this module proves it:

- the buffer's base is aligned: a device buffer (``gpu.alloc`` gives 256
  bytes, arguments and constants are copied into such buffers) or a shared
  buffer (attributions get ``llvm.align = 16``);
- every view on the way adds an offset that is a multiple of the vector in
  elements: each subview offset times its stride, where an offset is known
  to be a multiple of ``k`` through constants, ``affine.apply`` sums and
  products, and loop induction variables (lower bound and step).
"""

from __future__ import annotations

import math

from mlir import ir

from lowerline.passes.support.ir_constants import int_constant

_VIEWS = ("memref.subview",)
_BASES = ("memref.alloc", "memref.get_global", "gpu.alloc")


def divisor(value: ir.Value, depth: int = 0) -> int:
    """A number ``value`` is always a multiple of (0: always zero)."""
    if depth > 16:
        return 1
    constant = int_constant(value)
    if constant is not None:
        return abs(constant)
    if isinstance(value, ir.BlockArgument):
        return _induction_divisor(value, depth)
    owner = value.owner.operation
    if owner.name == "affine.apply":
        amap = ir.AffineMapAttr(owner.attributes["map"]).value
        operands = [divisor(v, depth + 1) for v in owner.operands]
        return _expr_divisor(amap.results[0], operands, amap.n_dims)
    if owner.name in ("arith.muli", "arith.addi"):
        a, b = (divisor(v, depth + 1) for v in owner.operands)
        return a * b if owner.name == "arith.muli" else math.gcd(a, b)
    return 1


def _expr_divisor(expr: ir.AffineExpr, operands: list[int], n_dims: int) -> int:
    if isinstance(expr, ir.AffineConstantExpr):
        return abs(ir.AffineConstantExpr(expr).value)
    if isinstance(expr, ir.AffineDimExpr):
        return operands[ir.AffineDimExpr(expr).position]
    if isinstance(expr, ir.AffineSymbolExpr):
        return operands[n_dims + ir.AffineSymbolExpr(expr).position]
    if isinstance(expr, ir.AffineAddExpr):
        add = ir.AffineAddExpr(expr)
        return math.gcd(
            _expr_divisor(add.lhs, operands, n_dims), _expr_divisor(add.rhs, operands, n_dims)
        )
    if isinstance(expr, ir.AffineMulExpr):
        mul = ir.AffineMulExpr(expr)
        return _expr_divisor(mul.lhs, operands, n_dims) * _expr_divisor(mul.rhs, operands, n_dims)
    return 1  # floordiv, ceildiv, mod: nothing known


def _induction_divisor(arg: ir.BlockArgument, depth: int) -> int:
    loop = arg.owner.owner.operation
    if loop.name == "scf.for" and arg.arg_number == 0:
        lower, _, step = loop.operands[:3]
        return math.gcd(divisor(lower, depth + 1), divisor(step, depth + 1))
    if loop.name == "scf.forall":
        # Normalized foralls (the tiling's): from 0 by step 1 unless written.
        lows = ir.DenseI64ArrayAttr(loop.attributes["staticLowerBound"])
        steps = ir.DenseI64ArrayAttr(loop.attributes["staticStep"])
        i = arg.arg_number
        if i < len(lows) and lows[i] >= 0 and steps[i] > 0:
            return math.gcd(lows[i], steps[i])
    return 1


def _strides(t: ir.MemRefType) -> list[int] | None:
    strides, _ = t.get_strides_and_offset()
    return None if any(s < 0 or s > (1 << 62) for s in strides) else list(strides)


def aligned_vector(value: ir.Value, elements: int) -> bool:
    """Whether reading ``elements`` consecutive elements along the innermost
    dim of ``value`` from any row start is aligned to ``elements`` elements."""
    while True:
        t = ir.MemRefType(value.type)
        strides = _strides(t)
        if strides is None or not strides or strides[-1] != 1:
            return False
        if any(s % elements for s in strides[:-1]):
            return False
        if isinstance(value, ir.BlockArgument):
            # The host function's arguments: copied into gpu.alloc buffers
            # (lowerline-gpu-host-buffers). Anything else: unknown.
            return value.owner.owner.operation.name == "func.func"
        owner = value.owner.operation
        if owner.name in _BASES:
            return True
        if owner.name == "memref.view":
            base = owner.operands[0]
            from_base = isinstance(base, ir.OpResult) and base.owner.operation.name in _BASES
            return from_base and int_constant(owner.operands[1]) == 0
        if owner.name not in _VIEWS:
            return False
        if not _subview_offsets_aligned(owner, elements):
            return False
        value = owner.operands[0]


def _subview_offsets_aligned(subview: ir.Operation, elements: int) -> bool:
    source = ir.MemRefType(subview.operands[0].type)
    strides = _strides(source)
    if strides is None:
        return False
    static = ir.DenseI64ArrayAttr(subview.attributes["static_offsets"])
    dynamic = iter(subview.operands[1 : 1 + sum(1 for o in static if o < -(1 << 62))])
    for offset, stride in zip(static, strides, strict=True):
        d = divisor(next(dynamic)) if offset < -(1 << 62) else abs(offset)
        if d != 0 and (d * stride) % elements:
            return False
    return True
