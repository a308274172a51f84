"""``lowerline compile FILE.py``: compile a model file, compare with eager, report.

The file defines ``model`` and ``example_inputs`` (see
``examples/classifier.py``). The command compiles the model, writes every
stage's IR and the shared library to the output folder, runs both the
compiled module and eager PyTorch on the example inputs, and reports the
stage timings, both latencies, the largest difference, the peak
intermediate memory of a call (``CompiledModule.memory()``) and the ops left
as plain loops (``CompiledModule.fallbacks``). An output outside the zoo's
tolerance (``lowerline.driver.tolerance``) is a failure: the command says
which and exits non-zero.

A file that also defines ``quantize`` (a ``lowerline.quant.Int8``) is
compiled as an int8 model: its ``quant_report()`` is printed and checked (a
layer more than one output step from its QDQ reference fails) instead of
the float tolerance.
"""

from __future__ import annotations

import os
import runpy
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lowerline.driver.tolerance import Mismatch, describe_for, worst_mismatch
from lowerline.errors import UsageError
from lowerline.pipeline.remarks import Remark

if TYPE_CHECKING:  # lowerline.runtime imports torch, which the CLI imports late
    from lowerline.quant.report import QuantReport
    from lowerline.runtime.native import MemoryStats


@dataclass
class GpuReport:
    """``lowerline compile --target cuda:...``: what was built and checked here."""

    out_dir: str
    stage_seconds: dict[str, float]
    cache_hit: bool
    kernels: list[dict]
    emulation_max_abs_diff: float  # the mapped IR run on this CPU vs eager
    device: str | None  # None: ran on the GPU; else why not
    device_max_abs_diff: float | None
    tolerance: str  # as for the CPU: the tolerances of the outputs' dtypes
    # The output furthest outside its tolerance, if any: on the GPU when the
    # module ran there, and always in the CPU run of the GPU-mapped IR, the
    # only run a machine without a GPU has.
    mismatch: Mismatch | None
    fallbacks: list[Remark]


@dataclass
class CompileReport:
    out_dir: str
    stage_seconds: dict[str, float]
    cache_hit: bool
    eager_seconds: float
    compiled_seconds: float
    max_abs_diff: float
    memory: MemoryStats
    tolerance: str  # the tolerances of the outputs' dtypes
    mismatch: Mismatch | None  # the output furthest outside its tolerance, if any
    fallbacks: list[Remark]  # ops left as plain loops
    # The file defines ``quantize``: CompiledModule.quant_report() (float
    # tolerances do not apply to the int8 model).
    quant_report: QuantReport | None = None


def load_model_file(path: str) -> tuple[Any, tuple]:
    """Run ``path`` (as ``python path`` would: it is code) and take its
    ``model`` and ``example_inputs``."""
    model, inputs, _ = _load_model_file(path)
    return model, inputs


def _load_model_file(path: str) -> tuple[Any, tuple, Any]:
    """``load_model_file``, and the file's ``quantize`` (a
    ``lowerline.quant.Int8``) or None when it defines none."""
    import torch

    if not os.path.exists(path):
        raise UsageError(f"cannot open model file '{path}': No such file or directory")
    namespace = runpy.run_path(path, run_name="__lowerline_model__")
    missing = [name for name in ("model", "example_inputs") if name not in namespace]
    if missing:
        raise UsageError(
            f"{path} must define {' and '.join(missing)} "
            "(an nn.Module and a tuple of its example inputs)"
        )
    model, inputs = namespace["model"], namespace["example_inputs"]
    if not isinstance(model, torch.nn.Module):
        raise UsageError(f"{path}: model must be an nn.Module, got {type(model).__name__}")
    return model, inputs if isinstance(inputs, tuple) else (inputs,), namespace.get("quantize")


def median_seconds(function: Callable[[], Any], runs: int) -> float:
    function()  # warm up
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _max_abs_diff(expected: Any, actual: Any) -> float:
    import torch
    from torch.utils import _pytree as pytree

    worst = 0.0
    for e, a in zip(pytree.tree_leaves(expected), pytree.tree_leaves(actual), strict=True):
        if isinstance(e, torch.Tensor):
            diff = (e.double() - a.double()).abs().max() if e.numel() else torch.tensor(0.0)
            worst = max(worst, float(diff))
        else:
            worst = max(worst, abs(float(e) - float(a)))
    return worst


def _leaves(tree: Any) -> list[Any]:
    from torch.utils import _pytree as pytree

    return pytree.tree_leaves(tree)


def compile_file(path: str, out_dir: str, runs: int = 50, **options: Any) -> CompileReport:
    import torch

    import lowerline

    model, inputs, quantize = _load_model_file(path)
    compiled = lowerline.compile(model, *inputs, dump_dir=out_dir, quantize=quantize, **options)
    with torch.inference_mode():
        expected = model(*inputs)
        eager = median_seconds(lambda: model(*inputs), runs)
    actual = compiled(*inputs)
    # An int8 model is held to its quant report, not to the float tolerance.
    quant = compiled.quant_report() if quantize is not None else None
    return CompileReport(
        quant_report=quant,
        tolerance=describe_for(_leaves(expected)),
        mismatch=None if quant else worst_mismatch(_leaves(expected), _leaves(actual)),
        fallbacks=compiled.fallbacks,
        out_dir=out_dir,
        stage_seconds=compiled.stage_seconds,
        cache_hit=compiled.cache_hit,
        eager_seconds=eager,
        compiled_seconds=median_seconds(lambda: compiled(*inputs), runs),
        max_abs_diff=_max_abs_diff(expected, actual),
        memory=compiled.memory(),  # of the last timed call
    )


def compile_file_gpu(path: str, out_dir: str, target: str, **options: Any) -> GpuReport:
    """Compile for a GPU; check the mapped IR on the CPU; run on the GPU if there is one."""
    import torch

    import lowerline
    from lowerline.runtime import cuda

    model, inputs = load_model_file(path)
    compiled = lowerline.compile(model, *inputs, target=target, dump_dir=out_dir, **options)
    with torch.inference_mode():
        expected = model(*inputs)
    emulated = compiled.run_on_cpu(*inputs)
    reason = cuda.device_status()
    on_device = None if reason else compiled(*inputs)
    mismatches = [
        worst_mismatch(_leaves(expected), _leaves(actual))
        for actual in (on_device, emulated)
        if actual is not None
    ]
    return GpuReport(
        tolerance=describe_for(_leaves(expected)),
        mismatch=next((m for m in mismatches if m is not None), None),
        fallbacks=compiled.fallbacks,
        out_dir=out_dir,
        stage_seconds=compiled.stage_seconds,
        cache_hit=compiled.cache_hit,
        kernels=compiled.kernels,
        emulation_max_abs_diff=_max_abs_diff(expected, emulated),
        device=reason,
        device_max_abs_diff=None if on_device is None else _max_abs_diff(expected, on_device),
    )
