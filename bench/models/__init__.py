"""The benchmark suite's models: small, realistic blocks of common networks.

Each family file defines builders ``name(batch) -> (module, inputs)``: a
module in eval mode with seeded weights and a tuple of example inputs whose
leading dimension is ``batch``. ``MODELS`` maps a model name to its builder;
``cases(batches)`` names each (model, batch) pair ``name/bB``. ``KERNELS``
(single-op workloads) are built by name but are not in ``MODELS``.

Sizes are real layer widths at small resolutions or sequence lengths, so
that one eager call takes roughly 0.05 to 20 ms on one core at batch 8.
Nothing here imports lowerline: the peers and the compile-time script use the
same models.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from . import audio, convnets, kernels, mobile, recsys, sequence, text, transformers, unet

Builder = Callable[[int], tuple[nn.Module, tuple[torch.Tensor, ...]]]

MODELS: dict[str, Builder] = {
    **convnets.MODELS,
    **mobile.MODELS,
    **unet.MODELS,
    **transformers.MODELS,
    **audio.MODELS,
    **text.MODELS,
    **recsys.MODELS,
    **sequence.MODELS,
}

# Named by --models, never run by default.
KERNELS: dict[str, Builder] = dict(kernels.MODELS)

DEFAULT_BATCHES = (1, 8)


def build(name: str, batch: int) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """The seeded module (eval mode) and inputs of one case."""
    builder = MODELS.get(name) or KERNELS.get(name)
    if builder is None:
        known = ", ".join([*MODELS, *KERNELS])
        raise KeyError(f"unknown benchmark model {name!r}; known: {known}")
    torch.manual_seed(0)
    module, inputs = builder(batch)
    return module.eval(), inputs


def case_name(name: str, batch: int) -> str:
    return f"{name}/b{batch}"


def parse_case(case: str) -> tuple[str, int]:
    """``resnet_stem/b8`` -> (``resnet_stem``, 8)."""
    name, _, batch = case.rpartition("/b")
    if not name or not batch.isdigit():
        raise ValueError(f"a case is NAME/bBATCH (e.g. mlp/b8), not {case!r}")
    return name, int(batch)


def cases(names: list[str], batches: tuple[int, ...] = DEFAULT_BATCHES) -> list[str]:
    return [case_name(name, batch) for name in names for batch in batches]
