"""``lowerline-carry-masked-accumulators``: the partial results a masked
tail step updates stay in a register, not in a small tensor (memory).

A row reduction along a dynamic innermost dim (softmax's max and sum over a
dynamic sequence) is reduced in chunks of one register
(``lowerline.passes.tiling.reduction_chunks``): the full chunks keep their
partial results in a vector carried by the loop, and the partial last chunk
(a peeled loop of at most one step) is vectorized with a mask. The masked
step reads and writes the partial results through a ``tensor<1x...x16>``
that bufferization turns into a scratch buffer: the vector is stored, read
back masked, updated, stored masked and read again whole for the
horizontal reduction::

    %t0 = vector.transfer_write %acc, %empty[0, 0]
    %t = scf.for ... iter_args(%p = %t0) {
      %s = tensor.extract_slice %p[0, 0] [1, %n] [1, 1]
      %m = vector.create_mask %n
      %x = vector.transfer_read %row[..], %pad, %m
      %a = vector.transfer_read %s[0, 0], %pad, %m
      %y = arith.maximumf %x, %a
      %w = vector.transfer_write %y, %s[0, 0], %m
      %i = tensor.insert_slice %w into %p[0, 0] [1, %n] [1, 1]
      scf.yield %i
    }
    %r = vector.transfer_read %t[0, 0], %pad

becomes::

    %r = scf.for ... iter_args(%a = %acc) {
      %m = vector.create_mask %n
      %x = vector.transfer_read %row[..], %pad, %m
      %y = arith.maximumf %x, %a
      %z = arith.select %m, %y, %a
      scf.yield %z
    }

The select keeps the lanes the mask leaves out, as the masked write did,
and the lanes it covers are computed from the same partial results, so the
result is the same for any update (max, sum, the and of a comparison).
Measured on an encoder over a dynamic sequence at 17 keys (a row is one
full chunk and one masked one): see ``bench/dynamic-seq17-ab.md``.

Upstream's ``transform.loop.hoist_loop_invariant_subsets`` (which
lowerline-vectorize runs) moves a loop-invariant transfer pair into
registers, but these slices' sizes depend on the induction variable, and
it does not handle masked transfers; no upstream pattern turns a tensor
iter_arg into a vector one.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith

from lowerline.pipeline.pass_api import Pass, ops_matching


@dataclass
class _Carried:
    """One tensor iter_arg updated by a masked read and write of its prefix."""

    loop: ir.Operation
    index: int  # among the iter_args
    start: ir.Operation  # the transfer_write of the vector the loop starts from
    piece: ir.Operation  # the extract_slice of the iter_arg
    read: ir.Operation  # the masked read of the piece
    write: ir.Operation  # the masked write into the piece
    insert: ir.Operation  # the insert_slice of the written piece, yielded
    finals: list[ir.Operation]  # the whole reads of the loop's result


def _zero_indices(op: ir.Operation) -> bool:
    """Whether every index of a transfer op is the constant 0."""
    for value in op.opview.indices:
        if not isinstance(value, ir.OpResult) or value.owner.name != "arith.constant":
            return False
        attr = value.owner.attributes["value"]
        if not isinstance(attr, ir.IntegerAttr) or ir.IntegerAttr(attr).value != 0:
            return False
    return True


def _minor_identity(op: ir.Operation) -> bool:
    """Whether a transfer op's vector runs along the innermost dims in order."""
    perm = ir.AffineMapAttr(op.attributes["permutation_map"]).value
    rank = perm.n_dims
    results = list(perm.results)
    return all(
        isinstance(e, ir.AffineDimExpr) and ir.AffineDimExpr(e).position == rank - len(results) + i
        for i, e in enumerate(results)
    )


def _whole_transfer(op: ir.Operation, vtype: ir.Type, masked: bool) -> bool:
    """A transfer of ``vtype`` at index 0, along the innermost dims, with
    (``masked``) or without a mask."""
    if op.name not in ("vector.transfer_read", "vector.transfer_write"):
        return False
    vector_value = op.results[0] if op.name == "vector.transfer_read" else op.operands[0]
    return (
        vector_value.type == vtype
        and (op.opview.mask is not None) == masked
        and _zero_indices(op)
        and _minor_identity(op)
    )


def _covers(vtype: ir.VectorType, ttype: ir.Type) -> bool:
    """Whether a vector of ``vtype`` is the whole of a static tensor of ``ttype``."""
    if not isinstance(ttype, ir.RankedTensorType) or not ttype.has_static_shape:
        return False
    shape = list(ir.RankedTensorType(ttype).shape)
    lanes = list(vtype.shape)
    lead = shape[: len(shape) - len(lanes)]
    return shape[len(lead) :] == lanes and all(d == 1 for d in lead)


def _zero_offsets(op: ir.Operation) -> bool:
    view = op.opview
    return all(o == 0 for o in view.static_offsets) and all(s == 1 for s in view.static_strides)


def _same_sizes(a: ir.Operation, b: ir.Operation) -> bool:
    return list(a.opview.static_sizes) == list(b.opview.static_sizes) and list(
        a.opview.sizes
    ) == list(b.opview.sizes)


def _only_use(value: ir.Value) -> ir.OpOperand | None:
    uses = list(value.uses)
    return uses[0] if len(uses) == 1 else None


def _piece_ops(piece: ir.Operation, vtype: ir.Type) -> tuple[ir.Operation, ir.Operation] | None:
    """The masked read and the masked write (same mask) of ``piece``."""
    users = [use.owner for use in piece.results[0].uses]
    reads = [u for u in users if u.name == "vector.transfer_read"]
    writes = [u for u in users if u.name == "vector.transfer_write"]
    if len(users) != 2 or len(reads) != 1 or len(writes) != 1:
        return None
    read, write = reads[0], writes[0]
    if write.operands[1] != piece.results[0]:
        return None  # the piece is what is written, not what is stored
    if not _whole_transfer(read, vtype, True) or not _whole_transfer(write, vtype, True):
        return None
    return (read, write) if read.opview.mask == write.opview.mask else None


def _find(loop: ir.Operation, index: int) -> _Carried | None:
    """The iter_arg ``index`` of ``loop`` as a masked accumulator, or None."""
    init = loop.operands[3 + index]
    if not isinstance(init, ir.OpResult) or init.owner.name != "vector.transfer_write":
        return None
    start = init.owner
    vtype = start.operands[0].type
    if not _covers(ir.VectorType(vtype), init.type) or not _whole_transfer(start, vtype, False):
        return None
    arg = loop.regions[0].blocks[0].arguments[1 + index]
    users = [use.owner for use in arg.uses]
    pieces = [u for u in users if u.name == "tensor.extract_slice"]
    inserts = [u for u in users if u.name == "tensor.insert_slice"]
    if len(users) != 2 or len(pieces) != 1 or len(inserts) != 1:
        return None
    piece, insert = pieces[0], inserts[0]
    if insert.operands[1] != arg or not _zero_offsets(piece) or not _zero_offsets(insert):
        return None
    if not _same_sizes(piece, insert):
        return None
    found = _piece_ops(piece, vtype)
    if found is None:
        return None
    read, write = found
    written = _only_use(write.results[0])
    if written is None or written.owner != insert or written.operand_number != 0:
        return None
    yielded = _only_use(insert.results[0])
    if yielded is None or yielded.owner.name != "scf.yield" or yielded.operand_number != index:
        return None
    finals = [use.owner for use in loop.results[index].uses]
    if not finals or not all(_whole_transfer(f, vtype, False) for f in finals):
        return None
    return _Carried(loop, index, start, piece, read, write, insert, finals)


def _carry(found: _Carried) -> None:
    """Rewrite one accumulator to a vector iter_arg updated by a select."""
    loop, index = found.loop, found.index
    start_vector = found.start.operands[0]
    arg = loop.regions[0].blocks[0].arguments[1 + index]
    result = loop.results[index]
    loop.operands[3 + index] = start_vector
    arg.set_type(start_vector.type)
    result.set_type(start_vector.type)
    found.read.results[0].replace_all_uses_with(arg)
    with ir.InsertionPoint(found.write), found.write.location:
        kept = arith.select(found.write.opview.mask, found.write.operands[0], arg)
    found.insert.results[0].replace_all_uses_with(kept)
    for final in found.finals:
        final.results[0].replace_all_uses_with(result)
        final.erase()
    for op in (found.insert, found.write, found.read, found.piece):
        op.erase()
    if not list(found.start.results[0].uses):
        found.start.erase()


def carry_masked_accumulators(root: ir.Operation) -> int:
    """Rewrite every masked accumulator under ``root``; returns the count."""
    count = 0
    for loop in ops_matching(root, lambda o: o.name == "scf.for"):
        for index in range(len(loop.results)):
            found = _find(loop, index)
            if found is not None:
                _carry(found)
                count += 1
    return count


@dataclass(frozen=True)
class CarryMaskedAccumulators(Pass):
    flag = "lowerline-carry-masked-accumulators"
    summary = (
        "Carry the partial results a masked tail step of a vectorized reduction updates "
        "in a vector iter_arg (a select keeps the masked-off lanes), not in a small tensor"
    )
    anchor = None

    def run(self, op: ir.Operation) -> None:
        carry_masked_accumulators(op)
