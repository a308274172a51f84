"""Eager quantized modules (``torch.ao.quantization.convert``'s output, the
x86 engine) compiled as they are: lowerline rewrites each quantized module
into float code with ``quantized_decomposed`` QDQ pairs before torch.export
(``lowerline.frontend.eager_quantized_modules``), which the QDQ folds turn
into integer kernels. The reference is the converted model run eagerly on
torch's own quantized kernels: outputs within one output quantization step,
at odd sizes, batch 1 and 8.
"""

import pytest
import torch
import torch.ao.nn.quantized as nnq
from test_quant_conv import convolutions
from test_quant_pt2e import integer_matmuls
from test_quant_vnni import kernel_code, x86_host
from torch import nn
from torch.ao import quantization as tq

import lowerline

ENGINE = "x86"


class Mlp(nn.Module):
    """Linear + ReLU fused (LinearReLU), then a plain Linear."""

    fusions = (("a", "relu"),)

    def __init__(self) -> None:
        super().__init__()
        self.quant, self.dequant = tq.QuantStub(), tq.DeQuantStub()
        self.a, self.relu, self.b = nn.Linear(37, 29), nn.ReLU(), nn.Linear(29, 11)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dequant(self.b(self.relu(self.a(self.quant(x)))))


class Cnn(nn.Module):
    """Conv2d + ReLU, a grouped conv, a depthwise conv with ReLU6, max
    pooling and a flatten in the model's code, then a Linear."""

    fusions = (("conv", "relu"),)

    def __init__(self) -> None:
        super().__init__()
        self.quant, self.dequant = tq.QuantStub(), tq.DeQuantStub()
        self.conv, self.relu = nn.Conv2d(3, 6, 3, padding=1), nn.ReLU()
        self.grouped = nn.Conv2d(6, 9, 3, groups=3)
        self.depthwise, self.relu6 = nn.Conv2d(9, 9, 3, padding=1, groups=9), nn.ReLU6()
        self.fc = nn.Linear(9 * 2 * 3, 13)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.relu(self.conv(self.quant(x)))
        y = self.relu6(self.depthwise(self.grouped(y)))
        y = torch.flatten(torch.nn.functional.max_pool2d(y, 2), 1)
        return self.dequant(self.fc(y))


class Residual(nn.Module):
    """Conv1d, QFunctional add_relu, cat and add, Hardswish."""

    fusions = ()

    def __init__(self) -> None:
        super().__init__()
        self.quant, self.dequant = tq.QuantStub(), tq.DeQuantStub()
        self.conv = nn.Conv1d(5, 5, 3, padding=1)
        self.other = nn.Conv1d(5, 4, 1)
        self.skip, self.join, self.plus = (nnq.FloatFunctional() for _ in range(3))
        self.swish = nn.Hardswish()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.quant(x)
        y = self.skip.add_relu(self.conv(x), x)
        y = self.join.cat([y, self.other(y)], dim=1)
        return self.dequant(self.swish(self.plus.add(y, y)))


# name -> (model, input shape without the batch)
MODELS = {"mlp": (Mlp, (37,)), "cnn": (Cnn, (3, 7, 9)), "residual": (Residual, (5, 11))}


def converted(make: type, shape: tuple, qconfig: object = None) -> nn.Module:
    """``make()`` quantized by torch's eager mode for the x86 engine (its
    default qconfig: per-channel weights), calibrated on 4 seeded batches."""
    torch.backends.quantized.engine = ENGINE
    torch.manual_seed(0)
    model = make().eval()
    if model.fusions:
        model = tq.fuse_modules(model, [list(group) for group in model.fusions])
    model.qconfig = qconfig or tq.get_default_qconfig(ENGINE)
    prepared = tq.prepare(model)
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for _ in range(4):
            prepared(torch.randn((8, *shape), generator=generator))
    return tq.convert(prepared).eval()


def output_step(model: nn.Module) -> float:
    """The scale of the quantized value the model dequantizes last."""
    last = [m for m in model.modules() if hasattr(m, "scale") and not isinstance(m, nnq.Quantize)]
    return float(last[-1].scale)


@pytest.mark.parametrize("batch", [1, 8])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_converted_model_matches_eager_within_one_step(name, batch):
    make, shape = MODELS[name]
    model = converted(make, shape)
    example = torch.randn((batch, *shape))
    compiled = lowerline.compile(model, example)
    step = output_step(model)
    generator = torch.Generator().manual_seed(2)
    for spread in (0.5, 1.0, 3.0):
        x = torch.randn((batch, *shape), generator=generator) * spread
        with torch.inference_mode():
            expected = model(x)
        got = compiled(x)
        assert got.shape == expected.shape
        # Both are multiples of the output step; a tie may round either way.
        assert (got - expected).abs().max().item() <= step * 1.001


@pytest.mark.parametrize(
    ("name", "matmuls", "convs"), [("mlp", 2, 0), ("cnn", 1, 3), ("residual", 0, 2)]
)
def test_converted_model_folds_into_integer_kernels(name, matmuls, convs):
    """Every Linear and convolution of the converted model is an i8 x i8
    kernel: the max pooling and flatten of the model's code between them
    keep it; a Conv1d is a 2-D convolution of height 1."""
    make, shape = MODELS[name]
    graph = lowerline.compile(converted(make, shape), torch.randn((8, *shape))).ir("graph")
    assert integer_matmuls(graph) == (matmuls, 0)
    assert convolutions(graph) == (convs, 0)


class ReadsOutput(nn.Module):
    """Eager code reading a quantized module's output: its integers and
    parameters (built from quantized modules directly: a float model
    calibrating could not call int_repr)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.quant = nnq.Quantize(0.05, 64, torch.quint8)
        self.fc = nnq.Linear(7, 5)
        weight = torch.randn(5, 7)
        scales, zeros = weight.abs().amax(1) / 127, torch.zeros(5, dtype=torch.long)
        qweight = torch.quantize_per_channel(weight, scales, zeros, 0, torch.qint8)
        self.fc.set_weight_bias(qweight, torch.randn(5))
        self.fc.scale, self.fc.zero_point = 0.03, 100

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = self.fc(self.quant(x))
        return y.int_repr(), y.dequantize() * y.q_scale() + y.q_zero_point()


def test_quantized_module_output_int_repr_and_parameters():
    torch.backends.quantized.engine = ENGINE
    model = ReadsOutput().eval()
    x = torch.randn(3, 7)
    compiled = lowerline.compile(model, x)
    with torch.inference_mode():
        ints, values = model(x)
    got_ints, got_values = compiled(x)
    assert got_ints.dtype == torch.uint8
    assert (got_ints.int() - ints.int()).abs().max().item() <= 1
    assert (got_values - values).abs().max().item() <= 0.03 * 0.03 * 1.001 + 1e-6


def test_per_tensor_weights_fold_and_match_eager():
    """``default_qconfig``: weights quantized per tensor."""
    make, shape = MODELS["mlp"]
    model = converted(make, shape, tq.default_qconfig)
    assert model.a.weight().qscheme() == torch.per_tensor_affine
    x = torch.randn((8, *shape)) * 2
    compiled = lowerline.compile(model, x)
    assert integer_matmuls(compiled.ir("graph")) == (2, 0)
    with torch.inference_mode():
        expected = model(x)
    assert (compiled(x) - expected).abs().max().item() <= output_step(model) * 1.001


@x86_host
def test_converted_mlp_uses_vpdpbusd_on_a_vnni_target():
    """Cross-compiled for znver4 (AVX-512 VNNI, not run)."""
    make, shape = MODELS["mlp"]
    compiled = lowerline.compile(
        converted(make, shape), torch.randn((8, *shape)), target="cpu:znver4"
    )
    assert "vpdpbusd" in kernel_code(compiled)


class Unsupported(nn.Module):
    """A quantized Sigmoid and a dynamically quantized Linear."""

    def __init__(self) -> None:
        super().__init__()
        self.sigmoid = nnq.Sigmoid(1 / 256, 0)
        self.dynamic = torch.ao.nn.quantized.dynamic.Linear(5, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dynamic(self.sigmoid(x))


def test_unsupported_quantized_modules_are_all_named():
    with pytest.raises(lowerline.ExportError, match=r"sigmoid \(.*Sigmoid\), dynamic \(.*Linear\)"):
        lowerline.compile(Unsupported(), torch.randn(2, 5))


def test_unsupported_qfunctional_method_is_named():
    class AddsScalar(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.quant, self.ops = nnq.Quantize(0.1, 3, torch.quint8), nnq.QFunctional()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.ops.add_scalar(self.quant(x), 1.0).dequantize()

    with pytest.raises(lowerline.ExportError, match=r"QFunctional\.add_scalar"):
        lowerline.compile(AddsScalar(), torch.randn(2, 5))
