"""Ops torch-mlir lowers to its TMTensor dialect (sort, scatter, scan) or
keeps as backend-legal ATen, against eager torch.

Sorts with ties or NaNs ask for ``stable=True``: otherwise torch leaves the
order of equal keys (and so their indices) open. Sorts, scatters and scans reach lowerline as ``lowerline.tm_*`` stand-ins and
become loops in ``lowerline-lower-tm-tensor``; cummax, cummin and stable
sorts are decompositions (``lowerline.frontend.decompositions``). Shapes are
odd and some rows long (1029), batches 1 and larger; inputs carry NaNs and
ties where the op's order or its index results depend on them. Scatters
without accumulation get unique indices (torch leaves the winner of a
duplicate unspecified); accumulating ones get many duplicates.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from zoo_support import BF16, Case, Fn, params, run_case

import lowerline
from lowerline.frontend.export import ExportError

REDUCTIONS = ("sum", "prod", "amax", "amin", "mean")


def in_order(reason: str) -> dict[str, Any]:
    """The tolerance of a long sum or product that runs in ATen's order: a few
    ulps from rounding, ``reason`` says how many terms."""
    return {"rtol": 4e-5, "atol": 1e-5, "reason": reason}


def with_nans_and_ties(*shape: int) -> torch.Tensor:
    """Values on a coarse grid (many ties, +0.0 and -0.0 among them) and a NaN
    every 7th element."""
    x = (torch.randn(*shape) * 4).round() / 2
    flat = x.reshape(-1)
    flat[::7] = float("nan")
    return x


def ties(*shape: int) -> torch.Tensor:
    return (torch.randn(*shape) * 3).round()


def near_one(*shape: int) -> torch.Tensor:
    """Products of many of these stay in range."""
    return torch.rand(*shape) * 0.4 + 0.8


def unique_rows(count: int, rows: int, columns: int) -> torch.Tensor:
    """A ``(count, columns)`` index whose every column is a distinct choice of rows."""
    return torch.stack([torch.randperm(rows)[:count] for _ in range(columns)], dim=1)


def scatter_reduce(reduce: str, include_self: bool) -> Case:
    return Case(
        f"scatter_reduce_{reduce}_{'self' if include_self else 'noself'}",
        "scatter",
        lambda: Fn(
            lambda x, index, src: x.scatter_reduce(0, index, src, reduce, include_self=include_self)
        ),
        lambda: (near_one(11, 13), torch.randint(0, 11, (257, 13)), near_one(257, 13)),
        **in_order(
            "sum and mean add 257 values into 11 rows in index order, as ATen "
            "does; prod of 24 values near 1: a few ulps of f32 from the summation order"
        ),
    )


def stable_sort(name: str, inputs: Callable[[], tuple], **options: Any) -> Case:
    return Case(name, "sort", lambda: Fn(lambda x: torch.sort(x, stable=True, **options)), inputs)


SORTS = [
    stable_sort("sort_long_rows_nan", lambda: (with_nans_and_ties(3, 1029),), dim=-1),
    Case(
        # Without stable=True torch leaves the order of equal keys open: distinct keys.
        "sort_default_distinct",
        "sort",
        lambda: Fn(lambda x: torch.sort(x)),
        lambda: (torch.randn(5, 257),),
    ),
    stable_sort(
        "sort_descending_dim0_nan",
        lambda: (with_nans_and_ties(37, 5),),
        dim=0,
        descending=True,
    ),
    stable_sort("sort_stable_middle_dim", lambda: (ties(2, 33, 5),), dim=1),
    stable_sort(
        "sort_int64_batch1", lambda: (torch.randint(-5, 5, (1, 129)),), dim=-1, descending=True
    ),
    Case(
        "argsort_ties",
        "sort",
        lambda: Fn(lambda x: torch.argsort(x, dim=-1, stable=True)),
        lambda: (ties(4, 131),),
    ),
    Case(
        "topk_largest",
        "sort",
        lambda: Fn(lambda x: torch.topk(x, 5, dim=-1)),
        lambda: (torch.randn(4, 131),),
    ),
    Case(
        "topk_smallest_dim0_batch1",
        "sort",
        lambda: Fn(lambda x: torch.topk(x, 3, dim=0, largest=False)),
        lambda: (torch.randn(29, 1),),
    ),
]

SCATTERS = [
    Case(
        "scatter_src_unique",
        "scatter",
        lambda: Fn(lambda x, index, src: x.scatter(0, index, src)),
        lambda: (torch.randn(31, 9), unique_rows(17, 31, 9), torch.randn(17, 9)),
    ),
    Case(
        "scatter_value_dim1",
        "scatter",
        lambda: Fn(lambda x, index: x.scatter(1, index, 2.5)),
        lambda: (torch.randn(5, 13), unique_rows(4, 13, 5).t().contiguous()),
    ),
    Case(
        "scatter_add_duplicates",
        "scatter",
        lambda: Fn(lambda x, index, src: x.scatter_add(0, index, src)),
        lambda: (torch.randn(31, 9), torch.randint(0, 31, (513, 9)), torch.randn(513, 9)),
        **in_order(
            "513 updates into 31 rows, added in index order as ATen does; "
            "a few ulps from the summation"
        ),
    ),
    *[scatter_reduce(r, s) for r in REDUCTIONS for s in (True, False)],
    Case(
        "index_put_unique",
        "scatter",
        lambda: Fn(lambda x, rows, v: x.index_put((rows,), v)),
        lambda: (torch.randn(23, 7), torch.randperm(23)[:9], torch.randn(9, 7)),
    ),
    Case(
        "index_put_accumulate_duplicates",
        "scatter",
        lambda: Fn(lambda x, rows, v: x.index_put((rows,), v, accumulate=True)),
        lambda: (torch.randn(23, 7), torch.randint(0, 23, (301,)), torch.randn(301, 7)),
        **in_order("301 rows added into 23 in index order; a few ulps from the summation"),
    ),
    Case(
        "index_put_two_indices_negative",
        "scatter",
        lambda: Fn(lambda x, i, j, v: x.index_put((i, j), v, accumulate=True)),
        lambda: (
            torch.randn(9, 11, 3),
            torch.randint(-9, 9, (40,)),
            torch.randint(-11, 11, (40,)),
            torch.randn(40, 3),
        ),
    ),
    Case(
        "max_unpool2d_odd",
        "scatter",
        lambda: Fn(
            lambda x: F.max_unpool2d(
                *F.max_pool2d(x, 2, return_indices=True), 2, output_size=(9, 11)
            )
        ),
        lambda: (torch.randn(2, 3, 9, 11),),
    ),
    Case(
        "masked_scatter",
        "scatter",
        lambda: Fn(lambda x, mask, source: x.masked_scatter(mask, source)),
        lambda: (torch.randn(3, 7, 11), torch.rand(3, 7, 11) > 0.5, torch.randn(3, 7, 11)),
    ),
]

GATHERS = [
    Case(
        "gather_dim1_3d",
        "gather",
        lambda: Fn(lambda x, index: torch.gather(x, 1, index)),
        lambda: (torch.randn(3, 17, 5), torch.randint(0, 17, (3, 29, 5))),
    ),
    Case(
        "take_along_dim_argsort",
        "gather",
        lambda: Fn(lambda x: torch.take_along_dim(x, torch.argsort(x, dim=0, stable=True), 0)),
        lambda: (ties(33, 3),),
    ),
    Case(
        "index_select_dim2_int",
        "gather",
        lambda: Fn(lambda x, index: torch.index_select(x, 2, index)),
        lambda: (torch.randint(-100, 100, (2, 3, 19)), torch.randint(0, 19, (23,))),
    ),
    Case(
        "advanced_index_rows_batch1",
        "gather",
        lambda: Fn(lambda x, rows: x[rows]),
        lambda: (torch.randn(1, 7), torch.zeros(5, dtype=torch.int64)),
    ),
]

SCANS = [
    Case(
        "cumsum_int32_dim0",
        "scan",
        lambda: Fn(lambda x: torch.cumsum(x, 0)),
        lambda: (torch.randint(-9, 9, (129, 3), dtype=torch.int32),),
    ),
    Case(
        "cumprod_long_rows",
        "scan",
        lambda: Fn(lambda x: torch.cumprod(x, -1)),
        lambda: (near_one(3, 1029),),
        **in_order("1029 products in order as ATen does; a few ulps of f32"),
    ),
    Case(
        "cumprod_bf16_running_product_in_f32",
        "scan",
        lambda: Fn(lambda x: torch.cumprod(x, 1)),
        lambda: (near_one(3, 1029).to(torch.bfloat16),),
        **BF16,
    ),
    Case(
        "cumprod_int_dim0_batch1",
        "scan",
        lambda: Fn(lambda x: torch.cumprod(x, 0)),
        lambda: (torch.randint(-2, 3, (13, 1)),),
    ),
    Case(
        "cummax_nan_ties",
        "scan",
        lambda: Fn(lambda x: torch.cummax(x, 1)),
        lambda: (with_nans_and_ties(5, 67),),
    ),
    Case(
        "cummin_dim0_ints",
        "scan",
        lambda: Fn(lambda x: torch.cummin(x, 0)),
        lambda: (torch.randint(-3, 3, (41, 2)),),
    ),
]

POOLING = [
    Case(
        "max_pool2d_with_indices_odd",
        "pooling",
        lambda: Fn(lambda x: F.max_pool2d(x, 3, stride=2, return_indices=True)),
        lambda: (torch.randn(2, 3, 13, 11),),
    ),
    Case(
        "adaptive_max_pool2d_with_indices",
        "pooling",
        lambda: Fn(lambda x: F.adaptive_max_pool2d(x, (3, 5), return_indices=True)),
        lambda: (torch.randn(1, 4, 9, 15),),
    ),
]

CASES = SORTS + SCATTERS + GATHERS + SCANS + POOLING


@pytest.mark.parametrize("case", params(CASES))
def test_tmtensor_op(case: Case, zoo_cache: str) -> None:
    run_case(case, zoo_cache)


def test_masked_select_is_reported_as_data_dependent(zoo_cache: str) -> None:
    """Its result's length is the number of true mask elements: compiled code
    has static output shapes, so it stays unsupported, and says why: as an
    output, torch.export's own shape names it; used inside the model, the
    unsupported-op report does."""
    x = torch.randn(3, 5)
    with pytest.raises(ExportError, match=r"output 'masked_select' has a data-dependent shape"):
        lowerline.compile(Fn(lambda x: x.masked_select(x > 0)), x, cache_dir=zoo_cache)
    with pytest.raises(lowerline.UnsupportedOpsError) as info:
        lowerline.compile(Fn(lambda x: x.masked_select(x > 0).sum()), x, cache_dir=zoo_cache)
    assert [op["op"] for op in info.value.ops] == ["aten.masked_select.default"]
    assert "size of its result depends on the data" in str(info.value)
