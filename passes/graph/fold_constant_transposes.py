"""``lowerline-fold-constant-transposes``: transpose weights once, when compiling.

Why: torch-mlir lowers ``nn.Linear`` to ``linalg.transpose`` of the weight
followed by ``linalg.matmul``; left alone, every call copies the whole weight
matrix into the layout the matmul reads (1.6 MB per call for a 784x512
layer). Weights are constants, so the transposed copy can be made once.
Upstream has no folder for ``linalg.transpose`` of a constant, and none at
all for ``dense_resource`` constants, whose bytes MLIR's Python bindings
cannot read: this pass gets them from ``lowerline.weights`` and writes the
transposed tensor as a new ``dense_resource`` constant.

Before / after::

    %w = arith.constant dense_resource<w0> : tensor<512x784xf32>
    %t = linalg.transpose ins(%w : ...) outs(%e : tensor<784x512xf32>) permutation = [1, 0]
        ==>
    %t = arith.constant dense_resource<w0.t> : tensor<784x512xf32>

A transpose whose input is not a constant, or a constant whose bytes are not
known (a blob elided from the file), is left alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith

from lowerline import weights
from lowerline.pipeline.pass_api import Pass, ops_matching


def _constant_input(op: ir.Operation) -> tuple[ir.Attribute, ir.RankedTensorType] | None:
    source = op.operands[0]
    if not isinstance(source, ir.OpResult) or source.owner.name != "arith.constant":
        return None
    return source.owner.attributes["value"], ir.RankedTensorType(source.type)


@dataclass(frozen=True)
class FoldConstantTransposes(Pass):
    flag = "lowerline-fold-constant-transposes"
    summary = "Evaluate linalg.transpose of constant weights at compile time"
    anchor = "func.func"

    def run(self, op: ir.Operation) -> None:
        transposes = ops_matching(op, lambda c: c.name == "linalg.transpose" and bool(c.results))
        for transpose in transposes:
            self._fold(transpose)

    def _fold(self, op: ir.Operation) -> None:
        found = _constant_input(op)
        if found is None:
            return
        attr, source_type = found
        array = weights.value_of(attr, source_type, bits=True)
        if array is None:
            return
        permutation = list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))
        result_type = ir.RankedTensorType(op.results[0].type)
        name = weights.derived_name(attr, "t" + "".join(map(str, permutation)))
        value = weights.constant_attr(array.transpose(permutation), result_type, name)
        with ir.InsertionPoint(op), op.location:
            folded = arith.ConstantOp(result_type, value)
        op.results[0].replace_all_uses_with(folded.result)
        op.erase()
