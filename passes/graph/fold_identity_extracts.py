"""``lowerline-fold-identity-extracts``: a ``linalg.generic`` that only reads
another tensor of its own shape at its own loop indices is that tensor.

Why: torch-mlir lowers a broadcast of a dynamic dim (attention's head split
and merge over a dynamic sequence length) to a generic without inputs that
reads its source with ``tensor.extract`` at ``select(seq == 1, 0, i)``.
Once that check is folded (``lowerline-bound-dynamic-dims``,
``int-range-optimizations``) the generic copies its source element for
element: four such copies per attention layer, the largest the whole
``batch x heads x seq x seq`` softmax. Here each is replaced by its source::

    %e = tensor.empty(%s) : tensor<2x4x?x16xf32>
    %c = linalg.generic {maps = [identity]} outs(%e) {       ->   uses of %c read %src
      %i0 = linalg.index 0 ... %i3 = linalg.index 3
      %v = tensor.extract %src[%i0, %i1, %i2, %i3]
      linalg.yield %v }

The copy is the source only when their sizes agree: every dynamic size of
both must come from the same value (through ``tensor.empty``, the inits of
destination-style ops and ``tensor.expand_shape``'s output sizes); else the
generic is left alone.

Upstream has no pattern that turns a ``tensor.extract`` at the loop
indices into an input of the generic (only the vectorizer recognizes it, as
a contiguous read), nor one that removes an identity copy written this way.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from lowerline.passes.support.linalg_info import indexing_maps, iterator_kinds
from lowerline.pipeline.pass_api import Pass, ops_matching


def _dynamic_position(shaped: ir.RankedTensorType, dim: int) -> int:
    """Which dynamic size (in order) dim ``dim`` is."""
    return sum(1 for d in range(dim) if shaped.is_dynamic_dim(d))


def size_value(value: ir.Value, dim: int) -> ir.Value | None:
    """The index value that is ``value``'s dynamic size along ``dim``, traced
    through destination-style ops to a ``tensor.empty`` or through
    ``tensor.expand_shape``; None when it is not known here."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return None
    shaped = ir.RankedTensorType(value.type)
    if owner.name == "tensor.empty":
        return owner.operands[_dynamic_position(shaped, dim)]
    if owner.name == "tensor.expand_shape":
        return owner.operands[1 + _dynamic_position(shaped, dim)]
    if owner.name.startswith("linalg.") and len(owner.results) == 1:
        return size_value(owner.operands[len(owner.operands) - 1], dim)
    return None


def _same_sizes(a: ir.Value, b: ir.Value) -> bool:
    if a.type != b.type:
        return False
    shaped = ir.RankedTensorType(a.type)
    for dim in range(shaped.rank):
        if shaped.is_dynamic_dim(dim):
            size = size_value(a, dim)
            if size is None or size != size_value(b, dim):
                return False
    return True


def _extracted_source(generic: ir.Operation) -> ir.Value | None:
    """The tensor the body reads at exactly the loop indices (in order),
    when that read is all the body does; else None."""
    body = [op.operation for op in generic.regions[0].blocks[0].operations]
    terminator = body[-1]
    extract = terminator.operands[0].owner if len(terminator.operands) == 1 else None
    if extract is None or isinstance(extract, ir.Block) or extract.name != "tensor.extract":
        return None
    indices = list(extract.operands)[1:]
    for dim, index in enumerate(indices):
        owner = index.owner
        if isinstance(owner, ir.Block) or owner.name != "linalg.index":
            return None
        if ir.IntegerAttr(owner.attributes["dim"]).value != dim:
            return None
    others = [op for op in body[:-1] if op.name != "linalg.index" and op != extract]
    return None if others else extract.operands[0]


def identity_source(generic: ir.Operation) -> ir.Value | None:
    """The tensor ``generic`` copies unchanged, or None."""
    if len(generic.results) != 1 or len(generic.operands) != 1:
        return None  # inputs, or several results
    if any(kind != "parallel" for kind in iterator_kinds(generic)):
        return None
    out_map = indexing_maps(generic)[0]
    if out_map != ir.AffineMap.get_identity(out_map.n_dims):
        return None
    source = _extracted_source(generic)
    if source is None or not _same_sizes(source, generic.results[0]):
        return None
    return source


@dataclass(frozen=True)
class FoldIdentityExtracts(Pass):
    flag = "lowerline-fold-identity-extracts"
    summary = "Replace generics that copy a tensor of their shape at their loop indices by it"
    anchor = "func.func"

    def run(self, op: ir.Operation) -> None:
        for generic in ops_matching(op, lambda o: o.name == "linalg.generic"):
            source = identity_source(generic)
            if source is not None:
                generic.results[0].replace_all_uses_with(source)
                generic.erase()
