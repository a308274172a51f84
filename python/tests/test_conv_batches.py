"""Dense convolutions at batch 1 and larger batches through lowerline.compile:
3x3 and 1x1, stride 1 and 2, odd channel counts and sizes, each on its
kernel path (none left as loops) and within float32 tolerance of eager."""

import pytest
import torch
from torch import nn

import lowerline


class ResidualStack(nn.Module):
    """A direct 3x3 (few input channels), a strided 3x3 with batch norm, a
    Winograd 3x3, a strided 1x1 shortcut and a 1x1 back to the input
    channels: the convolution kinds of a ResNet stage."""

    def __init__(self, cin: int, width: int = 64) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(cin, width, 3, padding=1), nn.ReLU())
        self.down = nn.Sequential(
            nn.Conv2d(width, width, 3, stride=2, padding=1, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(),
            nn.Conv2d(width, width, 3, padding=1),
        )
        self.shortcut = nn.Conv2d(width, width, 1, stride=2, bias=False)
        self.head = nn.Conv2d(width, cin, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.stem(x)
        return self.head(torch.relu(self.down(y) + self.shortcut(y)))


def model(cin: int) -> nn.Module:
    torch.manual_seed(0)
    stack = ResidualStack(cin)
    bn = stack.down[1]
    bn.running_mean.uniform_(-0.5, 0.5)
    bn.running_var.uniform_(0.5, 2.0)
    return stack.eval()


@pytest.mark.parametrize(
    ("batch", "cin", "size"), [(1, 3, 7), (3, 13, 15), (8, 13, 15), (8, 3, 56)]
)
def test_dense_convolutions_at_every_batch(tmp_path, batch, cin, size) -> None:
    stack = model(cin)
    x = torch.randn(batch, cin, size, size)
    compiled = lowerline.compile(stack, x, cache_dir=str(tmp_path))
    tiled = compiled.ir("tiled")
    assert "linalg.conv_2d_nchw_fchw" not in tiled  # every one tiled into kernels
    assert ".winograd>" in tiled  # the 64 -> 64 3x3 stride 1
    # The strided window steps are multiply-adds LLVM may fuse into FMAs.
    assert "fastmath<contract>" in tiled
    assert not [f for f in compiled.fallbacks if "conv" in f.op]
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), stack(x), rtol=1e-4, atol=1e-4)
