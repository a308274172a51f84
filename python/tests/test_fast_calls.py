"""The fast call path: a flat call of tensors whose signature (types,
shapes, strides, dtypes, device, grad) was seen before skips the checked
path, gives the checked path's results bit for bit, and never hides an
error or a needed specialization; and the call frame's descriptors."""

import pytest
import torch

import lowerline
from lowerline.runtime.native import _CallFrame, descriptor


class Affine(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.linear = torch.nn.Linear(37, 19)

    def forward(self, x, bias):
        return torch.relu(self.linear(x)) + bias


def eager(model, *args):
    with torch.no_grad():
        return model(*args)


@pytest.fixture(scope="module")
def affine(cache_dir):
    model = Affine().eval()
    x, bias = torch.randn(1, 37), torch.randn(1, 19)
    return model, lowerline.compile(model, x, bias, cache_dir=cache_dir)


def _checked_path_refused(*args):
    raise AssertionError("the checked path ran")


@pytest.mark.parametrize("batch", [1, 9])
def test_a_seen_signature_takes_the_fast_path_with_the_checked_results(affine, batch, monkeypatch):
    model, compiled = affine
    x, bias = torch.randn(batch, 37), torch.randn(batch, 19)
    checked = compiled(x, bias)  # the first call of this signature: checked
    count = len(compiled.specializations)
    with monkeypatch.context() as patch:
        patch.setattr(compiled, "_checked_call", _checked_path_refused)
        fast = compiled(x, bias)
        other_x, other_bias = torch.randn(batch, 37), torch.randn(batch, 19)
        other = compiled(other_x, other_bias)  # new tensors, same signature
    assert torch.equal(fast, checked)
    assert fast is not checked and fast.data_ptr() != checked.data_ptr()  # fresh outputs
    torch.testing.assert_close(fast, eager(model, x, bias))
    torch.testing.assert_close(other, eager(model, other_x, other_bias))
    assert len(compiled.specializations) == count
    assert compiled.memory().live_bytes == 0  # memory() reports the fast call


def test_strided_inputs_have_a_plan_of_their_own(affine, monkeypatch):
    model, compiled = affine
    x, bias = torch.randn(37, 3).t(), torch.randn(3, 38)[:, ::2]
    assert not x.is_contiguous() and not bias.is_contiguous()
    expected, before = eager(model, x, bias), x.clone()
    torch.testing.assert_close(compiled(x, bias), expected)  # checked: a new signature
    with monkeypatch.context() as patch:
        patch.setattr(compiled, "_checked_call", _checked_path_refused)
        torch.testing.assert_close(compiled(x, bias), expected)
    assert torch.equal(x, before) and x.stride() == (1, 3)  # copied, not changed


@pytest.mark.parametrize(
    ("make_args", "error", "message"),
    [
        (lambda x, b: (x,), TypeError, r"expected 2 inputs \(x, bias\), got 1: missing bias"),
        (
            lambda x, b: (x.double(), b),
            TypeError,
            "x: expected dtype torch.float32, got torch.float64",
        ),
        (
            lambda x, b: (x.clone().requires_grad_(), b),
            ValueError,
            "x: expected a tensor that does not require grad, got one that does",
        ),
        (lambda x, b: (x, b.numpy()), TypeError, r"bias: expected a tensor \(torch.float32\)"),
        (lambda x, b: (x, 1.0), TypeError, r"bias: expected a tensor \(torch.float32\), got float"),
        (lambda x, b: (x, b.to("meta")), ValueError, "bias: expected a tensor on cpu"),
    ],
    ids=["too-few", "dtype", "requires-grad", "numpy", "number", "device"],
)
def test_bad_calls_after_fast_calls_keep_their_errors(affine, make_args, error, message):
    _, compiled = affine
    x, bias = torch.randn(1, 37), torch.randn(1, 19)
    compiled(x, bias)
    compiled(x, bias)
    plans = dict(compiled._plans)
    with pytest.raises(error, match=message):
        compiled(*make_args(x, bias))
    assert compiled._plans == plans  # nothing remembered for a bad call


class Add(torch.nn.Module):
    def forward(self, x, y):
        return x * 2 + y


def test_inputs_that_share_memory_leave_the_fast_path(cache_dir, monkeypatch):
    x, y = torch.randn(5, 3), torch.randn(5, 3)
    compiled = lowerline.compile(Add(), x, y, cache_dir=cache_dir)
    compiled(x, y)
    # The same tensor twice has the signature of two tensors, but torch.export
    # traces it as one input: the checked path finds its own specialization.
    torch.testing.assert_close(compiled(x, x), x * 3)
    assert len(compiled.specializations) == 2
    with monkeypatch.context() as patch:
        patch.setattr(compiled, "_checked_call", _checked_path_refused)
        torch.testing.assert_close(compiled(y, x), y * 2 + x)  # apart again: fast
        with pytest.raises(AssertionError, match="the checked path ran"):
            compiled(y, y)


class Accumulate(torch.nn.Module):
    def forward(self, total, x):
        total.add_(x)
        return total * 1


def test_fast_calls_write_back_mutated_inputs(cache_dir, monkeypatch):
    total, x = torch.zeros(2, 7), torch.ones(2, 7)
    compiled = lowerline.compile(Accumulate(), total.clone(), x, cache_dir=cache_dir)
    compiled(total, x)
    with monkeypatch.context() as patch:
        patch.setattr(compiled, "_checked_call", _checked_path_refused)
        out = compiled(total, x)
    assert torch.equal(total, torch.full((2, 7), 2.0))
    assert torch.equal(out, total) and out is not total


# -- the call frame -------------------------------------------------------------------


def test_the_frame_points_every_descriptor_at_its_tensor():
    first = [torch.randn(()), torch.randn(3), torch.randn(2, 5, 7)]
    outputs = [torch.empty(4, 1), torch.empty((), dtype=torch.int64)]
    frame = _CallFrame(first, outputs)
    inputs = [t.clone() for t in first]  # same shapes, other memory
    frame.point_at(inputs, outputs)
    expected = b"".join(bytes(descriptor(t)) for t in [*inputs, *outputs])
    assert frame.buffer.raw == expected
    assert len(frame.arguments) == 5
