"""``lowerline-fold-extf-into-contractions``: a matmul reads its bf16/f16
operands directly and accumulates in f32.

Why: torch-mlir lowers a bf16 ``aten.mm``/``linear``/``bmm`` to an f32
contraction over f32 copies of its operands (one ``arith.extf`` generic per
operand), then truncates the result. Left so, every call widens the whole
weight matrix into a temporary twice its size, and the kernel streams f32
weights: none of bf16's halved memory traffic, and nothing for
``vdpbf16ps`` (lowerline-vectorize, on a target with AVX512-BF16) to take.
Linalg's named contractions accept narrower inputs than their output (their
body extends them), so the copies can go::

    %a32 = linalg.generic ins(%a : tensor<64x256xbf16>) outs(...) { arith.extf }
    %w32 = linalg.generic ins(%w : tensor<256x512xbf16>) outs(...) { arith.extf }
    %c = linalg.matmul ins(%a32, %w32 : ...f32...) outs(%acc : tensor<64x512xf32>)
  ->
    %c = linalg.matmul ins(%a, %w : ...bf16...) outs(%acc : tensor<64x512xf32>)

The products are the same (bf16 and f16 values are exact in f32), and the
sums still run in f32. Only a generic that does nothing but extend, element
for element, is folded; both operands must come from the same narrow type
(``linalg.matmul`` and ``linalg.batch_matmul``, their maps kept).
Upstream folds extensions into ``vector.contract`` only
(``apply_patterns.vector.fold_arith_extension``), after vectorization:
by then the widened copies are in memory.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import linalg

from lowerline.passes.support.linalg_info import all_parallel, indexing_maps
from lowerline.pipeline.pass_api import Pass, ops_matching

_BUILDERS = {"linalg.matmul": linalg.matmul, "linalg.batch_matmul": linalg.batch_matmul}
_NARROW = ("bf16", "f16")


def _element_type(value: ir.Value) -> str:
    return str(ir.ShapedType(value.type).element_type)


def _extension_source(value: ir.Value) -> ir.Value | None:
    """The narrow tensor ``value`` is an elementwise ``arith.extf`` of, or None."""
    if not isinstance(value, ir.OpResult) or value.owner.name != "linalg.generic":
        return None
    generic = value.owner
    if len(generic.operands) != 2 or len(generic.results) != 1 or not all_parallel(generic):
        return None
    rank = ir.ShapedType(value.type).rank
    if any(m != ir.AffineMap.get_identity(rank) for m in indexing_maps(generic)):
        return None
    body = [op.operation for op in generic.regions[0].blocks[0].operations]
    if len(body) != 2 or body[0].name != "arith.extf":
        return None
    block = generic.regions[0].blocks[0]
    extend, terminator = body
    if extend.operands[0] != block.arguments[0] or terminator.operands[0] != extend.results[0]:
        return None
    source = generic.operands[0]
    return source if _element_type(source) in _NARROW else None


def _plain_named(op: ir.Operation) -> bool:
    """A named contraction without a cast attribute (its maps are kept)."""
    return op.name in _BUILDERS and "cast" not in op.attributes


def fold(op: ir.Operation) -> bool:
    """Rebuild contraction ``op`` on its operands' narrow sources; whether it did."""
    if not _plain_named(op) or _element_type(op.results[0]) != "f32":
        return False
    sources = [_extension_source(op.operands[i]) for i in (0, 1)]
    if sources[0] is None or sources[1] is None:
        return False
    if _element_type(sources[0]) != _element_type(sources[1]):
        return False
    with ir.InsertionPoint(op), op.location:
        rebuilt = _BUILDERS[op.name](sources[0], sources[1], outs=[op.operands[2]])
    # The body extends whatever the maps read: a transposed operand's maps carry over.
    rebuilt.owner.attributes["indexing_maps"] = op.attributes["indexing_maps"]
    op.results[0].replace_all_uses_with(rebuilt)
    op.erase()
    return True


@dataclass(frozen=True)
class FoldExtfIntoContractions(Pass):
    flag = "lowerline-fold-extf-into-contractions"
    summary = "Matmuls read bf16/f16 operands directly (f32 accumulation), not f32 copies"
    anchor = "func.func"

    def run(self, op: ir.Operation) -> None:
        # The extension generics left unread go at the stage's canonicalize.
        for contraction in ops_matching(op, lambda c: c.name in _BUILDERS):
            fold(contraction)
