"""Decompositions applied before torch-mlir's import.

torch-mlir's own table (``fx_decomp_util``) comes first; the entries here
replace aten ops whose torch-mlir lowering is unusable or differs from eager
torch with aten ops whose lowering is exact:

* ``aten.cumsum``: torch-mlir's scan sums in the input's type; ATen's CPU
  kernel sums integers and bools in int64, half types in float32 and
  float32 in float64. The input is converted first, so the scan
  (``tm_tensor.scan``, which ``lowerline-lower-tm-tensor`` runs in ATen's
  order, vectorized along an outer dimension and threaded across rows)
  sums as ATen does.
* ``aten.sort.stable``: torch-mlir has no lowering; ``aten.sort.default``
  becomes ``tm_tensor.sort``, which lowerline sorts stably whatever
  ``stable`` says (``lowerline-lower-tm-tensor``), so it is that.
* ``aten.cummax``, ``aten.cummin``: torch-mlir has no lowering. A log-step
  (Hillis-Steele) scan of (value, index) pairs under ATen's order: a NaN
  beats every number, equal values go to the later index
  (``aten/src/ATen/native/ReduceOps.cpp``, ``cummax_cummin_helper``).
* ``aten.gelu``: torch-mlir's ``approximate="tanh"`` lowering uses 0.797724
  for sqrt(2/pi) (0.7978846), an error of 2e-4 relative in the tanh argument.
  Written out with ATen's constants for both variants.
* ``aten.fmod``: torch-mlir has no lowering of ``fmod.Scalar`` and lowers
  ``fmod.Tensor`` of floats as ``a - b * trunc(a / b)``, which rounds twice.
  C's fmod is ``sign(a) * fmod(|a|, |b|)``, and for ``|a|`` the remainder
  (``remainder.Tensor``) is ``arith.remf`` with no sign fix-up, so this is
  exact. Integers use ``a - b * trunc_div(a, b)``, exact in integers.
* ``aten.maximum``, ``aten.minimum``, ``aten.clamp``, ``aten.hardtanh``:
  torch-mlir compares and selects (``cmpf ogt`` + ``select``), which drops a
  NaN operand; torch propagates it. Written as ATen's ``std::max``/``std::min``
  with the NaN check, in ``where``s.
* ``aten.pow.Tensor_Scalar`` of an integer tensor: torch-mlir has no lowering;
  a non-negative integer exponent is square-and-multiply, as in ATen. Of a
  float tensor, the exponents 2, 3, 0.5, -0.5, -1 and -2 are multiplies,
  ``sqrt``, ``rsqrt`` and reciprocals, as ATen's kernel computes them
  (torch-mlir emits ``powf``: a long f64 polynomial per element, and
  ``sqrt(-0.0)`` is ``-0.0`` in eager, ``+0.0`` from ``powf``).
* ``aten.pow.Tensor_Tensor`` of integers: torch-mlir has no lowering; ATen's
  square-and-multiply over the exponent's bits (``pow_tensor_tensor``).
* ``aten._to_copy`` from float64 to float16/bfloat16: ATen converts through
  float32 (c10's ``Half``/``BFloat16`` are built from a float), rounding
  twice; MLIR's ``truncf`` rounds once, and differs from torch next to ties.
* ``aten._to_copy`` from a float type to uint8: torch-mlir's ``fptosi`` to
  ``i8`` is poison from 128 up, and LLVM dropped a clamp to 255 before it;
  converted through int32 (``float_to_uint8_via_int32``).
* ``aten.var``, ``aten.std``, ``aten.var_mean`` of ``float32``: torch-mlir
  computes the variance in ``float64`` through full-size temporaries (an
  extension of the whole input, its deviations, their squares), which made
  layer norm at 64x50257 twenty times slower than eager. Here the moments
  stay in the input's type, two passes over the row: a mean shifted by the
  row's first (finite) element, so that large-mean rows (``1000 + randn``)
  sum small numbers, then the sum of squared deviations from that mean. Layer
  norm, group norm (``native_group_norm``, written in the ``(N, G, C/G, HW)``
  view so that no reshape separates statistics from normalization), instance
  and batch norm (training) reach linalg as two row reductions and one
  elementwise op, which ``lowerline-tile-and-fuse`` makes one row kernel.
* ``aten.linalg_vector_norm`` (``torch.norm``, ``matrix_norm('fro')``) of
  order 2, 1, 0 and +-inf: torch-mlir computes every order as
  ``pow(sum(pow(|x|, p)), 1/p)``, and ``powf`` is a long f64 polynomial per
  element (``lowerline-approximate-math``). Written as ATen's kernels
  compute them: ``sqrt(sum(x * x))``, ``sum(|x|)``, the count of non-zeros,
  ``amax(|x|)``, ``amin(|x|)``; other orders keep torch-mlir's lowering.
* ``aten.argmax``, ``aten.argmin`` of floats: torch-mlir reduces the value
  and its index together, a reduction with two results that upstream can
  neither split into vector chunks nor vectorize (scalar loops). Written as
  two single-result reductions, each vectorized along the contiguous axis:
  the extreme value, then the smallest index holding it (or holding a NaN,
  which torch counts as the extreme), so ties give the first index as in
  torch.
* Complex elementwise ops (arithmetic with tensors and numbers, ``abs``,
  ``sqrt``, ``exp``, ``log``, the trigonometric and hyperbolic functions
  and their inverses, ``pow``, comparisons, predicates, fills...), which
  torch-mlir lowers to invalid IR or not at all: real arithmetic on the
  parts with the C library's branch cuts, in ``complex_ops`` and
  ``complex_math``; complex ``sum``, ``mean`` and ``prod`` (which kill
  torch-mlir's process) in ``complex_reductions``; ``fft_fft``,
  ``fft_ifft`` and ``stft.center`` in ``fft``. Each is tried first and
  falls back to the entry it shares an op with (``_first_of``).
* Reductions, pooling averages and softmax of ``float16``/``bfloat16``:
  torch-mlir reduces in the half type; ATen's CPU kernels accumulate in
  ``float32`` (its "opmath" type; a cumprod keeps its running product in
  it) and round once, which this does too, as
  torch-mlir already does for matmul and convolution. Over 1029 bf16 values
  a half accumulator is off by 10% and more.

* ``aten.upsample_nearest{1,2,3}d.default``: torch's entry reads past the
  input when the scales and output size disagree (``scales_h=1.5`` for 5 ->
  9); ATen clamps the source index to the last row (``nearest_idx``).
* ``aten._weight_norm_interface``: ATen's kernel reads ``g`` as one value per
  slice of ``v`` along ``dim`` whatever its shape, and returns the norms in
  ``g``'s shape; torch's entry broadcasts ``g`` instead. ``g`` is reshaped to
  ATen's reading (and refused when its size is not the slice count).
* ``aten._trilinear`` with ``unroll_dim`` expanded in all three inputs: ATen
  loops over zero slices there and returns zeros (or an empty tensor), which
  is refused rather than imitated; every other use lowers exactly.
* ``aten.kthvalue``: torch-mlir emits ``tm_tensor.topk``, which lowerline
  does not lower; it is the ``k``-th of a stable ascending sort (NaN last,
  as in ATen).
* ``aten.avg_pool1d`` of an unbatched ``(C, L)`` input: torch-mlir makes an
  invalid rank-3 ``linalg.pooling_nchw_sum``; pooled with a batch of one.
* ``aten.conv_tbc``: torch-mlir's lowering returns the wrong layout (invalid
  IR); it is ``conv1d`` on the input and weight transposed to NCL / OIK.
* ``aten.tile`` with a zero repeat: the import worker died on it; the result
  has no elements: the input repeated along the other dims, then sliced to
  nothing along those.
* ``aten._reshape_alias``: torch's (and torch-mlir's) entry is ``view(x,
  size)``, which drops ``stride``; it is ``as_strided(x, size, stride)``.
* ``aten.convolution`` with no input channels (``Conv2d(0, 16, 3)``): torch-mlir
  leaves it half lowered (stray ``torch.constant.bool`` and
  ``prim.ListConstruct``, reported as unsupported). ATen's result is empty:
  no output channels either (``(N, 0, H', W')``, the bias unused).
* ``aten.where.Scalar``: torch-mlir's entry makes both numbers 0-d tensors
  and its import then types the result 0-d (invalid IR: "type of return
  operand 0 doesn't match function result type"); the first number is
  written out at the condition's shape instead.
* ``aten.max_pool1d``, ``max_pool1d_with_indices``: torch's entries
  ``unsqueeze`` to 2-D and ``prims.squeeze`` back, which torch-mlir leaves
  unlowered (with the 2-D pool). Reshaped instead, as ``avg_pool1d`` is; a
  2-D index with one row is the 1-D index.
* ``aten.adaptive_max_pool1d``, and ``adaptive_max_pool2d`` with windows of
  unequal sizes or strides: the 1-D entry has the 2-D pool's problem above,
  and torch-mlir's adaptive max pool lowering handles only windows of one
  size and stride: otherwise the compiled code stops the whole process
  ("unimplemented: only support cases with fixed stride size", a run-time
  assertion; 17 -> 5). Written as ATen's windows: a gather of each window's
  positions per dim (padded to the widest by repeating its last), the max,
  and the first index of it (a NaN's last, as in ATen).
* ``aten.scatter.reduce`` / ``scatter.value_reduce`` (``reduce="add"`` or
  ``"multiply"``): torch-mlir has no lowering; it is ``scatter_reduce.two``
  with ``"sum"`` / ``"prod"``, ``include_self=True``.
* ``aten.dequantize.self`` of a float tensor: ATen's result is the tensor as
  float32. (A quantized tensor never gets here: torch.export refuses it,
  "quantized nyi in meta tensors".)
* The ``*_copy`` variants of views (``view_copy``, ``permute_copy``,
  ``select_copy.int``, ``split_copy.Tensor``, ...): torch-mlir lowers the views, not
  these; each is its view, cloned.
* ``aten.empty_strided``, ``new_empty_strided``: torch-mlir has no lowering
  (torch's entry makes ``prims.empty_strided``); they are ``empty`` /
  ``new_empty``: uninitialized values, in the contiguous layout every
  result of the library has.
* ``aten.linalg_norm``: torch-mlir has no lowering; vector norms and the
  Frobenius norm are ``linalg_vector_norm``, the matrix 1- and inf-norms
  (and -1, -inf) the extreme of absolute column or row sums. The nuclear
  and spectral norms need singular values and stay unlowered.
* ``aten.diagonal_scatter``: torch-mlir has no lowering (torch's entry
  writes with ``prims.copy_to``); the source spread over the two dims by a
  gather along the diagonal, selected where ``col - row == offset``.
* ``aten.as_strided_scatter``: torch-mlir has no lowering (torch's entry is
  a prims op); an ``index_put`` of the source at the flat positions
  ``offset + sum(i_k * stride_k)`` of the (contiguous) input, refused when
  they leave it.
* ``aten.erfinv``: torch-mlir has no lowering (torch's entry is a prims op);
  Giles' single-precision polynomials, then two Newton steps on
  ``erf(x) = y`` (quadratic: float64 gets its precision too), +-inf at +-1
  and NaN beyond.
* ``aten.erfc``: torch-mlir has no lowering (the op is left illegal at
  import). Written ``1 - erf(x)`` (integers promoted to the default float
  type, as torch does), which ``lowerline-fold-erfc`` folds back into
  ``math.erfc`` once both sit in one loop body: as written it would lose
  every digit beyond x ~ 3.8.
* ``aten.roll``: torch-mlir has no lowering; torch's own entry (slices and a
  concatenation) is used.
* ``aten.isfinite``: torch-mlir has no lowering; ``|x| < inf`` (false for
  NaN), of both parts of a complex number, all true for integers.
* ``fake_quantize_*``: in ``fake_quantize``.
* ``aten.{eq,ne,lt,le,gt,ge}.Scalar`` of a tensor and a number of another
  kind (a float tensor and an int): torch-mlir's folders misread a constant
  tensor then (``full_like(x, 3.0, dtype=float64) == 0`` folds to true);
  in ``number_comparisons``.
* ``_embedding_bag`` in mean and max mode: in ``embedding_bag``.
* ``aten.embedding`` and ``aten.index_select``: in ``gathers`` (one bounds
  check per index, then rows gathered with no check in the loop body, which
  vectorizes). torch-mlir lowers index_select without a bounds check and
  embedding with one per element; lowerline-report-failed-asserts turns a
  failed check into an IndexError.
* ``aten.reciprocal`` of real numbers: ``1 / x``. torch-mlir's lowering
  asserts ``x != 0`` (cf.assert "unimplemented: tensor with zero element"),
  where torch gives inf; the assert also keeps the loop from being
  vectorized. Integers are promoted to the default float type first, as torch
  does; complex numbers keep ``complex_ops``' entry.
* ``aten.mm``, ``aten.bmm`` of int8 or uint8: torch-mlir's linalg lowering
  kills the import worker on them (an abort, no diagnostic). They are
  computed in int32 and truncated back, which is exact: ATen accumulates in
  the operands' own type, wrapping, and a sum modulo 2**32 truncated to 8
  bits has the same residue.
* The prims views (``prims.split_dim``, ``collapse_view``, ``view_of``,
  ``transpose``, ``broadcast_in_dim``, ``squeeze``): functionalization refuses a non-ATen
  op whose result aliases its input ("Found a custom (non-ATen) operator
  whose output has alias annotations"); each is its ATen view.
* ``aten.threshold_backward``: torch's decomposition selects between 0 and
  the gradient in the gradient's type; ATen's kernel computes in the type
  both operands promote to (an int64 gradient with a float32 input gives
  float32). The gradient is converted first.

An entry returns ``NotImplemented`` for inputs it does not change, which
keeps the op (or the entry of torch-mlir's table that it replaced).

``decompose`` applies the table, then makes every computed tensor with no
elements (a static shape with a zero) an ``aten.zeros`` of its shape: only
its shape can be read, and torch-mlir's linalg lowering kills the import
worker on views and batch matmuls of such tensors (``[0, 0] @ [5, 0, 0]``).
``run_decompositions`` hands an op that
torch lists as composite (``CompositeImplicitAutograd``) to its composite
kernel only, which an op with its own CPU kernel never reaches
(``upsample_nearest2d.default``: kept, and torch-mlir lowers it with an
integer scale, wrong for 5 -> 9); such an op (``KEPT_BY_EXPORT``) is
decomposed in a second pass.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import torch
import torch._decomp
from torch.utils import _pytree as pytree

from lowerline.frontend import (
    complex_ops,
    complex_reductions,
    embedding_bag,
    fake_quantize,
    fft,
    gathers,
    number_comparisons,
    quantized,
)

aten = torch.ops.aten
TORCH_TABLE = torch._decomp.decomposition_table
HALF = (torch.float16, torch.bfloat16)

# Ops that accumulate: computed in float32 for half-precision inputs.
ACCUMULATE_IN_F32 = (
    aten.sum.default,
    aten.sum.dim_IntList,
    aten.mean.default,
    aten.mean.dim,
    aten.prod.default,
    aten.prod.dim_int,
    aten.var.correction,
    aten.var_mean.correction,
    aten.std.correction,
    aten.logsumexp.default,
    aten.linalg_vector_norm.default,
    aten._softmax.default,
    aten._log_softmax.default,
    aten.avg_pool1d.default,
    aten.avg_pool2d.default,
    aten.avg_pool3d.default,
    aten._adaptive_avg_pool2d.default,
    aten.adaptive_avg_pool1d.default,
    aten.cumprod.default,
)


def cumsum(x: torch.Tensor, dim: int, dtype: torch.dtype | None = None) -> Any:
    """ATen's accumulator and result types around torch-mlir's scan, which
    sums in the input's type (``_cumsum_type``)."""
    summed_in = _cumsum_type(dtype or x.dtype)
    if x.dim() > 0 and not summed_in.is_complex and x.dtype == summed_in == (dtype or summed_in):
        return NotImplemented  # the scan as torch-mlir lowers it
    x = x if dtype is None else x.to(dtype)
    if x.dim() == 0:
        return x.clone() if x.dtype == _promoted(x.dtype) else x.to(_promoted(x.dtype))
    if x.is_complex():
        return _log_step_cumsum(x, dim)
    # Called again on the summed type, this entry returns NotImplemented.
    return aten.cumsum.default(x.to(summed_in), dim).to(_promoted(x.dtype))


def _cumsum_type(dtype: torch.dtype) -> torch.dtype:
    """The type ATen's CPU kernel sums ``dtype`` in (``acc_type<T, false>``
    in ``cpu_cum_base_kernel``): int64 for integers and bools, float32 for
    half types, float64 for float32 (the running sum of a long float32 row
    drifts from ATen's by more than rounding otherwise)."""
    if dtype in HALF:
        return torch.float32
    if dtype == torch.float32:
        return torch.float64
    return dtype if dtype.is_floating_point or dtype.is_complex else torch.int64


def _promoted(dtype: torch.dtype) -> torch.dtype:
    """A cumsum's result type without ``dtype``: integers and bools become int64."""
    return dtype if dtype.is_floating_point or dtype.is_complex else torch.int64


def _log_step_cumsum(x: torch.Tensor, dim: int) -> torch.Tensor:
    """A complex cumsum (which torch-mlir's scan cannot sum) as a log-step
    (Hillis-Steele) scan of shifted adds: ``ceil(log2(n))`` steps of
    ``x + shift(x, 2**k)``, elementwise ops on the parts (``complex_ops``)."""
    dim = dim % x.dim()
    length = x.shape[dim]
    shift = 1
    while shift < length:
        pad = [0, 0] * (x.dim() - 1 - dim) + [shift, 0]
        shifted = torch.nn.functional.pad(x.narrow(dim, 0, length - shift), pad)
        x = x + shifted
        shift *= 2
    return x


def sort_stable(
    x: torch.Tensor, *, stable: bool | None = None, dim: int = -1, descending: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    return aten.sort.default(x, dim, descending)


def _running_extreme(x: torch.Tensor, dim: int, earlier_wins: Callable) -> tuple:
    """(values, indices) of a running max or min along ``dim``: a log-step
    scan where the pair ``shift`` places earlier replaces the current one when
    ``earlier_wins(current, earlier)``."""
    if x.dim() == 0:
        return x.clone(), torch.zeros_like(x, dtype=torch.int64)
    dim = dim % x.dim()
    length = x.shape[dim]
    view = [1] * x.dim()
    view[dim] = length
    position = torch.arange(length).reshape(view)
    values, indices = x, position.expand(x.shape)
    shift = 1
    while shift < length:
        pad = [0, 0] * (x.dim() - 1 - dim) + [shift, 0]
        earlier = torch.nn.functional.pad(values.narrow(dim, 0, length - shift), pad)
        earlier_index = torch.nn.functional.pad(indices.narrow(dim, 0, length - shift), pad)
        wins = (position >= shift) & earlier_wins(values, earlier)
        values = torch.where(wins, earlier, values)
        indices = torch.where(wins, earlier_index, indices)
        shift *= 2
    return values, indices


def cummax(x: torch.Tensor, dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    def earlier_wins(current: torch.Tensor, earlier: torch.Tensor) -> torch.Tensor:
        # ATen moves to a later element when `isnan(x) || (!isnan(out) && x >= out)`.
        return ~_is_nan(current) & (_is_nan(earlier) | (earlier > current))

    return _running_extreme(x, dim, earlier_wins)


def cummin(x: torch.Tensor, dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    def earlier_wins(current: torch.Tensor, earlier: torch.Tensor) -> torch.Tensor:
        return ~_is_nan(current) & (_is_nan(earlier) | (earlier < current))

    return _running_extreme(x, dim, earlier_wins)


def gelu(x: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    # ATen's CPU kernel (aten/src/ATen/native/cpu/Activation.cpp), term by term.
    if approximate == "tanh":
        beta = math.sqrt(2.0) * (2.0 / math.sqrt(math.pi)) * 0.5
        inner = beta * (x + 0.044715 * (x * x * x))
        return 0.5 * x * (1.0 + torch.tanh(inner))
    return x * 0.5 * (1.0 + torch.erf(x * (1.0 / math.sqrt(2.0))))


def fmod(a: torch.Tensor, b: torch.Tensor | float) -> torch.Tensor:
    if not isinstance(b, torch.Tensor):
        b = torch.scalar_tensor(b, dtype=a.dtype)
    if not a.is_floating_point():
        return a - b * torch.div(a, b, rounding_mode="trunc")
    magnitude = aten.remainder.Tensor(a.abs(), b.abs())
    return torch.where(a < 0, -magnitude, magnitude)


def integer_floor_division(a: Any, b: Any, rounding_mode: str | None = None) -> Any:
    """``div(a, b, rounding_mode="floor")`` of integers, exactly.

    torch-mlir computes it in f64 (``sitofp``, ``divf``, ``floor``,
    ``fptosi``), which is wrong for int64 values over 2**53 and turns a zero
    divisor into an undefined cast instead of an error. Here it is the
    truncating division (``arith.divsi``, checked for zero by
    lowerline-check-integer-division) stepped down by one where the
    remainder is not zero and its sign differs from the divisor's.
    """
    integral = not _is_floating(a) and not _is_floating(b) and _dtype(a) != torch.bool
    if rounding_mode != "floor" or not integral:
        return NotImplemented
    if not isinstance(b, torch.Tensor):
        b = torch.scalar_tensor(b, dtype=a.dtype)
    quotient = aten.div.Tensor_mode(a, b, rounding_mode="trunc")
    remainder = a - quotient * b
    inexact_downward = (remainder != 0) & ((remainder < 0) != (b < 0))
    return quotient - inexact_downward.to(quotient.dtype)


def _is_floating(value: Any) -> bool:
    if isinstance(value, torch.Tensor):
        return value.is_floating_point() or value.is_complex()
    return isinstance(value, (float, complex))


def _dtype(value: Any) -> torch.dtype | None:
    return value.dtype if isinstance(value, torch.Tensor) else None


def upsample_nearest(x: torch.Tensor, output_size: list[int], *scales: Any) -> torch.Tensor:
    spatial = len(output_size)
    indices = []
    for k, out in enumerate(output_size):
        size = x.shape[x.dim() - spatial + k]
        scale = scales[k] if k < len(scales) else None
        step = 1.0 / scale if scale is not None and scale > 0 else size / out
        # ATen: min(int64(floorf(i * step)), size - 1), in float32.
        index = (torch.arange(out, dtype=torch.float32) * step).to(torch.int64)
        index = torch.clamp(index, max=size - 1)
        indices.append(index.reshape([out] + [1] * (spatial - 1 - k)))
    return aten._unsafe_index.Tensor(x, [None] * (x.dim() - spatial) + indices)


def weight_norm_interface(v: torch.Tensor, g: torch.Tensor, dim: int = 0) -> Any:
    dim = dim % max(v.dim(), 1)
    if g.numel() != v.shape[dim]:
        raise ValueError(
            f"aten._weight_norm_interface: g has {g.numel()} elements; it takes one per "
            f"slice of v along dim {dim} ({v.shape[dim]})"
        )
    shape = [v.shape[dim] if d == dim else 1 for d in range(v.dim())]
    weight, norm = TORCH_TABLE[aten._weight_norm_interface.default](v, g.reshape(shape), dim)
    return weight, norm.reshape(g.shape)  # ATen's norm output takes g's shape


def trilinear(*args: Any, **kwargs: Any) -> Any:
    names = ("i1", "i2", "i3", "expand1", "expand2", "expand3", "sumdim", "unroll_dim")
    bound = dict(zip(names, args, strict=False)) | kwargs
    unroll = bound.get("unroll_dim", 1)
    if all(unroll in bound[name] for name in ("expand1", "expand2", "expand3")):
        raise ValueError(
            f"aten._trilinear: unroll_dim {unroll} is expanded in all three inputs; ATen "
            "computes zero slices along it (a zero or empty result), which lowerline "
            "does not imitate"
        )
    return NotImplemented


def kthvalue(x: torch.Tensor, k: int, dim: int = -1, keepdim: bool = False) -> tuple:
    if x.dim() == 0:
        return NotImplemented
    values, indices = aten.sort.stable(x, stable=True, dim=dim)
    value, index = values.narrow(dim, k - 1, 1), indices.narrow(dim, k - 1, 1)
    if not keepdim:
        value, index = value.squeeze(dim), index.squeeze(dim)
    return value, index


def unbatched_avg_pool(op: Any, spatial: int) -> Callable:
    """``op`` (``avg_pool{1,2,3}d``) of an input without its batch dim
    (``(C, L)``, ``(C, H, W)``, ``(C, D, H, W)``), which ATen accepts, as the
    pool of a batch of one: torch-mlir lowers only the batched form (its
    ``linalg.pooling_nchw_sum`` of a 3-D input is refused by the verifier)."""

    def decomposition(x: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        if x.dim() != spatial + 1:
            return NotImplemented
        # reshape, not (un)squeeze: torch-mlir's squeeze entry makes a prims op.
        out = op(x.reshape(1, *x.shape), *args, **kwargs)
        return out.reshape(out.shape[1:])

    return decomposition


def _triple(value: Any) -> list[int]:
    values = [value] if isinstance(value, int) else list(value)
    return values * 3 if len(values) == 1 else values


def avg_pool3d_as_2d(
    x: torch.Tensor,
    kernel_size: Any,
    stride: Any = (),
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Any:
    """avg_pool3d of (N, C, D, H, W) as two 2-D poolings: each depth plane's
    rows and columns (``(N, C * D, H, W)``), then the depth (a ``(kd, 1)``
    window over ``(N, C, D, H' * W')``). torch-mlir lowers avg_pool3d to a
    channels-last ``linalg.pooling_ndhwc_sum`` between two transposes, which
    lowerline-tile-and-fuse does not plan (scalar loops); the 2-D poolings
    are its NCHW window nests. The same average: a window's element count
    (clipped by padding, ceil mode) is the product of its counts per axis,
    so the mean of the planes' means is the mean; with ``divisor_override``
    the planes are summed (divisor 1) and the depth pass divides."""
    if x.dim() != 5:
        return NotImplemented
    k, p = _triple(kernel_size), _triple(padding)
    s = _triple(stride) if stride else k
    n, c, d, h, w = x.shape
    planes = aten.avg_pool2d.default(
        x.reshape(n, c * d, h, w),
        k[1:],
        s[1:],
        p[1:],
        ceil_mode,
        count_include_pad,
        1 if divisor_override else None,
    )
    rows, columns = planes.shape[-2:]
    depth = aten.avg_pool2d.default(
        planes.reshape(n, c, d, rows * columns),
        [k[0], 1],
        [s[0], 1],
        [p[0], 0],
        ceil_mode,
        count_include_pad,
        divisor_override,
    )
    return depth.reshape(n, c, depth.shape[2], rows, columns)


UNBATCHED_AVG_POOLS = {
    aten.avg_pool1d.default: 1,
    aten.avg_pool2d.default: 2,
    aten.avg_pool3d.default: 3,
}


def cdist_forward(x1: torch.Tensor, x2: torch.Tensor, p: float, compute_mode: Any = None) -> Any:
    """``aten._cdist_forward`` (``torch.cdist``): the p-norm of every pair
    of rows, ``x1`` ``(..., P, M)`` against ``x2`` ``(..., R, M)``, as a
    broadcast difference reduced over ``M``; neither torch's nor
    torch-mlir's table decomposes it. ``compute_mode`` picks eager's
    matmul form for p=2 (``|a|^2 + |b|^2 - 2ab``), which rounds worse near
    equal rows; the difference form is exact there and otherwise agrees to
    rounding."""
    if not x1.dtype.is_floating_point:
        return NotImplemented
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    if p == 0:
        return (diff != 0).sum(-1).to(diff.dtype)
    if p == math.inf:
        return diff.abs().amax(-1)
    if p == 1:
        return diff.abs().sum(-1)
    if p == 2:
        return (diff * diff).sum(-1).sqrt()
    return diff.abs().pow(p).sum(-1).pow(1.0 / p)


def pdist_forward(x: torch.Tensor, p: float = 2.0) -> Any:
    """``aten._pdist_forward`` (``F.pdist``): the distances of every pair of
    rows ``i < j`` of ``x`` ``(N, M)``, in row-major order, as the rows of the
    upper triangle of ``cdist_forward(x, x)`` joined. Neither torch's nor
    torch-mlir's table decomposes it. Not for a dynamic ``N`` (the number of
    pieces follows it)."""
    rows = x.shape[0]
    if not isinstance(rows, int) or not x.dtype.is_floating_point:
        return NotImplemented
    full = cdist_forward(x, x, p)
    if rows < 2:
        return full.reshape(-1)[:0]
    return torch.cat([full[i, i + 1 :] for i in range(rows - 1)])


def conv_tbc(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, pad: int = 0) -> Any:
    # input (time, batch, channels), weight (kernel, in, out): conv1d's NCL and OIK.
    out = torch.nn.functional.conv1d(x.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)
    return out.permute(2, 0, 1)


def tile(x: torch.Tensor, dims: list[int]) -> torch.Tensor:
    if all(dims):
        return NotImplemented
    rank = max(x.dim(), len(dims))
    sizes = [1] * (rank - x.dim()) + list(x.shape)
    repeats = [1] * (rank - len(dims)) + list(dims)
    # Repeated first, emptied last: torch-mlir's import dies on a view or
    # repeat of a tensor with no elements, not on a slice to none.
    x = x.reshape(sizes).repeat([r or 1 for r in repeats])
    for dim, repeat in enumerate(repeats):
        if not repeat:
            x = x.narrow(dim, 0, 0)
    return x


def reshape_alias(x: torch.Tensor, size: list[int], stride: list[int]) -> torch.Tensor:
    return aten.as_strided.default(x, size, stride)


def _is_nan(x: torch.Tensor | float) -> torch.Tensor | bool:
    if isinstance(x, torch.Tensor):
        return torch.isnan(x) if x.is_floating_point() else torch.zeros_like(x, dtype=torch.bool)
    return math.isnan(x)


def maximum(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    # std::max(a, b) is `a < b ? b : a`; a NaN in either operand is the result.
    return torch.where((a < b) | _is_nan(b), b, a)


def minimum(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.where((b < a) | _is_nan(b), b, a)


def clamp(x: torch.Tensor, min: Any = None, max: Any = None) -> torch.Tensor:
    # torch._refs.clamp: a NaN input stays NaN, a NaN bound gives NaN.
    if min is not None:
        x = torch.where((x >= min) | _is_nan(x), x, min)
    if max is not None:
        x = torch.where((x <= max) | _is_nan(x), x, max)
    return x


def hardtanh(x: torch.Tensor, min_val: float = -1.0, max_val: float = 1.0) -> torch.Tensor:
    return clamp(x, min_val, max_val)


# ATen's float pow kernel (pow_tensor_scalar_optimized_kernel) computes
# these exponents with multiplies and roots, not pow.
_FLOAT_POWERS: dict[float, Callable[[torch.Tensor], torch.Tensor]] = {
    2.0: lambda x: x * x,
    3.0: lambda x: x * x * x,
    0.5: torch.sqrt,
    -0.5: torch.rsqrt,
    # Not torch.reciprocal: torch-mlir's lowering asserts that x is not 0.
    -1.0: lambda x: torch.ones_like(x) / x,
    -2.0: lambda x: torch.ones_like(x) / (x * x),
}


def pow_tensor_scalar(x: torch.Tensor, exponent: Any) -> torch.Tensor:
    if x.is_floating_point():
        number = isinstance(exponent, int | float) and not isinstance(exponent, bool)
        power = _FLOAT_POWERS.get(float(exponent)) if number else None
        return power(x) if power is not None else NotImplemented
    if x.dtype == torch.bool:
        return NotImplemented
    if not isinstance(exponent, int) or isinstance(exponent, bool) or exponent < 0:
        return NotImplemented
    result = torch.ones_like(x)
    base = x
    while exponent:
        if exponent & 1:
            result = result * base
        exponent >>= 1
        if exponent:
            base = base * base
    return result


def pow_tensor_tensor(x: torch.Tensor, exponent: torch.Tensor) -> Any:
    """Integer ``pow`` of integer exponents (torch-mlir has no lowering), as
    ATen's ``powi`` (``aten/src/ATen/native/Pow.h``) computes it:
    square-and-multiply, wrapping as the integer type does, over every bit an
    exponent of the type can have (a squaring past the highest set bit
    changes nothing); a negative exponent gives 1 for a base of 1, +-1 for
    -1 (by its parity) and 0 otherwise. Other types keep the op."""
    dtype = torch.result_type(x, exponent)
    if dtype.is_floating_point or dtype.is_complex or dtype == torch.bool:
        return NotImplemented
    value, bits = torch.broadcast_tensors(x.to(dtype), exponent.to(dtype))
    odd = torch.bitwise_and(bits, 1) != 0
    base = value
    result = torch.ones_like(value)
    steps, remaining = torch.iinfo(dtype).bits - int(dtype.is_signed), bits
    for step in range(steps):
        set_bit = odd if step == 0 else torch.bitwise_and(remaining, 1) != 0
        result = torch.where(set_bit, result * base, result)
        # The .Tensor_Scalar overload is not defined in torch-mlir.
        remaining = torch.bitwise_right_shift(remaining, torch.ones_like(remaining))
        base = base * base
    if not dtype.is_signed:
        return result
    one = torch.ones_like(result)
    minus_one = torch.where(odd, -one, one)
    negative = torch.where(
        value == 1, one, torch.where(value == -1, minus_one, torch.zeros_like(one))
    )
    return torch.where(bits < 0, negative, result)


def convolution(
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    stride: Any,
    padding: Any,
    dilation: Any,
    transposed: bool,
    output_padding: Any,
    groups: int,
) -> Any:
    # Only a convolution with no input channels; eager refuses a transposed one.
    if transposed or x.shape[1] != 0 or weight.shape[1] != 0:
        return NotImplemented
    spatial = len(weight.shape) - 2

    def per_dim(values: Any) -> list[int]:
        values = list(values)
        return values * spatial if len(values) == 1 else values

    sizes = [
        (size + 2 * p - d * (k - 1) - 1) // s + 1
        for size, k, s, p, d in zip(
            x.shape[2:],
            weight.shape[2:],
            per_dim(stride),
            per_dim(padding),
            per_dim(dilation),
            strict=True,
        )
    ]
    # ATen's shape: no output channels either (the bias is not added). Made
    # from the input: torch-mlir cannot lower an empty `new_zeros`
    # (aten.empty_strided), and the reduction and broadcast are empty loops.
    empty = x.sum(dim=tuple(range(2, x.dim())), keepdim=True)
    return empty.expand(x.shape[0], 0, *sizes).clone()


def _reduced_dims(x: torch.Tensor, dim: Any) -> list[int]:
    if dim is None:
        return list(range(x.dim()))
    dims = [dim] if isinstance(dim, int) else list(dim)
    return sorted({d % max(x.dim(), 1) for d in dims}) or list(range(x.dim()))


def _moments(
    x: torch.Tensor, dims: list[int], correction: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """(variance, mean) over ``dims``, kept as unit dims, in ``x``'s type."""
    count = 1
    for d in dims:
        count *= x.shape[d]
    first = x
    for d in dims:
        first = first.narrow(d, 0, 1)
    # A non-finite first element would turn every deviation into NaN (inf -
    # inf). (torch-mlir has no lowering of isfinite: |x| < inf is false for NaN.)
    shift = torch.where(first.abs() < math.inf, first, torch.zeros_like(first))
    mean = shift + (x - shift).sum(dims, keepdim=True) / count
    deviation = x - mean
    # torch divides by max(0, N - correction): a zero divisor gives inf or NaN.
    divisor = max(count - correction, 0)
    return (deviation * deviation).sum(dims, keepdim=True) / divisor, mean


def _row_moments_apply(x: torch.Tensor, correction: Any) -> bool:
    """Whether the f32 moments decomposition handles this var/std/var_mean."""
    if x.dtype != torch.float32 or x.dim() == 0 or x.numel() == 0:
        return False
    return isinstance(correction, int | float | None)


def _squeezed(t: torch.Tensor, dims: list[int], keepdim: bool) -> torch.Tensor:
    return t if keepdim else t.squeeze(dims)


def var_mean_correction(
    x: torch.Tensor, dim: Any = None, *, correction: Any = None, keepdim: bool = False
) -> Any:
    if not _row_moments_apply(x, correction):
        return NotImplemented
    dims = _reduced_dims(x, dim)
    var, mean = _moments(x, dims, 1 if correction is None else correction)
    return _squeezed(var, dims, keepdim), _squeezed(mean, dims, keepdim)


def var_correction(
    x: torch.Tensor, dim: Any = None, *, correction: Any = None, keepdim: bool = False
) -> Any:
    moments = var_mean_correction(x, dim, correction=correction, keepdim=keepdim)
    return moments if moments is NotImplemented else moments[0]


def std_correction(
    x: torch.Tensor, dim: Any = None, *, correction: Any = None, keepdim: bool = False
) -> Any:
    var = var_correction(x, dim, correction=correction, keepdim=keepdim)
    return var if var is NotImplemented else torch.sqrt(var)


def vector_norm(
    x: torch.Tensor,
    ord: Any = 2,
    dim: Any = None,
    keepdim: bool = False,
    *,
    dtype: torch.dtype | None = None,
) -> Any:
    """L2, L1, inf, -inf and 0 norms as plain reductions (others: NotImplemented)."""
    if dtype is not None:
        x = x.to(dtype)
    if not x.is_floating_point() or ord not in (0, 1, 2, math.inf, -math.inf):
        return NotImplemented
    if x.numel() == 0 and ord in (math.inf, -math.inf):
        return NotImplemented  # torch's error (or its empty result) stays torch's
    dims = _reduced_dims(x, dim)
    if ord == 2:
        return torch.sqrt((x * x).sum(dims, keepdim=keepdim))
    if ord == 1:
        return x.abs().sum(dims, keepdim=keepdim)
    if ord == 0:
        return (x != 0).to(x.dtype).sum(dims, keepdim=keepdim)
    if ord == math.inf:
        return x.abs().amax(dims, keepdim=keepdim)
    return x.abs().amin(dims, keepdim=keepdim)


def _arg_extreme(largest: bool) -> Callable:
    def decomposition(x: torch.Tensor, dim: Any = None, keepdim: bool = False) -> Any:
        if not x.is_floating_point() or x.numel() == 0:
            return NotImplemented
        source = x
        if dim is None:
            x, dim = x.reshape(-1), 0
        dim = dim % max(x.dim(), 1)
        if x.dim() == 0:
            return torch.zeros((), dtype=torch.int64)
        extreme = x.amax(dim, keepdim=True) if largest else x.amin(dim, keepdim=True)
        # A NaN is torch's extreme either way; x != x holds only for NaN.
        hit = (x == extreme) | (x != x)
        shape = [1] * x.dim()
        shape[dim] = x.shape[dim]
        index = torch.arange(x.shape[dim], dtype=torch.int64).reshape(shape)
        first = torch.where(hit, index, x.shape[dim]).amin(dim, keepdim=keepdim)
        if keepdim and source.dim() != x.dim():  # dim=None, keepdim: all ones
            return first.reshape([1] * source.dim())
        return first

    return decomposition


def native_group_norm(fallback: Callable | None) -> Callable:
    """Group norm in float32 with the statistics and the normalization in the
    ``(N, G, C/G, HW)`` view, reshaped once at the end."""

    def decomposition(
        x: torch.Tensor,
        weight: torch.Tensor | None,
        bias: torch.Tensor | None,
        n: int,
        c: int,
        hw: int,
        group: int,
        eps: float,
    ) -> Any:
        if x.dtype != torch.float32 or x.numel() == 0 or c % group:
            return fallback(x, weight, bias, n, c, hw, group, eps) if fallback else NotImplemented
        grouped = x.reshape(n, group, c // group, hw)
        var, mean = _moments(grouped, [2, 3], 0)
        rstd = torch.rsqrt(var + eps)
        out = (grouped - mean) * rstd
        if weight is not None:
            out = out * weight.reshape(1, group, c // group, 1)
        if bias is not None:
            out = out + bias.reshape(1, group, c // group, 1)
        return out.reshape(x.shape), mean.reshape(n, group), rstd.reshape(n, group)

    return decomposition


def randint_low(low: Any, high: Any, size: Any, **kwargs: Any) -> Any:
    """``randint(low, high)`` as ``low + randint(0, high - low)`` drawn as
    int64, then converted to its dtype. torch-mlir lowers it to the uniform
    sample of [low, high) converted toward zero, which is no integer draw
    for a float dtype (``dtype=float64`` gave 0.00016 and 999.99994) and,
    below zero, rounds up (``randint(-3, 4)`` never gave -3 and gave 0 twice
    as often). A draw from 0 of int64 is kept."""
    dtype = kwargs.get("dtype") or torch.int64
    if (isinstance(low, int) and low == 0) and dtype == torch.int64:
        return NotImplemented
    drawn = aten.randint.low(0, high - low, size, **{**kwargs, "dtype": torch.int64})
    return aten._to_copy.default(drawn + low, dtype=dtype)


def randint(high: Any, size: Any, **kwargs: Any) -> Any:
    """``randint(high)`` is ``randint(0, high)`` (``randint_low``)."""
    return randint_low(0, high, size, **kwargs)


def to_copy_via_f32(fallback: Callable | None) -> Callable:
    """``_to_copy`` f64 -> f16/bf16 as ATen does it: through float32."""

    def decomposition(x: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        if x.dtype != torch.float64 or kwargs.get("dtype") not in HALF or args:
            return fallback(x, *args, **kwargs) if fallback else NotImplemented
        single = aten._to_copy.default(x, **{**kwargs, "dtype": torch.float32})
        return aten._to_copy.default(single, **kwargs)

    return decomposition


def float_to_uint8_via_int32(x: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
    """``_to_copy`` of floats to uint8 through int32. torch-mlir converts
    floats to uint8 with ``arith.fptosi`` to ``i8``, whose result is poison
    from 128 up: LLVM then drops a clamp to 255 before it (the clamp can only
    matter where the conversion is poison), so ``clamp(x, 0, 255).to(uint8)``
    wrapped 300 to 44 and 127.5 + 128 to 0. ``fptosi`` to ``i32`` is exact
    for every value eager defines (truncation toward zero, 0..255), and
    ``trunci`` to ``i8`` keeps its bits."""
    if kwargs.get("dtype") != torch.uint8 or not x.dtype.is_floating_point or args:
        return NotImplemented
    wide = aten._to_copy.default(x, dtype=torch.int32)
    return aten._to_copy.default(wide, **kwargs)


def _half_dtype(values: Any) -> torch.dtype | None:
    for value in pytree.tree_leaves(values):
        if isinstance(value, torch.Tensor) and value.dtype in HALF:
            return value.dtype
    return None


def _half_to_float(op: Any, args: tuple, kwargs: dict[str, Any]) -> bool:
    """Whether a softmax is asked for a float32 result of half inputs."""
    if op not in (aten._softmax.default, aten._log_softmax.default):
        return False
    return bool(kwargs.get("half_to_float", args[2] if len(args) > 2 else False))


def accumulate_in_f32(op: Any, fallback: Callable | None) -> Callable:
    """``op`` computed in float32 and rounded once, for half-precision inputs."""

    def decomposition(*args: Any, **kwargs: Any) -> Any:
        half = _half_dtype((args, kwargs))
        keep = kwargs.get("dtype") not in (None, half) or _half_to_float(op, args, kwargs)
        if half is None or keep:
            return fallback(*args, **kwargs) if fallback else NotImplemented
        kwargs = {k: v for k, v in kwargs.items() if k != "dtype"}

        def widen(v: Any) -> Any:
            return v.to(torch.float32) if isinstance(v, torch.Tensor) and v.dtype == half else v

        def narrow(v: Any) -> Any:
            is_f32 = isinstance(v, torch.Tensor) and v.dtype == torch.float32
            return v.to(half) if is_f32 else v

        result = op(*pytree.tree_map(widen, args), **pytree.tree_map(widen, kwargs))
        return pytree.tree_map(narrow, result)

    return decomposition


def threshold_backward(grad: torch.Tensor, x: torch.Tensor, threshold: Any) -> torch.Tensor:
    """0 where ``x <= threshold``, else the gradient, in the type that the
    gradient and ``x`` promote to, as ATen's kernel computes it."""
    dtype = torch.result_type(grad, x)
    return torch.where(x <= threshold, 0, grad.to(dtype))


def where_scalar(condition: torch.Tensor, a: Any, b: Any) -> torch.Tensor:
    dtype = torch.result_type(a, b)  # int64, the default float, bool: as eager
    first = torch.full(condition.shape, a, dtype=dtype)
    return torch.where(condition, first, torch.scalar_tensor(b, dtype=dtype))


def _one(values: Any, default: Any = None) -> Any:
    """The single value of a 1-D pooling parameter (an int or a 1-list)."""
    if isinstance(values, int):
        return values
    values = list(values)
    return values[0] if values else default


def _pool1d_as_2d(x: torch.Tensor, pool: Callable[[torch.Tensor], Any]) -> Any:
    """``pool`` of ``x`` (``(N, C, L)`` or ``(C, L)``) viewed ``(N, C, 1, L)``,
    each result viewed back."""
    shape = list(x.shape)
    batched = x.reshape([1] * (4 - x.dim() - 1) + shape[:-1] + [1, shape[-1]])
    result = pool(batched)

    def back(t: torch.Tensor) -> torch.Tensor:
        return t.reshape([*shape[:-1], t.shape[-1]])

    return tuple(back(t) for t in result) if isinstance(result, tuple) else back(result)


def _max_pool1d(with_indices: bool) -> Callable:
    op = aten.max_pool2d_with_indices.default if with_indices else aten.max_pool2d.default

    def decomposition(
        x: torch.Tensor,
        kernel_size: Any,
        stride: Any = (),
        padding: Any = 0,
        dilation: Any = 1,
        ceil_mode: bool = False,
    ) -> Any:
        if x.dim() not in (2, 3):
            return NotImplemented
        kernel = _one(kernel_size)
        step = _one(stride, kernel)
        return _pool1d_as_2d(
            x,
            lambda t: op(
                t, [1, kernel], [1, step], [0, _one(padding)], [1, _one(dilation)], ceil_mode
            ),
        )

    return decomposition


def _adaptive_windows(length: int, out: int) -> torch.Tensor:
    """``(out, widest)`` source positions of the adaptive windows
    (``_window_bounds``), each padded with its last position (a repeat
    changes neither the max nor its first index).
    Made of ``arange``s: a tensor constant made here would be a lifted
    constant ``run_decompositions`` refuses."""
    index = torch.arange(out, dtype=torch.int64).unsqueeze(1)
    starts = index * length // out
    ends = ((index + 1) * length + out - 1) // out
    widest = max(end - start for start, end in _window_bounds(length, out))
    offsets = torch.arange(widest, dtype=torch.int64).unsqueeze(0)
    return torch.minimum(starts + offsets, ends - 1)


def _window_bounds(length: int, out: int) -> list[tuple[int, int]]:
    """ATen's adaptive windows ``[floor(i * L / out), ceil((i + 1) * L / out))``."""
    return [(i * length // out, -(-(i + 1) * length // out)) for i in range(out)]


def _equal_windows(length: int, out: int) -> bool:
    """Whether the adaptive windows of ``length`` -> ``out`` all have one
    size and one stride (all torch-mlir's lowering handles)."""
    bounds = _window_bounds(length, out)
    steps = {b[0] - a[0] for a, b in itertools.pairwise(bounds)}
    return len({end - start for start, end in bounds}) == 1 and len(steps) <= 1


def _adaptive_max_pool(x: torch.Tensor, sizes: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """(values, indices) of ATen's adaptive max pool over ``x``'s last
    ``len(sizes)`` dims: each window gathered (``index_select`` per dim, its
    positions in ``_adaptive_windows``), its max, and the flat index of the
    first max in row-major order (of the last NaN: ATen takes a NaN over any
    number)."""
    lead, spatial = list(x.shape[: x.dim() - len(sizes)]), list(x.shape[x.dim() - len(sizes) :])
    windows, positions = x, torch.zeros((), dtype=torch.int64)
    for k, (length, out) in enumerate(zip(spatial, sizes, strict=True)):
        window = _adaptive_windows(length, out)
        dim = len(lead) + 2 * k  # dims before are (out, widest) pairs
        shape = list(windows.shape)
        windows = windows.index_select(dim, window.reshape(-1))
        windows = windows.reshape(shape[:dim] + list(window.shape) + shape[dim + 1 :])
        # Flat row-major position: earlier dims' positions times this length.
        positions = positions.unsqueeze(-1).unsqueeze(-1) * length + window
    # (..., o1, w1, o2, w2, ...) -> (..., o1, o2, ..., w1 * w2 * ...)
    count = len(sizes)
    order = [2 * k for k in range(count)] + [2 * k + 1 for k in range(count)]
    windows = windows.permute(list(range(len(lead))) + [len(lead) + d for d in order])
    windows = windows.reshape(*lead, *sizes, -1)
    positions = positions.permute(order).reshape(*sizes, -1)
    values = windows.amax(-1)
    numel = math.prod(spatial)
    first = torch.where(windows == values.unsqueeze(-1), positions, numel).amin(-1)
    last_nan = torch.where(torch.isnan(windows), positions, -1).amax(-1)
    return values, torch.where(last_nan >= 0, last_nan, first)


def _adaptive_max(spatial: int, always: bool) -> Callable:
    """The entry of ``adaptive_max_pool{spatial}d``: every use where
    ``always``, else only windows of unequal sizes or strides."""

    def decomposition(x: torch.Tensor, output_size: Any) -> Any:
        sizes = [output_size] * spatial if isinstance(output_size, int) else list(output_size)
        lengths = list(x.shape[x.dim() - spatial :])
        if x.dim() not in (spatial + 1, spatial + 2) or not all(lengths) or min(sizes) <= 0:
            return NotImplemented
        if not always and all(_equal_windows(n, o) for n, o in zip(lengths, sizes, strict=True)):
            return NotImplemented
        return _adaptive_max_pool(x, sizes)

    return decomposition


_SCATTER_REDUCTIONS = {"add": "sum", "multiply": "prod"}


def scatter_reduce_legacy(
    x: torch.Tensor, dim: int, index: torch.Tensor, src: Any, *, reduce: str
) -> torch.Tensor:
    if reduce not in _SCATTER_REDUCTIONS:
        raise ValueError(f"aten.scatter: reduce={reduce!r}; it takes 'add' or 'multiply'")
    if not isinstance(src, torch.Tensor):  # scatter.value_reduce
        src = torch.full(index.shape, src, dtype=x.dtype)
    return aten.scatter_reduce.two(x, dim, index, src, _SCATTER_REDUCTIONS[reduce])


def dequantize(x: torch.Tensor) -> Any:
    return NotImplemented if x.is_quantized else x.to(torch.float32)


def _view_copy(view: Any) -> Callable:
    def decomposition(*args: Any, **kwargs: Any) -> Any:
        result = view(*args, **kwargs)
        if isinstance(result, torch.Tensor):
            return result.clone()
        return [t.clone() for t in result]  # split_copy, unbind_copy: a list

    return decomposition


# (the copying op, its view): torch-mlir lowers only the view.
VIEW_COPIES = (
    (aten._reshape_alias_copy.default, aten._reshape_alias.default),
    (aten.as_strided_copy.default, aten.as_strided.default),
    (aten.detach_copy.default, aten.detach.default),
    (aten.permute_copy.default, aten.permute.default),
    (aten.select_copy.int, aten.select.int),
    (aten.slice_copy.Tensor, aten.slice.Tensor),
    (aten.split_copy.Tensor, aten.split.Tensor),
    (aten.unbind_copy.int, aten.unbind.int),
    (aten.view_copy.default, aten.view.default),
    (aten.view_copy.dtype, aten.view.dtype),
)


def _matrix_abs_sums(x: torch.Tensor, ord: float, dims: list[int], keepdim: bool) -> Any:
    """The induced 1- and inf-norms (and their -1/-inf minima): the extreme over
    one dim of the absolute sums over the other (columns for 1, rows for inf)."""
    summed, other = (dims[0], dims[1]) if abs(ord) == 1 else (dims[1], dims[0])
    sums = x.abs().sum(summed, keepdim=True)
    extreme = sums.amax(other, keepdim=True) if ord > 0 else sums.amin(other, keepdim=True)
    return extreme if keepdim else extreme.squeeze(dims)


def linalg_norm(
    x: torch.Tensor, ord: Any = None, dim: Any = None, keepdim: bool = False, *, dtype: Any = None
) -> Any:
    if dtype is not None:
        x = x.to(dtype)
    dims = [dim] if isinstance(dim, int) else (list(dim) if dim is not None else None)
    if dims is not None:
        dims = [d % max(x.dim(), 1) for d in dims]
    if ord is None or ord == "fro":  # the 2-norm of the (flattened) elements
        return torch.linalg.vector_norm(x, 2, dims, keepdim)
    matrix = len(dims) == 2 if dims is not None else x.dim() == 2
    if not matrix and not isinstance(ord, str):
        return torch.linalg.vector_norm(x, ord, dims, keepdim)
    if matrix and ord in (1, -1, math.inf, -math.inf):
        return _matrix_abs_sums(x, ord, dims or [0, 1], keepdim)
    return NotImplemented  # "nuc", 2, -2: singular values


def diagonal_scatter(
    x: torch.Tensor, src: torch.Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1
) -> torch.Tensor:
    d1, d2 = dim1 % x.dim(), dim2 % x.dim()
    n1, n2 = x.shape[d1], x.shape[d2]
    if src.shape[-1] == 0:
        return x.clone()
    rows = torch.arange(n1, dtype=torch.int64).unsqueeze(1)
    cols = torch.arange(n2, dtype=torch.int64).unsqueeze(0)
    on_diagonal = (cols - rows) == offset
    # Each place's position along the diagonal (anything off it: masked out).
    along = (rows + 0 * cols) if offset >= 0 else (cols + 0 * rows)
    along = torch.clamp(along, max=src.shape[-1] - 1)
    spread = src.index_select(-1, along.reshape(-1)).reshape(*src.shape[:-1], n1, n2)
    spread = spread.movedim((-2, -1), (d1, d2))
    mask = on_diagonal.reshape(n1, n2, *[1] * (x.dim() - 2)).movedim((0, 1), (d1, d2))
    return torch.where(mask, spread, x)


def as_strided_scatter(
    x: torch.Tensor, src: torch.Tensor, size: Any, stride: Any, storage_offset: Any = None
) -> torch.Tensor:
    start = storage_offset or 0
    last = start + sum((n - 1) * s for n, s in zip(size, stride, strict=True))
    if any(n == 0 for n in size):
        return x.clone()
    if start < 0 or last >= x.numel():
        raise ValueError(
            f"aten.as_strided_scatter: size {list(size)}, stride {list(stride)} and offset "
            f"{start} reach element {last} of an input of {x.numel()}"
        )
    # The input's storage is its elements in order: the library's tensors are contiguous.
    positions = torch.full((), start, dtype=torch.int64)
    for n, s in zip(size, stride, strict=True):
        positions = positions.unsqueeze(-1) + torch.arange(n, dtype=torch.int64) * s
    flat = aten.index_put.default(x.reshape(-1), [positions.reshape(-1)], src.reshape(-1))
    return flat.reshape(x.shape)


# Giles, "Approximating the erfinv function" (GPU Computing Gems, 2010):
# single-precision polynomials in w = -log(1 - y^2), for w < 5 and beyond.
_ERFINV_CENTRAL = (
    2.81022636e-08,
    3.43273939e-07,
    -3.5233877e-06,
    -4.39150654e-06,
    0.00021858087,
    -0.00125372503,
    -0.00417768164,
    0.246640727,
    1.50140941,
)
_ERFINV_TAIL = (
    -0.000200214257,
    0.000100950558,
    0.00134934322,
    -0.00367342844,
    0.00573950773,
    -0.0076224613,
    0.00943887047,
    1.00167406,
    2.83297682,
)


def _horner(coefficients: tuple[float, ...], t: torch.Tensor) -> torch.Tensor:
    result = torch.full_like(t, coefficients[0])
    for c in coefficients[1:]:
        result = c + result * t
    return result


def erfinv(y: torch.Tensor) -> Any:
    if not y.is_floating_point():
        return NotImplemented
    w = -torch.log((1 - y) * (1 + y))
    central = _horner(_ERFINV_CENTRAL, w - 2.5)
    tail = _horner(_ERFINV_TAIL, torch.sqrt(w) - 3)
    x = torch.where(w < 5, central, tail) * y
    for _ in range(2):  # Newton steps on erf(x) = y, as ATen's calc_erfinv takes
        x = x - (torch.erf(x) - y) / ((2 / math.sqrt(math.pi)) * torch.exp(-x * x))
    x = torch.where(y.abs() == 1, y * math.inf, x)
    return torch.where(y.abs() > 1, math.nan, x)


def erfc(x: torch.Tensor) -> torch.Tensor:
    if x.is_complex():
        return NotImplemented
    if not x.is_floating_point():
        x = x.to(torch.get_default_dtype())
    return 1 - torch.erf(x)


# Ops torch-mlir has no lowering of, whose entry in torch's own table
# (``torch._decomp``) is made of ops it lowers.
# (Its entries of diagonal_scatter, as_strided_scatter, erfinv and
# empty_strided make prims ops torch-mlir does not lower either: each has an
# entry here.)
TORCH_ENTRIES = (aten.roll.default,)


def empty_strided(size: Any, stride: Any, **options: Any) -> torch.Tensor:
    # Uninitialized either way; the library's tensors are contiguous.
    return aten.empty.memory_format(size, **options)


def new_empty_strided(x: torch.Tensor, size: Any, stride: Any, **options: Any) -> torch.Tensor:
    return aten.new_empty.default(x, size, **options)


def isfinite(x: torch.Tensor) -> Any:
    if x.is_complex():  # both parts finite
        return (torch.view_as_real(x).abs() < math.inf).all(dim=-1)
    if not x.is_floating_point():
        return torch.ones_like(x, dtype=torch.bool)
    return x.abs() < math.inf


def real_reciprocal(complex_entry: Callable[..., Any]) -> Callable[..., Any]:
    def decomposition(x: torch.Tensor) -> Any:
        if x.is_complex():
            return complex_entry(x)
        if not x.is_floating_point():
            x = x.to(torch.get_default_dtype())
        # A 0-d one: aten.div broadcasts it (1 / x would call reciprocal again).
        return aten.div.Tensor(torch.ones((), dtype=x.dtype), x)

    return decomposition


# The integer types whose matmuls torch-mlir's lowering dies on (int16 imports).
NARROW_INTEGERS = (torch.int8, torch.uint8)


def narrow_integer_matmul(op: Any) -> Callable:
    def decomposition(a: torch.Tensor, b: torch.Tensor) -> Any:
        if a.dtype not in NARROW_INTEGERS or b.dtype != a.dtype:
            return NotImplemented
        # The same residue as ATen's wrapping accumulation in the narrow type.
        return op(a.to(torch.int32), b.to(torch.int32)).to(a.dtype)

    return decomposition


def _first_of(entry: Callable[..., Any], fallback: Callable[..., Any] | None) -> Callable:
    """``entry``, or ``fallback`` where ``entry`` keeps the op."""
    if fallback is None:
        return entry

    def decomposition(*args: Any, **kwargs: Any) -> Any:
        result = entry(*args, **kwargs)
        return fallback(*args, **kwargs) if result is NotImplemented else result

    return decomposition


def split_dim(a: torch.Tensor, dim: int, outer_length: int) -> torch.Tensor:
    dim = dim % a.dim()
    inner = a.shape[dim] // outer_length
    return aten.view.default(a, [*a.shape[:dim], outer_length, inner, *a.shape[dim + 1 :]])


def squeeze(a: torch.Tensor, dimensions: list[int]) -> torch.Tensor:
    """The view without the (unit) dims listed. Not ``aten.squeeze.dims``:
    torch decomposes that into ``prims.squeeze`` again."""
    dropped = {d % a.dim() for d in dimensions}
    return aten.view.default(a, [n for d, n in enumerate(a.shape) if d not in dropped])


def collapse_view(a: torch.Tensor, start: int, end: int) -> torch.Tensor:
    return aten.flatten.using_ints(a, start, end)  # both ends inclusive, as flatten's


def broadcast_in_dim(a: torch.Tensor, shape: list[int], dims: list[int]) -> torch.Tensor:
    sizes = [1] * len(shape)
    for source, target in enumerate(dims):
        sizes[target] = a.shape[source]
    return aten.expand.default(aten.view.default(a, sizes), list(shape))


prims = torch.ops.prims
# Non-ATen views that functionalization refuses, and their ATen views.
PRIM_VIEWS: dict[Any, Callable] = {
    prims.split_dim.default: split_dim,
    prims.collapse_view.default: collapse_view,
    prims.view_of.default: aten.alias.default,
    prims.transpose.default: aten.permute.default,
    prims.broadcast_in_dim.default: broadcast_in_dim,
    prims.squeeze.default: squeeze,
}


def decomposition_table() -> dict:
    from torch_mlir.extras.fx_decomp_util import get_decomposition_table

    table = dict(get_decomposition_table())
    # Before the f32 wrappers, which call the op again for half inputs.
    table[aten._cdist_forward.default] = cdist_forward
    table[aten._pdist_forward.default] = pdist_forward
    for op, spatial in UNBATCHED_AVG_POOLS.items():
        table[op] = unbatched_avg_pool(op, spatial)
    pool3d = aten.avg_pool3d.default
    table[pool3d] = _first_of(table[pool3d], avg_pool3d_as_2d)
    for op in ACCUMULATE_IN_F32:
        table[op] = accumulate_in_f32(op, table.get(op))
    moments = {
        aten.var.correction: var_correction,
        aten.std.correction: std_correction,
        aten.var_mean.correction: var_mean_correction,
    }
    for op, f32_moments in moments.items():
        # Half inputs are widened (ACCUMULATE_IN_F32), then decomposed here.
        table[op] = accumulate_in_f32(op, f32_moments)
    norm = aten.linalg_vector_norm.default
    table[norm] = accumulate_in_f32(norm, vector_norm)
    table[aten.argmax.default] = _arg_extreme(largest=True)
    table[aten.argmin.default] = _arg_extreme(largest=False)
    table[aten.native_group_norm.default] = native_group_norm(
        table.get(aten.native_group_norm.default)
    )
    table[aten._to_copy.default] = _first_of(
        float_to_uint8_via_int32, to_copy_via_f32(table.get(aten._to_copy.default))
    )
    table[aten.randint.default] = randint
    table[aten.randint.low] = randint_low
    table[aten.cumsum.default] = cumsum
    table[aten.gelu.default] = gelu
    table[aten.sort.stable] = sort_stable
    table[aten.cummax.default] = cummax
    table[aten.cummin.default] = cummin
    table[aten.fmod.Scalar] = fmod
    table[aten.fmod.Tensor] = fmod
    table[aten.div.Tensor_mode] = integer_floor_division
    table[aten.div.Scalar_mode] = integer_floor_division
    table[aten.maximum.default] = maximum
    table[aten.minimum.default] = minimum
    table[aten.clamp.default] = clamp
    table[aten.clamp.Tensor] = clamp
    table[aten.hardtanh.default] = hardtanh
    table[aten.pow.Tensor_Scalar] = pow_tensor_scalar
    table[aten.pow.Tensor_Tensor] = _first_of(pow_tensor_tensor, table.get(aten.pow.Tensor_Tensor))
    table[aten._reshape_alias.default] = reshape_alias
    table[aten._weight_norm_interface.default] = weight_norm_interface
    table[aten._trilinear.default] = trilinear
    table[aten.kthvalue.default] = kthvalue
    table[aten.conv_tbc.default] = conv_tbc
    table[aten.tile.default] = tile
    for nearest in (aten.upsample_nearest1d, aten.upsample_nearest2d, aten.upsample_nearest3d):
        table[nearest.default] = upsample_nearest
    table[aten.convolution.default] = convolution
    table[aten.where.Scalar] = where_scalar
    table[aten.threshold_backward.default] = threshold_backward
    table[aten.max_pool1d.default] = _max_pool1d(with_indices=False)
    table[aten.max_pool1d_with_indices.default] = _max_pool1d(with_indices=True)
    table[aten.adaptive_max_pool1d.default] = _adaptive_max(1, always=True)
    table[aten.adaptive_max_pool2d.default] = _adaptive_max(2, always=False)
    table[aten.scatter.reduce] = scatter_reduce_legacy
    table[aten.scatter.value_reduce] = scatter_reduce_legacy
    table[aten.dequantize.self] = dequantize
    for copy_op, view in VIEW_COPIES:
        table[copy_op] = _view_copy(view)
    table[aten.isfinite.default] = isfinite
    table[aten.erfinv.default] = erfinv
    table[aten.erfc.default] = erfc
    table[aten.diagonal_scatter.default] = diagonal_scatter
    table[aten.as_strided_scatter.default] = as_strided_scatter
    table[aten.linalg_norm.default] = linalg_norm
    table[aten.linalg_norm.ord_str] = linalg_norm
    table[aten.empty_strided.default] = empty_strided
    table[aten.new_empty_strided.default] = new_empty_strided
    for op in TORCH_ENTRIES:
        table[op] = TORCH_TABLE[op]
    table.update(fake_quantize.table())
    table.update(embedding_bag.table())
    table.update(quantized.table())
    for op, entry in number_comparisons.table().items():
        table[op] = _first_of(entry, table.get(op))
    for op, entry in {**complex_ops.table(), **complex_reductions.table(), **fft.table()}.items():
        # Complex operands first; other uses keep the entry already there.
        table[op] = _first_of(entry, table.get(op))
    table.update(gathers.table())
    for matmul in (aten.mm.default, aten.bmm.default):
        table[matmul] = narrow_integer_matmul(matmul)
    table.update(PRIM_VIEWS)
    reciprocal = aten.reciprocal.default
    table[reciprocal] = real_reciprocal(table[reciprocal])
    return table


# Composite ops with a CPU kernel of their own, whose entry export never runs.
KEPT_BY_EXPORT = (
    aten.upsample_nearest1d.default,
    aten.upsample_nearest2d.default,
    aten.upsample_nearest3d.default,
)


# Ops without a fake (meta) kernel: run_decompositions first runs the graph
# as it is on fake tensors (AOT autograd's metadata pass), which fails on
# them ("UnsupportedOperatorException") before any entry is consulted.
NO_FAKE_KERNEL = (
    aten.dequantize.self,
    aten.fake_quantize_per_tensor_affine_cachemask.default,
    aten._fake_quantize_per_tensor_affine_cachemask_tensor_qparams.default,
    aten.fake_quantize_per_channel_affine_cachemask.default,
)


def _entries_in_place(ep: torch.export.ExportedProgram, ops: tuple, table: dict) -> bool:
    """Make each node calling one of ``ops`` call its entry instead (the op
    where the entry keeps it); whether any did."""
    nodes = [n for n in ep.graph.nodes if n.op == "call_function" and n.target in ops]
    for node in nodes:
        node.target = _first_of(table[node.target], node.target)
    return bool(nodes)


def _static_empty(value: Any) -> bool:
    shape = value.shape if isinstance(value, torch.Tensor) else None
    return shape is not None and all(isinstance(n, int) for n in shape) and 0 in shape


def empty_values_as_zeros(graph: torch.fx.Graph) -> int:
    """Make each computed tensor with no elements an ``aten.zeros`` of its
    shape and dtype (module docstring); returns how many."""
    replaced = 0
    for node in list(graph.nodes):
        value = node.meta.get("val")
        if node.op != "call_function" or node.target is aten.zeros.default:
            continue
        if not _static_empty(value):
            continue
        options = {"dtype": value.dtype, "device": torch.device("cpu")}
        with graph.inserting_before(node):
            zeros = graph.call_function(aten.zeros.default, (list(value.shape),), options)
        zeros.meta = dict(node.meta)
        node.replace_all_uses_with(zeros)
        replaced += 1
    if replaced:
        graph.eliminate_dead_code()
    return replaced


def _decompose(ep: torch.export.ExportedProgram) -> torch.export.ExportedProgram:
    _entries_in_place(ep, NO_FAKE_KERNEL + tuple(PRIM_VIEWS), decomposition_table())
    ep = ep.run_decompositions(decomposition_table())
    table = decomposition_table()
    # Only these: a composite op whose entry keeps it for some inputs
    # (avg_pool1d) would be traced into torch's own composite kernel here.
    # The second trace calls these nodes' targets: an entry runs in place of the op.
    if not _entries_in_place(ep, KEPT_BY_EXPORT, table):
        return ep
    return ep.run_decompositions(decomposition_table())


# Overloads that take a number as a 0-d tensor, with the overload taking it
# as a number and the argument's position.
NUMBER_TENSOR_ARGUMENTS = {aten.narrow.Tensor: (aten.narrow.default, 2)}
# Ops through which a constant keeps its value (the copies export makes of a
# tensor created in ``forward``: ``lift_fresh_copy``, then ``detach_``).
_VALUE_PRESERVING = (
    aten.lift_fresh_copy.default,
    aten.detach.default,
    aten.detach_.default,
    aten.clone.default,
    aten.alias.default,
)


def _constant_value(ep: torch.export.ExportedProgram, node: Any) -> torch.Tensor | None:
    """The value of ``node`` where it is a copy of one of the program's
    constant tensors, else None."""
    while isinstance(node, torch.fx.Node) and node.target in _VALUE_PRESERVING:
        node = node.args[0]
    if not isinstance(node, torch.fx.Node) or node.op != "placeholder":
        return None
    for spec in ep.graph_signature.input_specs:
        if spec.kind.name == "CONSTANT_TENSOR" and spec.arg.name == node.name:
            return ep.constants.get(spec.target)
    return None


def constant_number_arguments(ep: torch.export.ExportedProgram) -> int:
    """Pass the numbers that ``forward`` wrote as constant 0-d tensors
    (``narrow(x, 1, torch.tensor(2), 3)``) as numbers; returns how many.

    A program read back from its file (``torch.export.load``, as the import
    worker does) no longer knows those tensors' values while it is traced
    again: the decomposition reads the number at run time
    (``_local_scalar_dense``) and guards it with assertions joined by ``&``
    and ``|`` of symbolic bools, which torch-mlir's importer cannot import
    ("Unsupported builtin function for symbolic types: and_"). The value is
    in the program's constants, so it is passed as what it is."""
    replaced = 0
    for node in list(ep.graph.nodes):
        if node.op != "call_function" or node.target not in NUMBER_TENSOR_ARGUMENTS:
            continue
        overload, position = NUMBER_TENSOR_ARGUMENTS[node.target]
        value = _constant_value(ep, node.args[position])
        if value is None or value.numel() != 1 or value.is_floating_point():
            continue
        args = list(node.args)
        args[position] = int(value.item())
        node.args, node.target = tuple(args), overload
        replaced += 1
    if replaced:
        ep.graph.eliminate_dead_code()
        ep.graph_module.recompile()
    return replaced


def decompose(ep: torch.export.ExportedProgram) -> torch.export.ExportedProgram:
    """``ep`` with the table applied, composite ops with a kernel included,
    and its computed empty tensors made zeros."""
    constant_number_arguments(ep)
    ep = _decompose(ep)
    if empty_values_as_zeros(ep.graph):
        ep.graph_module.recompile()
    return ep
