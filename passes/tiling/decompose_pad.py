"""``lowerline-decompose-pad``: a padded tensor as a filled buffer whose
interior is written by a parallel copy, or by the producer itself.

Why: bufferization turns ``tensor.pad`` into an allocation, a fill of the
whole buffer and a copy of the source into its interior, both on one thread
outside every tiled loop (a ResNet basic block here: the second core idles
through two of them per call, measured 0.2-0.3 ms of 3 ms). Upstream's
``DecomposePadOpPattern`` (``transform.apply_patterns.linalg.decompose_pad``)
rewrites the pad into ``tensor.empty`` + ``linalg.fill`` +
``tensor.insert_slice``, but the insert bufferizes to the same serial
strided ``memref.copy``, and its fill comes after the source's producer, so
``eliminate-empty-tensors`` cannot make that producer write into the
buffer. This pass decides per pad:

- **in place**: the source is the only use of the one result of a linalg
  op whose destination is a ``tensor.empty`` (a convolution's ReLU
  epilogue feeding the next convolution; an empty tensor shared by CSE
  with other ops counts as its own): the padded buffer's border is filled
  before that op, and the op writes into its interior (its destination
  becomes ``tensor.extract_slice`` of the fill), so no copy is left;
- **copy**: otherwise the interior is written by a ``linalg.copy``, which
  ``lowerline-tile-and-fuse`` tiles over the cores and vectorizes.

Either way the fills and the copy are linalg ops: tiled, parallel, vectorized.
A dynamic dim that is not padded (a dynamic batch, ``lowerline.compile(...,
dynamic=...)``) is carried through with its runtime size; pads with dynamic
padding, a padded dynamic dim or a padding value computed inside the region
stay (bufferized as a serial fill of the whole buffer and a copy: measured
a quarter of the dynamic-batch CNN's time at batch 1, bench/dynamic.py).

Only the border is filled (a fill per side of each padded dimension): the
interior is written next, and filling it too cost a full extra pass over
the buffer (measured: ~5% of the ResNet block).

Before / after (in place)::

    %e = tensor.empty()
    %r = linalg.generic ... outs(%e)
    %p = tensor.pad %r low[0, 1, 1] high[0, 1, 1]
        ==>
    %b = bufferization.alloc_tensor() : tensor<4x8x8xf32>
    %top = tensor.extract_slice %b[0, 0, 0] [4, 1, 8] [1, 1, 1]
    %f = linalg.fill ins(%zero) outs(%top)
    %b1 = tensor.insert_slice %f into %b[0, 0, 0] [4, 1, 8] [1, 1, 1]
    ... (bottom row, left and right columns)
    %s = tensor.extract_slice %b4[0, 1, 1] [4, 6, 6] [1, 1, 1]
    %r = linalg.generic ... outs(%s)
    %p = tensor.insert_slice %r into %b4[0, 1, 1] [4, 6, 6] [1, 1, 1]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, bufferization, linalg, tensor

from lowerline.pipeline.pass_api import Pass, ops_matching


@dataclass
class _Pad:
    op: ir.Operation
    value: ir.Value  # the padding value, defined outside the pad's region
    low: list[int]
    high: list[int]
    producer: ir.Operation | None  # writes its result into the interior (in place)


def padding_value(pad: ir.Operation) -> ir.Value | None:
    """The yielded value when it is defined outside the region (a constant)."""
    body = pad.regions[0].blocks[0]
    yielded = list(body.operations)[-1].operands[0]
    if isinstance(yielded.owner, ir.Block):
        return None  # a block argument: of the region (an index) or not known to dominate
    inside = yielded.owner.operation.parent
    return None if inside.name == "tensor.pad" else yielded


def static_padding(pad: ir.Operation) -> tuple[list[int], list[int]] | None:
    """The low and high padding when it is static and pads static dims only
    (a dynamic dim, unpadded, keeps its size); None otherwise."""
    if len(pad.operands) != 1:  # dynamic low or high padding
        return None
    low, high = (
        list(ir.DenseI64ArrayAttr(pad.attributes[name])) for name in ("static_low", "static_high")
    )
    source = ir.RankedTensorType(pad.operands[0].type)
    dynamic = [d for d in range(source.rank) if source.is_dynamic_dim(d)]
    if any(low[d] or high[d] for d in dynamic):
        return None
    return low, high


def _in_place_producer(pad: ir.Operation, value: ir.Value) -> ir.Operation | None:
    """The linalg op that can write the pad's source into the padded buffer."""
    source = pad.operands[0]
    if isinstance(source.owner, ir.Block) or len(list(source.uses)) != 1:
        return None
    producer = source.owner.operation
    if not producer.name.startswith("linalg.") or len(producer.results) != 1:
        return None
    init = producer.operands[len(producer.operands) - 1]
    if isinstance(init.owner, ir.Block) or init.owner.name != "tensor.empty":
        return None
    if producer.parent != pad.parent:
        return None
    # The fill moves before the producer: the padding value must be there already.
    if not isinstance(value.owner, ir.Block) and not _before(value.owner.operation, producer):
        return None
    return producer


def _before(a: ir.Operation, b: ir.Operation) -> bool:
    """``a`` is in ``b``'s block, earlier, or in an enclosing region."""
    if a.parent != b.parent:
        return True  # defined in an enclosing op (dominance verified the pad's use)
    for op in b.parent.regions[0].blocks[0].operations:
        if op.operation == a:
            return True
        if op.operation == b:
            return False
    return False


def _plan(func: ir.Operation) -> list[_Pad]:
    plans = []
    for pad in ops_matching(func, lambda o: o.name == "tensor.pad"):
        value, padding = padding_value(pad), static_padding(pad)
        if value is not None and padding is not None:
            plans.append(_Pad(pad, value, *padding, _in_place_producer(pad, value)))
    return plans


def _filled(
    padded: ir.RankedTensorType,
    value: ir.Value,
    low: list[int],
    high: list[int],
    dynamic_sizes: Sequence[ir.Value],
) -> ir.Value:
    """A buffer for the padded tensor with its border (not its interior,
    which is written next) set to ``value``: a fill per side of every padded
    dimension, the corners filled twice. ``dynamic_sizes``: the runtime
    sizes of its dynamic (unpadded) dims, in order."""
    # alloc_tensor, not tensor.empty: CSE would merge two pads' empty tensors
    # and then their fills, and the two padded values would need a copy.
    result = bufferization.alloc_tensor(padded, list(dynamic_sizes))
    shape, rank = list(padded.shape), padded.rank
    for dim in range(rank):
        for offset, size in ((0, low[dim]), (shape[dim] - high[dim], high[dim])):
            if size == 0:
                continue
            offsets = [offset if d == dim else 0 for d in range(rank)]
            sizes = [size if d == dim else shape[d] for d in range(rank)]
            result = fill_slice(result, value, offsets, sizes, dynamic_sizes)
    return result


def fill_slice(
    whole: ir.Value,
    value: ir.Value,
    offsets: list[int],
    sizes: list[int],
    dynamic_sizes: Sequence[ir.Value] = (),
) -> ir.Value:
    """``whole`` with its slice at ``offsets`` of ``sizes`` filled with
    ``value`` (``dynamic_sizes`` for the sizes that are dynamic)."""
    filled = linalg.fill(value, outs=[_extract(whole, offsets, sizes, dynamic_sizes)])
    return _insert(filled, whole, offsets, dynamic_sizes)


def _extract(
    whole: ir.Value,
    offsets: list[int],
    sizes: list[int],
    dynamic_sizes: Sequence[ir.Value] = (),
) -> ir.Value:
    """The slice of ``whole`` at static ``offsets`` of ``sizes``, unit
    strides; a dynamic size is the next of ``dynamic_sizes``."""
    element = ir.RankedTensorType(whole.type).element_type
    part = ir.RankedTensorType.get(sizes, element)
    ones = [1] * len(sizes)
    return tensor.ExtractSliceOp(
        part, whole, [], list(dynamic_sizes), [], offsets, sizes, ones
    ).result


def _insert(
    part: ir.Value,
    whole: ir.Value,
    offsets: list[int],
    dynamic_sizes: Sequence[ir.Value] = (),
) -> ir.Value:
    """``part`` written into ``whole`` at ``offsets`` (its whole shape, its
    dynamic sizes ``dynamic_sizes``)."""
    sizes = list(ir.RankedTensorType(part.type).shape)
    ones = [1] * len(sizes)
    return tensor.InsertSliceOp(
        part, whole, [], list(dynamic_sizes), [], offsets, sizes, ones
    ).result


def _dynamic_sizes(p: _Pad) -> list[ir.Value]:
    """The runtime sizes of the source's dynamic dims, defined before the
    fills: the producer's ``tensor.empty`` operands (its result does not
    exist yet there), else ``tensor.dim`` of the source."""
    if p.producer is not None:
        return list(p.producer.operands[len(p.producer.operands) - 1].owner.operands)
    source = p.op.operands[0]
    stype = ir.RankedTensorType(source.type)
    dims = [d for d in range(stype.rank) if stype.is_dynamic_dim(d)]
    return [tensor.dim(source, arith.constant(ir.IndexType.get(), d)) for d in dims]


def _rewrite(p: _Pad) -> None:
    source = p.op.operands[0]
    shape = list(ir.RankedTensorType(source.type).shape)
    at = p.producer if p.producer is not None else p.op
    with ir.InsertionPoint(at), p.op.location:
        sizes = _dynamic_sizes(p)
        padded = ir.RankedTensorType(p.op.results[0].type)
        filled = _filled(padded, p.value, p.low, p.high, sizes)
        interior = _extract(filled, p.low, shape, sizes)
        if p.producer is not None:
            empty = p.producer.operands[len(p.producer.operands) - 1].owner
            p.producer.operands[len(p.producer.operands) - 1] = interior
            if not list(empty.result.uses):  # CSE may have shared it with other ops
                empty.erase()
        else:
            source = linalg.copy(source, outs=[interior])
    with ir.InsertionPoint(p.op), p.op.location:
        inserted = _insert(source, filled, p.low, sizes)
    p.op.results[0].replace_all_uses_with(inserted)
    p.op.erase()


@dataclass(frozen=True)
class DecomposePad(Pass):
    flag = "lowerline-decompose-pad"
    summary = "tensor.pad as a linalg.fill plus a parallel copy or an in-place producer"
    anchor = "func.func"

    def run(self, op: ir.Operation) -> None:
        for plan in _plan(op):  # decided first: rewriting invalidates the op objects
            _rewrite(plan)
