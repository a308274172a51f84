"""In-compiler int8 calibration on real data: scikit-learn's bundled digits
(8x8 grey images of 0-9, no download). An MLP and a small CNN are trained
here (seeded, a few seconds), each reaching at least 95% top-1 on held-out
digits in float; ``lowerline.compile(..., quantize=Int8(calibration=...))``
calibrates them on training batches and their int8 top-1 stays within half
a point of float. ``quant_report()`` then shows every layer within one
rounding step of its QDQ float reference. The default tier checks the MLP
(min/max) and the CNN (min/max, with its report); the long tier adds the
CNN with moving averages and the MLP with MSE ranges and s8 activations.

The report also shows what each layer became: every layer of the CNN, its
convolutions included (lowerline-fold-qdq-conv), an integer kernel.
"""

import pytest
import torch

import lowerline

datasets = pytest.importorskip("sklearn.datasets")
model_selection = pytest.importorskip("sklearn.model_selection")


def digits() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(train images, train labels, held-out images, held-out labels): images
    as (N, 1, 8, 8) floats in [0, 1], 30% held out, stratified and seeded."""
    data = datasets.load_digits()
    images = torch.tensor(data.images, dtype=torch.float32).unsqueeze(1) / 16.0
    labels = torch.tensor(data.target, dtype=torch.int64)
    train, test = model_selection.train_test_split(
        range(len(labels)), test_size=0.3, random_state=0, stratify=data.target
    )
    return images[train], labels[train], images[test], labels[test]


class Mlp(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.hidden = torch.nn.Linear(64, 48)
        self.out = torch.nn.Linear(48, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(torch.relu(self.hidden(x.flatten(1))))


class Cnn(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(8, 12, 3)
        self.fc = torch.nn.Linear(12 * 6 * 6, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.conv2(torch.relu(self.conv1(x))))
        return self.fc(y.flatten(1))


def train(model: torch.nn.Module, images: torch.Tensor, labels: torch.Tensor) -> torch.nn.Module:
    torch.manual_seed(0)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(25):
        order = torch.randperm(len(labels))
        for start in range(0, len(labels), 64):
            batch = order[start : start + 64]
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(images[batch]), labels[batch])
            loss.backward()
            optimizer.step()
    return model.eval()


def top1(logits: torch.Tensor, labels: torch.Tensor) -> float:
    return 100.0 * (logits.argmax(dim=1) == labels).float().mean().item()


def trained_and_quantized(make, data, config):
    """(``make()`` trained to at least 95% held-out top-1 in float, it compiled
    with ``quantize=config``), the int8 top-1 within half a point of float."""
    train_x, train_y, test_x, test_y = data
    torch.manual_seed(0)
    model = train(make(), train_x, train_y)
    with torch.no_grad():
        float_top1 = top1(model(test_x), test_y)
    assert float_top1 >= 95.0, f"{make.__name__} trains to {float_top1:.1f}% only"
    compiled = lowerline.compile(model, test_x, quantize=config)
    int8_top1 = top1(compiled(test_x), test_y)
    assert int8_top1 >= float_top1 - 0.5, (make.__name__, float_top1, int8_top1)
    return model, compiled


@pytest.fixture(scope="module")
def data():
    return digits()


# The CNN's default-tier check is test_quant_report_on_digits (min/max, u8).
@pytest.mark.parametrize(
    ("make", "observer", "activations"),
    [
        (Mlp, "minmax", "u8"),
        pytest.param(Cnn, "moving_average", "u8", marks=pytest.mark.long),
        pytest.param(Mlp, "mse", "s8", marks=pytest.mark.long),
    ],
    ids=["mlp-minmax-u8", "cnn-moving-average-u8", "mlp-mse-s8"],
)
def test_int8_top1_within_half_a_point_of_float(data, make, observer, activations):
    test_x = data[2]
    calibration = list(data[0][:512].split(64))
    config = lowerline.quant.Int8(
        calibration=calibration, observer=observer, activations=activations
    )
    _, compiled = trained_and_quantized(make, data, config)
    if observer == "minmax":  # each new batch size is one more compile: checked once
        # Batch 1 and an odd batch compute each row as the full batch does.
        full = compiled(test_x)
        assert torch.equal(compiled(test_x[:1]), full[:1])
        assert torch.equal(compiled(test_x[5:12]), full[5:12])


def test_quant_report_on_digits(data):
    """The CNN within half a point of float; every layer within one step of
    its reference and an integer kernel; the end-to-end error that of the
    QDQ graph."""
    train_x = data[0]
    config = lowerline.quant.Int8(calibration=list(train_x[:256].split(64)))
    model, compiled = trained_and_quantized(Cnn, data, config)
    report = compiled.quant_report()
    assert [layer.name for layer in report.layers] == ["conv1", "conv2", "fc"]
    assert report.ok, str(report)
    assert all(layer.max_steps <= 1.0 for layer in report.layers)
    kernels = [layer.kernel for layer in report.layers]
    assert kernels[-1] == "linalg.matmul i8", str(report)
    assert all(k.startswith("linalg.conv_2d") and k.endswith(" i8") for k in kernels[:2]), kernels
    with torch.no_grad():
        float_out = model(train_x[:256])
    # The quantization error is real (not zero) and bounded by the output range.
    assert 0.0 < report.max_abs_error < 0.25 * float_out.abs().max().item()
    # The compiled model differs from the QDQ graph by at most one output step.
    assert report.max_abs_error_vs_qdq <= report.layers[-1].output_scale * 1.001
    text = str(report)
    assert "conv1" in text and "fc" in text and "end to end" in text
    assert compiled.quant_report() is report  # made once
