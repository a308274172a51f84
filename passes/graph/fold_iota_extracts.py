"""``lowerline-fold-iota-extracts``: a ``tensor.extract`` from an iota (a
linalg.generic that writes each element's own index along one dim) becomes
that index (clamped into the iota, cast to its element type); the iota goes
when nothing else reads it.

Why: lowerline checks each index of an embedding, ``index_select`` or row
gather once (``frontend/gathers.py``) as torch-mlir's ``gather`` of
``arange(n)`` at the index: the check's asserts sit in the gather's body, and
the index is read back through the table so that the rows are read only after
the check. Lowered as it stands, every call writes the whole ``n``-element
table (20000 x i64, 160 KB, for the suite's text models; a 50k vocabulary
is 400 KB) to read 1600 entries of it. Reading the table at ``i`` is ``i``
itself, so no table is needed.

The index is kept in bounds as the extract kept it: ``min(i, n - 1)``
(unsigned, so a negative index is large), put where the extract was, after
the asserts. A bare cast back of the index would not do: canonicalize folds
the casts away, the gather's result becomes its input, defined before the
asserts, and ``lowerline-report-failed-asserts`` (which yields zero for what
the guarded rest of the block defines) no longer keeps a bad index from the
rows read at it. The ``min`` is not folded, and is in bounds on its own.

Upstream folds ``tensor.extract`` of a ``tensor.generate`` into its body
(``ExtractFromTensorGenerate``) and of constants, but has no fold for a
linalg.generic, which is how torch-mlir writes ``arange``.

Matched: a generic with no inputs, all loops parallel, one result through an
identity map, whose body yields ``linalg.index d``, directly or through an
``arith.index_cast``/``index_castui`` to an integer type; or yields a value
from outside the body (``arange(1)``: canonicalize folds the index of a
dim of size 1 to a constant), which is then the read. An ``arange`` with
a start or step other than 0 and 1 has more arithmetic in its body and is
left alone, as are non-integer element types.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, tensor

from lowerline.pipeline.pass_api import Pass, ops_matching

_CASTS = ("arith.index_cast", "arith.index_castui")


def _is_identity(map_attr: ir.Attribute) -> bool:
    value = ir.AffineMapAttr(map_attr).value
    return value.is_permutation and all(
        ir.AffineDimExpr(expr).position == i for i, expr in enumerate(value.results)
    )


def _yielded_index_dim(block: ir.Block) -> int | None:
    """The dim ``d`` when the body is ``linalg.index d`` (plus a cast)
    yielded, else None."""
    ops = [op.operation for op in block.operations]
    if not ops or ops[0].name != "linalg.index" or ops[-1].name != "linalg.yield":
        return None
    value = ops[0].results[0]
    for cast in ops[1:-1]:
        if cast.name not in _CASTS or cast.operands[0] != value:
            return None
        value = cast.results[0]
    if len(ops) > 3 or ops[-1].operands[0] != value:
        return None
    return ir.IntegerAttr(ops[0].attributes["dim"]).value


def _is_table(generic: ir.Operation) -> bool:
    """Whether ``generic`` writes one integer tensor from its indices alone:
    no inputs, every loop parallel, an identity map."""
    if len(generic.results) != 1 or len(generic.operands) != 1:  # outs only
        return False
    if not isinstance(ir.RankedTensorType(generic.results[0].type).element_type, ir.IntegerType):
        return False
    iterators = [str(t) for t in ir.ArrayAttr(generic.attributes["iterator_types"])]
    if any("parallel" not in t for t in iterators):
        return False
    return _is_identity(ir.ArrayAttr(generic.attributes["indexing_maps"])[0])


def _yielded_outside_value(block: ir.Block) -> ir.Value | None:
    """The value a body that is only its yield yields from outside it (an
    iota along a dim of size 1, which canonicalize made a constant), else
    None."""
    ops = [op.operation for op in block.operations]
    if len(ops) != 1 or isinstance(ops[0].operands[0].owner, ir.Block):
        return None
    value = ops[0].operands[0]
    return None if value.owner.operation.parent == ops[0].parent else value


def _read(generic: ir.Operation, at: list[ir.Value], result: ir.Type) -> ir.Value | None:
    """What ``generic`` holds at ``at``, built at the insertion point, when
    it is an iota or a splat of a value from outside; else None."""
    if not _is_table(generic):
        return None
    block = generic.regions[0].blocks[0]
    dim = _yielded_index_dim(block)
    if dim is not None:
        return arith.index_cast(result, _within(at[dim], generic.operands[0], dim))
    return _yielded_outside_value(block)


def _within(index: ir.Value, iota: ir.Value, dim: int) -> ir.Value:
    """``min(index, size - 1)`` unsigned, ``size`` the iota's extent along
    ``dim``: the index for every read the extract made in bounds, and never
    out of bounds (a negative index is a large unsigned one)."""
    extent = ir.RankedTensorType(iota.type).get_dim_size(dim)
    if ir.ShapedType.is_dynamic_size(extent):
        last = arith.subi(tensor.dim(iota, arith.constant(ir.IndexType.get(), dim)), _one())
    else:
        last = arith.constant(ir.IndexType.get(), extent - 1)
    return arith.minui(index, last)


def _one() -> ir.Value:
    return arith.constant(ir.IndexType.get(), 1)


def fold_iota_extract(extract: ir.Operation) -> bool:
    """Replace ``extract`` by what the iota holds there; whether it read an
    iota."""
    owner = extract.operands[0].owner
    if isinstance(owner, ir.Block) or owner.operation.name != "linalg.generic":
        return False  # a block argument, or another op
    with ir.InsertionPoint(extract), extract.location:
        value = _read(owner.operation, list(extract.operands[1:]), extract.results[0].type)
    if value is None:
        return False
    extract.results[0].replace_all_uses_with(value)
    extract.erase()
    return True


@dataclass(frozen=True)
class FoldIotaExtracts(Pass):
    flag = "lowerline-fold-iota-extracts"
    summary = "Read an iota (arange) at an index as the index itself, without writing the iota"
    anchor = "func.func"

    def run(self, op: ir.Operation) -> None:
        for extract in ops_matching(op, lambda o: o.name == "tensor.extract"):
            fold_iota_extract(extract)
