"""Compiled GPU libraries that run where the GPU is, without the compiler.

A compiled GPU library (``lib.so``) needs MLIR's ``libmlir_cuda_runtime.so``
and ``libmlir_c_runner_utils.so``, which it finds through an rpath into the
``mlir`` wheel of the machine that compiled it. A machine with the GPU but
without that wheel has neither, so a *bundle* carries them: a folder of

    manifest.json   the bundled runtime libraries (in load order) and, per
                    case, its library, entry, result types, device buffers,
                    input and expected-output files and tolerances
    lib/            the runtime libraries the case libraries need
    <case>/         lib.so, inputs.pt, expected.pt (eager torch's outputs)

``lowerline.tools.gpu_check build`` writes one; ``load_bundle`` opens its
runtime libraries globally (after the CUDA driver): the case libraries'
``NEEDED`` entries then bind to them by soname whatever their rpath says,
and ``GpuFunction`` calls them as ``lowerline.compile``'s modules do.

Imports torch and the runtime only: never MLIR (python/tests/test_layers.py).
"""

from __future__ import annotations

import ctypes
import json
import os
from dataclasses import dataclass
from typing import Any

import torch

from lowerline.runtime import cuda
from lowerline.runtime.native import GpuFunction

MANIFEST = "manifest.json"
# 2: a case's entry takes device buffers (its "buffers": lowerline-gpu-host-buffers).
FORMAT = 2


class BundleError(RuntimeError):
    """A bundle folder that is incomplete or of another format."""


@dataclass(frozen=True)
class BundleCase:
    """One compiled model of a bundle, as the manifest describes it."""

    name: str
    entry: str
    library: str  # relative to the bundle folder
    outputs: list[tuple[tuple[int, ...], torch.dtype]]
    inputs_file: str
    expected_file: str
    rtol: float
    atol: float
    info: dict[str, Any]  # free-form: what the model is (for the report)
    buffers: dict[str, Any]  # the entry's device buffers (GpuFunction's ``buffers``)


def read_manifest(folder: str) -> dict[str, Any]:
    path = os.path.join(folder, MANIFEST)
    if not os.path.exists(path):
        raise BundleError(f"{folder} is not a GPU bundle: it has no {MANIFEST}")
    with open(path, encoding="utf-8") as handle:
        manifest = json.load(handle)
    if manifest.get("format") != FORMAT:
        raise BundleError(
            f"{path}: bundle format {manifest.get('format')!r}, this runtime reads {FORMAT}"
        )
    return manifest


def _dtype(name: str) -> torch.dtype:
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise BundleError(f"the manifest names an unknown dtype '{name}'")
    return dtype


def cases(manifest: dict[str, Any]) -> list[BundleCase]:
    return [
        BundleCase(
            name=c["name"],
            entry=c["entry"],
            library=c["library"],
            outputs=[(tuple(shape), _dtype(dtype)) for shape, dtype in c["outputs"]],
            inputs_file=c["inputs"],
            expected_file=c["expected"],
            rtol=c["rtol"],
            atol=c["atol"],
            info=c.get("info", {}),
            buffers=c["buffers"],
        )
        for c in manifest["cases"]
    ]


def open_runtime_libraries(folder: str, names: list[str]) -> list[ctypes.CDLL]:
    """The bundle's runtime libraries, opened globally in the manifest's order
    (dependencies first) after the CUDA driver, which the CUDA runtime needs."""
    cuda.load_driver()
    opened = []
    for name in names:
        path = os.path.join(folder, name)
        if not os.path.exists(path):
            raise BundleError(f"the bundle lists {name} but {path} does not exist")
        opened.append(ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL))
    return opened


def load_case(folder: str, case: BundleCase) -> GpuFunction:
    """The case's host entry; the kernels load onto the device, and the
    weights are uploaded, at its first call."""
    return GpuFunction(os.path.join(folder, case.library), case.entry, case.outputs, case.buffers)


def case_tensors(folder: str, case: BundleCase) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """The case's inputs and eager torch's expected outputs (CPU tensors)."""
    inputs = torch.load(os.path.join(folder, case.inputs_file), weights_only=True)
    expected = torch.load(os.path.join(folder, case.expected_file), weights_only=True)
    return list(inputs), list(expected)


@dataclass(frozen=True)
class Agreement:
    """How far one set of outputs is from another."""

    max_abs: float
    max_rel: float
    close: bool  # torch.allclose at the case's tolerances, NaNs equal, shapes and dtypes equal
    why: str = ""  # what differs when not close

    def to_json(self) -> dict[str, Any]:
        return {"max_abs": self.max_abs, "max_rel": self.max_rel, "close": self.close,
                "why": self.why}  # fmt: skip


def compare(
    actual: list[torch.Tensor], expected: list[torch.Tensor], rtol: float, atol: float
) -> Agreement:
    """Max absolute and relative errors over every output, and whether all are close."""
    if len(actual) != len(expected):
        return Agreement(float("inf"), float("inf"), False,
                         f"{len(actual)} outputs, expected {len(expected)}")  # fmt: skip
    worst_abs = worst_rel = 0.0
    why = ""
    for index, (got, want) in enumerate(zip(actual, expected, strict=True)):
        got = got.detach().cpu()
        if got.shape != want.shape or got.dtype != want.dtype:
            why = why or (f"output #{index}: {got.dtype}{list(got.shape)}, "
                          f"expected {want.dtype}{list(want.shape)}")  # fmt: skip
            worst_abs = worst_rel = float("inf")
            continue
        if got.numel() == 0:
            continue
        diff = (got.double() - want.double()).abs().nan_to_num(0.0)
        worst_abs = max(worst_abs, float(diff.max()))
        worst_rel = max(worst_rel, float((diff / want.double().abs().clamp_min(1e-30)).max()))
        if not torch.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True):
            why = why or f"output #{index}: not within rtol={rtol}, atol={atol}"
    return Agreement(worst_abs, worst_rel, not why, why)
