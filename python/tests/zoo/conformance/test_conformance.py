"""The conformance zoo: every ATen op of torch-mlir's registry, one module each.

Each case must end in the category ``expected.json`` records for it (written
by ``report.py``, which also writes ``bench/conformance.md``): a passing op
must keep passing, and a failing one fails for the recorded reason, so a fix
shows up as a test to update, as ``expected_fallbacks`` does for fallbacks.
``SLICE`` (57 ops, about 5 minutes on one busy core) runs in the normal
suite; every op runs in the ``long`` tier (``bash tools/dev.sh test --long``).
"""

from __future__ import annotations

import json
import os

import aten_ops
import op_outcome as outcome
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "expected.json"), encoding="utf-8") as _handle:
    EXPECTED: dict[str, dict] = json.load(_handle)["outcomes"]
CASES = {case.name: case for case in aten_ops.op_cases()}

# A representative slice: each family's common ops, odd shapes, integer and
# bool inputs, views, reductions, matmul and convolution, pooling with
# indices, the TMTensor families, complex numbers and an op torch-mlir does
# not lower (view.dtype).
SLICE = (
    "abs",
    "add.Tensor",
    "mul.Tensor",
    "div.Tensor_mode",
    "remainder.Tensor",
    "pow.Tensor_Tensor",
    "exp",
    "log",
    "sigmoid",
    "tanh",
    "atan2",
    "gelu",
    "leaky_relu",
    "clamp",
    "where.self",
    "eq.Tensor",
    "logical_and",
    "sum.dim_IntList",
    "amax",
    "argmax",
    "var.correction",
    "logsumexp",
    "_softmax",
    "_log_softmax",
    "mm",
    "bmm",
    "addmm",
    "convolution",
    "max_pool2d_with_indices",
    "avg_pool2d",
    "adaptive_avg_pool2d",
    "native_layer_norm",
    "native_group_norm",
    "view",
    "permute",
    "slice.Tensor",
    "cat",
    "stack",
    "expand",
    "flip",
    "gather",
    "index_select",
    "index.Tensor",
    "embedding",
    "constant_pad_nd",
    "upsample_nearest2d.vec",
    "arange.start_step",
    "cumsum",
    "sort",
    "scatter.src",
    "index_put",
    "masked_scatter",
    "kthvalue",
    "fft_fft",
    "view.dtype",
    "view_as_real",
    "view_as_complex",
    "rand_like",
)


def check(name: str, cache_dir: str) -> None:
    expected = EXPECTED[name]
    result = outcome.run(CASES[name], cache_dir)
    assert result.category == expected["category"], (
        f"{name}: {result.category} ({result.detail}); expected.json says "
        f"{expected['category']} ({expected['detail']}): rerun report.py --ops {name} "
        "if this is a fix"
    )


def test_the_op_list_is_torch_mlirs_registry() -> None:
    names = aten_ops.registry_names()
    assert len(names) > 500
    assert {"add.Tensor", "convolution", "sort", "scatter.src", "cumsum"} <= set(names)
    # Every case (registry ops and complex variants) has a recorded outcome,
    # and nothing else does.
    assert set(names) <= set(CASES)
    assert set(EXPECTED) == set(CASES)


def test_every_spec_names_a_registry_op_that_eager_accepts() -> None:
    for name in aten_ops.SPECS:
        assert name in CASES, f"SPECS[{name!r}] names no op of torch-mlir's registry"
        built = aten_ops.build(CASES[name])
        assert not isinstance(built, str), f"{name}: {built}"


def test_the_slice_covers_passing_and_failing_ops() -> None:
    categories = {EXPECTED[name]["category"] for name in SLICE}
    assert {"pass", "no-linalg-lowering"} <= categories, categories


@pytest.mark.parametrize("name", SLICE)
def test_slice(name: str, zoo_cache: str) -> None:
    check(name, zoo_cache)


@pytest.mark.long
@pytest.mark.parametrize("name", sorted(set(CASES) - set(SLICE)))
def test_every_op(name: str, zoo_cache: str) -> None:
    check(name, zoo_cache)
