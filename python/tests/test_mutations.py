"""Models that write into their inputs or buffers in ``forward``.

torch.export records the writes (``graph_signature.user_inputs_to_mutate``,
``buffers_to_mutate``); the library returns each new value and the call
copies it into the caller's tensor or the module's buffer, as eager's
in-place op would have. Every test runs eager on a copy of the model and of
the inputs and compares the outputs, the inputs and the buffers afterwards.
"""

import copy

import pytest
import torch

import lowerline
from lowerline.driver import workers


def assert_same_state(compiled_side, eager_side):
    """Outputs, inputs and buffers after a call: compiled as eager."""
    torch.testing.assert_close(compiled_side, eager_side, rtol=1e-5, atol=1e-6)


class ScaleInPlace(torch.nn.Module):
    """An in-place op on an argument, and another on a view of one."""

    def forward(self, x, y):
        x.mul_(2)
        y[0].add_(x[0])
        return x + y


@pytest.mark.parametrize("shape", [(1, 7), (5, 7), (3, 2, 5)], ids=["batch1", "odd", "rank3"])
def test_an_input_written_in_place_is_written_back(cache_dir, shape):
    model = ScaleInPlace()
    x, y = torch.randn(shape), torch.randn(shape)
    x_eager, y_eager = x.clone(), y.clone()
    compiled = lowerline.compile(model, x.clone(), y.clone(), cache_dir=cache_dir)
    for _ in range(2):  # the second call starts from the first call's writes
        out = compiled(x, y)
        expected = model(x_eager, y_eager)
        assert_same_state((out, x, y), (expected, x_eager, y_eager))


def test_a_strided_view_passed_as_an_input_is_written_through(cache_dir):
    """The library works on a contiguous copy; the new values go into the
    caller's view, hence into its base."""
    model = ScaleInPlace()
    base, y = torch.randn(4, 10), torch.randn(4, 5)
    base_eager, y_eager = base.clone(), y.clone()
    compiled = lowerline.compile(model, base[:, ::2], y, cache_dir=cache_dir)
    out = compiled(base[:, ::2], y)
    expected = model(base_eager[:, ::2], y_eager)
    assert_same_state((out, base, y), (expected, base_eager, y_eager))
    torch.testing.assert_close(base[:, 1::2], base_eager[:, 1::2], rtol=0, atol=0)


class Increment(torch.nn.Module):
    def forward(self, x):
        x.add_(1)
        return x


def test_a_returned_input_holds_its_new_value(cache_dir):
    x = torch.zeros(2, 3, dtype=torch.int32)
    compiled = lowerline.compile(Increment(), x.clone(), cache_dir=cache_dir)
    first = compiled(x)
    second = compiled(x)
    assert first.tolist() == [[1] * 3] * 2 and second.tolist() == [[2] * 3] * 2
    assert x.tolist() == [[2] * 3] * 2


class Counter(torch.nn.Module):
    """A counter advanced with ``+=``, a buffer overwritten with ``copy_``."""

    def __init__(self, width: int = 5):
        super().__init__()
        self.register_buffer("count", torch.zeros((), dtype=torch.int64))
        self.register_buffer("last", torch.zeros(width))
        self.scale = torch.nn.Parameter(torch.linspace(0.5, 1.5, width))

    def forward(self, x):
        self.count += 1
        previous = self.last.clone()
        self.last.copy_(x.mean(0))
        return x * self.scale + previous + self.count


def test_buffer_writes_advance_with_every_call_and_reach_the_module(cache_dir):
    model = Counter()
    reference = copy.deepcopy(model)
    compiled = lowerline.compile(model, torch.randn(3, 5), cache_dir=cache_dir)
    assert int(model.count) == 0  # compiling does not call forward
    for batch in (3, 3, 1, 3):  # a new batch size is a new specialization, one state
        x = torch.randn(batch, 5)
        assert_same_state(compiled(x), reference(x))
        assert_same_state((model.count, model.last), (reference.count, reference.last))
    assert int(model.count) == 4 and len(compiled.specializations) == 2


def test_a_cache_hit_keeps_state_like_a_fresh_compile(cache_dir):
    first = Counter(width=3)
    lowerline.compile(first, torch.randn(2, 3), cache_dir=cache_dir)
    model = copy.deepcopy(first)
    model.count.fill_(10)  # not a weight: a hit must not depend on it
    reference = copy.deepcopy(model)
    launched = workers.jobs["compile"]
    compiled = lowerline.compile(model, torch.randn(2, 3), cache_dir=cache_dir)
    assert compiled.cache_hit and workers.jobs["compile"] == launched
    for _ in range(3):
        x = torch.randn(2, 3)
        assert_same_state(compiled(x), reference(x))
    assert int(model.count) == int(reference.count) == 13
    torch.testing.assert_close(model.last, reference.last)


def test_the_module_and_compiled_code_share_the_buffer(cache_dir):
    """The buffer is the module's own tensor: resetting it in place is seen
    by the next compiled call, as it would be by the next eager call."""
    model = Counter(width=4)
    compiled = lowerline.compile(model, torch.randn(2, 4), cache_dir=cache_dir)
    x = torch.randn(2, 4)
    compiled(x)
    compiled(x)
    model.count.zero_()
    reference = copy.deepcopy(model)
    assert_same_state(compiled(x), reference(x))
    assert int(model.count) == 1


class Accumulate(torch.nn.Module):
    def forward(self, total, x):
        total.add_(x)
        return total * x


def test_the_same_tensor_passed_twice_sees_its_own_write(cache_dir):
    """Eager reads the written value through the other argument; torch.export
    traces the pair as one input, in a specialization of its own."""
    model = Accumulate()
    a, b = torch.randn(3, 5), torch.randn(3, 5)
    compiled = lowerline.compile(model, a, b, cache_dir=cache_dir)
    x = torch.randn(3, 5)
    x_eager = x.clone()
    assert_same_state((compiled(x, x), x), (model(x_eager, x_eager), x_eager))
    assert len(compiled.specializations) == 2
    a_eager, b_eager = a.clone(), b.clone()
    assert_same_state((compiled(a, b), a, b), (model(a_eager, b_eager), a_eager, b_eager))
    assert len(compiled.specializations) == 2


class Combine(torch.nn.Module):
    def forward(self, x, y):
        return x + 2 * y


def test_aliased_inputs_do_not_leak_into_other_calls(cache_dir):
    """A program exported for (x, x) reads one input; a call with two
    different tensors must not use it."""
    model = Combine()
    x = torch.randn(6)
    compiled = lowerline.compile(model, x, x, cache_dir=cache_dir)
    torch.testing.assert_close(compiled(x, x), 3 * x)
    a, b = torch.randn(6), torch.randn(6)
    torch.testing.assert_close(compiled(a, b), a + 2 * b)


def test_overlapping_views_of_a_written_input_are_refused(cache_dir):
    model = Accumulate()
    compiled = lowerline.compile(model, torch.randn(4), torch.randn(4), cache_dir=cache_dir)
    base = torch.randn(5)
    with pytest.raises(
        ValueError, match="forward writes into total, and total and x are overlapping"
    ):
        compiled(base[1:], base[:4])
    # Views that do not overlap are independent inputs.
    total, x = base[:4].clone(), base[4:].expand(4)
    total_eager = total.clone()
    assert_same_state((compiled(base[:4], x), base[:4]), (model(total_eager, x), total_eager))


def test_batch_norm_in_training_mode_updates_its_running_statistics(cache_dir):
    model = torch.nn.BatchNorm1d(6, momentum=0.3).train()
    reference = copy.deepcopy(model)
    x = torch.randn(7, 6)
    compiled = lowerline.compile(model, x, cache_dir=cache_dir)
    with torch.no_grad():
        for _ in range(2):
            x = torch.randn(7, 6)
            assert_same_state(compiled(x), reference(x))
    assert_same_state(
        (model.running_mean, model.running_var, model.num_batches_tracked),
        (reference.running_mean, reference.running_var, reference.num_batches_tracked),
    )


def test_gpu_code_writes_back_too(cache_dir):
    """The GPU target's library has the same results; checked on the GPU-mapped
    IR run on this CPU (``run_on_cpu``), which needs no device."""
    model = Counter(width=6)
    reference = copy.deepcopy(model)
    compiled = lowerline.compile(model, torch.randn(3, 6), target="cuda:sm_80", cache_dir=cache_dir)
    for _ in range(2):
        x = torch.randn(3, 6)
        assert_same_state(compiled.run_on_cpu(x), reference(x))
    assert_same_state((model.count, model.last), (reference.count, reference.last))
