"""Small modules of the zoo, grouped by the kind of op they exercise.

Shapes are odd on purpose (7, 13, 129...): no tile or vector width divides them.
"""

from collections import Counter

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from zoo_support import Case, Fn, params, run_case


def randn(*shape, dtype=torch.float32):
    return torch.randn(*shape, dtype=dtype)


def positive(*shape, dtype=torch.float32):
    return torch.rand(*shape, dtype=dtype) + 0.1


def ints(low, high, *shape, dtype=torch.int64):
    return torch.randint(low, high, shape, dtype=dtype)


def conv(cls, *args, **kwargs):
    return lambda: cls(*args, **kwargs)


class InvertedResidual(nn.Module):
    """MobileNetV2's block: 1x1 expansion, 3x3 depthwise, 1x1 projection,
    batch norms and ReLU6, with the residual add."""

    def __init__(self, channels: int, expansion: int):
        super().__init__()
        hidden = channels * expansion
        self.block = nn.Sequential(
            nn.Conv2d(channels, hidden, 1, bias=False),
            nn.BatchNorm2d(hidden),
            nn.ReLU6(),
            nn.Conv2d(hidden, hidden, 3, padding=1, groups=hidden, bias=False),
            nn.BatchNorm2d(hidden),
            nn.ReLU6(),
            nn.Conv2d(hidden, channels, 1, bias=False),
            nn.BatchNorm2d(channels),
        )

    def forward(self, x):
        return x + self.block(x)


ELEMENTWISE = [
    Case(
        "arith_chain",
        "elementwise",
        lambda: Fn(lambda a, b: a * b + a - b / (b.abs() + 1.0)),
        lambda: (randn(7, 13), randn(7, 13)),
    ),
    Case(
        "exp_log_sqrt",
        "elementwise",
        lambda: Fn(lambda x: torch.exp(x) + torch.log(x.abs() + 1) + torch.sqrt(x.abs())),
        lambda: (randn(7, 13),),
    ),
    Case(
        "trig",
        "elementwise",
        lambda: Fn(lambda x: torch.sin(x) * torch.cos(x) + torch.tanh(x) + torch.atan(x)),
        lambda: (randn(3, 129),),
    ),
    Case(
        "activations",
        "elementwise",
        lambda: Fn(
            lambda x: (
                F.gelu(x)
                + torch.sigmoid(x)
                + F.silu(x)
                + F.relu6(3 * x)
                + F.leaky_relu(x, 0.1)
                + F.elu(x)
                + F.softplus(x)
                + F.hardswish(x)
            )
        ),
        lambda: (randn(7, 13),),
    ),
    Case(
        "gelu_tanh_approx",
        "elementwise",
        lambda: Fn(lambda x: F.gelu(x, approximate="tanh")),
        lambda: (randn(129),),
    ),
    Case(
        "pow_rsqrt_reciprocal",
        "elementwise",
        lambda: Fn(lambda x: x.pow(1.5) + torch.rsqrt(x) + x**3 + torch.reciprocal(x) + x.pow(2)),
        lambda: (positive(7, 13),),
    ),
    Case(
        "rounding",
        "elementwise",
        lambda: Fn(
            lambda x: (
                torch.floor(x),
                torch.ceil(x),
                torch.round(x),
                torch.trunc(x),
                torch.remainder(x, 1.5),
                torch.fmod(x, 1.5),
                torch.sign(x),
            )
        ),
        lambda: (randn(7, 13) * 4,),
    ),
    Case(
        "fmod_remainder_signs",
        "elementwise",
        lambda: Fn(
            lambda a, b: (
                torch.fmod(a, 1.5),
                torch.fmod(a, -b),
                torch.remainder(a, -1.5),
                torch.remainder(a, b),
                torch.fmod((a * 10).int(), 7),
            )
        ),
        lambda: (randn(7, 13) * 8, positive(7, 13) * 3),
    ),
    Case(
        "broadcast_add",
        "elementwise",
        lambda: Fn(lambda a, b: a + b * 2),
        lambda: (randn(7, 1, 13), randn(5, 1)),
    ),
    Case(
        "f64_exp_tanh_log1p",
        "elementwise",
        lambda: Fn(lambda x: torch.exp(x) * torch.tanh(x) + torch.log1p(x.abs()) + torch.erf(x)),
        lambda: (randn(7, 13, dtype=torch.float64),),
    ),
]

COMPARISONS = [
    Case(
        "where_greater",
        "compare",
        lambda: Fn(lambda x, y: torch.where(x > y, x, y * 2)),
        lambda: (randn(7, 13), randn(7, 13)),
    ),
    Case(
        "masked_fill",
        "compare",
        lambda: Fn(lambda x: x.masked_fill(x < 0, 0.5)),
        lambda: (randn(13, 7),),
    ),
    Case(
        "comparisons_bool_outputs",
        "compare",
        lambda: Fn(lambda x, y: (x == y, x != y, x >= y, x <= 0.25, x > y, x < y)),
        lambda: (ints(0, 3, 7, 13).float(), ints(0, 3, 7, 13).float()),
    ),
    Case(
        "maximum_minimum_clamp",
        "compare",
        lambda: Fn(
            lambda x, y: (
                torch.maximum(x, y)
                + torch.minimum(x, y)
                + x.clamp(-0.5, 0.7)
                + torch.clamp(x, min=y)
            )
        ),
        lambda: (randn(7, 13), randn(7, 13)),
    ),
    Case(
        "logical_ops",
        "compare",
        lambda: Fn(
            lambda x, y: torch.where(
                torch.logical_and(x > 0, torch.logical_not(y > 0)) | (x > 1) ^ (y < -1), x, y
            )
        ),
        lambda: (randn(7, 13), randn(7, 13)),
    ),
    Case(
        "isnan_nan_to_num",
        "compare",
        lambda: Fn(lambda x: (torch.where(torch.isnan(x), 0.0, x), torch.isinf(x))),
        lambda: (torch.tensor([[1.0, float("nan"), -2.0], [float("inf"), 0.5, -float("inf")]]),),
    ),
    Case(
        "nan_propagation",
        "compare",
        lambda: Fn(
            lambda x, y: (
                torch.maximum(x, y),
                torch.minimum(y, x),
                x.clamp(-0.5, 0.5),
                F.relu6(x),
                F.hardtanh(x),
                x.clamp(min=y),
                x.amax(1),
                F.relu(x),
            )
        ),
        lambda: (
            torch.tensor([[1.0, float("nan"), -2.0, 7.0], [0.25, 4.0, float("nan"), -9.0]]),
            torch.tensor([[float("nan"), 3.0, -1.0, 2.0], [0.5, float("nan"), 8.0, -3.0]]),
        ),
    ),
    Case(
        "where_scalar_branches_i64",
        "compare",
        lambda: Fn(lambda x: torch.where(x % 3 == 0, x, -1)),
        lambda: (ints(-50, 50, 13, 7),),
    ),
]

REDUCTIONS = [
    Case(
        "sum_dim_keepdim",
        "reduce",
        lambda: Fn(lambda x: (x.sum(dim=1), x.sum(dim=0, keepdim=True))),
        lambda: (randn(7, 129),),
    ),
    Case(
        "mean_two_dims",
        "reduce",
        lambda: Fn(lambda x: x.mean(dim=(0, 2))),
        lambda: (randn(3, 7, 13),),
    ),
    Case(
        "amax_amin_argmax",
        "reduce",
        lambda: Fn(lambda x: (x.amax(dim=-1), x.amin(dim=0), x.argmax(dim=1), x.argmin(dim=0))),
        lambda: (randn(7, 13),),
    ),
    Case(
        "max_with_indices",
        "reduce",
        lambda: Fn(lambda x: torch.max(x, dim=1)),
        lambda: (randn(7, 13),),
    ),
    Case(
        "prod_var_std",
        "reduce",
        lambda: Fn(lambda x: (x.prod(dim=1), x.var(dim=1), x.std(dim=0, unbiased=False))),
        lambda: (positive(7, 13) + 0.5,),
    ),
    Case(
        "vector_norm_logsumexp",
        "reduce",
        lambda: Fn(lambda x: (torch.linalg.vector_norm(x, dim=-1), torch.logsumexp(x, dim=0))),
        lambda: (randn(13, 7),),
    ),
    Case(
        "sum_to_scalar",
        "reduce",
        lambda: Fn(lambda x: x.sum()),
        lambda: (randn(7, 13, 5),),
    ),
    Case(
        "any_all_bool",
        "reduce",
        lambda: Fn(lambda x: ((x > 1).any(dim=1), (x > -2).all(dim=0), (x > 2).any())),
        lambda: (randn(7, 13),),
    ),
]

SOFTMAX = [
    Case(
        "softmax_last_dim",
        "softmax",
        lambda: nn.Softmax(dim=-1),
        lambda: (randn(7, 13),),
    ),
    Case(
        "softmax_middle_dim",
        "softmax",
        lambda: Fn(lambda x: torch.softmax(x, dim=1)),
        lambda: (randn(3, 129, 5),),
    ),
    Case(
        "log_softmax_dim0",
        "softmax",
        lambda: nn.LogSoftmax(dim=0),
        lambda: (randn(13, 7),),
    ),
    Case(
        "softmax_large_logits",
        "softmax",
        lambda: Fn(lambda x: (torch.softmax(x * 80, -1), torch.log_softmax(x * 80, -1))),
        lambda: (randn(7, 13),),
    ),
    Case(
        "softmax_f64",
        "softmax",
        lambda: Fn(lambda x: torch.softmax(x, dim=-1)),
        lambda: (randn(5, 129, dtype=torch.float64),),
    ),
]

NORMS = [
    Case(
        "layer_norm",
        "norm",
        lambda: nn.LayerNorm(13),
        lambda: (randn(5, 7, 13),),
    ),
    Case(
        "layer_norm_two_dims_no_affine",
        "norm",
        lambda: nn.LayerNorm((7, 13), elementwise_affine=False),
        lambda: (randn(3, 7, 13),),
    ),
    Case(
        "group_norm",
        "norm",
        lambda: nn.GroupNorm(3, 9),
        lambda: (randn(2, 9, 5, 7),),
    ),
    Case(
        "batch_norm_2d_eval",
        "norm",
        lambda: _stats(nn.BatchNorm2d(5)),
        lambda: (randn(2, 5, 7, 13),),
    ),
    Case(
        "batch_norm_1d_eval",
        "norm",
        lambda: _stats(nn.BatchNorm1d(13)),
        lambda: (randn(7, 13),),
    ),
    Case(
        "rms_norm",
        "norm",
        lambda: nn.RMSNorm(13, eps=1e-6),
        lambda: (randn(7, 13),),
    ),
]


def _stats(bn: nn.Module) -> nn.Module:
    bn.running_mean.uniform_(-1, 1)
    bn.running_var.uniform_(0.5, 2)
    nn.init.uniform_(bn.weight, 0.5, 1.5)
    nn.init.uniform_(bn.bias, -0.5, 0.5)
    return bn


MATMUL = [
    Case(
        "matmul_2d",
        "matmul",
        lambda: Fn(torch.matmul),
        lambda: (randn(7, 13), randn(13, 129)),
    ),
    Case(
        "bmm",
        "matmul",
        lambda: Fn(torch.bmm),
        lambda: (randn(3, 7, 13), randn(3, 13, 5)),
    ),
    Case(
        "linear_3d_input",
        "matmul",
        lambda: nn.Linear(13, 29),
        lambda: (randn(2, 7, 13),),
    ),
    Case(
        "linear_no_bias",
        "matmul",
        lambda: nn.Linear(129, 7, bias=False),
        lambda: (randn(5, 129),),
    ),
    Case(
        "matmul_broadcast_4d",
        "matmul",
        lambda: Fn(lambda a, b: a @ b),
        lambda: (randn(2, 3, 7, 13), randn(13, 5)),
    ),
    Case(
        "matmul_vector",
        "matmul",
        lambda: Fn(lambda v, m, w: (v @ m, m @ w, v @ v)),
        lambda: (randn(13), randn(13, 7), randn(7)),
    ),
    Case(
        "addmm_einsum",
        "matmul",
        lambda: Fn(
            lambda c, a, b: (torch.addmm(c, a, b), torch.einsum("bij,bkj->bik", a[None], a[None]))
        ),
        lambda: (randn(7, 5), randn(7, 13), randn(13, 5)),
    ),
    Case(
        "matmul_f64",
        "matmul",
        lambda: Fn(torch.matmul),
        lambda: (randn(7, 129, dtype=torch.float64), randn(129, 13, dtype=torch.float64)),
    ),
]

CONVS = [
    Case(
        "conv2d_stride_padding",
        "conv",
        conv(nn.Conv2d, 3, 5, 3, stride=2, padding=1),
        lambda: (randn(2, 3, 13, 13),),
    ),
    Case(
        "conv2d_dilation",
        "conv",
        conv(nn.Conv2d, 4, 6, 3, padding=2, dilation=2),
        lambda: (randn(1, 4, 13, 11),),
    ),
    Case(
        "conv2d_groups",
        "conv",
        conv(nn.Conv2d, 6, 9, (3, 5), padding=(1, 2), groups=3),
        lambda: (randn(2, 6, 7, 13),),
    ),
    Case(
        "conv2d_depthwise",
        "conv",
        conv(nn.Conv2d, 5, 5, 3, stride=2, padding=1, groups=5),
        lambda: (randn(2, 5, 13, 13),),
    ),
    Case(
        "conv2d_depthwise_multiplier",
        "conv",
        conv(nn.Conv2d, 3, 6, 5, padding=2, groups=3, bias=False),
        lambda: (randn(1, 3, 13, 7),),
    ),
    Case(
        "conv2d_asymmetric_stride_no_bias",
        "conv",
        conv(nn.Conv2d, 3, 7, (5, 3), stride=(3, 2), padding=(2, 0), bias=False),
        lambda: (randn(2, 3, 13, 11),),
    ),
    Case(
        "conv1d_stride_padding",
        "conv",
        conv(nn.Conv1d, 4, 7, 5, stride=2, padding=3),
        lambda: (randn(2, 4, 129),),
    ),
    Case(
        "conv1d_dilation_groups",
        "conv",
        conv(nn.Conv1d, 6, 4, 3, dilation=3, groups=2, padding=1),
        lambda: (randn(3, 6, 29),),
    ),
    Case(
        "conv1d_depthwise",
        "conv",
        conv(nn.Conv1d, 7, 7, 7, padding=3, groups=7),
        lambda: (randn(2, 7, 13),),
    ),
    # Window nests (tile-and-fuse): rows longer than a register tile (a
    # partial tile), batch 1 and 8, bias and activation epilogues.
    *(
        Case(name, "conv", make, lambda shape=shape: (randn(*shape),))
        for name, make, shape in (
            ("inverted_residual_depthwise", lambda: InvertedResidual(8, 3), (1, 8, 37, 37)),
            (
                "depthwise_stride_2_hardswish_batch_8",
                lambda: nn.Sequential(
                    nn.Conv2d(6, 6, 3, stride=2, padding=1, groups=6), nn.Hardswish()
                ),
                (8, 6, 19, 45),
            ),
            (
                "resnet_stem",
                lambda: nn.Sequential(
                    nn.Conv2d(3, 8, 7, stride=2, padding=3),
                    nn.ReLU(),
                    nn.MaxPool2d(3, stride=2, padding=1),
                ),
                (1, 3, 67, 71),
            ),
            (
                "grouped_dilated_batch_8",
                conv(nn.Conv2d, 4, 6, 3, padding=2, dilation=2, groups=2),
                (8, 4, 9, 37),
            ),
        )
    ),
]

POOLING = [
    # Window nests over rows longer than a register tile, batch 1 and 8.
    *(
        Case(name, "pool", make, lambda shape=shape: (randn(*shape),))
        for name, make, shape in (
            (
                "max_pool2d_ceil_batch_8",
                lambda: nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True),
                (8, 5, 23, 41),
            ),
            ("avg_pool2d_wide_batch_1", lambda: nn.AvgPool2d(2), (1, 3, 9, 75)),
            (
                "global_avg_pool_batch_8",
                lambda: Fn(lambda x: F.adaptive_avg_pool2d(x, 1).flatten(1)),
                (8, 7, 11, 13),
            ),
        )
    ),
    Case(
        "max_pool2d",
        "pool",
        lambda: nn.MaxPool2d(3, stride=2, padding=1),
        lambda: (randn(2, 3, 13, 13),),
    ),
    Case(
        "max_pool2d_dilation_ceil",
        "pool",
        lambda: nn.MaxPool2d(2, stride=2, dilation=2, ceil_mode=True),
        lambda: (randn(1, 4, 13, 11),),
    ),
    Case(
        "avg_pool2d_padding",
        "pool",
        lambda: nn.AvgPool2d(3, stride=2, padding=1),
        lambda: (randn(2, 3, 13, 13),),
    ),
    Case(
        "avg_pool2d_exclude_pad",
        "pool",
        lambda: nn.AvgPool2d((3, 2), stride=(2, 1), padding=1, count_include_pad=False),
        lambda: (randn(2, 3, 13, 7),),
    ),
    Case(
        "adaptive_avg_pool2d",
        "pool",
        lambda: Fn(lambda x: (F.adaptive_avg_pool2d(x, 1), F.adaptive_avg_pool2d(x, (3, 5)))),
        lambda: (randn(2, 3, 13, 13),),
    ),
    Case(
        "adaptive_max_pool2d",
        "pool",
        lambda: nn.AdaptiveMaxPool2d((3, 4)),
        lambda: (randn(2, 3, 13, 13),),
    ),
    Case(
        "pool1d",
        "pool",
        lambda: Fn(
            lambda x: (F.max_pool1d(x, 3, 2, 1), F.avg_pool1d(x, 5, 3), F.adaptive_avg_pool1d(x, 4))
        ),
        lambda: (randn(2, 3, 29),),
    ),
]

GATHER = [
    Case(
        "embedding",
        "gather",
        lambda: nn.Embedding(29, 7),
        lambda: (ints(0, 29, 3, 13),),
    ),
    Case(
        "embedding_i32_ids",
        "gather",
        lambda: nn.Embedding(129, 5),
        lambda: (ints(0, 129, 13, dtype=torch.int32),),
    ),
    Case(
        "index_select",
        "gather",
        lambda: Fn(lambda x, idx: (torch.index_select(x, 1, idx), x.index_select(0, idx[:3]))),
        lambda: (randn(7, 13), ints(0, 7, 5)),
    ),
    Case(
        "gather_dim1",
        "gather",
        lambda: Fn(lambda x, idx: torch.gather(x, 1, idx)),
        lambda: (randn(7, 13), ints(0, 13, 7, 5)),
    ),
    Case(
        "advanced_indexing",
        "gather",
        lambda: Fn(lambda x, idx: (x[idx], x[:, idx], x[idx, idx])),
        lambda: (randn(13, 13), ints(0, 13, 7)),
    ),
]

CONCAT = [
    Case(
        "cat_three",
        "concat",
        lambda: Fn(lambda a, b, c: torch.cat([a, b, c], dim=1)),
        lambda: (randn(7, 3), randn(7, 13), randn(7, 1)),
    ),
    Case(
        "stack",
        "concat",
        lambda: Fn(lambda a, b: torch.stack([a, b, a * b], dim=1)),
        lambda: (randn(7, 13), randn(7, 13)),
    ),
    Case(
        "split_uneven",
        "concat",
        lambda: Fn(lambda x: torch.split(x, 5, dim=1)),
        lambda: (randn(7, 13),),
    ),
    Case(
        "chunk_sizes",
        "concat",
        lambda: Fn(lambda x: [c * i for i, c in enumerate(torch.split(x, [2, 4, 1], dim=0))]),
        lambda: (randn(7, 13),),
    ),
    Case(
        "slice_step_negative",
        "concat",
        lambda: Fn(lambda x: (x[:, 1:12:3], x[..., -3:], x[2:-1], x.narrow(1, 4, 5))),
        lambda: (randn(7, 13),),
    ),
    Case(
        "flip_roll",
        "concat",
        lambda: Fn(lambda x: (torch.flip(x, [1]), torch.roll(x, 3, 1))),
        lambda: (randn(7, 13),),
    ),
]

RESHAPE = [
    Case(
        "reshape_view",
        "reshape",
        lambda: Fn(lambda x: (x.reshape(13, 7) + 1, x.view(-1) * 2, x.reshape(7, 13, 1))),
        lambda: (randn(7, 13),),
    ),
    Case(
        "permute_transpose",
        "reshape",
        lambda: Fn(lambda x: (x.permute(2, 0, 1) * 2, x.transpose(0, 1).contiguous())),
        lambda: (randn(3, 7, 5),),
    ),
    Case(
        "expand_broadcast",
        "reshape",
        lambda: Fn(lambda x, y: x.expand(7, 13) + y.expand(3, 7, 13)),
        lambda: (randn(7, 1), randn(1, 13)),
    ),
    Case(
        "flatten_squeeze_unsqueeze",
        "reshape",
        lambda: Fn(lambda x: (torch.flatten(x, 1), x.squeeze(1).unsqueeze(-1), x[:, None, 0])),
        lambda: (randn(3, 1, 7, 5),),
    ),
    Case(
        "repeat_tile",
        "reshape",
        lambda: Fn(lambda x: (x.repeat(2, 3), torch.tile(x, (3, 1)))),
        lambda: (randn(7, 5),),
    ),
    Case(
        "pixel_shuffle",
        "reshape",
        lambda: nn.PixelShuffle(2),
        lambda: (randn(1, 8, 7, 5),),
    ),
]

CUMSUM = [
    Case(
        "cumsum_last_dim",
        "cumsum",
        lambda: Fn(lambda x: torch.cumsum(x, dim=-1)),
        lambda: (randn(7, 13),),
    ),
    Case(
        "cumsum_long_dim0",
        "cumsum",
        lambda: Fn(lambda x: torch.cumsum(x, dim=0)),
        lambda: (randn(129, 3),),
    ),
    Case(
        "cumsum_i32_to_i64",
        "cumsum",
        lambda: Fn(lambda x: torch.cumsum(x, dim=1)),
        lambda: (ints(-100, 100, 5, 13, dtype=torch.int32),),
    ),
    Case(
        "cumsum_bool_and_dtype",
        "cumsum",
        lambda: Fn(lambda x: ((x > 0).cumsum(0), torch.cumsum(x, 1, dtype=torch.float64))),
        lambda: (randn(7, 13),),
    ),
    Case(
        "cumsum_length_one_and_3d",
        "cumsum",
        lambda: Fn(lambda x: (x.cumsum(1), x.cumsum(2))),
        lambda: (randn(2, 1, 7),),
    ),
]

INTEGER = [
    Case(
        "i64_arith",
        "integer",
        lambda: Fn(lambda a, b: (a + b * 3 - 7, a // b, a % b, torch.abs(a), -b)),
        lambda: (ints(-100, 100, 7, 13), ints(1, 9, 7, 13)),
    ),
    Case(
        "i32_bitwise",
        "integer",
        lambda: Fn(lambda a, b: (a & b, a | b, a ^ b, ~a, a << 2, b >> 1)),
        lambda: (ints(0, 1000, 7, 13, dtype=torch.int32), ints(0, 1000, 7, 13, dtype=torch.int32)),
    ),
    Case(
        "i8_wraparound",
        "integer",
        lambda: Fn(lambda a, b: (a + b, a * b, torch.maximum(a, b))),
        lambda: (
            ints(-128, 128, 13, 7, dtype=torch.int8),
            ints(-128, 128, 13, 7, dtype=torch.int8),
        ),
    ),
    Case(
        "bool_logic",
        "integer",
        lambda: Fn(lambda a, b: (a & b, a | ~b, a ^ b, a.sum(), (a == b).to(torch.int32))),
        lambda: (ints(0, 2, 7, 13).bool(), ints(0, 2, 7, 13).bool()),
    ),
    Case(
        "int_pow",
        "integer",
        lambda: Fn(lambda a, b: (a**2, a.pow(3), b.pow(5), a.pow(0))),
        lambda: (ints(-20, 20, 7, 13), ints(-9, 9, 13, dtype=torch.int8)),
    ),
    Case(
        "int_float_casts",
        "integer",
        lambda: Fn(lambda a: ((a.float() / 3).to(torch.int32), a / 2, a.to(torch.int8), a.bool())),
        lambda: (ints(-300, 300, 7, 13),),
    ),
    Case(
        "int_reductions",
        "integer",
        lambda: Fn(lambda a: (a.sum(dim=1), a.amax(dim=0), a.prod(dim=1), a.sum())),
        lambda: (ints(-5, 6, 7, 13, dtype=torch.int32),),
    ),
]

# Zero-size dimensions (issue 20 item 3): empty results, or zeros plus the
# bias where the reduction (K, input features) is empty. Tile planning used
# to divide by the size, and a transpose of an empty weight aborted LLVM.
EMPTY = [
    Case("linear_batch_0", "empty", conv(torch.nn.Linear, 1, 1), lambda: (randn(0, 1),)),
    Case("linear_in_0", "empty", conv(torch.nn.Linear, 0, 3), lambda: (randn(2, 0),)),
    Case("linear_out_0", "empty", conv(torch.nn.Linear, 4, 0), lambda: (randn(2, 4),)),
    Case("conv_batch_0", "empty", conv(torch.nn.Conv2d, 3, 4, 3), lambda: (randn(0, 3, 5, 5),)),
    Case("bmm_k_0", "empty", lambda: Fn(torch.bmm), lambda: (randn(2, 3, 0), randn(2, 0, 5))),
]

CASES = (
    ELEMENTWISE
    + COMPARISONS
    + REDUCTIONS
    + SOFTMAX
    + NORMS
    + MATMUL
    + CONVS
    + POOLING
    + GATHER
    + CONCAT
    + RESHAPE
    + CUMSUM
    + INTEGER
    + EMPTY
)


def test_every_group_has_three_cases() -> None:
    groups = Counter(case.group for case in CASES)
    assert len(groups) == 14 and min(groups.values()) >= 3, groups
    assert len(CASES) >= 60


@pytest.mark.parametrize("case", params(CASES))
def test_op(case: Case, zoo_cache: str) -> None:
    run_case(case, zoo_cache)
