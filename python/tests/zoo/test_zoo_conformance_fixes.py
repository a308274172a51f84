"""Ops the conformance zoo found wrong, through the forms user models reach them.

Odd sizes, batch 1 and 8. Rank-0 weights (``torch.tensor(3.0)`` in a model,
``aten.tensor.float``) made ``finalize-memref-to-llvm`` abort: they are
inlined now (``driver.compile_worker._weight_attr``). The nearest upsamplings' ``.default`` overloads are
composite ops torch.export keeps; ``frontend.decompositions.decompose``
applies lowerline's entries to them (torch-mlir's own lowering is wrong off
integer scales). Arguments ATen reads in ways lowerline does not imitate are
refused with the op's name.
"""

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from zoo_support import Case, Fn, params, run_case

import lowerline

aten = torch.ops.aten


def randn(*shape):
    return torch.randn(*shape)


def _upsampling(batch: int) -> list[Case]:
    return [
        Case(
            f"upsample_nearest2d_size_b{batch}",
            "upsample",
            lambda: Fn(lambda x: aten.upsample_nearest2d.default(x, [9, 11])),
            lambda: (randn(batch, 3, 5, 7),),
        ),
        Case(
            f"upsample_nearest2d_scales_b{batch}",
            "upsample",
            # The scales disagree with the size: ATen clamps the source index.
            lambda: Fn(lambda x: aten.upsample_nearest2d.default(x, [9, 11], 1.5, 1.7)),
            lambda: (randn(batch, 3, 5, 7),),
        ),
        Case(
            f"upsample_nearest1d_3d_b{batch}",
            "upsample",
            lambda: Fn(
                lambda x, y: (
                    aten.upsample_nearest1d.default(x, [13], 1.3),
                    aten.upsample_nearest3d.default(y, [4, 9, 11], 1.2, None, 1.7),
                )
            ),
            lambda: (randn(batch, 3, 7), randn(batch, 2, 3, 5, 7)),
        ),
        Case(
            f"interpolate_b{batch}",
            "upsample",
            lambda: Fn(
                lambda x: (
                    F.interpolate(x, scale_factor=2, mode="nearest"),
                    F.interpolate(x, scale_factor=1.5, mode="nearest"),
                    F.interpolate(x, size=(9, 13), mode="nearest"),
                    F.interpolate(x, scale_factor=1.5, mode="bilinear"),
                    F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True),
                )
            ),
            lambda: (randn(batch, 3, 5, 7),),
        ),
        Case(
            f"nn_upsample_b{batch}",
            "upsample",
            lambda: nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.Upsample(scale_factor=2)),
            lambda: (randn(batch, 3, 5, 7),),
        ),
    ]


def _others(batch: int) -> list[Case]:
    return [
        Case(
            f"reshape_alias_strides_b{batch}",
            "view",
            # A transpose written as strides: the strides must be honoured.
            lambda: Fn(lambda x: aten._reshape_alias.default(x + 1, [7, batch * 5], [1, 7])),
            lambda: (randn(batch, 5, 7),),
        ),
        Case(
            f"weight_norm_interface_b{batch}",
            "norm",
            lambda: Fn(
                lambda v, g, h: (
                    aten._weight_norm_interface.default(v, g, 0),
                    aten._weight_norm_interface.default(v, h, 2),
                )
            ),
            # g in keepdim shape: for a g of (7,) eager returns the norm as (7,),
            # torch.export (its meta) as (1, 1, 7), and lowerline refuses it.
            lambda: (randn(batch, 5, 7), randn(batch, 1, 1), randn(1, 1, 7)),
        ),
        Case(
            f"bilinear_trilinear_b{batch}",
            "matmul",
            lambda: Fn(
                lambda x1, w, x2: (
                    aten._trilinear.default(x1, w, x2, [1, 3], [0], [1, 2], [2, 3], 1),
                    F.bilinear(x1, x2, w),
                )
            ),
            lambda: (randn(batch, 5), randn(3, 5, 6), randn(batch, 6)),
        ),
    ]


class ScalarWeights(nn.Module):
    """Rank-0 weights and lifted constants of several dtypes (torch.tensor(3.0))."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.tensor(1.5))
        self.register_buffer("shift", torch.tensor(-2, dtype=torch.int64))
        self.register_buffer("flag", torch.tensor(True))
        self.register_buffer("quarter", torch.tensor(0.25, dtype=torch.bfloat16))
        self.register_buffer("wide", torch.tensor(3.0, dtype=torch.float64))

    def forward(self, x):
        y = x * self.scale + self.shift + self.quarter.float() + self.wide.float()
        return torch.where(self.flag, y, x), torch.tensor(3.0) * x, torch.tensor(7) + self.shift


def _scalars(batch: int) -> list[Case]:
    return [
        Case(f"scalar_weights_b{batch}", "weights", ScalarWeights, lambda: (randn(batch, 5, 7),)),
        Case(
            f"tensor_factories_b{batch}",
            "factory",
            lambda: Fn(lambda x: (aten.tensor.float(0.5) * x, aten.tensor.int(-3) + x.long())),
            lambda: (randn(batch, 3) * 4,),
        ),
    ]


def _decomposed(batch: int) -> list[Case]:
    """Ops torch-mlir lowers wrongly or not at all, decomposed in the frontend."""
    return [
        Case(
            f"kthvalue_b{batch}",
            "sort",
            lambda: Fn(
                lambda x: (
                    torch.kthvalue(x, 3),
                    torch.kthvalue(x, 1, dim=1, keepdim=True),
                    torch.kthvalue(x, x.shape[0], dim=0),
                )
            ),
            lambda: (randn(batch, 7, 13),),
        ),
        Case(
            f"avg_pool1d_b{batch}",
            "pool",
            lambda: Fn(
                lambda x, y: (
                    F.avg_pool1d(y, 3, 2, 1),  # unbatched (C, L)
                    F.avg_pool1d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
                )
            ),
            lambda: (randn(batch, 3, 13), randn(3, 13)),
        ),
        Case(
            # Unbatched (C, H, W): torch-mlir's pooling of a 3-D input failed
            # the verifier (avg_pool3d's: test_import_edge_cases.py).
            f"avg_pool2d_unbatched_b{batch}",
            "pool",
            lambda: Fn(
                lambda x, y: (
                    F.avg_pool2d(y, (3, 2), 2, 1),
                    F.avg_pool2d(x, 3, 2, ceil_mode=True, count_include_pad=False),
                )
            ),
            lambda: (randn(batch, 3, 9, 7), randn(batch + 2, 9, 7)),
        ),
        Case(
            # aten._cdist_forward had no decomposition in torch's or torch-mlir's table.
            f"cdist_b{batch}",
            "distance",
            lambda: Fn(
                lambda x, y, z: (
                    torch.cdist(x, y),
                    torch.cdist(x, y, p=1),
                    aten._cdist_forward(x, y, 3.0, None),
                    torch.cdist(x, y, p=0),
                    torch.cdist(x, y, p=float("inf")),
                    torch.cdist(z, y),  # broadcast batch
                )
            ),
            lambda: (randn(batch, 5, 4), randn(batch, 7, 4), randn(1, 3, 4)),
        ),
        Case(
            # aten._pdist_forward: the same.
            f"pdist_b{batch}",
            "distance",
            lambda: Fn(lambda x: (F.pdist(x), F.pdist(x, 1), F.pdist(x * 2, 0.5), F.pdist(x[:1]))),
            lambda: (randn(batch + 4, 6),),
        ),
        Case(
            f"conv_tbc_b{batch}",
            "conv",
            lambda: Fn(
                lambda x, w, b: (
                    aten.conv_tbc.default(x, w, b, 1),
                    aten.conv_tbc.default(x, w, b),
                )
            ),
            lambda: (randn(11, batch, 3), randn(3, 3, 5), randn(5)),
        ),
        Case(
            f"tile_zero_b{batch}",
            "view",
            lambda: Fn(
                lambda x: (
                    torch.tile(x, (1, 0)),
                    torch.tile(x, (2, 0, 1, 3)),
                    torch.tile(x, (2, 3)) * 2,
                )
            ),
            lambda: (randn(batch, 5),),
        ),
    ]


CASES = [
    case
    for batch in (1, 8)
    for case in _upsampling(batch) + _others(batch) + _scalars(batch) + _decomposed(batch)
]


@pytest.mark.parametrize("case", params(CASES))
def test_op(case: Case, zoo_cache: str) -> None:
    run_case(case, zoo_cache)


REFUSED = [
    # ATen reads a 15-element g as 3 flat values; torch's decomposition broadcasts it.
    ("weight_norm_g", lambda v, g: aten._weight_norm_interface.default(v, g, 0), (3, 5), (3, 5)),
    # ATen loops over no slices when all three inputs expand unroll_dim: zeros.
    (
        "trilinear_unroll",
        lambda x, y: aten._trilinear.default(x, y, x, [1], [1], [1], [1], 1),
        (3, 5),
        (3, 5),
    ),
    # Eager reads past the end of the input's storage.
    ("reshape_alias_oob", lambda x, y: aten._reshape_alias.default(x, [7], [2]) + y, (7,), (7,)),
]


@pytest.mark.parametrize(("name", "fn", "shape_a", "shape_b"), REFUSED, ids=[r[0] for r in REFUSED])
def test_refused(name, fn, shape_a, shape_b, zoo_cache: str) -> None:
    op = {"weight_norm_g": "_weight_norm_interface", "trilinear_unroll": "_trilinear"}
    with pytest.raises(lowerline.CompileError, match=op.get(name, "as_strided")):
        lowerline.compile(Fn(fn), randn(*shape_a), randn(*shape_b), cache_dir=zoo_cache)
