"""Scans, sorts and topk (a selection of the first k) of
lowerline-lower-tm-tensor against eager on large and odd shapes: 1, 7 and
1000+ rows, along dimension 0 and the last one.

Large ones (over 2**16 elements) are split among threads (``scf.forall``
over chunks of the other dimensions); a scan along an outer dimension runs
as vectors across the contiguous one. Each element is computed in the same
order whatever the thread count, so two threads give one thread's results
bit for bit.
"""

from __future__ import annotations

import pytest
import torch
import torch.utils._pytree as pytree
from torch import nn

import lowerline

SHAPES = [(1, 1029), (7, 13), (1029, 67), (67, 1029), (4, 515, 33)]


class Scans(nn.Module):
    def forward(self, x):
        return x.cumsum(0), x.cumsum(-1), x.cumprod(0), x.cumprod(-1), x.cumsum(1)


class Sorts(nn.Module):
    def forward(self, x):
        return (
            torch.sort(x, dim=0, stable=True),
            torch.sort(x, dim=-1, descending=True, stable=True),
            torch.topk(x, min(5, x.shape[-1]), dim=-1),
            torch.topk(x, min(3, x.shape[0]), dim=0, largest=False),
        )


def _near_one(*shape: int) -> torch.Tensor:
    """Long products of these stay in range."""
    torch.manual_seed(sum(shape))
    return torch.rand(*shape) * 0.2 + 0.9


def _with_nans_and_ties(*shape: int) -> torch.Tensor:
    torch.manual_seed(sum(shape) + 1)
    x = (torch.randn(*shape) * 4).round() / 2
    x.view(-1)[::7] = float("nan")
    return x


def _outputs(compiled, x) -> list[torch.Tensor]:
    return pytree.tree_leaves(compiled(x))


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_scans_match_eager_on_any_thread_count(shape):
    model = Scans().eval()
    x = _near_one(*shape)
    two = lowerline.compile(model, x, num_threads=2)
    got = _outputs(two, x)
    for mine, eager in zip(got, pytree.tree_leaves(model(x)), strict=True):
        # Sums and products of up to 1029 terms in ATen's order; ATen's
        # float cumsum carries a double, so a few ulps of f32 apart.
        torch.testing.assert_close(mine, eager, rtol=2e-5, atol=1e-5)
    one = lowerline.compile(model, x, num_threads=1)
    for mine, single in zip(got, _outputs(one, x), strict=True):
        torch.testing.assert_close(mine, single, rtol=0, atol=0)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_sorts_with_nans_match_eager(shape):
    model = Sorts().eval()
    x = _with_nans_and_ties(*shape)
    compiled = lowerline.compile(model, x, num_threads=2)
    got, want = _outputs(compiled, x), pytree.tree_leaves(model(x))
    for mine, eager in zip(got[:4], want[:4], strict=True):  # stable: indices too
        torch.testing.assert_close(mine, eager, rtol=0, atol=0, equal_nan=True)
    # topk leaves the order of ties open: the values, and the indices' keys.
    for (values, indices), eager, dim in ((got[4:6], want[4], -1), (got[6:], want[6], 0)):
        torch.testing.assert_close(values, eager, rtol=0, atol=0, equal_nan=True)
        picked = torch.gather(x, dim, indices)
        torch.testing.assert_close(picked, eager, rtol=0, atol=0, equal_nan=True)


def test_large_scans_and_sorts_are_threaded_and_vectorized():
    x = _near_one(1029, 67)
    graph = lowerline.compile(Scans().eval(), x, num_threads=2).ir("graph")
    # cumsum and cumprod along dimension 0: vectors across the 37 columns.
    assert "vector.transfer_read" in graph
    assert "scf.forall" in graph
    sorts = lowerline.compile(Sorts().eval(), x, num_threads=2).ir("graph")
    assert "scf.forall" in sorts
    single = lowerline.compile(Sorts().eval(), x, num_threads=1).ir("graph")
    assert "scf.forall" not in single


def test_small_scan_stays_on_one_thread():
    x = _near_one(7, 13)
    graph = lowerline.compile(Scans().eval(), x, num_threads=2).ir("graph")
    assert "scf.forall" not in graph


def test_gpu_scans_are_log_steps_and_match_eager():
    # The GPU path maps elementwise ops to kernels, not loops: cumsum and
    # cumprod there are log-step scans, checked here on the mapped IR run on
    # the CPU (the sums reassociated: a few ulps more than in order).
    model = Scans().eval()
    x = _near_one(37, 301)
    compiled = lowerline.compile(model, x, target="cuda:sm_90")
    assert "lowerline.tm_scan" not in compiled.ir("graph")
    for mine, eager in zip(compiled.run_on_cpu(x), model(x), strict=True):
        torch.testing.assert_close(mine, eager, rtol=1e-5, atol=1e-5)
