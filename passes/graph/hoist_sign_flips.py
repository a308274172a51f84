"""``lowerline-hoist-sign-flips``: the u8 -> s8 shift of an int8 operand
(``xori 0x80``) moves from behind layout ops into the elementwise op that
produced the bytes, so it costs no kernel of its own.

lowerline-fold-qdq-matmul and -batch-matmul read u8 activations as s8
(``x ^ 0x80`` is ``x - 128``) in a generic of their own; where the u8
tensor comes straight from its quantize, lowerline-fuse-elementwise merges
the two. Where layout ops sit between them (attention's heads: the
in-projection's output reshaped, transposed and sliced into q, k and v;
the heads put back together before the out-projection; a sequence-first
transpose), each shift stayed a separate pass over the bytes: seven of the
int8 encoder layer's kernels, each one more fork and join of the threads.
Elementwise ops commute with layout ops, so::

    %q = generic {..., fptoui}(...)           // the producer, all parallel
    %t = linalg.transpose / reshape / slice (%q)
    %s = generic {xori 0x80}(%t)
    %r = generic {extui %q', ...}(%t')        // another reader, same bytes
        ==>
    %q = generic {..., fptoui, xori 0x80}(...)
    %t = linalg.transpose / reshape / slice (%q)   // %s is %t now
    %r = generic {xori 0x80 (flip back), extui, ...}(%t')

Every reader of the bytes must be a shift (which goes) or a
``linalg.generic`` (which flips its operand back in its body: one ``xor``
per element, inside a kernel that runs anyway). Upstream MLIR has no such
rewrite: elementwise fusion (``linalg-fuse-elementwise-ops``) does not
fuse across transposes or slices, and its reshape propagation turns named
contractions into generics (see lowerline-fuse-elementwise).

Not rewritten: a producer that is not an all-parallel generic with one i8
result, and bytes read by anything else than layout ops (transpose,
collapse_shape, expand_shape, a static extract_slice), shifts and generics
(a pad, a pooling, a contraction, a return).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mlir import ir
from mlir.dialects import arith

from lowerline.passes.support.ir_constants import int_constant
from lowerline.passes.support.linalg_info import all_parallel, indexing_maps
from lowerline.pipeline.pass_api import Pass, ops_matching

_LAYOUT = ("linalg.transpose", "tensor.collapse_shape", "tensor.expand_shape")


def _is_i8(value: ir.Value) -> bool:
    return str(ir.RankedTensorType(value.type).element_type) == "i8"


def is_sign_flip(op: ir.Operation) -> bool:
    """An elementwise generic whose body is ``xori x, 0x80`` on its one input."""
    if op.name != "linalg.generic" or len(op.operands) != 2 or len(op.results) != 1:
        return False
    maps = indexing_maps(op)
    if not all_parallel(op) or any(m != ir.AffineMap.get_identity(m.n_dims) for m in maps):
        return False
    block = op.regions[0].blocks[0]
    body = [o.operation for o in block.operations]
    if len(body) != 2 or body[0].name != "arith.xori" or not _is_i8(op.results[0]):
        return False
    xor = body[0]
    if body[1].operands[0] != xor.results[0] or block.arguments[0] not in list(xor.operands):
        return False
    other = [v for v in xor.operands if v != block.arguments[0]]
    return len(other) == 1 and int_constant(other[0]) in (-128, 128)


def _is_layout(op: ir.Operation) -> bool:
    if op.name in _LAYOUT:
        return True
    return op.name == "tensor.extract_slice" and len(op.operands) == 1


@dataclass
class Readers:
    """Where the bytes of a producer go: the shifts to drop and the
    (generic, operand index) reads to flip back."""

    flips: list[ir.Operation] = field(default_factory=list)
    reads: list[tuple[ir.Operation, int]] = field(default_factory=list)


def _collect(value: ir.Value, found: Readers) -> bool:
    """Every reader of ``value`` through layout ops into ``found``; False
    when one is neither a layout op, a shift nor a generic's input."""
    for use in value.uses:
        user = use.owner.operation
        if is_sign_flip(user):
            found.flips.append(user)
        elif _is_layout(user) and use.operand_number == 0:
            if not _collect(user.results[0], found):
                return False
        elif user.name == "linalg.generic" and use.operand_number < len(user.operands) - len(
            user.results
        ):
            found.reads.append((user, use.operand_number))
        else:
            return False
    return True


def _producer(flip: ir.Operation) -> ir.Operation | None:
    """The all-parallel generic with one i8 result whose bytes ``flip``
    reads through layout ops, or None."""
    value = flip.operands[0]
    while isinstance(value, ir.OpResult) and _is_layout(value.owner.operation):
        value = value.owner.operation.operands[0]
    if not isinstance(value, ir.OpResult):
        return None
    owner = value.owner.operation
    if owner.name != "linalg.generic" or len(owner.results) != 1 or not all_parallel(owner):
        return None
    return owner if _is_i8(owner.results[0]) else None


def _flip(value: ir.Value) -> ir.Value:
    return arith.xori(value, arith.ConstantOp(ir.IntegerType.get_signless(8), -128).result)


def _flip_yield(producer: ir.Operation) -> None:
    """``producer`` yields its bytes shifted."""
    block = producer.regions[0].blocks[0]
    terminator = list(block.operations)[-1].operation
    with ir.InsertionPoint(terminator), terminator.location:
        terminator.operands[0] = _flip(terminator.operands[0])


def _flip_back(reader: ir.Operation, index: int) -> None:
    """``reader`` flips its input ``index`` back as the first op of its body."""
    block = reader.regions[0].blocks[0]
    arg = block.arguments[index]
    users = [u.owner.operation for u in arg.uses]
    with ir.InsertionPoint.at_block_begin(block), reader.location:
        restored = _flip(arg)
    for user in users:
        for i, operand in enumerate(user.operands):
            if operand == arg:
                user.operands[i] = restored


def _hoist(flip: ir.Operation) -> bool:
    producer = _producer(flip)
    found = Readers()
    if producer is None or not _collect(producer.results[0], found):
        return False
    _flip_yield(producer)
    for reader, index in found.reads:
        _flip_back(reader, index)
    for shift in found.flips:
        shift.results[0].replace_all_uses_with(shift.operands[0])
        shift.erase()
    return True


@dataclass(frozen=True)
class HoistSignFlips(Pass):
    flag = "lowerline-hoist-sign-flips"
    summary = "Move u8 -> s8 shifts behind layout ops into the op producing the bytes"
    anchor = "func.func"

    def run(self, op: ir.Operation) -> None:
        changed = True
        while changed:
            changed = any(_hoist(flip) for flip in ops_matching(op, is_sign_flip))
