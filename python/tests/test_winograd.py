"""Winograd convolutions (lowerline-winograd-conv) through lowerline.compile:
taken for 3x3 stride-1 convolutions by default, off with winograd=False,
both within float32 tolerance of eager."""

import torch
from torch import nn

import lowerline


def block() -> nn.Module:
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(32, 32, 3, padding=1, bias=False),
        nn.BatchNorm2d(32),
        nn.ReLU(),
        nn.Conv2d(32, 16, 3, padding=1),
    )
    bn = model[1]
    bn.running_mean.uniform_(-0.5, 0.5)
    bn.running_var.uniform_(0.5, 2.0)
    return model.eval()


def test_winograd_is_the_default_for_3x3_convolutions_and_can_be_turned_off(tmp_path) -> None:
    model, x = block(), torch.randn(1, 32, 24, 20)
    with torch.no_grad():
        expected = model(x)
    on = lowerline.compile(model, x, cache_dir=str(tmp_path))
    off = lowerline.compile(model, x, cache_dir=str(tmp_path), winograd=False)
    # The transformed filters are constants named after the weights.
    assert on.ir("tiled").count(".winograd>") == 2
    assert ".winograd>" not in off.ir("tiled")
    for compiled in (on, off):
        torch.testing.assert_close(compiled(x), expected, rtol=1e-4, atol=1e-5)


def test_convolutions_winograd_cannot_compute_keep_the_direct_kernels(tmp_path) -> None:
    torch.manual_seed(0)
    # 3x3 but stride 2; then 3x3 with 8 output channels (below min-channels).
    model = nn.Sequential(nn.Conv2d(16, 16, 3, stride=2), nn.Conv2d(16, 8, 3)).eval()
    x = torch.randn(1, 16, 33, 33)
    compiled = lowerline.compile(model, x, cache_dir=str(tmp_path))
    assert ".winograd>" not in compiled.ir("tiled")
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
