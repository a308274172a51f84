"""Dynamic dims: ``lowerline.compile(..., dynamic=...)`` / ``dynamic_shapes=``
compiles once and serves every size in the declared range; sizes outside it
are refused naming the input, the dim and the range."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.export import Dim

import lowerline
from lowerline.api import MAX_FAST_PLANS
from lowerline.driver import workers
from lowerline.examples.classifier import Classifier
from lowerline.runtime.native import MAX_DYNAMIC_FRAMES, NativeFunction
from lowerline.runtime.sizes import SizeExpressionError, SizeFunction, compile_dim, valid_dim


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("dynamic-cache"))


def _mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Linear(37, 64), nn.ReLU(), nn.Linear(64, 10), nn.LogSoftmax(dim=-1)
    ).eval()


def _encoder() -> nn.Module:
    torch.manual_seed(2)
    return nn.TransformerEncoderLayer(
        d_model=32, nhead=4, dim_feedforward=64, dropout=0.0, batch_first=True
    ).eval()


def _check_sizes(compiled, model, make, sizes) -> None:
    """Each size matches eager, through the checked and the fast path, with no new compile."""
    compiles = workers.jobs["compile"]
    for size in sizes:
        x = make(size)
        with torch.no_grad():
            expected = model(x)
        for _ in range(2):  # the second call takes the fast path
            got = compiled(x)
            assert got.shape == expected.shape
            torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5)
    assert workers.jobs["compile"] == compiles
    assert len(compiled.specializations) == 1


def test_mlp_dynamic_batch_from_a_batch_1_example(cache_dir):
    model = _mlp()
    compiles = workers.jobs["compile"]
    compiled = lowerline.compile(
        model, torch.randn(1, 37), dynamic={"input": {0: (1, 64)}}, cache_dir=cache_dir
    )
    assert workers.jobs["compile"] == compiles + 1
    assert "tensor<?x37xf32>" in compiled.ir("linalg")
    _check_sizes(compiled, model, lambda b: torch.randn(b, 37), [1, 2, 7, 33, 64, 5])


def test_saving_a_dynamic_module_is_refused(cache_dir, tmp_path):
    compiled = lowerline.compile(
        _mlp(), torch.randn(4, 37), dynamic={"input": {0: (1, 8)}}, cache_dir=cache_dir
    )
    with pytest.raises(NotImplementedError, match="dynamic dims"):
        compiled.save(str(tmp_path / "mlp.lowerline"))


def test_sizes_outside_the_range_name_input_dim_and_range(cache_dir):
    model = _mlp()
    compiled = lowerline.compile(
        model, torch.randn(4, 37), dynamic={"input": {0: (2, 16)}}, cache_dir=cache_dir
    )
    for size in (1, 17, 100):
        with pytest.raises(ValueError, match=rf"input has size {size} in dim 0, .*\[2, 16\]"):
            compiled(torch.randn(size, 37))
    assert len(compiled.specializations) == 1
    torch.testing.assert_close(compiled(torch.randn(16, 37)).shape, torch.Size([16, 10]))


def test_cnn_dynamic_batch(cache_dir):
    torch.manual_seed(1)
    model = Classifier().eval()
    compiled = lowerline.compile(
        model,
        torch.randn(3, 3, 21, 21),
        dynamic={"images": {0: (1, 16)}},
        cache_dir=cache_dir,
    )
    _check_sizes(compiled, model, lambda b: torch.randn(b, 3, 21, 21), [1, 3, 16, 5])
    # Every convolution tiled and vectorized as for a static batch (the
    # conv's fused bias once left its nest as scalar loops: 1.3-1.9x static).
    assert compiled.fallbacks == []


def _winograd_block() -> nn.Module:
    """Two 3x3 stride-1 convolutions with 16 and more channels (Winograd's),
    a batch norm and ReLUs between them: their epilogues fused."""
    torch.manual_seed(4)
    return nn.Sequential(
        nn.Conv2d(16, 24, 3, padding=1),
        nn.BatchNorm2d(24),
        nn.ReLU(),
        nn.Conv2d(24, 16, 3, padding=1),
        nn.ReLU(),
    ).eval()


# Image sides whose tiles fill a whole number of vectors per image (13 x 11:
# 4 tile rows of 4) and not (9 x 7: 3 rows of 2, each image padded to 8
# columns of zeros).
@pytest.mark.parametrize("side", [(13, 11), (9, 7)])
def test_winograd_convs_dynamic_batch(cache_dir, side):
    model = _winograd_block()
    compiled = lowerline.compile(
        model, torch.randn(1, 16, *side), dynamic={"input": {0: (1, 32)}}, cache_dir=cache_dir
    )
    # The filters transformed at compile time (36 x F x C): Winograd, dynamic batch and all.
    tiled = compiled.ir("tiled")
    assert "tensor<36x24x16xf32>" in tiled
    assert "tensor<36x16x24xf32>" in tiled
    # V and M are slices of buffers of odd row counts (their planes an odd
    # number of cache lines apart): the matmuls read and write the slices only.
    assert "tensor<36x25x?xf32> to tensor<36x24x?xf32>" in tiled
    assert "tensor<36x17x?xf32> to tensor<36x16x?xf32>" in tiled
    # Odd and even batches: rows of an odd number of lines, some rounded up.
    _check_sizes(compiled, model, lambda b: torch.randn(b, 16, *side), [1, 3, 8, 32, 2])
    assert compiled.fallbacks == []
    for size in (33, 40):
        with pytest.raises(ValueError, match=rf"input has size {size} in dim 0, .*\[1, 32\]"):
            compiled(torch.randn(size, 16, *side))


def _separable_block() -> nn.Module:
    """Depthwise (biased, stride 1 and 2) and pointwise convolutions with
    batch norms and ReLU6: window nests with a fused bias and epilogue."""
    torch.manual_seed(3)
    return nn.Sequential(
        nn.Conv2d(6, 6, 3, padding=1, groups=6),
        nn.BatchNorm2d(6),
        nn.ReLU6(),
        nn.Conv2d(6, 10, 1),
        nn.ReLU(),
        nn.Conv2d(10, 10, 3, stride=2, padding=1, groups=10),
        nn.ReLU6(),
    ).eval()


def test_separable_convs_dynamic_batch(cache_dir):
    model = _separable_block()
    compiled = lowerline.compile(
        model, torch.randn(2, 6, 13, 13), dynamic={"input": {0: (1, 24)}}, cache_dir=cache_dir
    )
    _check_sizes(compiled, model, lambda b: torch.randn(b, 6, 13, 13), [1, 5, 24, 2])
    assert compiled.fallbacks == []


def test_encoder_dynamic_sequence_length(cache_dir):
    model = _encoder()
    compiled = lowerline.compile(
        model, torch.randn(2, 9, 32), dynamic={"src": {1: (2, 128)}}, cache_dir=cache_dir
    )
    _check_sizes(compiled, model, lambda s: torch.randn(2, s, 32), [2, 17, 64, 128, 3])


def test_encoder_dynamic_sequence_key_blocks(cache_dir):
    """Heads of 16: the keys' transpose over the dynamic sequence runs in
    16 x 16 blocks, its partial last block masked (5, 17, 31: one to
    fifteen columns of it; 64 and the range's maximum, 128: none; 2: no
    whole block)."""
    torch.manual_seed(3)
    model = nn.TransformerEncoderLayer(
        d_model=64, nhead=4, dim_feedforward=128, dropout=0.0, batch_first=True
    ).eval()
    compiled = lowerline.compile(
        model, torch.randn(2, 17, 64), dynamic={"src": {1: (2, 128)}}, cache_dir=cache_dir
    )
    _check_sizes(compiled, model, lambda s: torch.randn(2, s, 64), [2, 5, 17, 31, 64, 128])
    assert compiled.fallbacks == []


@pytest.mark.parametrize("batch", [1, 3])
def test_encoder_dynamic_sequence_tails(cache_dir, batch):
    """Sequence lengths whose rows end in partial tiles of every kind: 17
    and 33 (a whole register step and a masked one; softmax rows, QK^T
    columns, PV's k), 80 (a whole tile of 64 and a partial one), 128 (whole
    tiles only), at batch 1 and 3. A length of 1 is torch's own
    specialization (``MultiheadAttention`` guards on it): the range starts
    at 2."""
    model = _encoder()
    compiled = lowerline.compile(
        model, torch.randn(batch, 9, 32), dynamic={"src": {1: (2, 128)}}, cache_dir=cache_dir
    )
    _check_sizes(compiled, model, lambda s: torch.randn(batch, s, 32), [2, 17, 33, 80, 128])


class _Softmaxes(nn.Module):
    """torch's softmax, attention's ``_safe_softmax`` (0, not NaN, for a
    row that is all -inf) and the row's maximum and minimum, over the last dim."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (
            torch.softmax(x, dim=-1),
            torch.ops.aten._safe_softmax(x, -1),
            x.amax(dim=-1),
            x.amin(dim=-1),
        )


def _special_rows(n: int) -> torch.Tensor:
    """Rows of ``n`` scores: plain; all -inf (a fully masked query); -inf
    but the last (a masked prefix); a NaN first and last (in the full
    register steps and in the masked last one); +inf last; and -0 / +0."""
    torch.manual_seed(n)
    x = torch.randn(7, n)
    x[1] = float("-inf")
    x[2, :-1] = float("-inf")
    x[3, 0] = x[3, -1] = float("nan")
    x[4, -1] = float("inf")
    x[5] = 0.0
    x[5, ::2] = -0.0
    return x


def test_softmax_dynamic_rows_with_nan_and_infinities(cache_dir):
    """Row max, min and sum over a dynamic row, in register steps and a
    masked last one whose partial results stay in a register
    (lowerline-carry-masked-accumulators), the max and min of a register
    in halving steps (lowerline-expand-minmax-reductions); lengths 1, 5,
    17, 31, 64 and the range's maximum 128: each special row gives what
    eager gives, NaNs where eager has them."""
    model = _Softmaxes().eval()
    compiled = lowerline.compile(
        model, _special_rows(17), dynamic={"x": {1: (1, 128)}}, cache_dir=cache_dir
    )
    for n in [1, 5, 17, 31, 64, 128]:
        x = _special_rows(n)
        with torch.no_grad():
            expected = model(x)
        got = compiled(x)
        for g, e in zip(got, expected, strict=True):
            torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-6, equal_nan=True)


def test_a_dim_the_model_specializes_is_refused_with_torchs_reason():
    # torch's attention takes another path for a batch of 1: a dynamic batch
    # from 1 cannot be one artifact; the error says which values the guard allows.
    with pytest.raises(lowerline.ExportError, match=r"Constraints violated[\s\S]*guard"):
        lowerline.compile(
            _encoder(), torch.randn(4, 9, 32), dynamic={"src": {0: (1, 8)}}, cache=False
        )


def test_encoder_dynamic_batch_from_2(cache_dir):
    model = _encoder()
    compiled = lowerline.compile(
        model, torch.randn(5, 7, 32), dynamic={"src": {0: (2, 16)}}, cache_dir=cache_dir
    )
    _check_sizes(compiled, model, lambda b: torch.randn(b, 7, 32), [2, 5, 16, 3])
    with pytest.raises(ValueError, match=r"src has size 1 in dim 0, .*\[2, 16\]"):
        compiled(torch.randn(1, 7, 32))


def _dynamic_mlp(cache_dir):
    return _mlp(), lowerline.compile(
        _mlp(), torch.randn(1, 37), dynamic={"input": {0: (1, 64)}}, cache_dir=cache_dir
    )


def _dynamic_cnn(cache_dir):
    torch.manual_seed(1)
    model = Classifier().eval()
    dynamic = {"images": {0: (1, 16)}}
    return model, lowerline.compile(
        model, torch.randn(3, 3, 21, 21), dynamic=dynamic, cache_dir=cache_dir
    )


def _dynamic_encoder(cache_dir):
    return _encoder(), lowerline.compile(
        _encoder(), torch.randn(5, 7, 32), dynamic={"src": {0: (2, 16)}}, cache_dir=cache_dir
    )


@pytest.mark.parametrize(
    ("build", "make", "sizes"),
    [
        (_dynamic_mlp, lambda b: torch.randn(b, 37), [1, 7, 64]),
        (_dynamic_cnn, lambda b: torch.randn(b, 3, 21, 21), [1, 5, 16]),
        (_dynamic_encoder, lambda b: torch.randn(b, 7, 32), [2, 3, 16]),
    ],
    ids=["mlp", "cnn", "encoder"],
)
def test_buffers_of_dynamic_size_live_in_the_arena(cache_dir, build, make, sizes):
    """The arena is planned for the range's maximum: a call at any size in
    the range, the largest included, allocates nothing but its outputs."""
    model, compiled = build(cache_dir)
    arenas = set()
    for size in sizes:
        x = make(size)
        compiled(x)
        with torch.no_grad():
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
        stats = compiled.memory()
        assert stats.allocations == 0 and stats.peak_bytes == 0, (size, stats)
        arenas.add(stats.arena_bytes)
    assert len(arenas) == 1 and arenas.pop() > 0  # one arena, sized once


def test_a_repeated_size_evaluates_no_size_expression(cache_dir):
    """Output sizes are worked out once per set of input shapes (a thread's
    frame keeps them): a steady stream of calls at a few sizes evaluates no
    size expression and the library allocates nothing, only the outputs are new."""
    model, compiled = _dynamic_mlp(cache_dir)
    function = compiled.specializations[0].function
    evaluated = []
    sizes = function._sizes

    def counting(shapes):
        evaluated.append(shapes)
        return sizes(shapes)

    function._sizes = counting
    inputs = {b: torch.randn(b, 37) for b in (1, 5, 64)}
    outputs = []
    for b in [5, 5, 1, 5, 64, 1, 64, 5]:
        outputs.append(compiled(inputs[b]))
        assert compiled.memory().allocations == 0
        with torch.no_grad():
            torch.testing.assert_close(outputs[-1], model(inputs[b]), rtol=1e-4, atol=1e-5)
    assert [shapes[0][0] for shapes in evaluated] == [5, 1, 64]
    # Each call's output is its own tensor, not a buffer kept from a former call.
    assert len({out.data_ptr() for out in outputs[:2]}) == 2


def test_fast_calls_run_a_static_view_per_size(cache_dir):
    """The fast path runs a dynamic library as a static function at each
    signature's shapes (no per-call shape lookup); a new size in the range
    after cached ones gets its own view with its own output size, and a cached
    size's view keeps giving that size's results."""
    model, compiled = _dynamic_mlp(cache_dir)
    dynamic = compiled.specializations[0].function
    inputs = {b: torch.randn(b, 37) for b in (5, 3, 64, 1)}
    for b in [5, 5, 3, 3, 5, 64, 1, 3, 64, 5, 1]:
        got = compiled(inputs[b])
        assert got.shape == (b, 10)
        with torch.no_grad():
            torch.testing.assert_close(got, model(inputs[b]), rtol=1e-4, atol=1e-5)
    views = [plan.function for plan in compiled._plans.values()]
    assert len(views) == 4 and len({id(view) for view in views}) == 4
    assert all(type(view) is NativeFunction for view in views)  # not the dynamic one
    assert {view._allocators[0][0] for view in views} == {(5, 10), (3, 10), (64, 10), (1, 10)}
    # The views share the library's arena pool: a call at any size allocates nothing.
    assert all(view.arenas is dynamic.arenas for view in views)
    assert compiled.memory().allocations == 0


def test_checks_still_fire_after_cached_sizes(cache_dir):
    """A size outside the range, a wrong dtype or rank after fast calls at
    sizes in the range: each a clear error, not a call of the library."""
    _, compiled = _dynamic_mlp(cache_dir)
    for _ in range(2):
        compiled(torch.randn(4, 37))
    with pytest.raises(ValueError, match=r"input has size 65 in dim 0, .*\[1, 64\]"):
        compiled(torch.randn(65, 37))
    with pytest.raises(
        TypeError, match=r"input: expected dtype torch\.float32, got torch\.float64"
    ):
        compiled(torch.randn(4, 37, dtype=torch.float64))
    # Another rank is another specialization, which torch.export refuses.
    with pytest.raises(lowerline.ExportError, match="could not capture"):
        compiled(torch.randn(37))
    assert compiled(torch.randn(4, 37)).shape == (4, 10)


def test_per_size_caches_stay_bounded(cache_dir):
    """More sizes than the caches hold: the thread's frames stop at
    MAX_DYNAMIC_FRAMES and the fast plans at MAX_FAST_PLANS; calls beyond
    them are still right (rebuilt per call, or through the checked path)."""
    model, compiled = _dynamic_mlp(cache_dir)
    dynamic = compiled.specializations[0].function
    sizes = list(range(1, 65))
    for b in [*sizes, 64, 3]:
        x = torch.randn(b, 37)
        with torch.no_grad():
            expected = model(x)
        torch.testing.assert_close(compiled(x), expected, rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(dynamic([x])[0], expected, rtol=1e-4, atol=1e-5)
    assert len(dynamic._by_shape()) == MAX_DYNAMIC_FRAMES
    assert len(compiled._plans) <= MAX_FAST_PLANS


class Doubled(nn.Module):
    """Outputs whose sizes are expressions of the inputs' (``2*s0``, ``s0 + s1``)."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.cat([x, x]) * 2, torch.cat([x, y], dim=1)


def test_torch_export_dims_pass_through_and_sizes_follow_expressions(cache_dir):
    batch, width = Dim("batch", min=1, max=32), Dim("width", min=1, max=20)
    compiled = lowerline.compile(
        Doubled(),
        torch.randn(3, 4),
        torch.randn(3, 5),
        dynamic_shapes={"x": {0: batch}, "y": {0: batch, 1: width}},
        cache_dir=cache_dir,
    )
    for rows, cols in ((1, 1), (3, 5), (32, 20), (7, 11)):
        x, y = torch.randn(rows, 4), torch.randn(rows, cols)
        first, second = compiled(x, y)
        torch.testing.assert_close(first, torch.cat([x, x]) * 2)
        torch.testing.assert_close(second, torch.cat([x, y], dim=1))
    assert len(compiled.specializations) == 1
    # One Dim for both inputs: the call must give them the same size.
    with pytest.raises(ValueError, match="y has size 4 in dim 0 but x has 3 in dim 0"):
        compiled(torch.randn(3, 4), torch.randn(4, 5))


def test_the_cache_key_holds_the_dynamic_ranges(cache_dir):
    model = _mlp()
    x = torch.randn(4, 37)
    dynamic = lowerline.compile(model, x, dynamic={"input": {0: (1, 8)}}, cache_dir=cache_dir)
    static = lowerline.compile(model, x, cache_dir=cache_dir)
    other = lowerline.compile(model, x, dynamic={"input": {0: (1, 9)}}, cache_dir=cache_dir)
    again = lowerline.compile(model, x, dynamic={"input": {0: (1, 8)}}, cache_dir=cache_dir)
    assert len({dynamic.artifacts_dir, static.artifacts_dir, other.artifacts_dir}) == 3
    assert again.cache_hit and again.artifacts_dir == dynamic.artifacts_dir
    # The static artifact compiles a new specialization for a new batch; the dynamic one does not.
    static(torch.randn(5, 37))
    assert len(static.specializations) == 2
    with pytest.raises(ValueError, match=r"size 9 in dim 0, outside the dynamic range \[1, 8\]"):
        dynamic(torch.randn(9, 37))


@pytest.mark.parametrize(
    ("dynamic", "error", "message"),
    [
        ({"z": {0: (1, 8)}}, ValueError, "'z', not an argument of forward"),
        ({"input": {2: (1, 8)}}, ValueError, "input has 2 dims, no dim 2"),
        ({"input": {0: (8, 1)}}, ValueError, r"range \(8, 1\) is empty"),
        ({"input": {0: 8}}, TypeError, r"takes a \(min, max\) pair of ints"),
        ({"input": {0: (5, 8)}}, ValueError, r"size 4 in dim 0, outside its range \[5, 8\]"),
        ([0], TypeError, "dynamic takes"),
    ],
)
def test_bad_dynamic_specs_are_refused_before_any_worker_runs(dynamic, error, message):
    jobs = dict(workers.jobs)
    with pytest.raises(error, match=message):
        lowerline.compile(_mlp(), torch.randn(4, 37), dynamic=dynamic, cache=False)
    assert dict(workers.jobs) == jobs


def test_dynamic_and_dynamic_shapes_together_are_refused():
    with pytest.raises(TypeError, match="not both"):
        lowerline.compile(
            _mlp(),
            torch.randn(4, 37),
            dynamic={"input": {0: (1, 8)}},
            dynamic_shapes={"input": {0: Dim("b")}},
            cache=False,
        )


def test_quantize_with_dynamic_dims_is_refused_before_calibrating():
    jobs = dict(workers.jobs)
    config = lowerline.quant.Int8(calibration=[(torch.randn(4, 37),)])
    with pytest.raises(ValueError, match="quantize= compiles static shapes"):
        lowerline.compile(
            _mlp(), torch.randn(4, 37), dynamic={"input": {0: (1, 8)}}, quantize=config
        )
    assert dict(workers.jobs) == jobs


def test_size_expressions_evaluate_torch_functions():
    values = {"s0": 7, "s1": 3}
    assert compile_dim("2*s0 + s1")(values) == 17
    assert compile_dim("FloorDiv(s0, 2) + 1")(values) == 4
    assert compile_dim("Max(s0, 10) - Min(s1, 1)")(values) == 9
    assert compile_dim("CeilToInt(IntTrueDiv(s0, 2))")(values) == 4
    assert compile_dim("FloorToInt(IntTrueDiv(s0, 2))")(values) == 3
    sizes = SizeFunction([[4, "s0"], ["s0*s1"]], {"s0": [0, 1], "s1": [1, 0]})
    assert sizes([(2, 7), (3, 9)]) == [(4, 7), (21,)]


@pytest.mark.parametrize(
    "text", ["__import__('os').system('true')", "s0.real", "s0 ** 2", "lambda: 1", "s0 +"]
)
def test_size_expressions_other_than_arithmetic_are_refused(text):
    with pytest.raises(SizeExpressionError):
        compile_dim(text)


def test_a_size_no_input_gives_is_refused_when_loading():
    with pytest.raises(SizeExpressionError, match="depends on s9, which no input dim gives"):
        SizeFunction([["s9"]], {"s0": [0, 0]})


def test_manifests_hold_ints_or_expressions_of_known_symbols():
    assert valid_dim(3, set()) and valid_dim("2*s0 + 1", {"s0"})
    for bad in ("3", "s1", "__import__('os')", True, 2.0, None):
        assert not valid_dim(bad, {"s0"})
