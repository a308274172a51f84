"""lowerline.quant: the observers' choices against torch's own observers,
the QDQ graph calibration builds, what ``skip`` leaves in float, the
per-layer modules the report compiles, and the errors of bad
configurations; all without compiling, but for calibration through the
compiled observer model (``calibrate_on="compiled"``)."""

import functools

import pytest
import torch
from torch.ao.quantization import observer as torch_observers

import lowerline
from lowerline.quant import Int8
from lowerline.quant.calibrate import quantize_model
from lowerline.quant.observers import Observer, fake_quantize, qparams, weight_qparams
from lowerline.quant.report import integer_kernel, layer_module

ops = torch.ops.quantized_decomposed


def observe(kind: str, batches: list[torch.Tensor], activations: str = "u8") -> Observer:
    found = Observer(kind, activations, percentile=99.9, averaging=0.01)
    for batch in batches:
        found.observe(batch)
    return found


def batches(seed: int = 0, count: int = 5, rows: int = 7) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(rows, 13, generator=generator) * 2 + 0.5 for _ in range(count)]


@pytest.mark.parametrize(
    ("activations", "dtype", "scheme"),
    [
        ("u8", torch.quint8, torch.per_tensor_affine),
        ("s8", torch.qint8, torch.per_tensor_symmetric),
    ],
)
@pytest.mark.parametrize(
    ("kind", "reference"),
    [
        ("minmax", torch_observers.MinMaxObserver),
        ("moving_average", torch_observers.MovingAverageMinMaxObserver),
    ],
)
def test_min_max_observers_match_torch(kind, reference, activations, dtype, scheme):
    theirs = reference(dtype=dtype, qscheme=scheme)
    for batch in batches():
        theirs(batch)
    scale, zero_point = theirs.calculate_qparams()
    ours = observe(kind, batches(), activations).qparams()
    assert ours.scale == pytest.approx(float(scale), rel=1e-6)
    assert ours.zero_point == int(zero_point)


def test_percentile_clips_outliers_and_keeps_the_bulk():
    data = batches(rows=60)  # 3900 values: the 99.9th percentile is below the outlier
    data[2][3, 4] = 1000.0  # one outlier
    full = observe("minmax", data).qparams()
    clipped = observe("percentile", data).qparams()
    assert clipped.scale < full.scale / 10
    values = torch.cat([b.reshape(-1) for b in data])
    high = clipped.scale * (clipped.qmax - clipped.zero_point)
    assert (values <= high).float().mean() >= 0.99


def test_mse_choice_has_the_least_error():
    """On heavy tails (cubed normals) the least-error range is narrower than
    the extremes; its error is below min/max's and the 99.9th percentile's
    (at 8 bits clipping the tail costs more than the finer steps win back)."""
    generator = torch.Generator().manual_seed(0)
    data = [torch.randn(60, 13, generator=generator) ** 3 for _ in range(5)]
    values = torch.cat([b.reshape(-1) for b in data])

    def error(params):
        return float(((fake_quantize(values, params) - values) ** 2).mean())

    chosen = observe("mse", data).qparams()
    extremes = observe("minmax", data).qparams()
    assert chosen.scale < extremes.scale
    assert error(chosen) < error(extremes)
    assert error(chosen) < error(observe("percentile", data).qparams())


def test_qparams_hold_zero_and_the_range():
    u8 = qparams(0.5, 3.0, "u8")  # the range is widened to hold 0
    assert u8.zero_point == 0 and u8.scale == pytest.approx(3.0 / 255)
    s8 = qparams(-1.0, 4.0, "s8")
    assert (s8.zero_point, s8.qmin, s8.qmax) == (0, -128, 127)
    assert s8.scale == pytest.approx(4.0 / 127.5)
    negative = qparams(-2.0, 1.0, "u8")
    assert negative.zero_point == round(2.0 / negative.scale)


def test_weights_are_symmetric_per_output_channel():
    weight = torch.randn(6, 3, 3, 3, generator=torch.Generator().manual_seed(3))
    weight[2] *= 50  # one channel far larger: its own scale
    stored, scales, zero_points = weight_qparams(weight)
    assert stored.dtype == torch.int8 and scales.shape == (6,) and not zero_points.any()
    restored = ops.dequantize_per_channel(stored, scales, zero_points, 0, -128, 127, torch.int8)
    error = (restored - weight).abs().reshape(6, -1).amax(dim=1)
    # Half a step, plus f32's rounding of w / scale at magnitudes up to 128 steps.
    assert torch.all(error <= scales * (0.5 + 128 * torch.finfo(torch.float32).eps))
    assert scales[2] > 20 * scales[0]


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = torch.nn.Sequential(torch.nn.Conv2d(2, 4, 3), torch.nn.ReLU())
        self.fc = torch.nn.Linear(4 * 5 * 5, 9)
        self.head = torch.nn.Linear(9, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.features(x).flatten(1)
        return self.head(torch.relu(self.fc(y)) + 1.0)


def images(count: int = 3, batch: int = 4) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(3)
    return [torch.randn(batch, 2, 7, 7, generator=generator) for _ in range(count)]


def node_count(graph: torch.fx.GraphModule, target) -> int:
    return sum(1 for node in graph.graph.nodes if node.target == target)


def test_the_qdq_graph_quantizes_every_layer_and_runs_any_batch():
    torch.manual_seed(0)
    model = Net().eval()
    quantized = quantize_model(model, (images()[0],), Int8(calibration=images()))
    graph = quantized.graph
    assert [(layer.name, layer.kind) for layer in quantized.layers] == [
        ("features.0", "conv"),
        ("fc", "linear"),
        ("head", "linear"),
    ]
    assert node_count(graph, ops.dequantize_per_channel.default) == 3
    # Input, conv+ReLU, flatten (fc's input), fc+ReLU, the add (head's input), head.
    assert node_count(graph, ops.quantize_per_tensor.default) == 6
    # The float weights are gone; the int8 ones are buffers.
    assert not [name for name, _ in graph.named_parameters() if name.endswith("weight")]
    assert [b.dtype for n, b in graph.named_buffers() if n.endswith("_weight")] == [torch.int8] * 3
    for batch in (1, 5):  # calibrated on batches of 4; the graph takes any batch
        x = torch.randn(batch, 2, 7, 7)
        with torch.no_grad():
            got, expected = graph(x), model(x)
        assert got.shape == (batch, 3)
        assert (got - expected).abs().max() < 0.1 * expected.abs().max() + 0.05


def test_skip_by_name_kind_and_class():
    model = Net().eval()
    cases = {
        ("fc",): ["features.0", "head"],
        ("features",): ["fc", "head"],  # a parent module's name covers its layers
        ("linear",): ["features.0"],
        (torch.nn.Conv2d,): ["fc", "head"],
        ("conv", "head"): ["fc"],
    }
    for skip, kept in cases.items():
        config = Int8(calibration=images(1), skip=skip)
        quantized = quantize_model(model, (images()[0],), config)
        assert [layer.name for layer in quantized.layers] == kept, skip
        assert len(quantized.skipped) == 3 - len(kept)
    # "fc" stays float: two per-channel dequantizes, no quantize before fc.
    quantized = quantize_model(model, (images()[0],), Int8(calibration=images(1), skip="fc"))
    assert node_count(quantized.graph, ops.dequantize_per_channel.default) == 2


def test_a_layer_module_computes_what_the_qdq_graph_does():
    torch.manual_seed(0)
    quantized = quantize_model(Net().eval(), (images()[0],), Int8(calibration=images()))
    x = images()[1]
    seen = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n):
            seen[n] = super().run_node(n)
            return seen[n]

    with torch.no_grad():
        Recorder(quantized.graph).run(x)
        for layer in quantized.layers:
            module = layer_module(quantized.graph, layer)
            assert torch.equal(module(seen[layer.source]), seen[layer.result]), layer.name
            # Its output is on the layer's output grid.
            steps = seen[layer.result] / layer.output.scale + layer.output.zero_point
            assert torch.allclose(steps, steps.round(), atol=1e-3)


def test_integer_kernel_reads_the_graph_ir():
    matmul = "%5 = linalg.matmul ins(%3, %cst : tensor<4x9xi8>, tensor<9x3xi8>) outs(%4 : tensor<4x3xi32>)"
    conv = (
        "%7 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = "
        "dense<1> : tensor<2xi64>} ins(%1, %2 : tensor<1x2x7x7xi8>, tensor<4x2x3x3xi8>) outs("
    )
    float_matmul = "linalg.matmul ins(%3, %4 : tensor<4x9xf32>, tensor<9x3xf32>) outs("
    assert integer_kernel(matmul) == "linalg.matmul i8"
    assert integer_kernel(conv) == "linalg.conv_2d_nchw_fchw i8"
    assert integer_kernel(float_matmul) == "float"


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ({"observer": "max"}, ValueError, "observer must be one of"),
        ({"activations": "u16"}, ValueError, "activations must be 'u8' or 's8'"),
        ({"calibration": torch.randn(2, 3)}, TypeError, "got one tensor"),
        ({"calibration": []}, ValueError, "at least one batch"),
        ({"calibration": 3}, TypeError, "sequence of batches, got int"),
        ({"skip": [3]}, TypeError, "skip takes layer names"),
        ({"percentile": 20.0}, ValueError, "percentile must be in"),
        ({"calibrate_on": "eager"}, ValueError, "calibrate_on must be 'graph' or 'compiled'"),
    ],
)
def test_bad_configurations_are_named(arguments, error, message):
    with pytest.raises(error, match=message):
        Int8(**{"calibration": [torch.randn(2, 3)], **arguments})


def test_unknown_skip_names_list_the_layers():
    config = Int8(calibration=images(1), skip=["fc", "decoder"])
    with pytest.raises(ValueError, match=r"skip names decoder.*layers: features.0, fc, head"):
        quantize_model(Net().eval(), (images()[0],), config)


def test_a_model_without_layers_is_named():
    config = Int8(calibration=[torch.randn(2, 3)])
    with pytest.raises(ValueError, match="no linear or convolution layer"):
        quantize_model(torch.nn.ReLU(), (torch.randn(2, 3),), config)


def test_a_batch_that_does_not_fit_is_named():
    config = Int8(calibration=[images(1)[0], torch.randn(4, 3, 7, 7)])
    with pytest.raises(ValueError, match="calibration batch 1 does not run"):
        quantize_model(Net().eval(), (images()[0],), config)


def test_quantize_takes_an_int8():
    with pytest.raises(TypeError, match=r"lowerline\.quant\.Int8"):
        quantize_model(Net().eval(), (images()[0],), {"observer": "minmax"})


def test_calibrating_on_the_compiled_observer_model_agrees_with_the_graph():
    """The observers see lowerline's compiled float graph (batches of two
    sizes: two specializations) and choose what they choose on the graph run
    in torch, up to float rounding of the observed extremes."""
    torch.manual_seed(0)
    model = Net().eval()
    data = [*images(3), *images(1, batch=1)]
    compile_model = functools.partial(lowerline.compile, cache=False)
    config = Int8(calibration=data, calibrate_on="compiled", activations="s8")
    on_compiled = quantize_model(model, (data[0],), config, compile_model)
    config = Int8(calibration=data, activations="s8")
    on_graph = quantize_model(model, (data[0],), config)
    for ours, theirs in zip(on_compiled.layers, on_graph.layers, strict=True):
        for a, b in ((ours.input, theirs.input), (ours.output, theirs.output)):
            assert a.zero_point == b.zero_point == 0
            assert a.scale == pytest.approx(b.scale, rel=1e-5)
    with pytest.raises(ValueError, match=r"needs lowerline\.compile"):
        quantize_model(model, (data[0],), Int8(calibration=data, calibrate_on="compiled"))
