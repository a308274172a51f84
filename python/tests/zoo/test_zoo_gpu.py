"""The model zoo on the GPU target, checked on this machine.

Every case of the zoo (ops, forms, models) compiled for ``cuda:sm_80``:

- the GPU-mapped IR (blocks and threads as loops, shared memory as buffers)
  runs on the CPU (``run_on_cpu``) and matches eager torch: the only numeric
  check of the GPU code possible without a GPU;
- the PTX of every kernel module is accepted by ``ptxas`` for ``sm_80``
  (during the compile) and for ``sm_90`` (here);
- calling the module runs it on the device: where there is one, it must
  match eager torch too; where there is none, the call raises the
  no-device error and the process goes on.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch
from test_zoo_forms import FORMS
from test_zoo_models import MODELS
from test_zoo_ops import CASES
from zoo_support import Case, assert_matches, params

import lowerline
from lowerline.gpu import ptx
from lowerline.runtime import cuda


def _bench_models() -> list[Case]:
    """The benchmark's models (bench/speed.py), which must lower to PTX too."""
    path = Path(__file__).parents[3] / "bench" / "speed.py"
    spec = importlib.util.spec_from_file_location("lowerline_bench_speed", path)
    speed = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = speed  # its dataclasses look their module up
    spec.loader.exec_module(speed)
    return [
        Case(
            f"bench_{name}",
            "bench",
            lambda make=make: make()[0],
            lambda make=make: make()[1],
        )
        for name, make in speed.MODELS.items()
    ]


GPU_CASES = [*CASES, *FORMS, *MODELS, *_bench_models()]


def _assemble_all(compiled: lowerline.CompiledModule, arch: str) -> None:
    modules = compiled.ptx_modules
    assert modules, "no kernel was generated"
    for name, text in modules.items():
        _, resources = ptx.assemble(text, arch)
        assert resources, f"{name}: ptxas reported no kernel for {arch}"


@pytest.mark.parametrize("case", params(GPU_CASES))
def test_gpu_zoo(case: Case, zoo_cache: str) -> None:
    torch.manual_seed(0)
    module = case.module().eval()
    inputs = case.inputs()
    with torch.no_grad():
        expected = module(*inputs)
    compiled = lowerline.compile(module, *inputs, target="cuda:sm_80", cache_dir=zoo_cache)
    assert_matches(compiled.run_on_cpu(*inputs), expected, case)
    _assemble_all(compiled, "sm_90")
    assert compiled.fatbin and set(compiled.fatbin) == set(compiled.ptx_modules)
    if cuda.device_status() is None:
        assert_matches(compiled(*inputs), expected, case)
    else:
        with pytest.raises(cuda.NoCudaDevice):
            compiled(*inputs)
