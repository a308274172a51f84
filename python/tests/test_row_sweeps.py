"""Row kernels in fewer sweeps: softmax in three (max; exp written and
summed; scale; ``lowerline-fuse-row-sweeps``); the norms keep their
two-pass moments (a one-sweep shifted formula was tried and dropped: 6e-4
relative error in layer norm on a row periodic with its samples, against
1e-6 for the two-pass moments, both measured against float64).

Against eager torch on odd row lengths (1, 7, 17, 1000, 50257; group norm of one
element per row needs two rows), one row and
many, inputs of large mean (``x * 1e3 + 1e4``, where a sum of squares in
float32 loses every digit of the variance), rows whose start is unlike the
rest,
-inf entries and fully masked rows for softmax, NCHW group norm, and bf16
softmax.
"""

import pytest
import torch
import torch.nn.functional as F

import lowerline
from lowerline.driver.tolerance import BF16, DEFAULT


class Rows(torch.nn.Module):
    def __init__(self, rows: int):
        super().__init__()
        torch.manual_seed(1)
        # Groups of two rows where they divide the rows, else of one.
        self.group_norm = torch.nn.GroupNorm(rows // 2 if rows % 2 == 0 else rows, rows)
        with torch.no_grad():
            for param in self.group_norm.parameters():
                param.uniform_(0.5, 1.5)

    def forward(self, x):
        return (
            torch.softmax(x, -1),
            torch.log_softmax(x, -1),
            F.layer_norm(x, x.shape[-1:]),
            self.group_norm(x.unsqueeze(0)).squeeze(0),
            torch.var_mean(x, -1),
        )


SHAPES = [(2, 1), (1, 7), (5, 17), (3, 1000), (16, 1000), (1, 50257), (4, 50257)]
_compiled: dict = {}


def _compiled_for(shape, cache_dir):
    if shape not in _compiled:
        module = Rows(shape[0]).eval()
        compiled = lowerline.compile(module, torch.randn(*shape), cache_dir=cache_dir)
        assert not compiled.fallbacks, [str(f) for f in compiled.fallbacks]
        _compiled[shape] = (module, compiled)
    return _compiled[shape]


def _shape_id(shape):
    return "x".join(map(str, shape))


def _check(got, want, what, tolerance=DEFAULT):
    flat_got, _ = torch.utils._pytree.tree_flatten(got)
    flat_want, _ = torch.utils._pytree.tree_flatten(want)
    for index, (g, w) in enumerate(zip(flat_got, flat_want, strict=True)):
        torch.testing.assert_close(
            g,
            w,
            rtol=tolerance.rtol,
            atol=tolerance.atol,
            equal_nan=True,
            msg=lambda m, index=index: f"{what}, output {index}: {m}",
        )


def _large_mean(shape):
    return torch.randn(*shape) * 1e3 + 1e4


def _unlike_start(shape):
    """The first 64 elements of each row near 0, the rest near 1e4 with a
    small spread: the pilot mean is far from the row's mean."""
    x = 1e4 + torch.randn(*shape)
    x[..., :64] = torch.randn(*x[..., :64].shape)
    return x


@pytest.mark.parametrize("shape", SHAPES, ids=_shape_id)
@pytest.mark.parametrize(
    "make",
    [torch.randn, _large_mean, _unlike_start],
    ids=["randn", "large_mean", "unlike_start"],
)
def test_matches_eager(shape, make, cache_dir):
    module, compiled = _compiled_for(shape, cache_dir)
    torch.manual_seed(2)
    x = make(shape)
    with torch.no_grad():
        want = module(x)
    # softmax of a spread of 1e3 is all in one element: compared like the rest.
    _check(compiled(x), want, f"{make.__name__} {_shape_id(shape)}")


@pytest.mark.parametrize("shape", [(5, 17), (3, 1000), (4, 50257)], ids=_shape_id)
def test_masked_softmax_rows(shape, cache_dir):
    """-inf entries are zeros of the softmax; a fully masked row is NaN, as
    in eager torch."""
    _, compiled = _compiled_for(shape, cache_dir)
    torch.manual_seed(3)
    x = torch.randn(*shape)
    x[0, ::3] = float("-inf")
    x[-1] = float("-inf")
    softmax, log_softmax = compiled(x)[:2]
    _check((softmax, log_softmax), (torch.softmax(x, -1), torch.log_softmax(x, -1)), "masked")
    assert softmax[-1].isnan().all()
    if shape[0] > 1:
        assert not softmax[:-1].isnan().any()


class Nchw(torch.nn.Module):
    def __init__(self, groups: int, channels: int):
        super().__init__()
        torch.manual_seed(5)
        self.norm = torch.nn.GroupNorm(groups, channels)
        with torch.no_grad():
            for param in self.norm.parameters():
                param.uniform_(0.5, 1.5)

    def forward(self, x):
        return self.norm(x)


@pytest.mark.parametrize(
    "groups, shape",
    [(32, (1, 64, 7, 9)), (32, (3, 64, 17, 23)), (5, (2, 15, 17, 23)), (4, (2, 8, 56, 56))],
    ids=["g32_1x64x7x9", "g32_3x64x17x23", "g5_2x15x17x23", "g4_2x8x56x56"],
)
def test_group_norm_nchw(groups, shape, cache_dir):
    module = Nchw(groups, shape[1]).eval()
    compiled = lowerline.compile(module, torch.randn(*shape), cache_dir=cache_dir)
    torch.manual_seed(6)
    for make in (torch.randn, _large_mean):
        x = make(shape)
        with torch.no_grad():
            _check(compiled(x), module(x), f"{make.__name__}")


class Softmax(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x, -1)


@pytest.mark.parametrize("shape", [(1, 7), (3, 1000), (2, 50257)], ids=_shape_id)
def test_bf16_softmax(shape, cache_dir):
    x = torch.randn(*shape).to(torch.bfloat16)
    compiled = lowerline.compile(Softmax(), x, cache_dir=cache_dir)
    torch.manual_seed(7)
    x = (torch.randn(*shape) * 4).to(torch.bfloat16)
    _check(compiled(x), torch.softmax(x, -1), "bf16", BF16)
