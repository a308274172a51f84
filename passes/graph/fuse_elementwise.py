"""``lowerline-fuse-elementwise``: merge chains of elementwise linalg.generics.

Why not upstream's ``linalg-fuse-elementwise-ops``: besides fusing
elementwise ops it propagates ``tensor.expand_shape`` / ``collapse_shape``
through every linalg op it meets, turning named contractions
(``linalg.matmul``, ``linalg.batch_matmul``) into generics of higher rank
with the neighbouring transposes and broadcasts folded into their indexing
maps, and the pass has no option to stop that. Those generics no longer tile
and vectorize as matmuls: the encoder layer of the benchmark ran 57x slower
than eager with it, 1.4x without it (one thread, measured here). This pass
does only the elementwise part, with the same rule as upstream's default:

- the producer is a ``linalg.generic`` with only parallel loops, one result
  written through an identity map, and the consumer is its only user (so
  nothing is computed twice), or its body is one add, subtract, multiply
  or negation (a row's deviations from its mean, read by the variance and by
  the normalization): recomputing it is cheaper than a full-size temporary;
- the consumer is a ``linalg.generic`` that reads the producer's result
  through a permutation map (of all its loops). The consumer may reduce: a
  row reduction of ``(x - mean)^2`` then reads ``x`` itself instead of a
  full-size temporary of squared deviations (upstream's default does this
  too).

The fused op reads the producer's inputs directly (their maps composed with
the consumer's), and its body is the producer's body followed by the
consumer's. Contractions (their operands are read through projections)
and producers with other users are left alone; tile-and-fuse fuses
elementwise consumers into contractions later.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import linalg

from lowerline.passes.support.linalg_info import all_parallel as _all_parallel
from lowerline.passes.support.linalg_info import clone_body
from lowerline.passes.support.linalg_info import indexing_maps as _maps
from lowerline.pipeline.pass_api import Pass, ops_matching


def _n_inputs(op: ir.Operation) -> int:
    return len(op.operands) - len(op.results)


def fusable_producer(
    consumer: ir.Operation, index: int, repeat: bool = False
) -> ir.Operation | None:
    """The producer of ``consumer``'s input ``index`` if it can be fused
    into ``consumer``; ``repeat``: also one with other users, whatever its
    body (it is then computed by each of them)."""
    value = consumer.operands[index]
    if not isinstance(value, ir.OpResult) or value.owner.name != "linalg.generic":
        return None
    producer = value.owner
    if len(producer.results) != 1 or not _all_parallel(producer):
        return None
    shared = len(list(producer.results[0].uses)) != 1
    if shared and not repeat and not _cheap_to_repeat(producer):
        return None
    maps = _maps(producer)
    rank = maps[-1].n_dims
    if maps[-1] != ir.AffineMap.get_identity(rank):
        return None
    if not _maps(consumer)[index].is_permutation:
        return None
    # The producer must not read its own init (a real accumulator).
    block = producer.regions[0].blocks[0]
    if len(list(block.arguments[-1].uses)) != 0:
        return None
    # linalg.index in the producer counts the producer's loops: only an
    # identity read keeps them the consumer's. Not into a reduction: its
    # loops are split into chunks later (reduction_chunks), and upstream's
    # reduction tiling does not offset linalg.index in the chunks (argmax
    # got indices relative to its chunk).
    identity = ir.AffineMap.get_identity(_maps(consumer)[index].n_dims)
    indexed = any(op.operation.name == "linalg.index" for op in block.operations)
    if indexed and (_maps(consumer)[index] != identity or not _all_parallel(consumer)):
        return None
    if not _loops_stay_bounded(producer, consumer, index):
        return None
    return producer


def _loops_stay_bounded(producer: ir.Operation, consumer: ir.Operation, index: int) -> bool:
    """Whether every loop of the fused op is still the plain dim of some
    operand (the verifier's invertible-maps rule). A reduction's output
    skips its reduction loops; if only the fused operand indexed one of them
    (a pooling window read from a broadcast), fusing would drop its bound."""
    c_maps = _maps(consumer)
    maps = [m for i, m in enumerate(c_maps) if i != index]
    maps += [_compose(m, c_maps[index]) for m in _maps(producer)[: _n_inputs(producer)]]
    covered = {e.position for m in maps for e in m.results if isinstance(e, ir.AffineDimExpr)}
    return covered == set(range(c_maps[index].n_dims))


# A producer this small (one subtraction: a row's deviations from its mean)
# is recomputed in each consumer rather than stored as a full-size temporary
# that both read back: recomputing costs one instruction per element, storing
# a write and a read of the whole tensor.
_CHEAP_BODY_OPS = ("arith.addf", "arith.subf", "arith.mulf", "arith.negf")


def _cheap_to_repeat(producer: ir.Operation) -> bool:
    body = [op.operation.name for op in producer.regions[0].blocks[0].operations]
    return len(body) <= 2 and all(name in (*_CHEAP_BODY_OPS, "linalg.yield") for name in body)


def _compose(inner: ir.AffineMap, outer: ir.AffineMap) -> ir.AffineMap:
    """inner o outer: the map giving inner's results in terms of outer's dims."""
    return ir.AffineMap.get(outer.n_dims, 0, [e.compose(outer) for e in inner.results])


def _fused_inputs(producer: ir.Operation, consumer: ir.Operation, index: int) -> list:
    """(value, map, block argument to map from) of the fused op's inputs, in
    upstream's order: the consumer's inputs with the producer's inputs in place
    of the fused operand; an input read twice through the same map once."""
    c_maps, p_maps = _maps(consumer), _maps(producer)
    c_args = list(consumer.regions[0].blocks[0].arguments)
    p_args = list(producer.regions[0].blocks[0].arguments)
    c_inputs = list(consumer.operands)[: _n_inputs(consumer)]
    p_inputs = list(producer.operands)[: _n_inputs(producer)]
    entries: list[tuple[ir.Value, ir.AffineMap, list[ir.BlockArgument]]] = []

    def add(value: ir.Value, amap: ir.AffineMap, arg: ir.BlockArgument) -> None:
        for entry in entries:
            if entry[0] == value and entry[1] == amap:
                entry[2].append(arg)
                return
        entries.append((value, amap, [arg]))

    for i, value in enumerate(c_inputs):
        if i == index:
            for j, p_value in enumerate(p_inputs):
                add(p_value, _compose(p_maps[j], c_maps[index]), p_args[j])
        else:
            add(value, c_maps[i], c_args[i])
    return entries


def fuse(producer: ir.Operation, consumer: ir.Operation, index: int) -> ir.Operation:
    n_in = _n_inputs(consumer)
    entries = _fused_inputs(producer, consumer, index)
    c_maps = _maps(consumer)
    outputs = list(consumer.operands)[n_in:]
    maps = [amap for _, amap, _ in entries] + c_maps[n_in:]
    c_block = consumer.regions[0].blocks[0]
    p_block = producer.regions[0].blocks[0]
    with ir.InsertionPoint(consumer), consumer.location:
        fused = linalg.GenericOp(
            [r.type for r in consumer.results], [value for value, _, _ in entries], outputs,
            ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps]),
            consumer.attributes["iterator_types"],
        )  # fmt: skip
        out_args = list(c_block.arguments)[n_in:]
        arg_types = [olds[0].type for _, _, olds in entries] + [a.type for a in out_args]
        block = fused.regions[0].blocks.append(*arg_types)
        mapping = {}
        for (_, _, olds), new in zip(entries, block.arguments, strict=False):
            for old in olds:
                mapping[old] = new
        for old, new in zip(out_args, list(block.arguments)[len(entries) :], strict=True):
            mapping[old] = new
        with ir.InsertionPoint(block):
            produced = clone_body(p_block, mapping)
            mapping[c_block.arguments[index]] = produced[0]
            linalg.YieldOp(clone_body(c_block, mapping))
    for old, new in zip(consumer.results, fused.results, strict=True):
        old.replace_all_uses_with(new)
    for name in list(consumer.attributes):
        key = name if isinstance(name, str) else name.name
        if key not in ("indexing_maps", "iterator_types", "operandSegmentSizes"):
            fused.attributes[key] = consumer.attributes[key]
    consumer.erase()
    if not list(producer.results[0].uses):  # a cheap producer may feed others
        producer.erase()
    return fused.operation


def _read_through_unit_expansions(op: ir.Operation) -> None:
    """Read ``expand_shape(x)`` inputs that only add unit dims (indexed by the
    constant 0) from ``x`` itself: ``(d1, 0, 0)`` on ``tensor<64x1x1xf32>``
    becomes ``(d1)`` on ``tensor<64xf32>``. torch-mlir broadcasts per-channel
    parameters that way, and the vectorizer cannot mask maps with constants."""
    maps = _maps(op)
    changed = False
    for index in range(_n_inputs(op)):
        value = op.operands[index]
        if not isinstance(value, ir.OpResult) or value.owner.name != "tensor.expand_shape":
            continue
        source = value.owner.operands[0]
        expanded = list(ir.RankedTensorType(value.type).shape)
        kept = [d for d, size in enumerate(expanded) if size != 1]
        if list(ir.RankedTensorType(source.type).shape) != [expanded[d] for d in kept]:
            continue
        results = list(maps[index].results)
        dropped = [results[d] for d in range(len(expanded)) if d not in kept]
        if not all(isinstance(e, ir.AffineConstantExpr) and e.value == 0 for e in dropped):
            continue
        maps[index] = ir.AffineMap.get(maps[index].n_dims, 0, [results[d] for d in kept])
        op.operands[index] = source
        changed = True
    if changed:
        op.attributes["indexing_maps"] = ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps])


@dataclass(frozen=True)
class FuseElementwise(Pass):
    flag = "lowerline-fuse-elementwise"
    summary = "Fuse elementwise linalg.generic producers into their elementwise and reduction users"
    anchor = "func.func"

    def run(self, op: ir.Operation) -> None:
        for generic in self._generics(op):
            _read_through_unit_expansions(generic)
        changed = True
        while changed:
            changed = False
            for consumer in self._generics(op):
                for index in range(_n_inputs(consumer)):
                    producer = fusable_producer(consumer, index)
                    if producer is not None:
                        fuse(producer, consumer, index)
                        changed = True
                        break
                if changed:
                    break

    def _generics(self, op: ir.Operation) -> list[ir.Operation]:
        return ops_matching(op, lambda c: c.name == "linalg.generic")
