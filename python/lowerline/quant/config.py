"""``lowerline.quant.Int8``: what ``lowerline.compile(..., quantize=...)`` quantizes and how."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import torch

OBSERVERS = ("minmax", "moving_average", "percentile", "mse")
ACTIVATIONS = ("u8", "s8")
CALIBRATE_ON = ("graph", "compiled")
# Op kinds ``skip`` may name, and the layers each one covers.
OP_KINDS = ("linear", "conv", "matmul")


@dataclass(frozen=True, eq=False)  # the batches are tensors: no value equality
class Int8:
    """Int8 quantization with calibration inside lowerline.

    ``calibration``: the batches the observers see, each a tensor (a model
    of one input) or a tuple of the model's inputs; at least one.
    ``observer``: how an activation's range is chosen from what it saw:
    ``"minmax"`` (the extremes of every batch), ``"moving_average"`` (the
    batches' extremes averaged with ``averaging_constant``, as torch's
    MovingAverageMinMaxObserver), ``"percentile"`` (the ``percentile`` and
    ``100 - percentile`` points of the values seen) or ``"mse"`` (the clipping
    range whose quantization error is least on the values seen).
    ``activations``: ``"u8"`` (asymmetric, a zero point) or ``"s8"``
    (symmetric, zero point 0). Weights are always s8, symmetric, one scale
    per output channel, from their own extremes.
    ``skip``: layers left in float, by the module's qualified name
    (``"features.3"``), by op kind (``"linear"``, ``"conv"``, ``"matmul"``:
    the batch matmuls of two activations, attention's included) or by module
    class (``torch.nn.Linear``).
    ``calibrate_on``: ``"graph"`` runs the batches through the exported float
    graph in torch (no compile); ``"compiled"`` compiles that graph with
    lowerline, every observed value an output, and runs them through it.
    """

    calibration: Any
    observer: str = "minmax"
    activations: str = "u8"
    skip: tuple = field(default=())
    percentile: float = 99.99
    averaging_constant: float = 0.01
    calibrate_on: str = "graph"

    def __post_init__(self) -> None:
        if self.observer not in OBSERVERS:
            raise ValueError(
                f"Int8: observer must be one of {', '.join(OBSERVERS)}, got {self.observer!r}"
            )
        if self.activations not in ACTIVATIONS:
            raise ValueError(f"Int8: activations must be 'u8' or 's8', got {self.activations!r}")
        if self.calibrate_on not in CALIBRATE_ON:
            raise ValueError(
                f"Int8: calibrate_on must be 'graph' or 'compiled', got {self.calibrate_on!r}"
            )
        if not 50.0 < self.percentile <= 100.0:
            raise ValueError(f"Int8: percentile must be in (50, 100], got {self.percentile}")
        if not 0.0 < self.averaging_constant <= 1.0:
            raise ValueError(
                f"Int8: averaging_constant must be in (0, 1], got {self.averaging_constant}"
            )
        object.__setattr__(self, "skip", _skip_entries(self.skip))
        object.__setattr__(self, "calibration", _batches(self.calibration))

    def skips_kind(self, kind: str, module_type: str | None) -> bool:
        """Whether ``skip`` names op kind ``kind`` or the module class (``"pkg.Class"``)."""
        for entry in self.skip:
            if entry == kind:
                return True
            if (
                isinstance(entry, type)
                and module_type == f"{entry.__module__}.{entry.__qualname__}"
            ):
                return True
        return False

    def skipped_names(self) -> set[str]:
        """The layer names ``skip`` holds (entries that are no op kind or class)."""
        return {e for e in self.skip if isinstance(e, str) and e not in OP_KINDS}


def _skip_entries(skip: Any) -> tuple:
    if isinstance(skip, (str, type)):
        skip = (skip,)
    if not isinstance(skip, Iterable):
        raise TypeError(f"Int8: skip takes names, op kinds or module classes, got {skip!r}")
    entries = tuple(skip)
    for entry in entries:
        if isinstance(entry, type) and issubclass(entry, torch.nn.Module):
            continue
        if not isinstance(entry, str) or not entry:
            raise TypeError(
                "Int8: skip takes layer names, op kinds "
                f"({', '.join(OP_KINDS)}) or nn.Module classes, got {entry!r}"
            )
    return entries


def _batches(calibration: Any) -> tuple[tuple, ...]:
    """Every calibration batch as a tuple of the model's inputs."""
    if isinstance(calibration, torch.Tensor):
        raise TypeError(
            "Int8: calibration takes a sequence of batches (a list of tensors or of input "
            "tuples), got one tensor; wrap it in a list, or split it with tensor.split(n)"
        )
    try:
        batches = [b if isinstance(b, tuple) else (b,) for b in calibration]
    except TypeError:
        raise TypeError(
            f"Int8: calibration takes a sequence of batches, got {type(calibration).__name__}"
        ) from None
    if not batches:
        raise ValueError("Int8: calibration needs at least one batch")
    for index, batch in enumerate(batches):
        for value in batch:
            if isinstance(value, torch.Tensor) and value.requires_grad:
                batches[index] = tuple(
                    v.detach() if isinstance(v, torch.Tensor) else v for v in batch
                )
                break
    return tuple(batches)
