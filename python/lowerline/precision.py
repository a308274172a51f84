"""``lowerline.compile(..., precision="bf16")``: weights and activations in a
16-bit float type, matmuls accumulating in f32.

The module is converted in the user's process, before ``torch.export``: a
copy of it with its floating-point parameters and buffers in bf16 (or f16,
GPU targets only), wrapped so that f32 tensor inputs are rounded to that
type on the way in and its outputs widened back to f32 on the way out. The
caller's interface does not change. What the compiler then sees is a bf16
program: torch-mlir accumulates matmuls, convolutions and reductions in f32
(``lowerline.frontend.decompositions`` for the reductions), and on CPU
targets ``lowerline-fold-extf-into-contractions`` lets each matmul read the
bf16 weights and activations directly, which ``lowerline-vectorize`` turns
into ``vdpbf16ps`` where the target has AVX512-BF16.

``PrecisionReport`` is the end-to-end error of the compiled module against
the f32 module on the example inputs, measured once at compile time.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils import _pytree as pytree

PRECISIONS = ("f32", "bf16", "f16")
_DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16}


def narrow_dtype(precision: Any, target: str, gpu: bool) -> torch.dtype | None:
    """The 16-bit type ``precision`` asks for on ``target``, None for "f32";
    a ValueError names the option for anything else."""
    if not isinstance(precision, str) or precision not in PRECISIONS:
        raise ValueError(f"precision takes one of {', '.join(PRECISIONS)}; got {precision!r}")
    if precision == "f16" and not gpu:
        raise ValueError(
            f"precision='f16' is for GPU targets (cuda:sm_80, cuda:sm_90); target '{target}' "
            "is a CPU: use precision='bf16'"
        )
    return _DTYPES.get(precision)


class Narrowed(torch.nn.Module):
    """``inner`` (a copy converted to ``dtype``) between f32 inputs and outputs."""

    def __init__(self, module: torch.nn.Module, dtype: torch.dtype) -> None:
        super().__init__()
        self.inner = copy.deepcopy(module).to(dtype)
        self.dtype = dtype

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        args, kwargs = pytree.tree_map(self._narrow, (args, kwargs))
        return pytree.tree_map(_widen, self.inner(*args, **kwargs))

    def _narrow(self, value: Any) -> Any:
        if isinstance(value, torch.Tensor) and value.dtype == torch.float32:
            return value.to(self.dtype)
        return value


def _widen(value: Any) -> Any:
    if isinstance(value, torch.Tensor) and value.dtype in (torch.bfloat16, torch.float16):
        return value.float()
    return value


@dataclass(frozen=True)
class PrecisionReport:
    """The compiled 16-bit module against the f32 module on the example inputs."""

    precision: str
    max_abs_error: float  # largest |compiled - f32| over every output element
    max_reference: float  # largest |f32| over the outputs: the scale of the error
    outputs: int  # floating-point output tensors compared

    @property
    def relative_error(self) -> float:
        """``max_abs_error`` relative to the largest output magnitude."""
        return self.max_abs_error / self.max_reference if self.max_reference else 0.0

    def __str__(self) -> str:
        return (
            f"precision {self.precision}: max |error| {self.max_abs_error:.3g} against f32 "
            f"({self.relative_error:.2%} of the largest output, {self.max_reference:.3g}; "
            f"{self.outputs} output tensor(s), the example inputs)"
        )


def precision_report(
    precision: str, reference: torch.nn.Module, compiled: Any, example_inputs: tuple
) -> PrecisionReport:
    """Run ``compiled`` and the f32 ``reference`` on ``example_inputs`` and compare."""
    with torch.inference_mode():
        expected = pytree.tree_leaves(reference(*example_inputs))
        got = pytree.tree_leaves(compiled(*example_inputs))
    worst, scale, count = 0.0, 0.0, 0
    for want, have in zip(expected, got, strict=True):
        if not (isinstance(want, torch.Tensor) and want.is_floating_point()):
            continue
        count += 1
        if want.numel() == 0:
            continue
        diff = (have.double() - want.double()).abs().max().item()
        worst = diff if math.isnan(diff) else max(worst, diff)
        scale = max(scale, want.double().abs().max().item())
    return PrecisionReport(precision, worst, scale, count)
