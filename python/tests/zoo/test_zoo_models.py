"""Whole models of the zoo: MLP, ResNet basic block, small CNN, transformer encoder
layer, text classifier, and the benchmark's models (bench/speed.py). Each is
compiled and compared with eager torch."""

import pytest
import torch
from torch import nn
from zoo_support import Case, bench_models, params, run_case


class BasicBlock(nn.Module):
    """ResNet's basic block: conv-BN-ReLU-conv-BN, identity shortcut, ReLU."""

    def __init__(self, channels: int):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(y)) + x)


class DownsampleBlock(nn.Module):
    """ResNet's basic block that halves the resolution: 1x1 strided projection shortcut."""

    def __init__(self, cin: int, cout: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=2, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential(
            nn.Conv2d(cin, cout, 1, stride=2, bias=False), nn.BatchNorm2d(cout)
        )

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(y)) + self.shortcut(x))


def with_running_stats(module: nn.Module) -> nn.Module:
    """Give every BatchNorm non-trivial running statistics and affine parameters."""
    for m in module.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 2.0)
            nn.init.uniform_(m.weight, 0.5, 1.5)
            nn.init.uniform_(m.bias, -0.5, 0.5)
    return module.eval()


class SmallCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.AvgPool2d(2),
            nn.Conv2d(16, 12, 3),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Linear(12, 5)

    def forward(self, x):
        return self.head(torch.flatten(self.features(x), 1))


class TextClassifier(nn.Module):
    """Embedding, mean pooling over the sequence, linear head; integer token inputs."""

    def __init__(self, vocab: int = 53, dim: int = 17, classes: int = 3):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, tokens):
        return self.head(self.embed(tokens).mean(dim=1))


def encoder_layer() -> nn.Module:
    return nn.TransformerEncoderLayer(
        d_model=32, nhead=4, dim_feedforward=64, dropout=0.0, batch_first=True
    )


class MaskedEncoder(nn.Module):
    """An encoder layer with a key padding mask: a bool tensor input."""

    def __init__(self):
        super().__init__()
        self.layer = encoder_layer()

    def forward(self, x, padding):
        return self.layer(x, src_key_padding_mask=padding)


def padding_mask() -> torch.Tensor:
    mask = torch.zeros(2, 7, dtype=torch.bool)
    mask[0, 5:] = True
    mask[1, 3:] = True
    return mask


MODELS = [
    Case(
        "mlp",
        "model",
        lambda: nn.Sequential(nn.Linear(13, 29), nn.ReLU(), nn.Linear(29, 7)),
        lambda: (torch.randn(5, 13),),
    ),
    Case(
        "mlp_gelu_softmax",
        "model",
        lambda: nn.Sequential(nn.Linear(129, 33), nn.GELU(), nn.Linear(33, 10), nn.Softmax(dim=-1)),
        lambda: (torch.randn(3, 129),),
    ),
    Case(
        "resnet_basic_block",
        "model",
        lambda: with_running_stats(BasicBlock(8)),
        lambda: (torch.randn(2, 8, 13, 13),),
    ),
    Case(
        # 16 channels and 16x16 outputs: both convolutions take the Winograd
        # F(4x4, 3x3) path (lowerline-winograd-conv), batch 2.
        "resnet_basic_block_winograd",
        "model",
        lambda: with_running_stats(BasicBlock(16)),
        lambda: (torch.randn(2, 16, 16, 16),),
    ),
    Case(
        # Winograd with a bias (the init is added to) and rows of 18 tiles:
        # a vector of 16 tiles and one of 2, padded.
        "conv_bias_wide_rows_winograd",
        "model",
        lambda: nn.Sequential(nn.Conv2d(16, 24, 3, padding=1), nn.ReLU()),
        lambda: (torch.randn(1, 16, 8, 72),),
    ),
    Case(
        # Output sides 4 does not divide (14x14, ResNet's third stage; 7x7 and
        # 9x11 below): the last tiles hang over the edges.
        "resnet_basic_block_winograd_14x14",
        "model",
        lambda: with_running_stats(BasicBlock(16)),
        lambda: (torch.randn(1, 16, 14, 14),),
    ),
    Case(
        "conv_bias_7x7_winograd",
        "model",
        lambda: nn.Sequential(nn.Conv2d(16, 24, 3, padding=1), nn.ReLU()),
        lambda: (torch.randn(2, 16, 7, 7),),
    ),
    Case(
        # No padding: the transform reads the argument itself; 9x11 outputs.
        "conv_valid_ragged_winograd",
        "model",
        lambda: nn.Conv2d(16, 16, 3, bias=False),
        lambda: (torch.randn(1, 16, 11, 13),),
    ),
    Case(
        "resnet_downsample_block",
        "model",
        lambda: with_running_stats(DownsampleBlock(5, 8)),
        lambda: (torch.randn(2, 5, 13, 13),),
    ),
    Case(
        "small_cnn",
        "model",
        lambda: with_running_stats(SmallCnn()),
        lambda: (torch.randn(2, 3, 29, 29),),
    ),
    Case(
        "transformer_encoder_layer",
        "model",
        encoder_layer,
        lambda: (torch.randn(2, 7, 32),),
    ),
    Case(
        "transformer_encoder_layer_padding_mask",
        "model",
        MaskedEncoder,
        lambda: (torch.randn(2, 7, 32), padding_mask()),
    ),
    Case(
        "text_classifier",
        "model",
        TextClassifier,
        lambda: (torch.randint(0, 53, (4, 11)),),
    ),
]


@pytest.mark.parametrize("case", params(MODELS))
def test_model(case: Case, zoo_cache: str) -> None:
    run_case(case, zoo_cache)


@pytest.mark.parametrize("case", params(bench_models()))
def test_bench_model(case: Case, zoo_cache: str) -> None:
    """The benchmark's models (bench/speed.py) compile, match eager torch and
    leave no hot op as plain loops (expected_fallbacks lists what may be)."""
    run_case(case, zoo_cache)
