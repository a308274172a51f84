"""Dense convolutions vectorized along the output channels
(``lowerline-vectorize-conv-channels``) within float32 tolerance of eager at
the shapes that exercise their edges: batch 1 and 3, 16, 32 and 48 output
channels (one or two vectors per register tile), odd planes (rows split into
uneven column tiles), stride 1 and 2, padding 0 to 3, dilation 2, a bias
and a ReLU (the fused epilogue) or neither; and the convolutions it leaves
to the row kernels (few input channels, a 1x1 window)."""

import pytest
import torch
from torch import nn

import lowerline
from lowerline.cpu.tile_plan import lanes
from lowerline.targets import cpu_target

# (batch, cin, cout, size, kernel, stride, padding, dilation, bias, relu)
CASES = [
    (1, 16, 16, 21, 3, 2, 1, 1, True, True),
    (3, 17, 48, 19, 3, 2, 1, 1, True, False),
    (1, 64, 32, 20, 3, 2, 1, 1, False, True),
    (3, 16, 32, 23, 7, 2, 3, 1, True, True),
    (1, 16, 16, 15, 5, 1, 2, 1, True, True),
    (3, 19, 48, 13, 5, 1, 2, 1, False, False),
    (1, 16, 32, 17, 3, 2, 2, 2, True, True),
    (3, 16, 16, 11, 3, 1, 0, 2, True, False),
]


def _packed_filter_type(cout: int, cin: int, kernel: int) -> str:
    """The packed filter's tensor type in the tiled IR: [F / L, C, KH, KW, L]."""
    width = lanes(cpu_target("host"), 4)
    return f"tensor<{cout // width}x{cin}x{kernel}x{kernel}x{width}xf32>"


@pytest.mark.parametrize(
    "case", CASES, ids=lambda c: "b{}-c{}to{}-s{}-k{}s{}p{}d{}-b{:d}r{:d}".format(*c)
)
def test_channel_vectors_match_eager(tmp_path, case) -> None:
    batch, cin, cout, size, kernel, stride, padding, dilation, bias, relu = case
    torch.manual_seed(0)
    conv = nn.Conv2d(cin, cout, kernel, stride, padding, dilation, bias=bias)
    model = (nn.Sequential(conv, nn.ReLU()) if relu else nn.Sequential(conv)).eval()
    x = torch.randn(batch, cin, size, size + 2)  # rows and columns differ
    compiled = lowerline.compile(model, x, cache_dir=str(tmp_path))
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
    tiled = compiled.ir("tiled")
    assert "linalg.conv_2d_nchw_fchw" not in tiled
    assert _packed_filter_type(cout, cin, kernel) in tiled


# (cin, cout, kernel, stride): a 3-channel stem, a 1x1 stride-2 shortcut.
LEFT = [(3, 64, 7, 2), (32, 64, 1, 2)]


@pytest.mark.parametrize("case", LEFT, ids=lambda c: "c{}to{}-k{}s{}".format(*c))
def test_row_kernels_kept(tmp_path, case) -> None:
    cin, cout, kernel, stride = case
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(cin, cout, kernel, stride, kernel // 2), nn.ReLU()).eval()
    x = torch.randn(1, cin, 29, 29)
    compiled = lowerline.compile(model, x, cache_dir=str(tmp_path))
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
    assert _packed_filter_type(cout, cin, kernel) not in compiled.ir("tiled")


def test_off_keeps_direct_kernels(tmp_path) -> None:
    """``conv_channel_vectors=False``: the same numbers from the row kernels."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(16, 16, 3, 2, 1), nn.ReLU()).eval()
    x = torch.randn(1, 16, 21, 21)
    compiled = lowerline.compile(model, x, cache_dir=str(tmp_path), conv_channel_vectors=False)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
    assert _packed_filter_type(16, 16, 3) not in compiled.ir("tiled")


# Few-channel convolutions followed by a max pool: computed with it in one
# kernel (the ResNet stem's 7x7/2 + BN + ReLU + 3x3/2 pool, AlexNet's 11x11/4
# + ReLU + 3x3/2 pool), at odd planes, batch 1 and 3, 3 and 4 channels.
# (batch, cin, cout, size, kernel, stride, padding, bias, bn, pool kernel,
#  pool stride, pool padding, ceil_mode)
POOLED = [
    (1, 3, 64, 33, 7, 2, 3, False, True, 3, 2, 1, False),
    (3, 3, 32, 29, 7, 2, 3, True, False, 3, 2, 1, False),
    (1, 4, 16, 31, 5, 2, 2, True, True, 2, 2, 0, False),
    (3, 3, 48, 47, 11, 4, 2, True, False, 3, 2, 0, True),
    (1, 4, 32, 27, 3, 1, 1, False, False, 3, 3, 1, True),
]


def _pooled_model(case) -> tuple[nn.Module, torch.Tensor]:
    batch, cin, cout, size, kernel, stride, padding, bias, bn, pk, ps, pp, ceil = case
    torch.manual_seed(0)
    layers: list[nn.Module] = [nn.Conv2d(cin, cout, kernel, stride, padding, bias=bias)]
    if bn:
        norm = nn.BatchNorm2d(cout)
        with torch.no_grad():
            norm.running_mean.uniform_(-0.5, 0.5)
            norm.running_var.uniform_(0.5, 2.0)
            norm.weight.uniform_(-1.0, 1.0)
            norm.bias.uniform_(-0.5, 0.5)
        layers.append(norm)
    layers += [nn.ReLU(), nn.MaxPool2d(pk, ps, pp, ceil_mode=ceil)]
    return nn.Sequential(*layers).eval(), torch.randn(batch, cin, size, size + 2)


@pytest.mark.parametrize(
    "case",
    POOLED,
    ids=lambda c: "b{}-c{}to{}-s{}-k{}s{}p{}-b{:d}n{:d}-pool{}s{}p{}c{:d}".format(*c),
)
def test_fused_max_pool_matches_eager(tmp_path, case) -> None:
    model, x = _pooled_model(case)
    compiled = lowerline.compile(model, x, cache_dir=str(tmp_path))
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
    tiled = compiled.ir("tiled")
    assert "linalg.pooling_nchw_max" not in tiled
    assert _packed_filter_type(case[2], case[1], case[4]) in tiled


def test_fused_max_pool_off_keeps_row_kernels(tmp_path) -> None:
    """``fuse-max-pool=false`` through the pass, as compiled here by
    ``conv_channel_vectors=False``: the pool stays a linalg op."""
    model, x = _pooled_model(POOLED[0])
    compiled = lowerline.compile(model, x, cache_dir=str(tmp_path), conv_channel_vectors=False)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
    assert _packed_filter_type(64, 3, 7) not in compiled.ir("tiled")
