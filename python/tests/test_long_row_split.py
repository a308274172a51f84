"""One long row split across the threads (row_kernels, row_moments._parts).

A row kernel with fewer rows than cores and a variance over a row longer
than half of L2 (layer norm of one row, group norm with one group, ``var``)
splits the row's Chan blocks into one run per core, merges the runs in
their order, and splits the normalization by equal pieces of the row. The
lengths below are derived from the host's caches (``host_cpu``): a number
of blocks that the cores do not divide (a block left after the runs) plus a
partial last block, so every branch of the split runs. Against float64 on
rows made to break one-pass formulas, NaN and inf rows, one row and many;
shorter odd rows (1, 17, 50257, 65537) keep the paths they had.
"""

import pytest
import torch
import torch.nn.functional as F

import lowerline
from lowerline.cpu.tile_plan import reduction_chunk
from lowerline.passes.tiling.row_kernels import split_row_elements
from lowerline.passes.tiling.row_moments import block_elements
from lowerline.targets import host_cpu


def _split_length() -> int:
    """A row the host splits: more blocks than ``split_row_elements`` asks,
    one more than a multiple of the cores, and 17 elements more."""
    target = host_cpu()
    block = block_elements(target, 4, reduction_chunk(target, 4))
    blocks = -(-split_row_elements(target, 4) // block)
    cores = max(target.cores, 2)
    blocks = (blocks // cores + 1) * cores + 1
    return blocks * block + 17


LONG = _split_length()


class Norms(torch.nn.Module):
    """Layer norm and group norm of one group (channels first: the input's
    rows are its channels), the group norm on a graph of its own (``2 * x``
    is exact, so CSE shares no statistic between them)."""

    def __init__(self, rows: int):
        super().__init__()
        torch.manual_seed(1)
        self.weight = torch.nn.Parameter(torch.rand(rows) + 0.5)
        self.bias = torch.nn.Parameter(torch.rand(rows) - 0.5)

    def forward(self, x):
        return (
            F.layer_norm(x, x.shape[-1:]),
            F.group_norm((2 * x).unsqueeze(0), 1, self.weight, self.bias).squeeze(0),
        )


class Var(torch.nn.Module):
    """The variance alone (beside a layer norm of the same rows, CSE would
    share their sums, and neither would be a row kernel)."""

    def __init__(self, rows: int):
        super().__init__()

    def forward(self, x):
        return (torch.var(x, -1),)


_compiled: dict = {}


def _compiled_for(make_module, shape, cache_dir):
    key = (make_module, shape)
    if key not in _compiled:
        module = make_module(shape[0]).eval()
        compiled = lowerline.compile(module, torch.randn(*shape), cache_dir=cache_dir)
        assert not compiled.fallbacks, [str(f) for f in compiled.fallbacks]
        _compiled[key] = (module, compiled)
    return _compiled[key]


def _outputs(compiled, x):
    got = compiled(x)
    return got if isinstance(got, tuple | list) else (got,)


def _offset(shape):
    return 1e4 + torch.randn(*shape)


def _unlike_start(shape):
    x = 1e4 + torch.randn(*shape)
    x[..., :64] = torch.randn(*x[..., :64].shape)
    return x


def _error(got, want):
    return ((got.double() - want).abs().max() / want.abs().max().clamp_min(1e-30)).item()


SHAPES = [(1, LONG), (2, LONG // 2 + 1), (3, LONG), (2, 1), (1, 17), (1, 50257), (4, 65537)]


@pytest.mark.parametrize("kind", [Norms, Var])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("make", [torch.randn, _offset, _unlike_start])
def test_against_float64(kind, shape, make, cache_dir):
    """Each output within twice eager's error against float64, or 5e-7 on
    the rows of Chan's blocks (one row: split in runs; 1.6e-6 for the
    variance of offset rows op by op) and 2e-6 on the shorter rows of the
    two-pass moments."""
    module, compiled = _compiled_for(kind, shape, cache_dir)
    floor = 5e-7 if shape[1] == LONG else 2e-6
    torch.manual_seed(2)
    x = make(shape)
    with torch.no_grad():
        want = module.double()(x.double())
        eager = module.float()(x)
    for index, (got, e, w) in enumerate(zip(_outputs(compiled, x), eager, want, strict=True)):
        if isinstance(module, Var) and shape[1] == 1:  # the unbiased variance of one element
            assert got.isnan().all() and e.isnan().all()
            continue
        error, eager_error = _error(got, w), _error(e, w)
        assert error <= max(2 * eager_error, floor), (
            f"output {index}: {error:.2e} ({eager_error:.2e})"
        )


@pytest.mark.parametrize("kind", [Norms, Var])
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
@pytest.mark.parametrize("shape", [(1, LONG), (3, LONG)], ids=["one_row", "three_rows"])
def test_nan_and_inf_rows(kind, bad, shape, cache_dir):
    """A NaN or an infinity anywhere in a run (here in the last run's first
    block) makes the whole row NaN, as in eager torch; the other rows keep
    their values."""
    module, compiled = _compiled_for(kind, shape, cache_dir)
    torch.manual_seed(3)
    x = torch.randn(*shape)
    x[0, LONG // 2 + 5] = bad
    with torch.no_grad():
        want = module(x)
    for index, (got, w) in enumerate(zip(_outputs(compiled, x), want, strict=True)):
        assert torch.equal(got.isnan(), w.isnan()), f"output {index}"
        torch.testing.assert_close(got, w, rtol=1e-4, atol=1e-4, equal_nan=True)
