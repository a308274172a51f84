"""The conformance zoo's last failing ops, through the forms user models reach them.

Each was decomposed in ``frontend.decompositions`` (fake quantization in
``frontend.fake_quantize``) or, for ``uniform``, saved so that the import
worker can read it back (``frontend.export._keyword_defaults_explicit``).
Odd sizes, batch 1 and 8, every argument form the op takes.
"""

import pytest
import torch
import torch.nn.functional as F
from zoo_support import Case, Fn, params, run_case

import lowerline
from lowerline.frontend import fake_quantize

aten = torch.ops.aten


def randn(*shape):
    return torch.randn(*shape)


def _with_specials(x: torch.Tensor) -> torch.Tensor:
    """``x`` with inf, -inf and NaN in its first row."""
    x = x.clone()
    x.view(-1)[:3] = torch.tensor([float("inf"), float("-inf"), float("nan")])
    return x


def _ties(batch: int, channels: int, scale: float) -> torch.Tensor:
    """Values at and next to the rounding ties of ``scale`` (x / scale = k + 0.5)."""
    k = torch.randint(-200, 200, (batch, channels, 13)).float()
    return torch.cat([(k + 0.5) * scale, k * scale, randn(batch, channels, 13) * 8], dim=2)


def _indexing(batch: int) -> list[Case]:
    return [
        Case(
            f"where_scalar_b{batch}",
            "indexing",
            lambda: Fn(
                lambda c: (
                    aten.where.Scalar(c, 1, 2),  # int64
                    aten.where.Scalar(c, 1.5, -2),  # the default float
                    aten.where.Scalar(c, True, False),  # bool
                    torch.where(c, 3.0, 4.0),
                )
            ),
            lambda: (randn(batch, 5, 7) > 0,),
        ),
        Case(
            f"scatter_legacy_reduce_b{batch}",
            "scatter",
            lambda: Fn(
                lambda x, index, src: (
                    x.scatter(1, index, src, reduce="add"),
                    x.scatter(1, index, src, reduce="multiply"),
                    x.scatter(0, index[:, :7] % x.shape[0], src, reduce="add"),
                    x.scatter(1, index, 2.5, reduce="multiply"),
                    x.scatter(1, index, -1.5, reduce="add"),
                )
            ),
            # Seven destinations for eleven updates a row: duplicates.
            lambda: (randn(batch, 7), torch.randint(0, 7, (batch, 11)), randn(batch, 11)),
        ),
    ]


def _pools(batch: int) -> list[Case]:
    return [
        Case(
            f"max_pool1d_indices_b{batch}",
            "pool",
            lambda: Fn(
                lambda x, y: (
                    F.max_pool1d(x, 3, return_indices=True),
                    F.max_pool1d(x, 4, 3, 2, 2, ceil_mode=True, return_indices=True),
                    F.max_pool1d(y, 2, return_indices=True),  # unbatched (C, L)
                    F.max_pool1d(x, 5, 2, 1),
                    aten.max_pool1d_with_indices.default(x, [3], [], [1]),
                )
            ),
            lambda: (randn(batch, 3, 17), randn(5, 13)),
        ),
        Case(
            f"adaptive_max_pool1d_b{batch}",
            "pool",
            lambda: Fn(
                lambda x, y: (
                    F.adaptive_max_pool1d(x, 5, return_indices=True),
                    F.adaptive_max_pool1d(x, 17, return_indices=True),
                    F.adaptive_max_pool1d(x, 1),
                    F.adaptive_max_pool1d(y, 4, return_indices=True),
                )
            ),
            lambda: (randn(batch, 3, 17), randn(5, 13)),
        ),
        Case(
            # Windows of unequal sizes (17 -> 5) or strides (6 -> 4): torch-mlir's
            # lowering stops the process with a run-time assertion.
            f"adaptive_max_pool2d_unequal_b{batch}",
            "pool",
            lambda: Fn(
                lambda x, y: (
                    F.adaptive_max_pool2d(x, (5, 4), return_indices=True),
                    F.adaptive_max_pool2d(y, (4, 3), return_indices=True),  # unbatched
                    F.adaptive_max_pool2d(x, (3, 13)),  # equal windows: torch-mlir's
                )
            ),
            lambda: (randn(batch, 3, 17, 13), randn(2, 6, 5)),
        ),
    ]


def _quantization(batch: int) -> list[Case]:
    return [
        Case(
            f"fake_quantize_per_tensor_b{batch}",
            "quantization",
            lambda: Fn(
                lambda x, scale, zero_point, enabled, disabled: (
                    torch.fake_quantize_per_tensor_affine(x, 0.1, 3, -128, 127),
                    torch.fake_quantize_per_tensor_affine(x, 0.37, 0, 0, 15),
                    torch.fake_quantize_per_tensor_affine(x, scale, zero_point, -8, 7),
                    aten.fake_quantize_per_tensor_affine_cachemask(x, 0.1, -4, -20, 20),
                    aten._fake_quantize_per_tensor_affine_cachemask_tensor_qparams(
                        x, scale, zero_point, enabled, 0, 255
                    ),
                    # Switched off: the input back, and a mask of ones.
                    aten._fake_quantize_per_tensor_affine_cachemask_tensor_qparams(
                        x, scale, zero_point, disabled, 0, 255
                    ),
                    aten.dequantize.self(x.double()),
                )
            ),
            lambda: (
                _ties(batch, 3, 0.1),
                torch.tensor([0.25]),
                torch.tensor([2], dtype=torch.int32),
                torch.tensor([1]),
                torch.tensor([0]),
            ),
        ),
        Case(
            f"fake_quantize_per_channel_b{batch}",
            "quantization",
            lambda: Fn(
                lambda x, scale, zero_point, scale0, zero_point0, learnable_zp: (
                    torch.fake_quantize_per_channel_affine(x, scale, zero_point, 1, -128, 127),
                    aten.fake_quantize_per_channel_affine_cachemask(
                        x, scale0, zero_point0, 0, -8, 7
                    ),
                    torch.fake_quantize_per_channel_affine(x, scale, learnable_zp, 1, 0, 15),
                )
            ),
            lambda: (
                _ties(batch, 3, 0.1),
                torch.tensor([0.1, 0.05, 0.3]),
                torch.tensor([0, -3, 5], dtype=torch.int32),
                torch.rand(batch) + 0.05,
                torch.randint(-2, 3, (batch,), dtype=torch.int32),
                randn(3),
            ),
        ),
    ]


def _views_and_others(batch: int) -> list[Case]:
    return [
        Case(
            f"view_copies_b{batch}",
            "view",
            lambda: Fn(
                lambda x: (
                    aten.permute_copy.default(x, [2, 0, 1]),
                    aten.select_copy.int(x, 1, 2),
                    aten.slice_copy.Tensor(x, 2, 1, 6, 2),
                    aten.split_copy.Tensor(x, 2, 2),
                    aten.unbind_copy.int(x, 1),
                    aten.view_copy.default(x, [batch, -1]),
                    aten.detach_copy.default(x),
                    aten.as_strided_copy.default(x, [2, 3], [1, 2], 1),
                )
            ),
            lambda: (randn(batch, 3, 7),),
        ),
        Case(
            f"isfinite_roll_b{batch}",
            "elementwise",
            lambda: Fn(
                lambda x, i, z: (
                    torch.isfinite(x),
                    torch.isfinite(i),
                    torch.isfinite(z),
                    torch.roll(x, 2, 1),
                    torch.roll(x, (-1, 3), (0, 2)),
                    torch.roll(x, 5),
                )
            ),
            lambda: (
                _with_specials(randn(batch, 3, 7)),
                torch.randint(-5, 5, (batch, 3)),
                torch.complex(_with_specials(randn(batch, 5)), randn(batch, 5)),
            ),
        ),
    ]


def _scatters(batch: int) -> list[Case]:
    return [
        Case(
            f"diagonal_as_strided_scatter_b{batch}",
            "scatter",
            lambda: Fn(
                lambda x, d, e, m, s: (
                    torch.diagonal_scatter(x, d, 1, 2, 3),
                    torch.diagonal_scatter(x, e, -2, 3, 0),  # dims out of order
                    torch.as_strided_scatter(m, s, [2, 3], [1, 5], 2),
                    torch.as_strided_scatter(m, s[0], [3], [6], 1),
                )
            ),
            lambda: (
                randn(batch, 3, 6, 5),
                randn(batch, 3, 4),  # the offset-1 diagonal of dims 2, 3 (6 x 5): 4 long
                randn(3, 6, min(5 - 2, batch)),  # offset -2 of dims 3 and 0
                randn(3, 5),
                randn(2, 3),
            ),
        )
    ]


def _math(batch: int) -> list[Case]:
    return [
        Case(
            f"linalg_norm_b{batch}",
            "reduction",
            lambda: Fn(
                lambda x, m: (
                    torch.linalg.norm(x),
                    torch.linalg.norm(x, 3, dim=2),
                    torch.linalg.norm(x, float("inf"), dim=-1, keepdim=True),
                    torch.linalg.norm(x, "fro", dim=(1, 2)),
                    torch.linalg.norm(x, 1, dim=(2, 1)),
                    torch.linalg.norm(x, -float("inf"), dim=(0, 2), keepdim=True),
                    torch.linalg.norm(m, -1),
                    torch.linalg.norm(m, dtype=torch.float64),
                )
            ),
            lambda: (randn(batch, 5, 7), randn(3, 11)),
        ),
        Case(
            f"erfinv_b{batch}",
            "elementwise",
            lambda: Fn(lambda y, d: (torch.erfinv(y), torch.special.erfinv(d))),
            lambda: (
                # +-1 (+-inf), past 1 (NaN), the tails and the middle.
                torch.cat(
                    [
                        torch.tensor([1.0, -1.0, 1.5, 0.999999, -0.99999]),
                        torch.rand(batch * 37) * 2 - 1,
                    ]
                ),
                torch.rand(batch, 7, dtype=torch.float64) * 2 - 1,
            ),
        ),
    ]


CASES = [
    case
    for batch in (1, 8)
    for case in _indexing(batch)
    + _pools(batch)
    + _quantization(batch)
    + _views_and_others(batch)
    + _scatters(batch)
    + _math(batch)
]


@pytest.mark.parametrize("case", params(CASES))
def test_op(case: Case, zoo_cache: str) -> None:
    run_case(case, zoo_cache)


def test_empty_strided_has_its_shape_and_dtype(zoo_cache: str) -> None:
    module = Fn(
        lambda x: (
            torch.empty_strided((3, 5), (1, 3), dtype=torch.float64),
            x.new_empty_strided((2, 7), (7, 1)).fill_(1.5) + x[:2],
        )
    )
    x = randn(5, 7)
    empty, filled = lowerline.compile(module, x, cache_dir=zoo_cache)(x)
    assert (empty.shape, empty.dtype) == ((3, 5), torch.float64)
    assert torch.equal(filled, x[:2] + 1.5)


def test_fake_quantize_refuses_what_aten_refuses() -> None:
    # torch checks these before export; the entries check them for a graph
    # that reaches the import without that check.
    x = randn(3, 5)
    with pytest.raises(ValueError, match=r"aten\.fake_quantize.*quant_min"):
        fake_quantize.per_tensor(x, 0.1, 0, 5, -5)
    with pytest.raises(ValueError, match=r"aten\.fake_quantize_per_tensor_affine: scale has 3"):
        fake_quantize.per_tensor(x, torch.ones(3), torch.zeros(3), -8, 7)
    with pytest.raises(ValueError, match=r"aten\.fake_quantize_per_channel_affine.*axis 1 \(5\)"):
        fake_quantize.per_channel(x, torch.ones(3), torch.zeros(3, dtype=torch.int32), 1, -8, 7)
