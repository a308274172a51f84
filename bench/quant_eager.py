"""torch's eager quantized modules (``torch.ao.nn.quantized``, the x86 engine)
as a peer of bench/quant.py: ``eager_int8(name, model, batches)``.

Eager-mode quantization (``torch.ao.quantization.prepare``/``convert`` with
``get_default_qconfig("x86")``) cannot quantize an arbitrary forward: a ``+``
or a functional call on quantized tensors has no quantized kernel unless it
is a module (``FloatFunctional``), and conv + batch norm (+ ReLU) must be
fused by name first. So each model gets the form a user writes for it (as
torchvision's ``models.quantization`` does): a twin with ``QuantStub`` and
``DeQuantStub``, its fusions and ``FloatFunctional`` adds, sharing the float
model's weights. A model with no twin is tried whole behind a
``QuantWrapper``; what torch cannot run is reported as failed, not skipped.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable

import torch
import torch.ao.nn.quantized as nnq
from torch import nn
from torch.ao import quantization as tq

ENGINE = "x86"


class EagerBasicBlock(nn.Module):
    """speed.BasicBlock in eager-quantizable form: conv1 + bn1 + ReLU and
    conv2 + bn2 fused, the residual add and final ReLU one ``add_relu``."""

    fusions = (("conv1", "bn1", "relu1"), ("conv2", "bn2"))

    def __init__(self, block: nn.Module):
        super().__init__()
        self.quant, self.dequant = tq.QuantStub(), tq.DeQuantStub()
        self.conv1, self.bn1, self.relu1 = block.conv1, block.bn1, nn.ReLU()
        self.conv2, self.bn2 = block.conv2, block.bn2
        self.skip = nnq.FloatFunctional()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.quant(x)
        y = self.relu1(self.bn1(self.conv1(x)))
        return self.dequant(self.skip.add_relu(self.bn2(self.conv2(y)), x))


class EagerInvertedResidual(nn.Module):
    """quant.InvertedResidual in eager-quantizable form: each conv fused with
    its batch norm (fuse_modules has no conv + bn + ReLU6), ``nn.ReLU6``
    modules (quantized hardtanh) and a ``FloatFunctional`` residual add."""

    fusions = (
        ("expand", "expand_norm"),
        ("depthwise", "depthwise_norm"),
        ("project", "project_norm"),
    )

    def __init__(self, block: nn.Module):
        super().__init__()
        self.quant, self.dequant = tq.QuantStub(), tq.DeQuantStub()
        for name, _ in block.named_children():
            setattr(self, name, getattr(block, name))
        self.relu_expand, self.relu_depthwise = nn.ReLU6(), nn.ReLU6()
        self.skip = nnq.FloatFunctional()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.quant(x)
        y = self.relu_expand(self.expand_norm(self.expand(x)))
        y = self.relu_depthwise(self.depthwise_norm(self.depthwise(y)))
        return self.dequant(self.skip.add(x, self.project_norm(self.project(y))))


def _sequential_twin(model: nn.Sequential) -> nn.Module:
    """A Sequential behind a QuantWrapper, each Linear/Conv2d fused with a
    ReLU right after it."""
    wrapped = tq.QuantWrapper(model)
    layers = list(model.named_children())
    wrapped.fusions = tuple(
        (f"module.{name}", f"module.{after}")
        for (name, layer), (after, nxt) in itertools.pairwise(layers)
        if isinstance(layer, (nn.Linear, nn.Conv2d)) and isinstance(nxt, nn.ReLU)
    )
    return wrapped


def _twin(model: nn.Module) -> nn.Module:
    """The eager-quantizable form of ``model`` (a copy; ``model`` stays float)."""
    model = copy.deepcopy(model)
    twins: dict[str, Callable[[nn.Module], nn.Module]] = {
        "BasicBlock": EagerBasicBlock,
        "InvertedResidual": EagerInvertedResidual,
    }
    if type(model).__name__ in twins:
        return twins[type(model).__name__](model)
    if isinstance(model, nn.Sequential):
        return _sequential_twin(model)
    wrapped = tq.QuantWrapper(model)
    wrapped.fusions = ()
    return wrapped


def eager_int8(model: nn.Module, batches: list[tuple]) -> nn.Module:
    """``model`` quantized by torch's eager mode for the x86 engine,
    calibrated on ``batches``, run once on the first (a model torch cannot
    quantize or run raises here, which the benchmark reports as failed)."""
    torch.backends.quantized.engine = ENGINE
    twin = _twin(model).eval()
    fused = tq.fuse_modules(twin, [list(group) for group in twin.fusions]) if twin.fusions else twin
    fused.qconfig = tq.get_default_qconfig(ENGINE)
    prepared = tq.prepare(fused)
    with torch.no_grad():  # observers update their buffers in place
        for batch in batches:
            prepared(*batch)
    converted = tq.convert(prepared).eval()
    with torch.inference_mode():
        converted(*batches[0])
    return converted
