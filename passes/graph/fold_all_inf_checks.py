"""``lowerline-fold-all-inf-checks``: a row's "every element is -inf"
check read from the row's maximum, not computed by a reduction of its own.

torch's ``_safe_softmax`` (attention's softmax, ``nn.MultiheadAttention``
and ``scaled_dot_product_attention`` with a mask) gives 0, not NaN, for a
row whose every element is masked to -inf. torch-mlir computes that as a
third reduction over the scores beside the max and the sum::

    %max = generic {reduction} ins(%x) outs(fill(-inf)) { maximumf %in, %out }
    %all = generic {reduction} ins(%x) outs(fill(true)) { andi (cmpf oeq (extf %in), -inf), %out }
    %y = generic ins(%all, %zero, %e, %s) { select %a, %z, %e / %s }

Over a dynamic sequence it is a sweep of its own; in a static row
kernel a compare of every element in f64 (the encoder at 128 keys, one
thread, loaded: its static build 216-218 -> 191-197 us without it; the
dynamic build about the same, ``bench/dynamic-seq17-ab.md``). With IEEE ``maximumf``
the maximum is -inf exactly when every element is (a NaN makes both
false; an empty row makes both true, from their inits), so each reader of
``%all`` reads ``%max`` instead and compares it with -inf in its body::

    %y = generic ins(%max, %zero, %e, %s) { select (cmpf oeq %m, -inf), %z, %e / %s }

and the reduction goes. Only where both reduce the same input through the
same map and loops, the max's init is a fill of -inf and its body one
``arith.maximumf`` (``maxnumf`` ignores NaNs: not the same), the check's
init a fill of true, and every reader of the check a ``linalg.generic``
input.

Upstream has no pass that relates two reductions of one input; CSE only
merges identical ops.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith

from lowerline.passes.support.linalg_info import indexing_maps, iterator_kinds
from lowerline.pipeline.pass_api import Pass, ops_matching


def _body(op: ir.Operation) -> list[ir.Operation]:
    return [o.operation for o in op.regions[0].blocks[0].operations]


def _constant_value(value: ir.Value) -> float | int | None:
    if not isinstance(value, ir.OpResult) or value.owner.name != "arith.constant":
        return None
    attr = value.owner.attributes["value"]
    if isinstance(attr, ir.FloatAttr):
        return ir.FloatAttr(attr).value
    if isinstance(attr, ir.BoolAttr):
        return int(ir.BoolAttr(attr).value)
    if isinstance(attr, ir.IntegerAttr):
        return ir.IntegerAttr(attr).value
    return None


def _filled_with(value: ir.Value) -> float | int | None:
    """The scalar a ``linalg.fill`` wrote into ``value``, or None."""
    if not isinstance(value, ir.OpResult) or value.owner.name != "linalg.fill":
        return None
    return _constant_value(value.owner.operands[0])


def _single_reduction(op: ir.Operation) -> bool:
    """A ``linalg.generic`` with one input, one result, some reduced loop."""
    return (
        op.name == "linalg.generic"
        and len(op.operands) == 2
        and len(op.results) == 1
        and "reduction" in iterator_kinds(op)
    )


def _combines_with_init(op: ir.Operation, name: str) -> ir.Value | None:
    """The body value ``op`` combines with its init by ``name`` (one op on
    the init argument and that value, yielded); None otherwise."""
    body = _body(op)
    out = op.regions[0].blocks[0].arguments[-1]
    step = body[-2] if len(body) >= 2 else None
    if step is None or step.name != name or body[-1].operands[0] != step.results[0]:
        return None
    operands = list(step.operands)
    if operands.count(out) != 1 or len(list(out.uses)) != 1:
        return None
    return operands[1] if operands[0] == out else operands[0]


def _is_row_max(op: ir.Operation) -> bool:
    """``maximumf`` of each input element into an init filled with -inf."""
    if not _single_reduction(op) or _filled_with(op.operands[1]) != -math.inf:
        return False
    other = _combines_with_init(op, "arith.maximumf")
    return (
        other is not None and other == op.regions[0].blocks[0].arguments[0] and len(_body(op)) == 2
    )


def _is_minus_inf(value: ir.Value) -> bool:
    return _constant_value(value) == -math.inf


def _is_all_inf_check(op: ir.Operation) -> bool:
    """``and`` of ``x == -inf`` (x widened or not) into an init filled with true."""
    if not _single_reduction(op) or _filled_with(op.operands[1]) not in (1, -1):
        return False
    compared = _combines_with_init(op, "arith.andi")
    if not isinstance(compared, ir.OpResult) or compared.owner.name != "arith.cmpf":
        return False
    cmp = compared.owner
    if ir.IntegerAttr(cmp.attributes["predicate"]).value != int(arith.CmpFPredicate.OEQ):
        return False
    a, b = cmp.operands
    x = a if _is_minus_inf(b) else b if _is_minus_inf(a) else None
    if isinstance(x, ir.OpResult) and x.owner.name == "arith.extf":
        x = x.owner.operands[0]  # widening keeps -inf and NaN
    return x == op.regions[0].blocks[0].arguments[0]


def _same_row_loops(check: ir.Operation, row_max: ir.Operation) -> bool:
    """Both reduce the same input through the same map over the same loops,
    keeping the same loops (the check may keep extra unit dims)."""
    if check.operands[0] != row_max.operands[0]:
        return False
    if iterator_kinds(check) != iterator_kinds(row_max):
        return False
    c_maps, m_maps = indexing_maps(check), indexing_maps(row_max)
    if c_maps[0] != m_maps[0]:
        return False
    kept = [e for e in m_maps[1].results if isinstance(e, ir.AffineDimExpr)]
    if len(kept) != len(list(m_maps[1].results)):
        return False
    c_dims = [e for e in c_maps[1].results if isinstance(e, ir.AffineDimExpr)]
    return sorted(e.position for e in c_dims) == sorted(e.position for e in kept)


def _readers_see(value: ir.Value, row_max: ir.Operation) -> bool:
    """Every use of ``value`` is an input of a ``linalg.generic`` after
    ``row_max`` in its block (which can then read the row max instead)."""
    uses = list(value.uses)
    return bool(uses) and all(
        u.owner.name == "linalg.generic"
        and u.operand_number < len(u.owner.operands) - len(u.owner.results)
        and u.owner.parent == row_max.parent
        and row_max.is_before_in_block(u.owner)
        for u in uses
    )


def _max_map(check: ir.Operation, row_max: ir.Operation, read: ir.AffineMap) -> ir.AffineMap:
    """The map through which a reader of the check's result (through
    ``read``) reads the row max at the same row."""
    check_out = list(indexing_maps(check)[1].results)
    exprs = []
    for expr in indexing_maps(row_max)[1].results:
        position = next(
            i
            for i, e in enumerate(check_out)
            if isinstance(e, ir.AffineDimExpr) and e.position == ir.AffineDimExpr(expr).position
        )
        exprs.append(list(read.results)[position])
    return ir.AffineMap.get(read.n_dims, 0, exprs)


def _read_max_instead(use: ir.OpOperand, check: ir.Operation, row_max: ir.Operation) -> None:
    """Make one reader of the check read the row max and compare it with -inf."""
    reader, index = use.owner, use.operand_number
    maps = indexing_maps(reader)
    maps[index] = _max_map(check, row_max, maps[index])
    reader.operands[index] = row_max.results[0]
    reader.attributes["indexing_maps"] = ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps])
    block = reader.regions[0].blocks[0]
    arg = block.arguments[index]
    etype = ir.RankedTensorType(row_max.results[0].type).element_type
    arg.set_type(etype)
    first = block.operations[0]
    with ir.InsertionPoint(first), reader.location:
        minus_inf = arith.constant(etype, ir.FloatAttr.get(etype, -math.inf))
        is_inf = arith.cmpf(arith.CmpFPredicate.OEQ, arg, minus_inf)
    for arg_use in list(arg.uses):
        if arg_use.owner != is_inf.owner:
            arg_use.owner.operands[arg_use.operand_number] = is_inf


def _matching_max(check: ir.Operation, row_maxes: list[ir.Operation]) -> ir.Operation | None:
    return next((m for m in row_maxes if _same_row_loops(check, m)), None)


def fold_all_inf_checks(root: ir.Operation) -> int:
    """Fold every all--inf check under ``root`` into its row max; returns the count."""
    row_maxes = ops_matching(root, _is_row_max)
    count = 0
    for check in ops_matching(root, _is_all_inf_check):
        row_max = _matching_max(check, row_maxes)
        if row_max is None or not _readers_see(check.results[0], row_max):
            continue
        for use in list(check.results[0].uses):
            _read_max_instead(use, check, row_max)
        fill = check.operands[1].owner
        check.erase()
        if not list(fill.results[0].uses):
            fill.erase()
        count += 1
    return count


@dataclass(frozen=True)
class FoldAllInfChecks(Pass):
    flag = "lowerline-fold-all-inf-checks"
    summary = (
        "Read a row's all -inf check (torch's _safe_softmax) from the row's maximum "
        "(max == -inf) instead of a reduction of its own"
    )
    anchor = "func.func"

    def run(self, op: ir.Operation) -> None:
        fold_all_inf_checks(op)
