"""Decompositions applied before torch-mlir's import.

torch-mlir lowers ``aten.cumsum`` to ``tm_tensor.scan``, which the upstream
MLIR 22 parser cannot read. Written here as a log-step (Hillis-Steele) scan of
shifted adds, it reaches linalg as plain elementwise ops, pads and slices:
``ceil(log2(n))`` steps of ``x + shift(x, 2**k)``.
"""

from __future__ import annotations

import torch


def cumsum(x: torch.Tensor, dim: int, dtype: torch.dtype | None = None) -> torch.Tensor:
    if dtype is not None:
        x = x.to(dtype)
    elif not x.is_floating_point() and not x.is_complex():
        x = x.to(torch.int64)  # torch promotes integer and bool cumsum to int64
    dim = dim % max(x.dim(), 1)
    if x.dim() == 0:
        return x.clone()
    length = x.shape[dim]
    shift = 1
    while shift < length:
        pad = [0, 0] * (x.dim() - 1 - dim) + [shift, 0]
        shifted = torch.nn.functional.pad(x.narrow(dim, 0, length - shift), pad)
        x = x + shifted
        shift *= 2
    return x


def decomposition_table() -> dict:
    from torch_mlir.extras.fx_decomp_util import get_decomposition_table

    table = dict(get_decomposition_table())
    table[torch.ops.aten.cumsum.default] = cumsum
    return table
