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

import pytest
import torch
from test_zoo_forms import FORMS
from test_zoo_models import MODELS
from test_zoo_ops import CASES
from zoo_support import Case, assert_matches, bench_models, params

import lowerline
from lowerline.gpu import ptx
from lowerline.runtime import cuda

# The benchmark's models must lower to PTX too.
GPU_CASES = [*CASES, *FORMS, *MODELS, *bench_models()]


def _assemble_all(compiled: lowerline.CompiledModule, arch: str, empty: bool) -> None:
    """Every kernel module assembles for ``arch``; there is one unless the
    model has nothing to compute (``empty``: every output has no element)."""
    modules = compiled.ptx_modules
    assert modules or empty, "no kernel was generated"
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
    empty = all(t.numel() == 0 for t in torch.utils._pytree.tree_leaves(expected))
    _assemble_all(compiled, "sm_90", empty)
    assert set(compiled.fatbin) == set(compiled.ptx_modules)
    assert compiled.fatbin or empty
    if cuda.device_status() is None:
        assert_matches(compiled(*inputs), expected, case)
    else:
        with pytest.raises(cuda.NoCudaDevice):
            compiled(*inputs)
