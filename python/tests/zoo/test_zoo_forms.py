"""Dtypes and calling forms of the zoo: half and bfloat16 models, integer and
bool tensors, 0-d outputs, several outputs (tuple, list, dict), outputs that
alias inputs, buffers, Python numbers among the inputs, non-contiguous inputs."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from zoo_support import BF16, F16, Case, Fn, params, run_case


class Scaled(nn.Module):
    """A buffer (not a parameter) used in forward."""

    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.linspace(0.5, 2.0, 13))
        self.register_buffer("offset", torch.arange(13, dtype=torch.int64))

    def forward(self, x):
        return x * self.scale + self.offset


class BoolBuffer(nn.Module):
    """A bool buffer: weights of dtype bool are bound as constants."""

    def __init__(self):
        super().__init__()
        self.register_buffer("keep", torch.rand(7, 13) > 0.5)

    def forward(self, x):
        return torch.where(self.keep, x, -x), self.keep & (x > 0)


class EmptyBuffer(nn.Module):
    """A buffer with no elements: bound as a constant with nothing to map."""

    def __init__(self):
        super().__init__()
        self.register_buffer("none", torch.zeros(0, 13))

    def forward(self, x):
        return torch.cat([self.none, x]) * 2, self.none + 1


class WithNumbers(nn.Module):
    """Python numbers among the inputs: torch.export bakes them into the program."""

    def forward(self, x, scale: float, shift: int, flag: bool):
        y = x * scale + shift
        return torch.relu(y) if flag else y


class DictOut(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(13, 5)

    def forward(self, x):
        y = self.proj(x)
        return {"logits": y, "probs": torch.softmax(y, -1), "top": y.argmax(-1)}


# Ties between bf16 values (1 + 2**-8), a double just above one (torch
# converts f64 through f32, and so rounds it down), subnormals of bf16,
# overflow and NaN.
CONVERSIONS = [1.00390625, 1.01171875, 1.00390625 + 2**-40, 1e-39, -3e-40, 1e39, float("nan")]


def half_mlp(dtype: torch.dtype) -> nn.Module:
    return nn.Sequential(nn.Linear(13, 29), nn.GELU(), nn.Linear(29, 7)).to(dtype)


def transposed(*shape) -> torch.Tensor:
    """A non-contiguous view: the transpose of a contiguous tensor."""
    return torch.randn(*reversed(shape)).t()


FORMS = [
    # -- floating-point types --------------------------------------------------
    Case(
        "f16_mlp",
        "dtype",
        lambda: half_mlp(torch.float16),
        lambda: (torch.randn(5, 13, dtype=torch.float16),),
        **F16,
    ),
    Case(
        "f16_elementwise_softmax",
        "dtype",
        lambda: Fn(lambda x: (torch.exp(x) * torch.tanh(x) + x.abs().sqrt(), torch.softmax(x, -1))),
        lambda: (torch.randn(7, 13, dtype=torch.float16),),
        **F16,
    ),
    Case(
        "bf16_mlp",
        "dtype",
        lambda: half_mlp(torch.bfloat16),
        lambda: (torch.randn(5, 13, dtype=torch.bfloat16),),
        **BF16,
    ),
    Case(
        "bf16_layer_norm_reduce",
        "dtype",
        lambda: nn.Sequential(nn.LayerNorm(13), nn.SiLU()).to(torch.bfloat16),
        lambda: (torch.randn(3, 7, 13, dtype=torch.bfloat16),),
        **BF16,
    ),
    Case(
        "f16_conv2d",
        "dtype",
        lambda: nn.Conv2d(3, 5, 3, padding=1).to(torch.float16),
        lambda: (torch.randn(1, 3, 7, 13, dtype=torch.float16),),
        **F16,
    ),
    # Long reductions: ATen accumulates half types in f32, and so does the
    # compiled code. With a half accumulator, sums of 1029 values are off by
    # 0.25 (f16) and by 968 of 2000 (bf16: the sum stops growing).
    Case(
        "f16_long_reductions",
        "dtype",
        lambda: Fn(lambda h: (h.sum(-1), h.mean(-1), h[:, :300].cumsum(-1))),
        lambda: (torch.randn(7, 1029, dtype=torch.float16),),
        **F16,
    ),
    Case(
        "bf16_long_reductions",
        "dtype",
        lambda: Fn(
            lambda b: (
                b.sum(-1),
                b.var(-1),
                b[:, :300].cumsum(-1),
                F.adaptive_avg_pool1d(b[None], 1),
                b.softmax(-1)[:, :5],
            )
        ),
        lambda: (torch.randn(3, 1029, dtype=torch.bfloat16) + 2,),
        **BF16,
    ),
    Case(
        "half_conversions",
        "dtype",
        lambda: Fn(lambda d, s: (d.to(torch.bfloat16), d.half(), s.to(torch.bfloat16), s.half())),
        lambda: (torch.tensor(CONVERSIONS, dtype=torch.float64), torch.tensor(CONVERSIONS)),
        rtol=0.0,
        atol=0.0,
        reason="conversions are exact: the same bits as torch",
    ),
    Case(
        "mixed_f16_f32_f64",
        "dtype",
        lambda: Fn(lambda a, b, c: (a + b, b * c, (a.float() + c.float()).to(torch.bfloat16))),
        lambda: (
            torch.randn(7, 13, dtype=torch.float16),
            torch.randn(7, 13),
            torch.randn(7, 13, dtype=torch.float64),
        ),
    ),
    Case(
        "f64_mlp",
        "dtype",
        lambda: nn.Sequential(nn.Linear(13, 29), nn.Tanh(), nn.Linear(29, 7)).double(),
        lambda: (torch.randn(5, 13, dtype=torch.float64),),
    ),
    # -- output forms ----------------------------------------------------------
    Case(
        "scalar_outputs",
        "output",
        lambda: Fn(lambda x: (x.sum(), x.max(), (x > 0).sum(), x.mean() > 0)),
        lambda: (torch.randn(7, 13),),
    ),
    Case(
        "zero_dim_input",
        "output",
        lambda: Fn(lambda x, s: (x * s, s + 1)),
        lambda: (torch.randn(7, 13), torch.tensor(2.5)),
    ),
    Case(
        "tuple_outputs",
        "output",
        lambda: Fn(lambda x: (x + 1, (x * 2, x.sum(0)))),
        lambda: (torch.randn(7, 13),),
    ),
    Case(
        "list_outputs",
        "output",
        lambda: Fn(lambda x: [x.relu(), x.t(), x[0]]),
        lambda: (torch.randn(7, 13),),
    ),
    Case("dict_outputs", "output", DictOut, lambda: (torch.randn(7, 13),)),
    Case(
        "returns_input_unchanged",
        "output",
        lambda: Fn(lambda x: x),
        lambda: (torch.randn(7, 13),),
    ),
    Case(
        "returns_input_and_views",
        "output",
        lambda: Fn(lambda x, y: (x, y * 2, x, x.view(13, 7), x[1:3])),
        lambda: (torch.randn(7, 13), torch.randn(3)),
    ),
    Case(
        "returns_same_result_twice",
        "output",
        lambda: Fn(lambda x: (lambda y: (y, y, {"again": y}))(torch.tanh(x))),
        lambda: (torch.randn(7, 13),),
    ),
    # -- inputs and state --------------------------------------------------------
    Case("buffers", "input", Scaled, lambda: (torch.randn(7, 13),)),
    Case("bool_buffer", "input", BoolBuffer, lambda: (torch.randn(7, 13),)),
    Case("empty_buffer", "input", EmptyBuffer, lambda: (torch.randn(7, 13),)),
    Case(
        "python_numbers",
        "input",
        WithNumbers,
        lambda: (torch.randn(7, 13), 0.75, 3, True),
    ),
    Case(
        "non_contiguous_inputs",
        "input",
        lambda: Fn(lambda a, b: (a @ b, a * 2 + 1)),
        lambda: (transposed(7, 13), transposed(13, 5)),
    ),
    Case(
        "sliced_and_expanded_inputs",
        "input",
        lambda: Fn(lambda a, b: a + b),
        lambda: (torch.randn(7, 26)[:, ::2], torch.randn(1, 13).expand(7, 13)),
    ),
    Case(
        "i8_i32_bool_inputs",
        "input",
        lambda: Fn(lambda a, b, m: torch.where(m, a.to(torch.int32) * b, b - 1)),
        lambda: (
            torch.randint(-128, 128, (7, 13), dtype=torch.int8),
            torch.randint(-1000, 1000, (7, 13), dtype=torch.int32),
            torch.rand(7, 13) > 0.5,
        ),
    ),
    Case(
        "bool_output_of_floats",
        "input",
        lambda: Fn(lambda x: F.relu(x) > 0.5),
        lambda: (torch.randn(129),),
    ),
]


@pytest.mark.parametrize("case", params(FORMS))
def test_form(case: Case, zoo_cache: str) -> None:
    run_case(case, zoo_cache)
