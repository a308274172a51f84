"""``lowerline-fuse-row-sweeps``: one sweep over a row for independent
vector loops that read it at the same positions.

A row kernel (``lowerline.passes.tiling.row_kernels``) leaves one vector
loop per op along the row. Where two of them are independent of each other
and read the same tensor at the same index, each is a sweep over the row,
and the second reads it again from cache: softmax's ``exp(x - max)``
written for the division and its sum, or two moments of the same row::

    %e = scf.for %j = 0 to 50240 step 64 iter_args(%buf = %b) {
      %x = vector.transfer_read %in[%i, %j]
      vector.transfer_write (math.exp (%x - %m)), %buf[0, %j]
    }
    %s = scf.for %j = 0 to 50240 step 64 iter_args(%acc = %zero) {
      %x = vector.transfer_read %in[%i, %j]
      %acc2 = arith.addf (math.exp (%x - %m)), %acc
    }

becomes, after CSE::

    %e, %s = scf.for %j = 0 to 50240 step 64 iter_args(%buf = %b, %acc = %zero) {
      %x = vector.transfer_read %in[%i, %j]
      %y = math.exp (%x - %m)
      vector.transfer_write %y, %buf[0, %j]
      %acc2 = arith.addf %y, %acc
    }

Such pairs are merged with upstream's ``transform.loop.fuse_sibling`` (the
later loop into the earlier one); CSE after this pass computes the shared
values (the read, the ``exp``) once. Upstream has the fusion and no pass
that picks the loops worth fusing: same bounds, a shared read, and the
later loop using nothing the earlier one or the ops between them compute.
Only loops on tensors (no memref operand anywhere inside): their bodies
have no side effects, so the order of their iterations does not matter.

Reads compare by their indices' structure: an ``affine.apply`` each loop
computes (a block's offset plus the induction variable, in the block
moments of ``row_moments``) is the same index when its map and operands
are. A slice the later loop starts from, taken between the two loops of a
value defined before both (softmax's output row, which the exp is written
into in place), is moved before the earlier loop.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from lowerline.passes.support.transform_scripts import ANY, apply_script
from lowerline.pipeline.pass_api import Pass, ops_matching
from lowerline.pipeline.protocol import OP_TAG

_EARLIER = "fuse-row-sweeps.earlier"
_LATER = "fuse-row-sweeps.later"


def _nested(op: ir.Operation) -> list[ir.Operation]:
    """``op``'s nested ops, outermost first."""
    found: list[ir.Operation] = []
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                found.append(inner.operation)
                found.extend(_nested(inner.operation))
    return found


def _on_tensors(loop: ir.Operation) -> bool:
    values = [v for op in [loop, *_nested(loop)] for v in [*op.operands, *op.results]]
    return not any(isinstance(v.type, ir.MemRefType) for v in values)


def _same_range(a: ir.Operation, b: ir.Operation) -> bool:
    """Same lower bound, upper bound and step (the same SSA values: CSE
    has merged equal constants)."""
    return all(a.operands[i] == b.operands[i] for i in range(3))


def _reads(loop: ir.Operation) -> list[tuple[ir.Value, list, ir.Type]]:
    """(source, indices, vector type) of the ``vector.transfer_read`` ops
    in ``loop`` of tensors defined outside it; an index that is the
    induction variable of ``loop`` or of a loop in it is its depth (0 for
    ``loop``), so that two loop nests of the same shape compare equal."""
    depth = {_induction(loop): 0}
    for op in _nested(loop):
        if op.name == "scf.for":
            depth[_induction(op)] = 1 + _loop_depth(op, loop)
    reads = []
    for op in _nested(loop):
        if op.name != "vector.transfer_read" or _inside(op.operands[0], loop):
            continue
        indices = [
            _index_key(v, depth, loop) for v in op.operands[1:] if isinstance(v.type, ir.IndexType)
        ]
        reads.append((op.operands[0], indices, op.results[0].type))
    return reads


def _index_key(value: ir.Value, depth: dict, loop: ir.Operation) -> object:
    """``value`` as it compares between loops: an induction variable by its
    depth, an ``affine.apply`` inside ``loop`` (a block's offset plus the
    induction variable) by its map and operands' keys, else itself."""
    if value in depth:
        return depth[value]
    owner = value.owner if isinstance(value, ir.OpResult) else None
    if owner is not None and owner.name == "affine.apply" and _inside(value, loop):
        operands = tuple(_index_key(v, depth, loop) for v in owner.operands)
        return ("affine.apply", str(owner.attributes["map"]), operands)
    return value


def _induction(loop: ir.Operation) -> ir.Value:
    return loop.regions[0].blocks[0].arguments[0]


def _loop_depth(op: ir.Operation, outer: ir.Operation) -> int:
    """How many ``scf.for`` lie between ``op`` and ``outer`` (exclusive)."""
    count = 0
    parent = op.parent
    while parent is not None and parent.operation != outer.operation:
        count += parent.name == "scf.for"
        parent = parent.parent
    return count


def _share_a_read(a: ir.Operation, b: ir.Operation) -> bool:
    return any(read == other for read in _reads(a) for other in _reads(b))


def _inside(value: ir.Value, op: ir.Operation) -> bool:
    """Whether ``value`` is defined in one of ``op``'s regions."""
    owner = value.owner
    # A block argument's owner is its block; a result's owner is its op.
    parent = owner.owner if isinstance(value, ir.BlockArgument) else owner.parent
    while parent is not None:
        if parent.operation == op.operation:
            return True
        parent = parent.parent
    return False


def _ancestor_in(op: ir.Operation, block: ir.Block) -> ir.Operation | None:
    """The op of ``block`` that holds ``op`` (``op`` itself if it is in it)."""
    current = op.operation
    while current.parent is not None:  # the module has no block
        if current.block == block:
            return current
        current = current.parent.operation
    return None


def _uses_nothing_from(later: ir.Operation, earlier: ir.Operation) -> bool:
    """Whether every value ``later`` uses from outside is defined before
    ``earlier`` (so ``later``'s body can run in ``earlier``'s iterations)."""
    for op in [later, *_nested(later)]:
        for value in op.operands:
            if _inside(value, later) or isinstance(value, ir.BlockArgument):
                continue
            holder = _ancestor_in(value.owner, earlier.block)
            if holder is not None and not holder.is_before_in_block(earlier):
                return False
    return True


# Ops a later loop may need from between the two loops that can move
# before the earlier one: they only name a value (no memory is touched).
_MOVABLE = ("tensor.extract_slice", "tensor.empty", "arith.constant")


def _movable_operands(later: ir.Operation, earlier: ir.Operation) -> list[ir.Operation] | None:
    """The ops between ``earlier`` and ``later`` that ``later`` reads, when
    all are ``_MOVABLE`` and read only values defined before ``earlier``
    (a slice of the row loop's output, taken after the earlier loop, that a
    loop writing the output in place starts from); None otherwise."""
    found: list[ir.Operation] = []
    for op in [later, *_nested(later)]:
        for value in op.operands:
            if _inside(value, later) or isinstance(value, ir.BlockArgument):
                continue
            holder = _ancestor_in(value.owner, earlier.block)
            if holder is None or holder.is_before_in_block(earlier):
                continue
            if holder.name not in _MOVABLE or holder.operation == earlier.operation:
                return None
            if not _defined_before(holder, earlier):
                return None
            if not any(holder == f for f in found):
                found.append(holder)
    return found


def _defined_before(op: ir.Operation, earlier: ir.Operation) -> bool:
    for value in op.operands:
        if isinstance(value, ir.BlockArgument):
            continue
        holder = _ancestor_in(value.owner, earlier.block)
        if holder is not None and not holder.is_before_in_block(earlier):
            return False
    return True


def _pair(loops: list[ir.Operation]) -> tuple[ir.Operation, ir.Operation] | None:
    for index, earlier in enumerate(loops):
        for later in loops[index + 1 :]:
            if not _same_range(earlier, later) or not _share_a_read(earlier, later):
                continue
            if _uses_nothing_from(later, earlier):
                return earlier, later
            movable = _movable_operands(later, earlier)
            if movable:
                for op in movable:
                    op.move_before(earlier)
                return earlier, later
    return None


def _fuse(module: ir.Operation, earlier: ir.Operation, later: ir.Operation) -> str | None:
    OP_TAG.set(earlier, _EARLIER)
    OP_TAG.set(later, _LATER)
    match = "  {} = transform.structured.match attributes{{{}}} in %root : ({}) -> {}\n"
    script = (
        match.format("%earlier", OP_TAG.entry(_EARLIER), ANY, ANY)
        + match.format("%later", OP_TAG.entry(_LATER), ANY, ANY)
        + f"  %fused = transform.loop.fuse_sibling %later into %earlier : ({ANY}, {ANY}) -> {ANY}\n"
    )
    failure = apply_script(module, script)
    for op in ops_matching(module, lambda o: OP_TAG.get(o) in (_EARLIER, _LATER)):
        OP_TAG.remove(op)
    return failure


def _next_pair(op: ir.Operation) -> tuple[ir.Operation, ir.Operation] | None:
    blocks: list[ir.Block] = []
    for loop in ops_matching(op, lambda o: o.name == "scf.for"):
        if not any(b == loop.block for b in blocks):
            blocks.append(loop.block)
    for block in blocks:
        loops = [o.operation for o in block.operations if o.operation.name == "scf.for"]
        pair = _pair([loop for loop in loops if _on_tensors(loop)])
        if pair is not None:
            return pair
    return None


@dataclass(frozen=True)
class FuseRowSweeps(Pass):
    flag = "lowerline-fuse-row-sweeps"
    summary = "Merge independent vector loops over the same range that read the same row"
    anchor = "builtin.module"

    def run(self, op: ir.Operation) -> None:
        # Outer loops first: their fused body holds the inner ones side by side.
        while (pair := _next_pair(op)) is not None:
            if _fuse(op, *pair):
                return
