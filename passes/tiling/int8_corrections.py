"""The ``vpdpbusd`` correction of an int8 register tile subtracted once, from
the tile's starting accumulators, instead of once per step of its k loop.

``vpdpbusd`` reads A's bytes as u8, so lowerline.passes.tiling.int8_dot
gives it ``a ^ 0x80`` (``a + 128``) and every step of k adds
``128 * (B[k, n] + .. + B[k + 3, n])`` too much to each row of the tile.
Subtracting that per step costs one ``vpsubd`` per row and register of
columns, as many as the ``vpdpbusd`` themselves, plus a load of the sums.
The excess is the same for every row and does not depend on A, so over the
whole k loop it is ``128 * sum_k B[k, n]`` over the loop's k range: for a
constant B (packed by lowerline.passes.tiling.vnni_weights) a constant per
column, which is subtracted from the accumulators the loop starts from
(the fused fill's zeros, or a fused bias), once per tile::

    %init = vector.transfer_write %zeros, %tile           // the fill
    scf.for %k ... iter_args(%acc_tile = %init) {
      ... vpdpbusd(acc, a ^ 0x80, B[k]) - sums[k / 4] ...
    }
        ==>
    %t = vector.transfer_read %totals[%n0]               // 128 * sum_k B[k, n]
    %init = vector.transfer_write %zeros - broadcast(%t), %tile
    scf.for %k ... iter_args(%acc_tile = %init) {
      ... vpdpbusd(acc, a ^ 0x80, B[k]) ...
    }

Where B is not a constant (attention's batch matmuls, a matmul by an
argument), the excess is not known when compiling, but it is still the
same for every row: the loop carries it (one ``vpdpbusd`` of 0x80 bytes
with B per register of columns and step, which was there before too) and
the rows subtract it once after the loop, instead of one ``vpsubd`` per row
and register of columns at every step (``carried_corrections``)::

    %r:2 = scf.for %k ... iter_args(%c = 0, %acc_tile = %init) {
      ... vpdpbusd(acc, a ^ 0x80, B[k]) ...
      scf.yield vpdpbusd(%c, 0x80.., B[k]), ...
    }
    %tile = vector.transfer_write (read(%r#1) - broadcast(%r#0)), %r#1

Both apply where the loop is the accumulator's only writer: the contraction
reads its accumulator from the loop's iter_arg and its result is what the
loop yields, the loop's bounds are constants, and the iter_arg starts from
one ``vector.transfer_write`` of all of a static tile (masked to it, for a
partial tile), used by nothing else. Other tiles (a dynamic tile, an
accumulator read from memory) keep the per-step subtraction. Upstream has nothing of this kind:
the correction exists only because lowerline emits ``vpdpbusd`` itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, scf, vector

from lowerline.passes.support.ir_constants import int_constant


@dataclass(frozen=True)
class AccumulatorLoop:
    """The ``scf.for`` over k that carries one contraction's accumulator:
    ``iv`` its induction variable, ``values`` the ones ``iv`` takes, and
    ``init`` the ``vector.transfer_write`` its accumulator starts from."""

    loop: ir.Operation
    iv: ir.Value
    values: range
    init: ir.Operation
    # Which of the loop's iter_args (and results) is the accumulator.
    position: int = 0

    def _inside(self, value: ir.Value) -> bool:
        # The op whose region holds the definition, then its ancestors.
        op = value.owner.owner if isinstance(value, ir.BlockArgument) else value.owner.parent
        while op is not None:
            if op == self.loop:
                return True
            op = op.parent if op.name != "builtin.module" else None
        return False

    def available(self, value: ir.Value) -> bool:
        """``value`` can be used before ``init`` (which sits right before the
        loop): defined outside the loop, or by a loop-invariant
        ``affine.apply`` or constant inside it, which is moved before ``init``."""
        if not self._inside(value):
            return True
        if not isinstance(value, ir.OpResult):
            return False
        op = value.owner
        if op.name not in ("affine.apply", "arith.constant") or op.parent != self.loop:
            return False
        if not all(self.available(operand) for operand in op.operands):
            return False
        op.move_before(self.init)
        return True


def _single_user(value: ir.Value) -> ir.Operation | None:
    uses = list(value.uses)
    return uses[0].owner if len(uses) == 1 else None


def _unwrap_mask(op: ir.Operation) -> ir.Operation:
    """The op inside a ``vector.mask`` (or ``op`` itself)."""
    return op.regions[0].blocks[0].operations[0] if op.name == "vector.mask" else op


def _at_zero(view: ir.OpView) -> bool:
    return all(int_constant(i) == 0 for i in view.indices)


def _whole_slice(value: ir.Value, arg: ir.Value) -> bool:
    """``value`` is ``arg`` or a ``tensor.extract_slice`` of all of it."""
    if value == arg:
        return True
    if not isinstance(value, ir.OpResult) or value.owner.name != "tensor.extract_slice":
        return False
    view = value.owner.opview
    whole = value.type == arg.type and all(o == 0 for o in view.static_offsets)
    return view.source == arg and whole


def _accumulator_read(contract: ir.Operation) -> ir.OpView | None:
    """The ``vector.transfer_read`` at zero giving the contraction's accumulator."""
    acc = contract.operands[2]
    if not isinstance(acc, ir.OpResult):
        return None
    read = _unwrap_mask(acc.owner)
    if read.name != "vector.transfer_read" or not _at_zero(read.opview):
        return None
    return read.opview


def _yielded_write(replaced: ir.Operation, tile: ir.Value) -> ir.Value | None:
    """The tensor that writing ``replaced``'s result at zero of ``tile``
    gives (the result of the write, or of the ``vector.mask`` around it)."""
    user = _single_user(replaced.results[0])
    if user is None or user.name != "vector.transfer_write":
        return None
    if user.opview.base != tile or not _at_zero(user.opview):
        return None
    written = user.parent if user.parent.name == "vector.mask" else user
    return written.results[0]


def _covering_mask(mask: ir.Value, shape: list[int]) -> bool:
    """``mask`` is a ``vector.create_mask`` of constant sizes that enables
    every lane inside ``shape``."""
    if not isinstance(mask, ir.OpResult) or mask.owner.name != "vector.create_mask":
        return False
    sizes = [int_constant(size) for size in mask.owner.operands]
    return all(s is not None and s >= d for s, d in zip(sizes, shape, strict=True))


def _whole_write(value: ir.Value) -> ir.Operation | None:
    """The op giving ``value`` (used only once) if it writes a vector at
    zero into every element of a static tensor: a ``vector.transfer_write``
    of its exact shape, or one of a larger shape inside a ``vector.mask``
    enabling all the tensor's lanes (a partial tile's fill)."""
    if not isinstance(value, ir.OpResult) or len(list(value.uses)) != 1:
        return None
    outer = value.owner
    write = _unwrap_mask(outer)
    if write.name != "vector.transfer_write":
        return None
    view = write.opview
    tensor = ir.RankedTensorType(value.type)
    vtype = ir.VectorType(view.valueToStore.type)
    rank = tensor.rank
    identity = view.permutation_map.value == ir.AffineMap.get_minor_identity(rank, rank)
    if view.mask is not None or not _at_zero(view) or not identity or vtype.rank != rank:
        return None
    if not tensor.has_static_shape:
        return None
    shape = list(tensor.shape)
    if outer.name == "vector.mask":
        covered = _covering_mask(outer.operands[0], shape)
    else:
        covered = list(vtype.shape) == shape
    return outer if covered else None


def accumulator_loop(contract: ir.Operation, replaced: ir.Operation) -> AccumulatorLoop | None:
    """The k loop of ``contract`` (``replaced``: the contract or the
    ``vector.mask`` around it) if it is the only writer of the accumulator,
    with constant bounds and a whole unmasked write to start from; else None."""
    loop = replaced.parent
    if loop.name != "scf.for":
        return None
    lower, upper, step = (int_constant(loop.operands[i]) for i in range(3))
    read = _accumulator_read(contract)
    if lower is None or upper is None or step is None or read is None:
        return None
    body = loop.regions[0].blocks[0]
    args = list(body.arguments)[1:]
    arg = next((a for a in args if _whole_slice(read.base, a)), None)
    # Read and written (or sliced and inserted into) by this contraction only.
    if arg is None or len(list(arg.uses)) != 2:
        return None
    written = _yielded_write(replaced, read.base)
    position = args.index(arg)
    yielded = body.operations[len(body.operations) - 1].operands[position]
    if written is None or not (yielded == written or _inserted_whole(yielded, written, arg)):
        return None
    init = _whole_write(loop.operands[3 + position])
    if init is None:
        return None
    # Next to the loop, so that what is computed for it goes between the two.
    init.move_before(loop)
    return AccumulatorLoop(loop, body.arguments[0], range(lower, upper, step), init, position)


def _inserted_whole(value: ir.Value, tile: ir.Value, into: ir.Value) -> bool:
    """``value`` is ``tile`` inserted as all of ``into``."""
    if not isinstance(value, ir.OpResult) or value.owner.name != "tensor.insert_slice":
        return False
    view = value.owner.opview
    return (
        view.source == tile
        and view.dest == into
        and tile.type == into.type
        and all(o == 0 for o in view.static_offsets)
    )


def subtract_from_start(found: AccumulatorLoop, totals: ir.Value) -> None:
    """Subtract ``totals`` (a ``vector<n x i32>``, n at least the tile's
    width, computed before ``found.init``) from every row of the
    accumulators ``found``'s loop starts from."""
    write = _unwrap_mask(found.init)
    start = write.operands[0]
    vtype = ir.VectorType(start.type)
    width = vtype.shape[-1]
    with ir.InsertionPoint(found.init), write.location:
        row = totals
        if ir.VectorType(totals.type).shape[0] != width:
            row = vector.shuffle(totals, totals, list(range(width)))
        write.operands[0] = arith.subi(start, vector.broadcast(vtype, row))


def _with_more_iter_args(loop: ir.Operation, inits: list[ir.Value]) -> ir.Operation:
    """``loop`` rebuilt with ``inits`` as extra iter_args after its own (its
    body moved over, yielding the extra ones unchanged until the caller
    sets what they are); ``loop``'s results go to the new one's first."""
    own = list(loop.operands)[3:]
    with ir.InsertionPoint(loop), loop.location:
        new = scf.ForOp(*list(loop.operands)[:3], [*own, *inits])
    for attribute in loop.attributes:  # unsignedCmp, and any discardable ones
        new.operation.attributes[attribute.name] = attribute.attr
    old_body, body = loop.regions[0].blocks[0], new.regions[0].blocks[0]
    old_yield = old_body.operations[len(old_body.operations) - 1]
    with ir.InsertionPoint(body), loop.location:
        yielded = scf.YieldOp([*old_yield.operands, *list(body.arguments)[1 + len(own) :]])
    for old_arg, arg in zip(old_body.arguments, body.arguments, strict=False):
        old_arg.replace_all_uses_with(arg)
    for op in list(old_body.operations)[:-1]:
        op.move_before(yielded)
    for old_result, result in zip(loop.results, new.results, strict=False):
        old_result.replace_all_uses_with(result)
    loop.erase()
    return new.operation


def carried_corrections(
    found: AccumulatorLoop, zero: ir.Value, count: int
) -> tuple[AccumulatorLoop, list[ir.Value]]:
    """Where B is not a constant (attention's batch matmuls), the loop's
    excess ``128 * sum_k B[k, n]`` is not known when compiling, but it is
    still the same for every row: instead of one ``vpsubd`` per row and
    register of columns at every step, the steps add it into ``count``
    vectors carried by the loop (from ``zero``), subtracted from the tile
    once after it (``subtract_after``). Returns the rebuilt loop and the
    carried vectors inside it; ``carry`` sets what each step yields."""
    loop = _with_more_iter_args(found.loop, [zero] * count)
    body = loop.regions[0].blocks[0]
    carried = list(body.arguments)[-count:]
    rebuilt = AccumulatorLoop(loop, body.arguments[0], found.values, found.init, found.position)
    return rebuilt, carried


def carry(found: AccumulatorLoop, values: list[ir.Value]) -> None:
    """Yield ``values`` for the loop's last ``len(values)`` iter_args."""
    body = found.loop.regions[0].blocks[0]
    yielded = body.operations[len(body.operations) - 1]
    first = len(list(yielded.operands)) - len(values)
    for index, value in enumerate(values):
        yielded.operands[first + index] = value


def subtract_after(found: AccumulatorLoop, tile_type: ir.Type, totals: ir.Value) -> None:
    """Subtract ``totals`` (``vector<n x i32>``, n the tile's width) from
    every row of the accumulator tile ``found``'s loop gives (read as
    ``tile_type``, the contraction's accumulator vector; lanes past a
    partial tile's edge are not written back)."""
    loop = found.loop
    tile = loop.results[found.position]
    vtype = ir.VectorType(tile_type)
    shape = ir.RankedTensorType(tile.type).shape
    in_bounds = [v <= t for v, t in zip(vtype.shape, shape, strict=True)]
    identity = ir.AffineMap.get_minor_identity(len(shape), len(shape))
    uses = [(use.owner, use.operand_number) for use in tile.uses]
    # After the loop, and after ``totals`` where it is computed there.
    last = totals.owner if isinstance(totals, ir.OpResult) else loop
    with ir.InsertionPoint.after(last), loop.location:
        zero = arith.constant(vtype.element_type, 0)
        index = arith.constant(ir.IndexType.get(), 0)
        indices = [index] * len(shape)
        read = vector.transfer_read(vtype, tile, indices, identity, zero, in_bounds=in_bounds)
        corrected = arith.subi(read, vector.broadcast(vtype, totals))
        written = vector.transfer_write(
            tile.type, corrected, tile, indices, identity, in_bounds=in_bounds
        )
    for owner, number in uses:
        owner.operands[number] = written
