"""The GPU run path of ``lowerline.compile`` against the stub CUDA driver.

Models are compiled for ``cuda:sm_80`` here (no driver is loaded in pytest's
process); a subprocess then calls the compiled module with
``$LOWERLINE_CUDA_DRIVER`` pointing at the stub driver the tests build
(host memory, launches recorded, kernels not run). Its launches must be the
ones the compiler planned (``CompiledModule.kernels``: kernel, grid, block,
dynamic shared memory, the byte size of every parameter), in order.

Device memory (``lowerline-gpu-host-buffers``, ``GpuFunction``): the first
call allocates the weights buffer, uploads the weights and allocates one
scratch buffer; later calls allocate nothing and copy only inputs and
outputs; calls at the same time take a scratch buffer each; everything is
freed when the module is collected or the process exits.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from cuda_stub import build

import lowerline

stub_driver = build.stub_driver
TESTS = Path(__file__).parent

MODELS = {
    "mlp": """
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 16)).eval()
inputs = (torch.randn(32, 64),)
""",
    "conv": """
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Conv2d(4, 16, 3, padding=1), torch.nn.ReLU(),
    torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten()).eval()
inputs = (torch.randn(2, 4, 16, 16),)
""",
}

CALL = """
import ctypes, dataclasses, json, sys
import lowerline
from lowerline.runtime import cuda
from cuda_stub.stub import StubDriver
compiled = lowerline.compile(model, *inputs, target="cuda:sm_80", cache_dir=CACHE, binary=BINARY)
assert compiled.cache_hit
function = compiled.primary.function
stub = StubDriver(cuda.load_driver())
stub.reset()
compiled(*inputs)
first = {
    "launches": [dataclasses.asdict(launch) for launch in stub.launches()],
    "counters": dataclasses.asdict(stub.counters()),
}
# The weights buffer (host memory on the stub) holds every bias as it is.
entry = function._native
uploaded = ctypes.string_at(entry.weights, function.buffers["weights"])
biases = [p.detach().numpy().tobytes() in uploaded for n, p in model.named_parameters()
          if n.endswith("bias")]
stub.reset()
compiled(*inputs)
again = dataclasses.asdict(stub.counters())
cuda.close_libraries()  # what atexit runs
closed = dataclasses.asdict(stub.counters())
print(json.dumps({**first, "again": again, "closed": closed, "buffers": function.buffers,
                  "biases": biases}))
"""


def _model(name: str) -> tuple:
    scope: dict = {}
    exec(MODELS[name], scope)
    return scope["model"], scope["inputs"]


def _run_on_stub(
    name: str, binary: str, cache: str, driver: Path, script: str, **env: str
) -> subprocess.CompletedProcess:
    """``script`` in a fresh interpreter on the stub driver, after the
    model's code (``model``, ``inputs``), ``CACHE`` and ``BINARY``."""
    environment = {**os.environ, "LOWERLINE_CUDA_DRIVER": str(driver), **env}
    code = (
        f"import sys\nsys.path.insert(0, {str(TESTS)!r})\n"
        + textwrap.dedent(MODELS[name])
        + f"CACHE = {cache!r}\nBINARY = {binary!r}\n"
        + script
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=environment, timeout=300
    )


def _json_on_stub(name: str, binary: str, cache: str, driver: Path, script: str, **env) -> dict:
    """What ``script`` printed last (one JSON object); it must succeed."""
    done = _run_on_stub(name, binary, cache, driver, script, **env)
    assert done.returncode == 0, done.stderr
    # The mgpu runtime reports failed driver calls on stderr only.
    assert "failed with" not in done.stderr, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _call_on_stub(name: str, binary: str, cache: str, driver: Path) -> dict:
    return _json_on_stub(name, binary, cache, driver, CALL)


@pytest.fixture(scope="module")
def gpu_cache(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("gpu-cache"))


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("binary", ["ptx", "fatbin"])
def test_launches_are_the_planned_ones(name, binary, gpu_cache, stub_driver):
    model, inputs = _model(name)
    compiled = lowerline.compile(
        model, *inputs, target="cuda:sm_80", cache_dir=gpu_cache, binary=binary
    )
    plan = compiled.kernels
    assert plan, "no kernel launches planned"
    result = _call_on_stub(name, binary, gpu_cache, stub_driver)
    launches = result["launches"]
    assert [launch["kernel"] for launch in launches] == [k["name"].split("::")[1] for k in plan]
    for launch, kernel in zip(launches, plan, strict=True):
        where = kernel["name"]
        assert launch["grid"] == kernel["grid"], where
        assert launch["block"] == kernel["block"], where
        # Shared memory is static (workgroup attributions): none at launch.
        assert launch["shared_bytes"] == kernel["dynamic_shared_bytes"] == 0, where
        if binary == "ptx":  # the stub reads parameter sizes from PTX only
            assert launch["param_sizes"] == kernel["param_bytes"], where
            # Every pointer parameter points into a live device buffer.
            pointers = [i for i, size in enumerate(kernel["param_bytes"]) if size == 8]
            assert any(launch["param_on_device"][i] for i in pointers), where
        else:
            assert launch["image_kind"] == 2, where  # a fatbin image
    counters, buffers = result["counters"], result["buffers"]
    # The weights buffer and one scratch buffer, kept for the next calls.
    assert counters["allocations"] == 2 and counters["frees"] == 0
    assert counters["live_bytes"] == buffers["weights"] + buffers["scratch"]
    in_bytes = sum(t.numel() * t.element_size() for t in inputs)
    out_bytes = sum(t.numel() * t.element_size() for t in [model(*inputs)])
    weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    assert in_bytes + weight_bytes <= counters["host_to_device"] <= in_bytes + buffers["weights"]
    assert counters["device_to_host"] == out_bytes
    assert result["biases"] and all(result["biases"])
    # Closing (at exit) frees them, before the libraries close.
    assert result["closed"]["live_bytes"] == 0 and result["closed"]["frees"] == 2


def test_static_shared_memory_matches_ptxas(gpu_cache):
    """The shared memory the compiler planned is what ptxas allocated."""
    model, inputs = _model("mlp")
    compiled = lowerline.compile(model, *inputs, target="cuda:sm_80", cache_dir=gpu_cache)
    for kernel in compiled.kernels:
        assert kernel["resources"]["sm_80"]["shared_bytes"] == kernel["shared_bytes"]
    assert any(k["shared_bytes"] > 0 for k in compiled.kernels)


def test_second_call_copies_only_inputs_and_outputs(gpu_cache, stub_driver):
    """Weights stay on the device and buffers are reused: a call after the
    first allocates nothing and moves only its inputs and outputs."""
    model, inputs = _model("mlp")
    lowerline.compile(model, *inputs, target="cuda:sm_80", cache_dir=gpu_cache, binary="ptx")
    again = _call_on_stub("mlp", "ptx", gpu_cache, stub_driver)["again"]
    in_bytes = sum(t.numel() * t.element_size() for t in inputs)
    out_bytes = sum(t.numel() * t.element_size() for t in [model(*inputs)])
    assert again["allocations"] == 0
    assert again["host_to_device"] == in_bytes
    assert again["device_to_host"] == out_bytes


# Four threads call at once (SharingWatch: the first take of each waits
# until all four hold a scratch buffer). Then the module is
# dropped: collecting it frees its device memory.
THREADS = """
import dataclasses, gc, json
from concurrent.futures import ThreadPoolExecutor
import lowerline
from pool_watch import SharingWatch
from lowerline.runtime import cuda
from cuda_stub.stub import StubDriver
compiled = lowerline.compile(model, *inputs, target="cuda:sm_80", cache_dir=CACHE, binary=BINARY)
stub = StubDriver(cuda.load_driver())
compiled(*inputs)  # loads: the weights and one scratch buffer
pool = compiled.primary.function.scratch
stub.reset()
watch = SharingWatch(4)
pool.watch = watch
def calls(index):
    return [tuple(compiled(*inputs).shape) for _ in range(5)]
with ThreadPoolExecutor(4) as threads:
    shapes = sum(threads.map(calls, range(4)), [])
pool.watch = None
during, created = dataclasses.asdict(stub.counters()), pool.created
del compiled, pool
gc.collect()
print(json.dumps({"shared": watch.shared, "held": sorted(watch.held), "created": created, "shapes": shapes,
                  "during": during, "collected": dataclasses.asdict(stub.counters())}))
"""


def test_concurrent_calls_never_share_scratch(gpu_cache, stub_driver):
    model, inputs = _model("mlp")
    lowerline.compile(model, *inputs, target="cuda:sm_80", cache_dir=gpu_cache, binary="ptx")
    result = _json_on_stub("mlp", "ptx", gpu_cache, stub_driver, THREADS)
    assert not result["shared"], f"scratch used by two calls at once: {result['shared']}"
    assert not result["held"]  # every call gave its scratch back
    assert result["created"] == 4  # grown to the four concurrent callers, not more
    assert result["shapes"] == [list(model(*inputs).shape)] * 20
    during = result["during"]
    # Three more scratch buffers; the weights were not uploaded again.
    assert during["allocations"] == 3 and during["frees"] == 0
    in_bytes = sum(t.numel() * t.element_size() for t in inputs)
    assert during["host_to_device"] == 20 * in_bytes
    collected = result["collected"]
    assert collected["live_bytes"] == 0 and collected["frees"] == 5


# Errors at load and in a call stay exceptions of lowerline's, the process sound.
ERRORS = """
import json
import lowerline
from lowerline.runtime import cuda
from cuda_stub.stub import StubDriver
compiled = lowerline.compile(model, *inputs, target="cuda:sm_80", cache_dir=CACHE, binary=BINARY)
stub = StubDriver(cuda.load_driver())
errors = []
for _ in range(2):  # a failed load leaves nothing behind: the next call tries again
    try:
        compiled(*inputs)
        errors.append(None)
    except (lowerline.GpuOutOfMemory, lowerline.GpuFault) as error:
        errors.append([type(error).__name__, str(error)])
print(json.dumps({"errors": errors, "live_bytes": stub.counters().live_bytes,
                  "buffers": compiled.primary.function.buffers}))
"""


def test_no_room_for_the_weights_is_an_error(gpu_cache, stub_driver):
    model, inputs = _model("mlp")
    compiled = lowerline.compile(
        model, *inputs, target="cuda:sm_80", cache_dir=gpu_cache, binary="ptx"
    )
    weights = compiled.primary.function.buffers["weights"]
    memory = str(weights - 1)
    result = _json_on_stub("mlp", "ptx", gpu_cache, stub_driver, ERRORS, STUB_CUDA_MEMORY=memory)
    library = compiled.primary.function.library
    expected = [
        "GpuOutOfMemory",
        f"the GPU has no {weights} bytes free for the weights of {library} "
        "(CUDA_ERROR_OUT_OF_MEMORY (2))",
    ]
    assert result["errors"] == [expected, expected]
    assert result["live_bytes"] == 0


def test_no_room_for_the_scratch_is_an_error(gpu_cache, stub_driver):
    model, inputs = _model("mlp")
    compiled = lowerline.compile(
        model, *inputs, target="cuda:sm_80", cache_dir=gpu_cache, binary="ptx"
    )
    buffers = compiled.primary.function.buffers
    memory = str(buffers["weights"] + buffers["scratch"] - 1)
    result = _json_on_stub("mlp", "ptx", gpu_cache, stub_driver, ERRORS, STUB_CUDA_MEMORY=memory)
    (kind, message), again = result["errors"]
    assert kind == "GpuOutOfMemory" and again == [kind, message]
    assert f"no {buffers['scratch']} bytes free for the scratch of" in message
    assert result["live_bytes"] == 0  # the weights went with the failed load


def test_a_kernel_fault_in_a_compiled_call_is_an_error(gpu_cache, stub_driver):
    model, inputs = _model("mlp")
    lowerline.compile(model, *inputs, target="cuda:sm_80", cache_dir=gpu_cache, binary="ptx")
    done = _run_on_stub("mlp", "ptx", gpu_cache, stub_driver, ERRORS, STUB_CUDA_FAULT="700")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    # The weights were uploaded before the first launch faulted; the context
    # stays broken: the next call fails too.
    for kind, message in result["errors"]:
        assert kind == "GpuFault" and "CUDA error 700" in message, message
