"""``lowerline-fold-erfc``: ``1 - erf(x)`` as ``math.erfc(x)``.

torch-mlir has no lowering of ``aten.erfc``; lowerline's frontend writes it
``1 - erf(x)`` (``lowerline.frontend.decompositions``). As written, the
subtraction cancels: erfc(4) = 1.5e-8 is below half an ulp of 1 and comes
out 0, and from x ~ 0.5 on the error of erf is several ulps of erfc. This
pass folds the subtraction into ``math.erfc``, which
``lowerline-approximate-math`` expands (f32) or libm computes (``erfc``),
both accurate for every x. Two forms:

- in one block (a fused loop body, or vector code)::

    %e = math.erf %x : f32                 %r = math.erfc %x : f32
    %r = arith.subf %one, %e : f32    ->

- across two ``linalg.generic``s (torch-mlir's form, and what fusion leaves
  when the erf is read elsewhere too: CSE merges the erfc's erf with a
  ``torch.erf`` of the same tensor)::

    %e = linalg.generic ins(%x) { math.erf %in }
    %r = linalg.generic ins(%e) { arith.subf %one, %in }
      ->
    %r = linalg.generic ins(%x) { math.erfc %in }

  where the erf op is all-parallel with identity maps (so ``%x`` can be
  read in its place) and the consumer reads that input only in the
  subtraction.

The constant 1 is a scalar or splat ``arith.constant``, possibly cast, or
torch-mlir's 0-d constant tensor read by the generic. An erf read
elsewhere too stays for those reads.

Upstream MLIR has ``math.erfc`` but no rewrite that forms it.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import math

from lowerline.passes.support.elementwise_ir import expand
from lowerline.passes.support.linalg_info import all_parallel, indexing_maps
from lowerline.pipeline.pass_api import Pass, ops_matching

_CASTS = ("arith.sitofp", "arith.uitofp", "arith.extf", "arith.truncf")


def _is_one(value: ir.Value) -> bool:
    """Whether ``value`` is the constant 1: an ``arith.constant`` (scalar
    or splat), a cast of one, or a ``linalg.generic`` block argument bound
    to a splat constant tensor of 1 (torch-mlir's ``1 - t``: a 0-d i64
    tensor, cast in the body)."""
    if isinstance(value, ir.BlockArgument):
        return _bound_to_one(value)
    owner = value.owner
    if isinstance(owner, ir.OpView) and owner.name in _CASTS:
        return _is_one(owner.operands[0])
    if not isinstance(owner, ir.OpView) or owner.name != "arith.constant":
        return False
    return _attribute_is_one(owner.attributes["value"])


def _attribute_is_one(attr: ir.Attribute) -> bool:
    if isinstance(attr, ir.DenseElementsAttr) and attr.is_splat:
        attr = attr.get_splat_value()
    if isinstance(attr, ir.FloatAttr):
        return ir.FloatAttr(attr).value == 1.0
    return isinstance(attr, ir.IntegerAttr) and ir.IntegerAttr(attr).value == 1


def _bound_to_one(argument: ir.BlockArgument) -> bool:
    generic = argument.owner.owner
    if generic.name != "linalg.generic":
        return False
    inputs = len(generic.operands) - len(generic.results)
    if argument.arg_number >= inputs:
        return False
    bound = generic.operands[argument.arg_number].owner
    is_constant = isinstance(bound, ir.OpView) and bound.name == "arith.constant"
    return is_constant and _attribute_is_one(bound.attributes["value"])


def _one_minus(op: ir.Operation) -> bool:
    return op.name == "arith.subf" and _is_one(op.operands[0])


def _erf_of(value: ir.Value) -> ir.Value | None:
    """``x`` when ``value`` is ``math.erf(x)``."""
    owner = value.owner
    if isinstance(owner, ir.OpView) and owner.name == "math.erf":
        return owner.operands[0]
    return None


def _erf_generic_input(value: ir.Value) -> ir.Value | None:
    """``x`` when ``value`` is the result of a ``linalg.generic`` that
    computes ``erf`` of its one input ``x`` elementwise (identity maps,
    ``x`` of the result's type)."""
    owner = value.owner
    if not isinstance(owner, ir.OpView) or owner.name != "linalg.generic":
        return None
    if len(owner.operands) != 2 or len(owner.results) != 1 or not all_parallel(owner):
        return None
    if not all(m.is_permutation and m == indexing_maps(owner)[0] for m in indexing_maps(owner)):
        return None
    if owner.operands[0].type != owner.results[0].type:
        return None
    body = list(owner.regions[0].blocks[0].operations)
    block = owner.regions[0].blocks[0]
    if len(body) != 2 or body[0].name != "math.erf" or body[0].operands[0] != block.arguments[0]:
        return None
    return owner.operands[0] if body[1].operands[0] == body[0].results[0] else None


def _identity_reads(generic: ir.Operation, index: int) -> bool:
    """Whether ``generic`` reads operand ``index`` through an identity map."""
    read = indexing_maps(generic)[index]
    return read.is_permutation and read == ir.AffineMap.get_identity(read.n_dims)


def _fold_in_block(sub: ir.Operation) -> bool:
    x = _erf_of(sub.operands[1])
    if x is None:
        return False
    erf = sub.operands[1].owner
    _replace(sub, x)
    if not list(erf.results[0].uses):
        erf.erase()
    return True


def _fold_across_generics(sub: ir.Operation) -> bool:
    argument = sub.operands[1]
    generic = sub.parent
    if not isinstance(argument, ir.BlockArgument) or generic.name != "linalg.generic":
        return False
    index = argument.arg_number
    inputs = len(generic.operands) - len(generic.results)
    if index >= inputs or len(list(argument.uses)) != 1 or not _identity_reads(generic, index):
        return False
    x = _erf_generic_input(generic.operands[index])
    if x is None:
        return False
    producer = generic.operands[index].owner
    generic.operands[index] = x
    _replace(sub, argument)
    if not list(producer.results[0].uses):
        producer.erase()
    return True


def _replace(sub: ir.Operation, x: ir.Value) -> None:
    expand(sub, lambda *_: math.erfc(x))


@dataclass(frozen=True)
class FoldErfc(Pass):
    flag = "lowerline-fold-erfc"
    summary = "Fold 1 - math.erf(x) into math.erfc(x) (no cancellation for large x)"
    anchor = None

    def run(self, op: ir.Operation) -> None:
        for sub in ops_matching(op, _one_minus):
            if not _fold_in_block(sub):
                _fold_across_generics(sub)
