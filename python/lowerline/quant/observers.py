"""Observers: the range of an activation from the calibration batches, and
the scale and zero point that range gives.

Each observer sees every batch's values of one activation and keeps what
its choice needs: the running extremes (``minmax``), their moving averages
(``moving_average``, torch's MovingAverageMinMaxObserver update), or, for
``percentile`` and ``mse``, an evenly strided sample of the values (at most
``SAMPLE`` per batch, so memory stays bounded on large activations; the
``mse`` search strides it again to ``MSE_SAMPLE`` in all) next to the extremes.

The scale and zero point follow torch's ``_calculate_qparams`` (the range
always holds 0, so zero is exact): asymmetric u8
``scale = (hi - lo) / 255``, ``zero_point = clamp(0 - round(lo / scale))``;
symmetric s8 ``scale = max(-lo, hi) / 127.5``, ``zero_point = 0``. Weights
are symmetric s8 per output channel from their own extremes
(``weight_qparams``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from lowerline.frontend.quantized import register_ops

SAMPLE = 1 << 16
# Candidate clipping ranges the ``mse`` choice tries, as fractions of the full
# range, on at most MSE_SAMPLE of the sampled values.
MSE_STEPS = 100
MSE_SAMPLE = 1 << 14
EPS = torch.finfo(torch.float32).eps


@dataclass(frozen=True)
class QParams:
    """One per-tensor quantization: ``real = scale * (q - zero_point)``, ``q`` in
    ``[qmin, qmax]``."""

    scale: float
    zero_point: int
    qmin: int
    qmax: int
    dtype: torch.dtype

    @property
    def args(self) -> tuple:
        """The trailing arguments of ``quantized_decomposed.*_per_tensor``."""
        return (self.scale, self.zero_point, self.qmin, self.qmax, self.dtype)


def qparams(lo: float, hi: float, activations: str) -> QParams:
    """torch's per-tensor qparams for the range ``[lo, hi]`` (widened to hold 0).

    The scale is a float32 value, as torch's observers compute it: the
    quantize/dequantize ops take it as a double and torch-mlir truncates it to
    f32 inside their bodies, which the QDQ folds then cannot read as a constant."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    if activations == "s8":
        scale = _f32(max(max(-lo, hi) / 127.5, EPS))
        return QParams(scale, 0, -128, 127, torch.int8)
    scale = _f32(max((hi - lo) / 255.0, EPS))
    zero_point = int(min(max(-round(lo / scale), 0), 255))
    return QParams(float(scale), zero_point, 0, 255, torch.uint8)


def quantized_ops() -> Any:
    """torch's ``quantized_decomposed`` ops, defined on first use (importing
    their library at lowerline's import would slow every ``import lowerline.api``)."""
    register_ops()
    return torch.ops.quantized_decomposed


def _f32(value: float) -> float:
    return float(torch.tensor(value, dtype=torch.float32))


def fake_quantize(values: torch.Tensor, params: QParams) -> torch.Tensor:
    """``values`` through torch's own quantize/dequantize pair."""
    ops = quantized_ops()
    return ops.dequantize_per_tensor(ops.quantize_per_tensor(values, *params.args), *params.args)


def weight_qparams(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(int8 weight, f32 scales, i64 zero points) per output channel (axis 0), symmetric."""
    ops = quantized_ops()
    flat = weight.detach().float().reshape(weight.shape[0], -1)
    extreme = flat.abs().amax(dim=1) if flat.shape[1] else torch.zeros(weight.shape[0])
    scales = torch.clamp(extreme / 127.5, min=EPS).to(torch.float32)
    zero_points = torch.zeros(weight.shape[0], dtype=torch.int64)
    stored = ops.quantize_per_channel(
        weight.detach().float(), scales, zero_points, 0, -128, 127, torch.int8
    )
    return stored, scales, zero_points


class Fixed:
    """Parameters known before calibration (a softmax's output range): an
    observer that needs to see nothing."""

    def __init__(self, params: QParams):
        self.params = params

    def observe(self, value: torch.Tensor) -> None:
        del value  # the range is known

    def qparams(self) -> QParams:
        return self.params


class Observer:
    """What one activation's values were over the calibration batches."""

    def __init__(self, kind: str, activations: str, percentile: float, averaging: float):
        self.kind = kind
        self.activations = activations
        self.percentile = percentile
        self.averaging = averaging
        self.lo: float | None = None
        self.hi: float | None = None
        self.samples: list[torch.Tensor] = []

    def observe(self, value: torch.Tensor) -> None:
        flat = value.detach().float().reshape(-1)
        if flat.numel() == 0:
            return
        lo, hi = float(flat.min()), float(flat.max())
        if self.lo is None or self.hi is None:
            self.lo, self.hi = lo, hi
        elif self.kind == "moving_average":
            self.lo += self.averaging * (lo - self.lo)
            self.hi += self.averaging * (hi - self.hi)
        else:
            self.lo, self.hi = min(self.lo, lo), max(self.hi, hi)
        if self.kind in ("percentile", "mse"):
            stride = max(1, flat.numel() // SAMPLE)
            self.samples.append(flat[::stride].clone())

    def qparams(self) -> QParams:
        if self.lo is None or self.hi is None:
            raise RuntimeError(
                "an observer saw no values: the calibration batches never reached it"
            )
        if self.kind == "percentile":
            return qparams(*self._percentile_range(), self.activations)
        if self.kind == "mse":
            return self._least_error()
        return qparams(self.lo, self.hi, self.activations)

    def _sample(self) -> torch.Tensor:
        return torch.cat(self.samples)

    def _percentile_range(self) -> tuple[float, float]:
        values = self._sample().double()
        q = torch.tensor([100.0 - self.percentile, self.percentile], dtype=torch.float64) / 100
        lo, hi = torch.quantile(values, q).tolist()
        return lo, hi

    def _least_error(self) -> QParams:
        """The range ``[f * lo, f * hi]`` (f in (0, 1]) whose quantize/dequantize
        round trip has the least squared error on the sample: every candidate
        at once, in torch's quantize arithmetic
        (``clamp(round(x * (1 / scale)) + zero_point)``)."""
        assert self.lo is not None and self.hi is not None
        values = self._sample()
        # A strided subset: the choice needs the distribution, not every value.
        values = values[:: max(1, values.numel() // MSE_SAMPLE)]
        fractions = [step / MSE_STEPS for step in range(MSE_STEPS, 0, -1)]
        candidates = [qparams(self.lo * f, self.hi * f, self.activations) for f in fractions]
        scale = torch.tensor([c.scale for c in candidates]).unsqueeze(1)
        zero_point = torch.tensor([float(c.zero_point) for c in candidates]).unsqueeze(1)
        low, high = candidates[0].qmin, candidates[0].qmax
        stored = torch.clamp(torch.round(values * (1.0 / scale)) + zero_point, low, high)
        errors = (((stored - zero_point) * scale - values) ** 2).mean(dim=1)
        return candidates[int(torch.argmin(errors))]  # the first (widest) of equal errors
