"""``lowerline-fold-qdq-matmul``: a matmul between dequantized int8 operands
becomes an integer matmul with an i32 accumulator and a requantize epilogue.

A PT2E-quantized linear layer (torchao's ``convert_pt2e``) reaches linalg as
float arithmetic on dequantized values: the activation and the (constant)
weight are each a ``linalg.generic`` of ``ext``/``subi``/``sitofp``/``mulf``
(``real = scale * (stored - zero_point)``, the weight's scale and zero point
per output channel), feeding a float ``linalg.matmul``, the bias add, ReLU
or a clamp (ReLU6, hardtanh, clamp), and the next layer's quantize
(``divf``/``roundeven``/``addf``/clamp/``fpto*i``, or the frontend's marked
``mulf`` by ``f32(1 / scale)``: ``match_requantize``).
This pass computes the same layer on the stored integers::

    %xd = generic {extui, subi zx, sitofp, mulf sx} (%xq : tensor<MxKxi8>)
    %wd = generic {extsi, subi zw, sitofp, mulf sw} (%w : tensor<NxKxi8> constant, %sw, %zw)
    %wt = linalg.transpose %wd
    %mm = linalg.matmul ins(%xd, %wt) outs(fill 0.0)
    %b = generic {addf bias}(%mm) ; %r = relu(%b) | clamp(%b, lo, hi)
    %q = generic {divf sy, roundeven, addf zy, clamp 0..255, fptoui}(%r)
        ==>
    %xs = generic {xori 128}(%xq)                    // u8 -> s8: x - 128
    %acc = linalg.matmul ins(%xs, %w' : i8, i8 constant KxN) outs(fill 0 : i32)
    %q = generic {addi c[n], sitofp, mulf m[n], roundeven, addf zy,
                  clamp q(lo)..q(hi), fptoui}(%acc)

with, computed here from the constants: ``w' = w - zw`` (transposed; refused
when it leaves int8), the zero-point correction
``c[n] = -(zx - 128) * sum_k w'[k, n] + round(bias[n] / (sx * sw[n]))`` and the
requantize multiplier ``m[n] = sx * sw[n] / sy``. The activation folds into
the quantize's clamp: dividing, rounding and adding the zero point are
monotone, so ``q(clamp(x, lo, hi))`` is ``q(x)`` clamped to ``q(lo)..q(hi)``
(ReLU: ``lo = 0``; torch-mlir lowers each bound of ReLU6, hardtanh and clamp
as four NaN-aware generics, which all go). Without a quantize after it (a
model's last layer) the epilogue stays float: ``(acc + c[n]) * sx * sw[n]
+ bias[n]``, then the activation's min and max.

A Linear on ``(B, S, K)`` inputs reaches the matmul through a
``tensor.collapse_shape`` of the dequantized activation and leaves it through
a ``tensor.expand_shape`` after the bias: the integers are collapsed instead
and the epilogue's result is expanded.

Why u8 activations are shifted to s8: ``linalg.matmul`` has one ``cast``
attribute for both operands, so u8 x s8 cannot be one named matmul, and
tile-and-fuse roots are named contractions. The shift costs one ``xori``,
which lowerline-fuse-elementwise merges into the producing quantize; its
effect on the sum is a compile-time constant in ``c[n]``.

Upstream has no such fold: ``quant``'s ops (``qcast``/``dcast``) are not what
torch-mlir emits (it lowers QDQ to plain arith in generics), and neither
``lower-quant-ops`` nor any linalg pattern turns a float contraction of
dequantized operands into an integer one.

Not folded (left as the float computation, which is exact): an activation
quantized per channel, a weight that is not a constant or whose scales or
zero points are not constants, a float op between the dequantize and the
matmul, a matmul or epilogue whose intermediate result has other users, and
weight zero points that take ``w - zw`` out of int8.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from mlir import ir
from mlir.dialects import arith, linalg, math, tensor

from lowerline import weights
from lowerline.passes.support.linalg_info import all_parallel, indexing_maps
from lowerline.pipeline import protocol
from lowerline.pipeline.pass_api import Pass, ops_matching


@dataclass
class Affine:
    """``real = scale * (stored - zero_point)`` of an i8 tensor ``source``.
    ``scale`` and ``zero_point`` are 1-element arrays (per tensor) or run
    along dimension ``axis`` of ``source``."""

    source: ir.Value
    unsigned: bool
    scale: np.ndarray
    zero_point: np.ndarray
    axis: int | None
    # The tensor.collapse_shape between the dequantize and the matmul (a
    # Linear on (B, S, K) inputs), applied to the integers instead.
    collapse: ir.Operation | None = None


@dataclass
class Requantize:
    """``clamp(roundeven(real / scale) + zero_point, low, high)`` stored in i8;
    with ``inverse`` (the frontend's marked form) ``real * inverse`` instead
    of the division, ``inverse`` being the float32 ``1 / scale`` eager torch
    multiplies by."""

    scale: float
    zero_point: float
    low: float
    high: float
    unsigned: bool
    inverse: float | None = None

    def scaled(self, real: ir.Value) -> ir.Value:
        """``real`` in steps of the scale, as the matched quantize computes it."""
        if self.inverse is not None:
            return arith.mulf(real, _f32(self.inverse))
        return arith.divf(real, _f32(self.scale))

    def multiplier(self, scale: Any) -> Any:
        """Values in units of ``scale`` converted to steps of this quantize."""
        if self.inverse is not None:
            return scale * np.float64(np.float32(self.inverse))
        return scale / self.scale


def quantized(q: Requantize, real: float) -> int:
    """The stored integer ``q`` gives ``real``, in float32 as the kernel computes it."""
    if q.inverse is not None:
        scaled = np.float32(real) * np.float32(q.inverse)
    else:
        scaled = np.float32(real) / np.float32(q.scale)
    stored = np.float32(np.rint(scaled) + np.float32(q.zero_point))
    return int(np.clip(stored, q.low, q.high))


@dataclass
class Clamp:
    """``min(max(x, low), high)``: ReLU (``low`` 0), ReLU6, hardtanh, clamp;
    an absent bound is infinite."""

    low: float = -np.inf
    high: float = np.inf

    def stored_range(self, q: Requantize) -> tuple[float, float]:
        """``q``'s clamp range once this clamp is folded into it. Dividing by
        the scale, rounding and adding the zero point are all monotone, so
        they commute with min and max: ``q(clamp(x, lo, hi))`` is ``q(x)``
        clamped to ``[q(lo), q(hi)]``, each bound within ``q``'s own range."""
        return float(quantized(q, self.low)), float(quantized(q, self.high))

    def apply(self, real: ir.Value) -> ir.Value:
        """The clamp on a real value, max first as torch-mlir orders it."""
        if self.low > -np.inf:
            real = arith.maximumf(real, _f32(self.low))
        if self.high < np.inf:
            real = arith.minimumf(real, _f32(self.high))
        return real


@dataclass
class Epilogue:
    """What follows the matmul: the ops it replaces, the last one first."""

    ops: list[ir.Operation]
    bias: np.ndarray | None
    clamp: Clamp | None
    requantize: Requantize | None
    # The tensor.expand_shape after the bias add (a Linear on (B, S, K)
    # inputs), applied to the epilogue's result.
    expand: ir.Operation | None = None
    # A grouped convolution's tensor.collapse_shape (lowerline-fold-qdq-conv).
    collapse: ir.Operation | None = None


# Body values -----------------------------------------------------------------


def _defining(value: ir.Value, name: str) -> ir.Operation | None:
    if isinstance(value, ir.OpResult) and value.owner.name == name:
        return value.owner
    return None


def _constant_array(value: ir.Value) -> np.ndarray | None:
    """The elements of a constant tensor (``arith.constant``), or None."""
    op = _defining(value, "arith.constant")
    if op is None or not isinstance(value.type, ir.RankedTensorType):
        return None
    return weights.value_of(op.attributes["value"], ir.RankedTensorType(value.type))


def _parameter(generic: ir.Operation, value: ir.Value) -> tuple[np.ndarray, int | None] | None:
    """A quantization parameter used in ``generic``'s body: a scalar constant
    from outside (axis None) or an element of a constant 1-D input read along
    one loop (axis = that loop). A Python float scale reaches the body as
    ``arith.truncf`` of an f64 constant: its f32 value."""
    truncate = _defining(value, "arith.truncf")
    if truncate is not None and str(value.type) == "f32":
        found = _parameter(generic, truncate.operands[0])
        return (found[0].astype(np.float32).astype(np.float64), None) if found else None
    if isinstance(value, ir.OpResult):
        op = _defining(value, "arith.constant")
        if op is None:
            return None
        attr = op.attributes["value"]
        if isinstance(attr, ir.FloatAttr):
            return np.array([ir.FloatAttr(attr).value]), None
        if isinstance(attr, ir.IntegerAttr):
            return np.array([ir.IntegerAttr(attr).value]), None
        return None
    arg = ir.BlockArgument(value)
    if arg.owner != generic.regions[0].blocks[0] or arg.arg_number >= len(generic.operands) - 1:
        return None
    array = _constant_array(generic.operands[arg.arg_number])
    results = indexing_maps(generic)[arg.arg_number].results
    if array is None or array.size == 0:
        return None
    if len(results) == 0 or array.size == 1:
        return array.reshape(-1), None
    if len(results) != 1 or not isinstance(results[0], ir.AffineDimExpr):
        return None
    return array.reshape(-1), results[0].position


def _scalar(generic: ir.Operation, value: ir.Value) -> float | None:
    found = _parameter(generic, value)
    if found is None or found[1] is not None:
        return None
    return float(found[0][0])


def _operands_split(op: ir.Operation, pick: Callable[[ir.Value], bool]) -> tuple | None:
    """(the operand ``pick`` accepts, the other one) of a binary op."""
    a, b = op.operands
    if pick(a):
        return a, b
    if pick(b):
        return b, a
    return None


def _body(generic: ir.Operation) -> tuple[ir.Block, ir.Value]:
    block = generic.regions[0].blocks[0]
    return block, list(block.operations)[-1].operands[0]


def _is_input_arg(value: ir.Value, block: ir.Block, index: int) -> bool:
    return isinstance(value, ir.BlockArgument) and value == block.arguments[index]


def _elementwise(op: ir.Operation, inputs: int | None = None, rank: int | None = None) -> bool:
    """An all-parallel generic with one result, its first input and its
    result read and written through identity maps."""
    if op.name != "linalg.generic" or len(op.results) != 1 or not all_parallel(op):
        return False
    maps = indexing_maps(op)
    if inputs is not None and len(op.operands) - 1 != inputs:
        return False
    identity = ir.AffineMap.get_identity(maps[-1].n_dims)
    if rank is not None and maps[-1].n_dims != rank:
        return False
    return maps[-1] == identity and maps[0] == identity


# Matching ----------------------------------------------------------------------


def match_activation(value: ir.Value) -> Affine | None:
    """``value`` as a per-tensor dequantized i8 tensor, possibly collapsed to 2-D."""
    collapse = _defining(value, "tensor.collapse_shape")
    affine = match_dequantize(collapse.operands[0] if collapse else value, rank=None)
    if affine is None or affine.axis is not None:
        return None
    affine.collapse = collapse
    return affine


def match_dequantize(value: ir.Value, rank: int | None = 2) -> Affine | None:
    """``value`` as a dequantized i8 tensor, or None."""
    generic = _defining(value, "linalg.generic")
    if generic is None or not _elementwise(generic, rank=rank):
        return None
    block, result = _body(generic)
    scale_mul = _defining(result, "arith.mulf")
    if scale_mul is None:
        return None
    split = _operands_split(scale_mul, lambda v: _parameter(generic, v) is not None)
    if split is None:
        return None
    scale, floated = _parameter(generic, split[0]), split[1]
    if scale is None:
        return None
    to_float = _defining(floated, "arith.sitofp") or _defining(floated, "arith.uitofp")
    if to_float is None:
        return None
    stored, zero_point = _zero_point_sub(generic, to_float.operands[0])
    if stored is None or zero_point is None:
        return None
    extend = _defining(stored, "arith.extui") or _defining(stored, "arith.extsi")
    unsigned = (extend or to_float).name in ("arith.extui", "arith.uitofp")
    raw = extend.operands[0] if extend is not None else stored
    index = next((i for i, a in enumerate(block.arguments) if a == raw), None)
    if index is None or index >= len(generic.operands) - 1 or str(raw.type) != "i8":
        return None
    if indexing_maps(generic)[index] != indexing_maps(generic)[-1]:
        return None
    return _affine(generic.operands[index], unsigned, scale, zero_point)


def _zero_point_sub(generic: ir.Operation, value: ir.Value) -> tuple:
    """(the stored integer, its zero point and axis) of ``stored - zp`` or of a
    plain stored value (zero point 0)."""
    sub = _defining(value, "arith.subi")
    if sub is None:
        return value, (np.array([0]), None)
    return sub.operands[0], _parameter(generic, sub.operands[1])


def _affine(source: ir.Value, unsigned: bool, scale: tuple, zero_point: tuple) -> Affine | None:
    axes = {axis for _, axis in (scale, zero_point) if axis is not None}
    if len(axes) > 1:
        return None
    axis = axes.pop() if axes else None
    return Affine(source, unsigned, scale[0].astype(np.float64), zero_point[0], axis)


def _with_scalar(
    generic: ir.Operation, value: ir.Value, name: str
) -> tuple[float, ir.Value] | None:
    """(the scalar constant operand, the other operand) of the binary op
    ``name`` defining ``value``, or None."""
    op = _defining(value, name)
    split = op and _operands_split(op, lambda v: _scalar(generic, v) is not None)
    if not split:
        return None
    scalar = _scalar(generic, split[0])
    return (scalar, split[1]) if scalar is not None else None


def match_requantize(op: ir.Operation) -> Requantize | None:
    """``op`` as a per-tensor quantize of f32 into i8, or None:
    ``fpto[us]i(min(max(roundeven(x / scale) + zero_point, low), high))``."""
    if not _elementwise(op, inputs=1):
        return None
    block, result = _body(op)
    to_int = _defining(result, "arith.fptoui") or _defining(result, "arith.fptosi")
    high = to_int and _with_scalar(op, to_int.operands[0], "arith.minimumf")
    low = high and _with_scalar(op, high[1], "arith.maximumf")
    if not to_int or not high or not low or str(result.type) != "i8":
        return None
    # torch-mlir keeps the add of a zero zero point; a canonicalized one has none.
    shifted = _with_scalar(op, low[1], "arith.addf") or (0.0, low[1])
    rounded = _defining(shifted[1], "math.roundeven")
    scaling = rounded and _scaling(op, block, rounded.operands[0])
    if not scaling:
        return None
    scale, inverse = scaling
    unsigned = to_int.name == "arith.fptoui"
    return Requantize(scale, shifted[0], low[0], high[0], unsigned, inverse)


def _scaling(op: ir.Operation, block: ir.Block, value: ir.Value) -> tuple | None:
    """(scale, inverse) of the input's scaling in a quantize's body: torch-mlir's
    ``in / scale`` (inverse None), or ``in * inverse`` in a generic the frontend
    marked with its scale. An unmarked multiply is a user's own arithmetic,
    which this matcher leaves alone."""
    divide = _defining(value, "arith.divf")
    if divide is not None and _is_input_arg(divide.operands[0], block, 0):
        scale = _scalar(op, divide.operands[1])
        return (scale, None) if scale is not None and scale > 0 else None
    multiply = _defining(value, "arith.mulf")
    scale = protocol.QUANTIZE.get(op)
    if multiply is None or scale is None or not _is_input_arg(multiply.operands[0], block, 0):
        return None
    inverse = _scalar(op, multiply.operands[1])
    if inverse is None or inverse <= 0 or not scale > 0:
        return None
    return scale, inverse


def _bias(op: ir.Operation) -> np.ndarray | None:
    """The constant per-column vector ``op`` adds to its 2-D input, or None."""
    if not _elementwise(op, inputs=2, rank=2):
        return None
    block, result = _body(op)
    add = _defining(result, "arith.addf")
    if add is None:
        return None
    split = _operands_split(add, lambda v: _is_input_arg(v, block, 0))
    if split is None or not _is_input_arg(split[1], block, 1):
        return None
    if indexing_maps(op)[1] != ir.AffineMap.get(2, 0, [ir.AffineExpr.get_dim(1)]):
        return None
    return _constant_array(op.operands[1])


def _is_relu(op: ir.Operation) -> bool:
    """``max(x, 0)`` as torch-mlir writes ReLU: ``select(x > 0, x, 0)``."""
    if not _elementwise(op, inputs=1):
        return False
    block, result = _body(op)
    select = _defining(result, "arith.select")
    if select is None:
        return False
    compare = _defining(select.operands[0], "arith.cmpf")
    x = block.arguments[0]
    if compare is None or compare.operands[0] != x or select.operands[1] != x:
        return False
    predicate = ir.IntegerAttr(compare.attributes["predicate"]).value
    zero = (_scalar(op, compare.operands[1]), _scalar(op, select.operands[2]))
    return predicate in (2, 9) and zero == (0.0, 0.0)  # ogt, ugt


_OGE, _OLE, _UNE = 3, 5, 13  # arith.cmpf predicates


def _users(value: ir.Value) -> list[ir.Operation]:
    """The distinct ops reading ``value``."""
    found: list[ir.Operation] = []
    for use in value.uses:
        if not any(use.owner == f for f in found):
            found.append(use.owner)
    return found


def _reads_elementwise(op: ir.Operation, inputs: int) -> bool:
    """An elementwise generic of ``inputs`` inputs whose first two are read
    through the identity map."""
    if not _elementwise(op, inputs=inputs):
        return False
    maps = indexing_maps(op)
    return inputs < 2 or maps[1] == maps[-1]


def _yields(op: ir.Operation, name: str) -> ir.Operation | None:
    """The op ``name`` whose result ``op``'s body yields, or None."""
    return _defining(_body(op)[1], name)


def _on_arguments(compare: ir.Operation, block: ir.Block, count: int) -> bool:
    return all(_is_input_arg(compare.operands[i], block, i) for i in range(count))


def _bound_compare(op: ir.Operation, value: ir.Value) -> tuple[int, float] | None:
    """(predicate, bound) of ``op``: ``x >= bound`` or ``x <= bound`` of ``value``
    (torch-mlir compares in f64: ``extf`` of x against an f64 constant)."""
    if not _reads_elementwise(op, 1) or op.operands[0] != value:
        return None
    compare = _yields(op, "arith.cmpf")
    if compare is None:
        return None
    block = op.regions[0].blocks[0]
    x = compare.operands[0]
    extend = _defining(x, "arith.extf")
    if not _is_input_arg(extend.operands[0] if extend else x, block, 0):
        return None
    bound = _scalar(op, compare.operands[1])
    predicate = ir.IntegerAttr(compare.attributes["predicate"]).value
    return (predicate, bound) if bound is not None else None


def _is_nan_test(op: ir.Operation, value: ir.Value) -> bool:
    """``x != x`` (``cmpf une``) of ``value``."""
    if not _reads_elementwise(op, 2) or any(v != value for v in op.operands[:2]):
        return False
    compare = _yields(op, "arith.cmpf")
    block = op.regions[0].blocks[0]
    if compare is None or not _on_arguments(compare, block, 2):
        return False
    return ir.IntegerAttr(compare.attributes["predicate"]).value == _UNE


def _single_use(value: ir.Value, user: ir.Operation) -> bool:
    only = _only_user(value)
    return only is not None and only == user


def _bound(value: ir.Value) -> tuple[int, float, list[ir.Operation]] | None:
    """One bound of torch-mlir's NaN-aware clamp of ``value``, four generics:
    ``keep = x >= low or x != x`` (``<= high`` for the upper bound), then
    ``select(keep, x, bound)``. Returns (predicate, bound, the four ops with
    the select first) or None."""
    users = _users(value)
    select_op = next((u for u in users if _reads_elementwise(u, 3)), None)
    select = select_op and _yields(select_op, "arith.select")
    if select_op is None or select is None or len(users) != 3:
        return None
    block = select_op.regions[0].blocks[0]
    if not _on_arguments(select, block, 2) or select_op.operands[1] != value:
        return None
    bound = _scalar(select_op, select.operands[2])
    either = _defining(select_op.operands[0], "linalg.generic")
    if bound is None or either is None or not _single_use(either.results[0], select_op):
        return None
    tests = [_defining(v, "linalg.generic") for v in either.operands[:2]]
    if not _reads_elementwise(either, 2) or any(t is None for t in tests):
        return None
    ori = _yields(either, "arith.ori")
    if ori is None or not _on_arguments(ori, either.regions[0].blocks[0], 2):
        return None
    compares = [t for t in tests if t is not None and _bound_compare(t, value)]
    nans = [t for t in tests if t is not None and _is_nan_test(t, value)]
    if len(compares) != 1 or len(nans) != 1:
        return None
    predicate, compared = _bound_compare(compares[0], value) or (0, 0.0)
    if np.float32(compared) != np.float32(bound) or predicate not in (_OGE, _OLE):
        return None
    if not all(_single_use(t.results[0], either) for t in (compares[0], nans[0])):
        return None
    return predicate, bound, [select_op, either, nans[0], compares[0]]


def match_clamp(value: ir.Value) -> tuple[Clamp, list[ir.Operation]] | None:
    """The ReLU or clamp (a lower bound, an upper bound or both, in that
    order, as torch-mlir lowers ReLU6, hardtanh and clamp) applied to
    ``value``, and its ops with the last one first; None when there is none.

    torch-mlir's clamp keeps NaN; the values it sees after a fold are sums
    of integers times finite scales, never NaN, so min and max suffice."""
    clamp, ops = Clamp(), []
    user = _only_user(value)
    low = _bound(value)
    if user is not None and _is_relu(user):
        clamp.low, ops = 0.0, [user]
    elif low is not None and low[0] == _OGE:
        clamp.low, ops = low[1], low[2]
    high = _bound(ops[0].results[0] if ops else value)
    if high is not None and high[0] == _OLE:
        clamp.high, ops = high[1], high[2] + ops
    return (clamp, ops) if ops else None


def _expand(op: ir.Operation) -> ir.Operation | None:
    return op if op.name == "tensor.expand_shape" else None


def _only_user(value: ir.Value) -> ir.Operation | None:
    uses = list(value.uses)
    if len(uses) != 1:
        return None
    return uses[0].owner


# A step of an epilogue: the value so far -> (what it found, its ops with
# the last one first), or None.
Step = Callable[[ir.Value], tuple[object, list[ir.Operation]] | None]


def one_op(matcher: Callable[[ir.Operation], object]) -> Step:
    """A step of one op, the only user of the value, that ``matcher``
    accepts (a result other than None or False)."""

    def step(value: ir.Value) -> tuple[object, list[ir.Operation]] | None:
        user = _only_user(value)
        found = matcher(user) if user is not None else None
        return None if found is None or found is False else (found, [user])

    return step


# The tail every fold takes: an activation, then the next layer's quantize.
CLAMP_AND_REQUANTIZE: list[tuple[str, Step]] = [
    ("clamp", match_clamp),
    ("requantize", one_op(match_requantize)),
]


def match_epilogue(matmul: ir.Operation) -> Epilogue:
    """The bias add, ReLU or clamp and quantize that follow ``matmul``, each
    optional, in that order, each the only reader of the one before."""
    steps = [("bias", one_op(_bias)), ("expand", one_op(_expand)), *CLAMP_AND_REQUANTIZE]
    return follow_epilogue(matmul, steps)


def follow_epilogue(root: ir.Operation, steps: list[tuple[str, Step]]) -> Epilogue:
    """The ops after ``root`` that ``steps`` (Epilogue field, step) accept,
    each optional, in that order, each reading only the one before."""
    epilogue = Epilogue([root], None, None, None)
    for field, step in steps:
        found = step(epilogue.ops[0].results[0])
        if found is None:
            continue
        setattr(epilogue, field, found[0])
        epilogue.ops[:0] = found[1]
    return epilogue


def _weight(value: ir.Value) -> tuple[Affine, np.ndarray, ir.Attribute] | None:
    """The dequantized constant weight of a matmul's right-hand side, as the
    K x N int array ``w - zw`` and its per-tensor or per-column parameters."""
    transpose = _defining(value, "linalg.transpose")
    if transpose is not None:
        value = transpose.operands[0]
    affine = match_dequantize(value)
    stored = _constant_array(affine.source) if affine is not None else None
    if affine is None or stored is None:
        return None
    # The parameters' axis in the K x N orientation: the transpose swaps it.
    if affine.axis is not None and transpose is not None:
        affine.axis = 1 - affine.axis
    if affine.axis == 0:
        return None  # scales along K: no integer sum factors them out
    stored = stored.T if transpose is not None else stored
    zero_point = affine.zero_point.reshape(1, -1)
    shifted = stored.astype(np.int64) - zero_point
    if shifted.min(initial=0) < -128 or shifted.max(initial=0) > 127:
        return None
    return affine, shifted, affine.source.owner.attributes["value"]


# Rewriting -------------------------------------------------------------------


_PARALLEL = "#linalg.iterator_type<parallel>"


def _generic(
    result: ir.RankedTensorType,
    inputs: list[ir.Value],
    maps: list[ir.AffineMap],
    body: Callable[[list[ir.Value]], ir.Value],
) -> ir.Value:
    """An all-parallel generic computing ``body`` of its inputs' elements."""
    init = tensor.EmptyOp(result.shape, result.element_type).result
    iterators = ir.ArrayAttr.get([ir.Attribute.parse(_PARALLEL)] * result.rank)
    op = linalg.GenericOp(
        [result],
        inputs,
        [init],
        ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps]),
        iterators,
    )
    types = [ir.RankedTensorType(v.type).element_type for v in [*inputs, init]]
    block = op.regions[0].blocks.append(*types)
    with ir.InsertionPoint(block):
        linalg.YieldOp([body(list(block.arguments))])
    return op.result


def _f32(value: float) -> ir.Value:
    return arith.ConstantOp(ir.F32Type.get(), value).result


def _vector_constant(array: np.ndarray, element: ir.Type, dtype: type) -> ir.Value:
    values: np.ndarray = np.ascontiguousarray(array, dtype=dtype)
    kind = ir.RankedTensorType.get([values.size], element)
    return arith.ConstantOp(kind, ir.DenseElementsAttr.get(values, type=kind)).result


def _signed_activation(x: Affine) -> ir.Value:
    """The activation as s8 (u8 values flipped to ``x - 128`` by ``xori 0x80``),
    collapsed to 2-D as the float one was."""
    value = x.source
    i8 = ir.IntegerType.get_signless(8)
    kind = ir.RankedTensorType(value.type)
    if x.unsigned:
        identity = ir.AffineMap.get_identity(kind.rank)
        flip = arith.ConstantOp(i8, -128).result
        value = _generic(kind, [value], [identity] * 2, lambda a: arith.xori(a[0], flip))
    if x.collapse is None:
        return value
    shape = ir.RankedTensorType(x.collapse.results[0].type).shape
    collapsed = ir.RankedTensorType.get(shape, i8)
    return tensor.CollapseShapeOp(collapsed, value, x.collapse.attributes["reassociation"]).result


def _expanded(value: ir.Value, expand: ir.Operation | None) -> ir.Value:
    """``value`` reshaped as ``expand`` reshaped the float result."""
    if expand is None:
        return value
    element = ir.RankedTensorType(value.type).element_type
    shape = ir.RankedTensorType(expand.results[0].type).shape
    kind = ir.RankedTensorType.get(shape, element)
    reassociation = expand.attributes["reassociation"]
    static = expand.attributes["static_output_shape"]
    return tensor.ExpandShapeOp(kind, value, reassociation, [], static).result


def _integer_matmul(x: ir.Value, w: np.ndarray, name: str) -> ir.Value:
    i8, i32 = ir.IntegerType.get_signless(8), ir.IntegerType.get_signless(32)
    w_type = ir.RankedTensorType.get(list(w.shape), i8)
    w_value = arith.ConstantOp(w_type, weights.constant_attr(w.astype(np.int8), w_type, name))
    m = ir.RankedTensorType(x.type).shape[0]
    out = ir.RankedTensorType.get([m, w.shape[1]], i32)
    empty = tensor.EmptyOp(out.shape, i32).result
    zero = arith.ConstantOp(i32, 0).result
    filled = linalg.fill(zero, outs=[empty])
    return linalg.matmul(x, w_value.result, outs=[filled])


def _epilogue_body(epilogue: Epilogue, has_bias: bool) -> Callable:
    """The epilogue's scalar code: args are (acc, c[n], m[n], [bias[n]], out)."""

    def body(args: list[ir.Value]) -> ir.Value:
        corrected = arith.addi(args[0], args[1])
        real = arith.mulf(arith.sitofp(ir.F32Type.get(), corrected), args[2])
        if has_bias:
            real = arith.addf(real, args[3])
        return activation_and_requantize(epilogue, real)

    return body


def activation_and_requantize(epilogue: Epilogue, real: ir.Value) -> ir.Value:
    """The tail of an epilogue on the real value (divided by the output
    scale when it ends in a quantize): the stored integer (round half to
    even, zero point, the quantize's clamp with the activation's folded into
    it), else the real value clamped by the activation."""
    q, clamp = epilogue.requantize, epilogue.clamp
    if q is None:
        return clamp.apply(real) if clamp is not None else real
    low, high = clamp.stored_range(q) if clamp is not None else (q.low, q.high)
    stored = arith.addf(math.roundeven(real), _f32(q.zero_point))
    stored = arith.minimumf(arith.maximumf(stored, _f32(low)), _f32(high))
    i8 = ir.IntegerType.get_signless(8)
    return arith.fptoui(i8, stored) if q.unsigned else arith.fptosi(i8, stored)


def _columns(affine: Affine, n: int) -> np.ndarray:
    return np.broadcast_to(affine.scale, (n,)) if affine.axis is None else affine.scale


@dataclass
class Plan:
    """The integer layer replacing ``epilogue.ops``: activation ``x``, the
    K x N weight ``w`` (``w - zw``, from constant ``w_attr``) and, per column,
    the i32 ``correction``, the f32 ``multiplier`` and the float ``bias``
    left for a float result."""

    x: Affine
    w: np.ndarray
    w_attr: ir.Attribute
    epilogue: Epilogue
    correction: np.ndarray
    multiplier: np.ndarray
    bias: np.ndarray | None


def plan(matmul: ir.Operation) -> Plan | None:
    """How to fold ``matmul`` and what follows it, or None when it does not fold."""
    if not _float_zero_fill(matmul.operands[2]):
        return None
    x = match_activation(matmul.operands[0])
    found = _weight(matmul.operands[1])
    if x is None or found is None:
        return None
    w_affine, w, w_attr = found
    epilogue = match_epilogue(matmul)
    # The activation's stored value minus its zero point, after the u8 -> s8 shift.
    zero_x = int(x.zero_point[0]) - (128 if x.unsigned else 0)
    correction = -zero_x * w.sum(axis=0)
    scale = x.scale[0] * _columns(w_affine, w.shape[1])
    found_constants = epilogue_constants(correction, scale, epilogue.bias, epilogue.requantize)
    if found_constants is None:
        return None
    return Plan(x, w, w_attr, epilogue, *found_constants)


def epilogue_constants(
    correction: np.ndarray, scale: np.ndarray, bias: np.ndarray | None, q: Requantize | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None] | None:
    """Per output channel: the i32 correction, the f32 multiplier and the
    float bias left for a float result; None when a correction leaves i32.
    ``scale`` is the accumulator's (``sx * sw``)."""
    multiplier = scale
    if q is not None:
        # The bias joins the i32 sum in units of the accumulator's scale.
        if bias is not None:
            correction = correction + np.rint(bias.astype(np.float64) / scale)
        multiplier, bias = q.multiplier(scale), None
    if np.abs(correction).max(initial=0) >= 2**31:
        return None
    return correction, multiplier, bias


def outside_producers(ops: list[ir.Operation]) -> list[ir.Operation]:
    """Producers of the replaced ``ops``' operands (the dequantizes, the
    transpose, the fill, the inits), erased after the rewrite when nothing
    else reads them."""
    return [
        v.owner
        for op in ops
        for v in op.operands
        if isinstance(v, ir.OpResult) and not any(v.owner == e for e in ops)
    ]


def replace_ops(ops: list[ir.Operation], result: ir.Value, producers: list) -> None:
    """``ops`` (the last one first) replaced by ``result``; dead producers erased."""
    ops[0].results[0].replace_all_uses_with(result)
    for op in ops:
        op.erase()
    _erase_dead(producers)


def _rewrite(p: Plan) -> None:
    ops = p.epilogue.ops
    last = ops[0]
    replaced = outside_producers(ops)
    with ir.InsertionPoint(last), last.location:
        name = weights.derived_name(p.w_attr, "qdq")
        accumulator = _integer_matmul(_signed_activation(p.x), p.w, name)
        i32, f32 = ir.IntegerType.get_signless(32), ir.F32Type.get()
        columns = [
            _vector_constant(p.correction, i32, np.int32),
            _vector_constant(p.multiplier, f32, np.float32),
        ]
        if p.bias is not None:
            columns.append(_vector_constant(p.bias, f32, np.float32))
        identity = ir.AffineMap.get_identity(2)
        column = ir.AffineMap.get(2, 0, [ir.AffineExpr.get_dim(1)])
        maps = [identity, *[column] * len(columns), identity]
        body = _epilogue_body(p.epilogue, p.bias is not None)
        final = ir.RankedTensorType(last.results[0].type)
        out = ir.RankedTensorType.get(
            ir.RankedTensorType(accumulator.type).shape, final.element_type
        )
        result = _expanded(_generic(out, [accumulator, *columns], maps, body), p.epilogue.expand)
    replace_ops(ops, result, replaced)


def _float_zero_fill(value: ir.Value) -> bool:
    fill = _defining(value, "linalg.fill")
    if fill is None:
        return False
    zero = fill.operands[0]
    found = _defining(zero, "arith.constant")
    attr = found.attributes["value"] if found else None
    return isinstance(attr, ir.FloatAttr) and ir.FloatAttr(attr).value == 0.0


# Ops a fold may leave unused; constants are left to canonicalize.
_ERASABLE = ("linalg.generic", "linalg.transpose", "linalg.fill", "tensor.empty")


def _erase_dead(ops: list[ir.Operation]) -> None:
    """Erase ``ops`` (the matmul's former operands: the dequantizes, the
    transpose, the fill) and their producers, as far as nothing else reads them."""
    candidates: list[ir.Operation] = []
    pending = [op.operation for op in ops]
    while pending:
        op = pending.pop()
        if op.name not in _ERASABLE or any(op == c for c in candidates):
            continue
        candidates.append(op)
        pending.extend(v.owner.operation for v in op.operands if isinstance(v, ir.OpResult))
    while True:
        dead = [op for op in candidates if not any(len(list(r.uses)) for r in op.results)]
        if not dead:
            return
        candidates = [op for op in candidates if not any(op == d for d in dead)]
        for op in dead:
            op.erase()


@dataclass(frozen=True)
class FoldQdqMatmul(Pass):
    flag = "lowerline-fold-qdq-matmul"
    summary = (
        "Fold dequantize -> matmul (+bias, ReLU/clamp) -> quantize into an i8 x i8 -> i32 matmul"
    )
    anchor = "func.func"

    def run(self, op: ir.Operation) -> None:
        fold_each(op, ("linalg.matmul",), plan, _rewrite)


def fold_each(
    root: ir.Operation, names: tuple[str, ...], planner: Callable, rewrite: Callable
) -> None:
    """``rewrite(planner(op))`` for each op named in ``names`` that plans."""
    for op in ops_matching(root, lambda c: c.name in names):
        found = planner(op)
        if found is not None:
            rewrite(found)
