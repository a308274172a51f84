"""How far compiled results may be from eager PyTorch's, per dtype.

One table for ``lowerline compile`` (which fails when an output is outside
it) and the model zoo (python/tests/zoo, which starts each case from it).
An output element passes when ``|actual - expected| <= atol + rtol * |expected|``
(``torch.testing.assert_close``'s rule); integer and bool outputs must be equal.

Imports nothing heavy: the CLI imports torch late.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float
    reason: str

    def describe(self) -> str:
        return f"rtol={self.rtol:g}, atol={self.atol:g}"


# f32 (and f64) against eager torch: the default.
DEFAULT = Tolerance(1e-4, 1e-5, "f32 against eager torch")
# Half types: the compiled code accumulates in f32 as ATen does, but not in
# the same order, so a result next to a rounding boundary of the half type
# may round to the neighbouring value: allow two ulps (f16: 2**-10 relative,
# bf16: 2**-7).
F16 = Tolerance(2e-3, 2e-3, "two f16 ulps: f32 sums in another order")
BF16 = Tolerance(1.6e-2, 1.6e-2, "two bf16 ulps: f32 sums in another order")
EXACT = Tolerance(0.0, 0.0, "integers and bools are exact")

_BY_DTYPE = {"torch.float16": F16, "torch.bfloat16": BF16}


def for_dtype(dtype: Any) -> Tolerance:
    """The tolerance of an output of ``dtype`` (a torch dtype)."""
    if not dtype.is_floating_point:
        return EXACT
    return _BY_DTYPE.get(str(dtype), DEFAULT)


def describe_for(outputs: list[Any]) -> str:
    """The tolerances that apply to ``outputs`` (flattened), per dtype:
    ``float32: rtol=0.0001, atol=1e-05``."""
    import torch

    dtypes = dict.fromkeys(torch.as_tensor(output).dtype for output in outputs)
    parts = []
    for dtype in dtypes:
        tolerance = for_dtype(dtype)
        text = "exact" if tolerance is EXACT else tolerance.describe()
        parts.append(f"{str(dtype).removeprefix('torch.')}: {text}")
    return "; ".join(parts)


@dataclass(frozen=True)
class Mismatch:
    """The output element furthest outside its tolerance."""

    output: int  # index among the flattened outputs
    actual: float
    expected: float
    tolerance: Tolerance

    def describe(self) -> str:
        return (
            f"output #{self.output}: {self.actual!r} where eager torch gives {self.expected!r} "
            f"(allowed: {self.tolerance.describe()})"
        )


def worst_mismatch(expected: list[Any], actual: list[Any]) -> Mismatch | None:
    """The element of the flattened outputs furthest outside its tolerance
    (equal values, infinities included, and NaN where eager torch has NaN
    match); None when all are inside."""
    import torch

    worst: tuple[float, Mismatch] | None = None
    for index, (e, a) in enumerate(zip(expected, actual, strict=True)):
        e, a = torch.as_tensor(e), torch.as_tensor(a)
        if e.numel() == 0:
            continue
        tolerance = for_dtype(e.dtype)
        e64, a64 = e.double(), a.double()
        excess = (a64 - e64).abs() - (tolerance.atol + tolerance.rtol * e64.abs())
        same = (a64 == e64) | (a64.isnan() & e64.isnan())
        excess = torch.where(same, -1.0, excess.nan_to_num(nan=float("inf")))
        position = int(excess.argmax())
        over = float(excess.flatten()[position])
        if over > 0 and (worst is None or over > worst[0]):
            found = Mismatch(
                index, float(a64.flatten()[position]), float(e64.flatten()[position]), tolerance
            )
            worst = (over, found)
    return None if worst is None else worst[1]
