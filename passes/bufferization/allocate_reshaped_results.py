"""``lowerline-allocate-reshaped-results``: allocate a reshaped result in its returned shape.

Why: a function whose result is a reshape of a buffer it computes (group
norm computes (1, groups, channels / groups, length) and returns
(channels, length); a ``squeeze``, ``flatten`` or ``view`` at the end of a
model) returns a ``memref.collapse_shape`` or ``memref.expand_shape`` of a
``memref.alloc``. ``buffer-results-to-out-params{hoist-static-allocs}``
writes into the out-param in place only a result that is itself an
allocation; a view of one it copies whole into the out-param (64x50257
group norm: a 12.9 MB ``memref.copy`` after the kernel, one more read and
write of the whole output). Upstream has no option or pass that moves the
allocation behind the reshape.

A reshape of a contiguous buffer is a bijective view, so the allocation can
as well be made in the returned shape and the computed buffer be its
inverse reshape: the same memory, the same values, and the returned value
is an allocation that the out-param then replaces::

    %a = memref.alloc() : memref<1x2x32x8xf32>    %r = memref.alloc() : memref<64x8xf32>
    linalg.generic ... outs(%a)                   %a = memref.expand_shape %r [[0, 1, 2], [3]]
    %r = memref.collapse_shape %a [[0, 1, 2], [3]]  linalg.generic ... outs(%a)
    return %r                                     return %r

Only chains of ``collapse_shape`` / ``expand_shape`` from a statically
shaped allocation with the identity layout in the function's body (through
``scf.for`` loops that pass the buffer through, as a bufferized loop over
rows does) are moved (their inverse needs no sizes from the IR); a subview or a cast of
an allocation is not a bijection and keeps its copy. Canonicalization folds
the reshape pairs left behind.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import memref

from lowerline.pipeline.pass_api import Pass, ops_matching

_RESHAPES = ("memref.collapse_shape", "memref.expand_shape")


def _contiguous(value: ir.Value) -> bool:
    if not isinstance(value.type, ir.MemRefType):
        return False
    t = ir.MemRefType(value.type)
    identity = t.affine_map == ir.AffineMap.get_identity(t.rank)
    return t.has_static_shape and identity and t.memory_space is None


def _passed_through(value: ir.OpResult) -> ir.Value | None:
    """The init of an ``scf.for`` result whose loop yields its iter_arg
    unchanged (a loop on tensors, bufferized, writes its init buffer in
    place and passes it through); else None."""
    loop = value.owner
    if loop.name != "scf.for":
        return None
    index = value.result_number
    body = loop.regions[0].blocks[0]
    yielded = list(body.operations)[-1].operands[index]
    if yielded != body.arguments[1 + index]:
        return None
    return loop.operands[3 + index]


def _reshape_chain(value: ir.Value, func: ir.Operation) -> list[ir.Operation] | None:
    """The reshapes from an allocation in ``func``'s body to ``value``, the
    allocation first; None when ``value`` is not such a chain."""
    chain: list[ir.Operation] = []
    while isinstance(value, ir.OpResult):
        if value.owner.name in _RESHAPES:
            chain.insert(0, value.owner)
            value = value.owner.operands[0]
        elif (init := _passed_through(value)) is not None:
            value = init
        else:
            break
    if not chain or not isinstance(value, ir.OpResult):
        return None
    alloc = value.owner
    if alloc.name != "memref.alloc" or alloc.parent != func or not _contiguous(value):
        return None
    return [alloc, *chain]


def _inverse(reshape: ir.Operation, value: ir.Value) -> ir.Value:
    """``reshape``'s source as a view of ``value``, a buffer of its result type."""
    source_type = reshape.operands[0].type
    reassociation = reshape.attributes["reassociation"]
    if reshape.name == "memref.collapse_shape":
        shape = ir.MemRefType(source_type).shape
        return memref.expand_shape(source_type, value, reassociation, [], shape)
    return memref.collapse_shape(source_type, value, reassociation)


def _allocate_as_result(chain: list[ir.Operation]) -> ir.Value:
    """A fresh allocation of the chain's result type, placed where the
    allocation was, which becomes the chain's inverse from it."""
    alloc, reshapes = chain[0], chain[1:]
    result_type = reshapes[-1].results[0].type
    with ir.InsertionPoint(alloc), alloc.location:
        fresh = memref.alloc(result_type, [], [])
        if "alignment" in alloc.attributes:
            fresh.owner.attributes["alignment"] = alloc.attributes["alignment"]
        value = fresh
        for reshape in reversed(reshapes):
            value = _inverse(reshape, value)
    alloc.results[0].replace_all_uses_with(value)
    alloc.erase()
    return fresh


@dataclass(frozen=True)
class AllocateReshapedResults(Pass):
    flag = "lowerline-allocate-reshaped-results"
    summary = "Allocate a returned reshape of an allocation in the shape returned"
    anchor = "func.func"

    def run(self, op: ir.Operation) -> None:
        # The function's own returns (not those of functions nested in it).
        returns = ops_matching(op, lambda child: child.name == "func.return" and child.parent == op)
        for ret in returns:
            for index in range(len(ret.operands)):
                self._allocate_result(ret, index, op)

    @staticmethod
    def _allocate_result(ret: ir.Operation, index: int, func: ir.Operation) -> None:
        returned = ret.operands[index]
        chain = _reshape_chain(returned, func)
        if chain is None or not _contiguous(returned):
            return
        fresh = _allocate_as_result(chain)
        # The same reshape returned again is the same buffer
        # (lowerline-copy-repeated-results then copies it).
        for other in range(len(ret.operands)):
            if ret.operands[other] == returned:
                ret.operands[other] = fresh
