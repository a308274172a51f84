"""``lowerline-split-empty-tensors``: an empty tensor for each unrelated value.

Why: CSE merges equal ``tensor.empty`` ops, so one empty tensor becomes the
destination of ops far apart in a function (the two layer norms of an
encoder layer). One-shot-bufferize then gives them one allocation, live from
the first to the last: memory held for nothing in between. Sharing pays off
only along a chain, where an op reads what the previous one wrote in that
buffer and can write in place (``b = tanh(a)``, both in ``%e``).

So the uses of a function-level ``tensor.empty`` are taken in the order of
their ops in the function's body (a nested use counts as its top-level
ancestor's) and chained: a use stays on the current empty tensor when its op
reads (its nested ops included) a result of the chain, whose ops are the
users so far and the ops computing a value of the empty's type from theirs
(a matmul accumulating into a fill); otherwise it starts a new chain with a
fresh ``tensor.empty``, placed right before its op.

Before / after::

    %e = tensor.empty() : tensor<4xf32>         %e = tensor.empty() : tensor<4xf32>
    %a = linalg.fill ... outs(%e)               %a = linalg.fill ... outs(%e)
    %b = linalg.add ins(%a, ..) outs(%e)        %b = linalg.add ins(%a, ..) outs(%e)
    ...                                         ...
    %c = linalg.generic ins(%x) outs(%e)        %e1 = tensor.empty() : tensor<4xf32>
                                                %c = linalg.generic ins(%x) outs(%e1)
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from lowerline.pipeline.pass_api import Pass


def _top_level(op: ir.Operation, func: ir.Operation) -> ir.Operation:
    """The ancestor of ``op`` directly in the body of ``func``."""
    while op.parent != func:
        op = op.parent.operation
    return op


def _read_ops(op: ir.Operation) -> set[ir.Operation]:
    """The ops whose results ``op`` or the ops nested in it use."""
    owners: set[ir.Operation] = set()

    def visit(child: ir.Operation) -> ir.WalkResult:
        for operand in child.operands:
            if not isinstance(operand.owner, ir.Block):  # an op's result
                owners.add(operand.owner.operation)
        return ir.WalkResult.ADVANCE

    op.walk(visit)
    return owners


@dataclass(frozen=True)
class SplitEmptyTensors(Pass):
    flag = "lowerline-split-empty-tensors"
    summary = "Give a tensor.empty's uses that do not read each other empty tensors of their own"
    anchor = "func.func"

    def run(self, op: ir.Operation) -> None:
        # Decide everything before changing the IR: the bindings' operation
        # objects, and so the sets of them, do not survive changes.
        tops = [child.operation for child in op.regions[0].blocks[0].operations]
        position = {top: index for index, top in enumerate(tops)}
        reads = [{position[o] for o in _read_ops(top) if o in position} for top in tops]
        types = [{str(result.type) for result in top.results} for top in tops]
        plans = []
        for empty in (top for top in tops if top.name == "tensor.empty"):
            uses: dict[int, list[ir.OpOperand]] = {}
            for use in empty.result.uses:
                uses.setdefault(position[_top_level(use.owner.operation, op)], []).append(use)
            if len(uses) > 1:  # used by one top-level op (or none): nothing to split
                plans.append((empty, uses, str(empty.result.type)))
        for empty, uses, empty_type in plans:
            self._split(empty, uses, empty_type, tops, reads, types)

    @staticmethod
    def _split(empty, uses, empty_type, tops, reads, types) -> None:
        # ``chain``: positions of the ops whose results may live in the current
        # empty tensor's buffer: its users and, transitively, the ops computing
        # a value of its type from theirs (a matmul accumulating into a fill).
        chain: set[int] = set()
        current = empty.result
        for index in range(min(uses), max(uses) + 1):
            from_chain = bool(reads[index] & chain)
            if index in uses:
                if chain and not from_chain:
                    # A new value, not computed from the chain's: an empty of its own.
                    with ir.InsertionPoint(tops[index]):
                        current = empty.clone().result
                    chain = set()
                for use in uses[index]:
                    use.owner.operands[use.operand_number] = current
                chain.add(index)
            elif from_chain and empty_type in types[index]:
                chain.add(index)
