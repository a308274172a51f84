"""f32 exp as compiled code computes it (lowerline-approximate-exp), against torch.

The whole f32 range: within 1 ulp where the result is a normal number, the
same subnormals give or take one, and inf / 0 / NaN where torch has them.
"""

import torch

import lowerline


class Exp(torch.nn.Module):
    def forward(self, x):
        return torch.exp(x)


SPECIAL = [
    float("inf"),
    float("-inf"),
    float("nan"),
    0.0,
    -0.0,
    88.72,
    88.73,
    -87.3,
    -103.9,
    -104.5,
]


def test_exp_matches_torch_over_the_f32_range(cache_dir):
    x = torch.cat([torch.linspace(-110.0, 95.0, 100_003), torch.tensor(SPECIAL)])
    got = lowerline.compile(Exp().eval(), x, cache_dir=cache_dir)(x)
    want = torch.exp(x)
    normal = torch.isfinite(want) & (want >= torch.finfo(torch.float32).tiny)
    ulps = (got[normal].view(torch.int32).long() - want[normal].view(torch.int32).long()).abs()
    assert ulps.max().item() <= 1
    subnormal = torch.isfinite(want) & (want < torch.finfo(torch.float32).tiny)
    assert (got[subnormal] - want[subnormal]).abs().max().item() <= 2**-149
    torch.testing.assert_close(got[-len(SPECIAL) :], want[-len(SPECIAL) :], equal_nan=True)
