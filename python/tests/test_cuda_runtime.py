"""The GPU run path (lowerline.runtime.cuda) on this GPU-less machine, with a stub driver.

The stub (cuda_stub/stub_driver.c) takes the place of libcuda.so.1: device
memory is host memory and kernels are recorded, not run. Whatever loads it
runs in a subprocess, so that no driver ends up bound inside pytest's process.

The end-to-end tests hand-write a GPU module, lower it with mlir-opt, link
it against libmlir_cuda_runtime.so as a compiled GPU model will be, and call
``_mlir_ciface_<name>`` on host memref descriptors: independent of the rest of
lowerline, they pin down what the mgpu runtime asks of the driver.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from cuda_stub import build

TESTS = Path(__file__).parent
stub_driver = build.stub_driver  # the fixture

NO_DRIVER = (
    "no CUDA driver (libcuda.so.1) on this machine: compiled GPU modules can be built and "
    "inspected here but run only where an NVIDIA driver and device exist; set "
    "LOWERLINE_CUDA_DRIVER to use another driver library"
)


def run_python(code: str, driver: str | os.PathLike | None, **env: str) -> dict:
    """Run `code` in a fresh interpreter; it prints one JSON object, returned.

    `driver` goes to $LOWERLINE_CUDA_DRIVER (unset when None); `env` adds more.
    """
    environment = {k: v for k, v in os.environ.items() if k != "LOWERLINE_CUDA_DRIVER"}
    if driver is not None:
        environment["LOWERLINE_CUDA_DRIVER"] = str(driver)
    environment.update(env)
    prelude = f"import json, sys\nsys.path.insert(0, {str(TESTS)!r})\n"
    result = subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    # The mgpu runtime only prints its failures ("'cuX(...)' failed with 'E'").
    assert "failed with" not in result.stderr, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


STATUS = """
from lowerline.runtime import cuda
status = cuda.device_status()
try:
    cuda.require_device()
    raised = None
except cuda.NoCudaDevice as error:
    raised = str(error)
print(json.dumps({"status": status, "raised": raised}))
"""


def system_driver_present() -> bool:
    code = "import ctypes\ntry:\n    ctypes.CDLL('libcuda.so.1')\nexcept OSError:\n    sys.exit(1)"
    return subprocess.run([sys.executable, "-c", code]).returncode == 0


# ---- no device -------------------------------------------------------------


def test_no_system_driver_is_reported():
    if system_driver_present():
        pytest.skip("this machine has libcuda.so.1")
    result = run_python(STATUS, driver=None)
    assert result == {"status": NO_DRIVER, "raised": NO_DRIVER}


def test_missing_driver_file_is_reported(tmp_path):
    missing = tmp_path / "libcuda_missing.so"
    result = run_python(STATUS, driver=missing)
    assert result["status"] == result["raised"]
    assert result["raised"].startswith(
        f"cannot load the CUDA driver {missing} (from $LOWERLINE_CUDA_DRIVER): "
    )


def test_library_that_is_not_a_driver_is_reported():
    result = run_python(STATUS, driver="libm.so.6")
    assert result["raised"] == "libm.so.6 is not a CUDA driver: it has no cuInit"


def test_cuinit_failure_names_the_error(stub_driver):
    result = run_python(STATUS, driver=stub_driver, STUB_CUDA_INIT_ERROR="100")
    expected = f"CUDA driver {stub_driver}: cuInit failed with CUDA_ERROR_NO_DEVICE (100)"
    assert result == {"status": expected, "raised": expected}


def test_zero_devices_is_reported(stub_driver):
    result = run_python(STATUS, driver=stub_driver, STUB_CUDA_DEVICE_COUNT="0")
    assert result["raised"] == f"CUDA driver {stub_driver} found no CUDA device"


def test_stub_driver_is_a_usable_device(stub_driver):
    assert run_python(STATUS, driver=stub_driver) == {"status": None, "raised": None}


def test_second_driver_cannot_replace_the_first(stub_driver, tmp_path):
    code = f"""
    import os
    from lowerline.runtime import cuda
    cuda.load_driver()
    os.environ[cuda.DRIVER_ENV] = {str(tmp_path / "other.so")!r}
    print(json.dumps({{"status": cuda.device_status()}}))
    """
    status = run_python(code, driver=stub_driver)["status"]
    assert status.startswith(f"the CUDA driver {stub_driver} is already loaded")


# ---- the stub itself: PTX signatures ----------------------------------------

PTX = r"""
//
// Hand-written: parameters of every form the NVPTX back-end prints.
.version 8.0
.target sm_90
.address_size 64

.visible .entry k(
	.param .u64 .ptr .align 1 k_param_0,
	.param .b32 k_param_1,
	.param .align 8 .b8 k_param_2[16],
	.param .b16 k_param_3
)
{
	ret;
}

.visible .entry k2
{
	ret;
}
"""

PTX_LAUNCH = f"""
import ctypes, dataclasses
from lowerline.runtime import cuda
from cuda_stub.stub import StubDriver
driver = cuda.load_driver()
stub = StubDriver(driver)
ptx = ctypes.create_string_buffer({PTX!r}.encode())
module, function, missing = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
assert driver.cuModuleLoadData(ctypes.byref(module), ptx) == 0
get = driver.cuModuleGetFunction
not_found = get(ctypes.byref(missing), module, b"k_param_0")
assert get(ctypes.byref(function), module, b"k") == 0
pointer, n = ctypes.c_uint64(0xDEADBEEF), ctypes.c_int32(7)
blob, half = (ctypes.c_uint8 * 16)(*range(16)), ctypes.c_uint16(0x3C00)
params = (ctypes.c_void_p * 4)(*[ctypes.addressof(p) for p in (pointer, n, blob, half)])
u = ctypes.c_uint
args = [u(3), u(2), u(1), u(128), u(1), u(1), u(64), None, params, None]
assert driver.cuLaunchKernel(function, *args) == 0
assert get(ctypes.byref(function), module, b"k2") == 0
assert driver.cuLaunchKernel(function, *([u(1)] * 6), u(0), None, None, None) == 0
launches = [dataclasses.asdict(launch) for launch in stub.launches()]
print(json.dumps({{"not_found": not_found, "kind": int(stub.image_kind()), "launches": launches}}))
"""


def test_stub_reads_ptx_signatures(stub_driver):
    result = run_python(PTX_LAUNCH, driver=stub_driver)
    assert result["not_found"] == 500  # CUDA_ERROR_NOT_FOUND: no such .entry
    assert result["kind"] == 1  # PTX
    k, k2 = result["launches"]
    assert k["kernel"] == "k"
    assert (k["grid"], k["block"], k["shared_bytes"]) == ([3, 2, 1], [128, 1, 1], 64)
    assert k["param_count"] == 4
    assert k["param_sizes"] == [8, 4, 16, 2]
    assert k["param_values"] == [0xDEADBEEF, 7, 0, 0x3C00]  # larger than 8 bytes: not read
    assert k["param_on_device"] == [False] * 4
    assert (k2["kernel"], k2["param_count"], k2["param_sizes"]) == ("k2", 0, [])


# ---- end to end: a hand-written GPU module ----------------------------------

N = 1024
BLOCKS, THREADS = 4, 256
MEMREF = f"memref<{N}xf32>"
ALPHA = 2.0

# @main launches c = a + alpha * b; @roundtrip copies its input to the device
# and back without a kernel (the stub runs no kernels, but its copies are real).
GPU_MODULE = f"""
module attributes {{gpu.container_module}} {{
  gpu.module @kernels {{
    gpu.func @axpy(%a: {MEMREF}, %b: {MEMREF}, %c: {MEMREF}, %alpha: f32) kernel {{
      %block = gpu.block_id x
      %thread = gpu.thread_id x
      %size = gpu.block_dim x
      %base = arith.muli %block, %size : index
      %i = arith.addi %base, %thread : index
      %x = memref.load %a[%i] : {MEMREF}
      %y = memref.load %b[%i] : {MEMREF}
      %ay = arith.mulf %alpha, %y : f32
      %s = arith.addf %x, %ay : f32
      memref.store %s, %c[%i] : {MEMREF}
      gpu.return
    }}
  }}
  func.func @main(%a: {MEMREF}, %b: {MEMREF}, %c: {MEMREF}) {{
    %one = arith.constant 1 : index
    %blocks = arith.constant {BLOCKS} : index
    %threads = arith.constant {THREADS} : index
    %alpha = arith.constant {ALPHA} : f32
    %da = gpu.alloc () : {MEMREF}
    %db = gpu.alloc () : {MEMREF}
    %dc = gpu.alloc () : {MEMREF}
    gpu.memcpy %da, %a : {MEMREF}, {MEMREF}
    gpu.memcpy %db, %b : {MEMREF}, {MEMREF}
    gpu.launch_func @kernels::@axpy blocks in (%blocks, %one, %one) threads in (%threads, %one, %one)
        args(%da : {MEMREF}, %db : {MEMREF}, %dc : {MEMREF}, %alpha : f32)
    gpu.memcpy %c, %dc : {MEMREF}, {MEMREF}
    gpu.dealloc %da : {MEMREF}
    gpu.dealloc %db : {MEMREF}
    gpu.dealloc %dc : {MEMREF}
    return
  }}
  func.func @roundtrip(%in: {MEMREF}, %out: {MEMREF}) {{
    %d = gpu.alloc () : {MEMREF}
    gpu.memcpy %d, %in : {MEMREF}, {MEMREF}
    gpu.memcpy %out, %d : {MEMREF}, {MEMREF}
    gpu.dealloc %d : {MEMREF}
    return
  }}
}}
"""

# The kernel's arguments, flattened as the NVVM lowering passes them.
KERNEL_ARGUMENTS = [MEMREF, MEMREF, MEMREF, "f32"]


def pipeline(binary_format: str, toolkit: str) -> str:
    """Host and kernel to the LLVM dialect, the kernel serialized to `binary_format`.

    gpu-async-region first: gpu-to-llvm lowers gpu.alloc/memcpy/dealloc only
    in their async form (on a stream). llvm-request-c-wrappers gives
    `_mlir_ciface_<name>`, lowerline's calling convention. The PTX version
    must be raised: the default (+ptx60) cannot target sm_90.
    """
    return (
        "builtin.module("
        "func.func(gpu-async-region,llvm-request-c-wrappers),"
        "nvvm-attach-target{chip=sm_90 features=+ptx80},"
        "gpu.module(convert-gpu-to-nvvm,convert-arith-to-llvm,convert-index-to-llvm,"
        "reconcile-unrealized-casts),"
        "gpu-to-llvm,"
        f"gpu-module-to-binary{{format={binary_format} toolkit={toolkit}}},"
        "reconcile-unrealized-casts)"
    )


def driver_param_sizes(argument_types: list[str]) -> list[int]:
    """Bytes of each kernel parameter the driver sees, from the gpu.func's types.

    A ranked memref is its descriptor, flattened: allocated and aligned
    pointers, offset, then a size and a stride per dimension (all 8 bytes).
    """
    sizes = []
    for type_ in argument_types:
        if memref := re.fullmatch(r"memref<((?:\d+x)*)\w+>", type_):
            rank = memref.group(1).count("x")
            sizes += [8] * (3 + 2 * rank)
        else:
            sizes.append(int(re.fullmatch(r"[fi](\d+)", type_).group(1)) // 8)
    return sizes


def package_dir(name: str) -> Path:
    """A wheel's folder, found without importing it (no MLIR in pytest's process)."""
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.submodule_search_locations, f"no '{name}' package"
    return Path(next(iter(spec.submodule_search_locations)))


def cuda_toolkit() -> str | None:
    """A CUDA toolkit with ptxas and fatbinary (for the bin and fatbin formats)."""
    for folder in (os.environ.get("CUDA_HOME"), "/usr/local/cuda-13.0", "/usr/local/cuda"):
        if folder and all(
            (Path(folder) / "bin" / tool).exists() for tool in ("ptxas", "fatbinary")
        ):
            return folder
    return None


def compile_gpu_library(binary_format: str, folder: Path) -> Path:
    """GPU_MODULE as a shared library calling libmlir_cuda_runtime.so."""
    mlir_dir, llvm_dir = package_dir("mlir"), package_dir("llvm")
    source, lowered = folder / "module.mlir", folder / "lowered.mlir"
    llvm_ir, obj, library = folder / "module.ll", folder / "module.o", folder / "lib.so"
    source.write_text(GPU_MODULE)
    toolkit = cuda_toolkit() or "/usr/local/cuda"
    runtime_dir = mlir_dir / "lib"
    opt = [mlir_dir / "bin/mlir-opt", f"--pass-pipeline={pipeline(binary_format, toolkit)}"]
    llc = [llvm_dir / "bin/llc", "-O2", "-relocation-model=pic", "-filetype=obj"]
    # The libraries after the object: with --as-needed, one named before it is dropped.
    libraries = [f"-L{runtime_dir}", "-lmlir_cuda_runtime", f"-Wl,-rpath,{runtime_dir}"]
    steps = [
        [*opt, source, "-o", lowered],
        [mlir_dir / "bin/mlir-translate", "--mlir-to-llvmir", lowered, "-o", llvm_ir],
        [*llc, llvm_ir, "-o", obj],
        ["cc", "-shared", obj, *libraries, "-o", library],
    ]
    for step in steps:
        result = subprocess.run([str(part) for part in step], capture_output=True, text=True)
        assert result.returncode == 0, f"{step[0]} failed:\n{result.stderr}"
    return library


@pytest.fixture(scope="module", params=["isa", "bin", "fatbin"])
def gpu_library(request, tmp_path_factory) -> tuple[str, Path]:
    """(format, library) for each of gpu-module-to-binary's formats."""
    binary_format = request.param
    if binary_format != "isa" and cuda_toolkit() is None:
        pytest.skip(f"format={binary_format} needs a CUDA toolkit (ptxas, fatbinary)")
    folder = tmp_path_factory.mktemp(f"gpu_{binary_format}")
    return binary_format, compile_gpu_library(binary_format, folder)


# Loads the library, then calls each (entry, inputs, outputs) of CALLS on
# seeded inputs and zeroed outputs and prints, per call, the stub's records
# and the tensors.
CALL = """
import ctypes
import dataclasses
import torch
from lowerline.runtime import cuda
from lowerline.runtime.native import descriptor
from cuda_stub.stub import StubDriver
stub = StubDriver(cuda.load_driver())
lib = cuda.load_library(LIBRARY)
result = {"kind_at_load": int(stub.image_kind()), "loaded": stub.counters().modules_loaded}
torch.manual_seed(0)
for entry, inputs, outputs in CALLS:
    stub.reset()
    tensors = [torch.randn(N) for _ in range(inputs)] + [torch.zeros(N) for _ in range(outputs)]
    descriptors = [descriptor(t) for t in tensors]
    function = getattr(lib, f"_mlir_ciface_{entry}")
    function.restype = None
    function(*[ctypes.byref(d) for d in descriptors])
    result[entry] = {
        "launches": [dataclasses.asdict(launch) for launch in stub.launches()],
        "counters": dataclasses.asdict(stub.counters()),
        "tensors": [t.tolist() for t in tensors],
    }
print(json.dumps(result))
"""


@pytest.fixture(scope="module")
def gpu_run(gpu_library, stub_driver) -> tuple[str, dict]:
    """(format, what CALL printed) for @main and @roundtrip, in one process."""
    binary_format, library = gpu_library
    calls = [("main", 2, 1), ("roundtrip", 1, 1)]
    header = f"LIBRARY = {str(library)!r}\nCALLS = {calls!r}\nN = {N}\n"
    return binary_format, run_python(header + CALL, driver=stub_driver)


IMAGE_KINDS = {"isa": 1, "fatbin": 2, "bin": 3}  # stub.ImageKind: PTX, FATBIN, CUBIN


def test_module_is_loaded_when_the_library_is(gpu_run):
    binary_format, result = gpu_run
    assert result["kind_at_load"] == IMAGE_KINDS[binary_format]
    assert result["loaded"] == 1  # by the library's constructor, before any call


def test_launch_is_recorded(gpu_run):
    binary_format, result = gpu_run
    (launch,) = result["main"]["launches"]
    assert launch["kernel"] == "axpy"
    assert launch["grid"] == [BLOCKS, 1, 1]
    assert launch["block"] == [THREADS, 1, 1]
    assert launch["shared_bytes"] == 0
    assert launch["image_kind"] == IMAGE_KINDS[binary_format]
    if binary_format != "isa":  # the stub reads only PTX signatures
        assert (launch["param_count"], launch["param_sizes"]) == (-1, [])
        return
    expected = driver_param_sizes(KERNEL_ARGUMENTS)
    assert launch["param_count"] == len(expected) == 16
    assert launch["param_sizes"] == expected
    # Each memref is (allocated, aligned, offset, size, stride), on the device.
    values, on_device = launch["param_values"], launch["param_on_device"]
    for m in range(3):
        assert on_device[5 * m : 5 * m + 5] == [True, True, False, False, False]
        assert values[5 * m + 2 : 5 * m + 5] == [0, N, 1]
        assert values[5 * m] % 256 == 0  # device allocations are 256-byte aligned
    assert values[15] == struct.unpack("<I", struct.pack("<f", ALPHA))[0]


# Closing the libraries unloads their kernels: at exit this runs from atexit,
# before the driver's own exit handler shuts it down (the stub's does too).
UNLOAD = """
from lowerline.runtime import cuda
from cuda_stub.stub import StubDriver
stub = StubDriver(cuda.load_driver())
cuda.load_library(LIBRARY)
loaded = stub.counters().modules_loaded
cuda.close_libraries()
unloaded = stub.counters().modules_unloaded
try:
    cuda.load_library(LIBRARY)
    refused = ""
except cuda.NoCudaDevice as error:
    refused = str(error)
print(json.dumps({"loaded": loaded, "unloaded": unloaded, "refused": refused}))
"""


def test_kernels_are_unloaded_before_the_driver_shuts_down(gpu_library, stub_driver):
    _, library = gpu_library
    result = run_python(f"LIBRARY = {str(library)!r}\n" + UNLOAD, driver=stub_driver)
    assert result["unloaded"] == result["loaded"] > 0
    assert "the process is exiting" in result["refused"]


# A kernel that faults: the stub's first launch does (STUB_CUDA_FAULT), and
# the error is sticky as a real kernel's illegal address is.
FAULT = """
import torch
from lowerline.runtime import cuda
from lowerline.runtime.native import GpuFunction
function = GpuFunction(LIBRARY, "main", [((N,), torch.float32)])
try:
    function([torch.randn(N), torch.randn(N)])
    error = ""
except cuda.GpuFault as fault:
    error = str(fault)
print(json.dumps({"error": error}))
"""


def test_a_kernel_fault_is_an_error_not_unwritten_outputs(gpu_library, stub_driver):
    _, library = gpu_library
    code = f"import json, sys\nsys.path.insert(0, {str(TESTS)!r})\nLIBRARY = {str(library)!r}\n"
    env = {**os.environ, "LOWERLINE_CUDA_DRIVER": str(stub_driver), "STUB_CUDA_FAULT": "700"}
    done = subprocess.run(
        [sys.executable, "-c", code + f"N = {N}\n" + FAULT],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    # MLIR's runtime only printed it; the call raised it.
    assert "failed with" in done.stderr
    error = json.loads(done.stdout.strip().splitlines()[-1])["error"]
    assert f"the GPU failed while running {library}: CUDA error 700" in error


def test_gpu_fault_is_public():
    import lowerline
    from lowerline.runtime import cuda

    assert lowerline.GpuFault is cuda.GpuFault and issubclass(cuda.GpuFault, RuntimeError)


def test_memory_traffic_is_counted(gpu_run):
    counters = gpu_run[1]["main"]["counters"]
    size = 4 * N
    assert counters["allocations"] == counters["frees"] == 3
    assert counters["bytes_allocated"] == counters["bytes_freed"] == 3 * size
    assert counters["live_bytes"] == 0
    assert counters["host_to_device"] == 2 * size
    assert counters["device_to_host"] == size
    assert counters["device_to_device"] == counters["host_to_host"] == 0


def test_bytes_reach_the_device_and_come_back(gpu_run):
    roundtrip = gpu_run[1]["roundtrip"]
    source, copied = roundtrip["tensors"]
    assert copied == source
    assert any(value != 0 for value in source)
    assert roundtrip["launches"] == []
    assert roundtrip["counters"]["host_to_device"] == 4 * N
    assert roundtrip["counters"]["device_to_host"] == 4 * N


def test_expected_sizes_from_types():
    assert driver_param_sizes(["memref<4x8xf16>", "i32", "f64"]) == [8] * 7 + [4, 8]


def test_real_device_computes(gpu_library):
    """Where a real driver and device exist: the kernel's results (sm_90 code)."""
    status = run_python(STATUS, driver=None)["status"]
    if status is not None:
        pytest.skip(status)
    _, library = gpu_library
    header = f"LIBRARY = {str(library)!r}\nCALLS = [('main', 2, 1)]\nN = {N}\n"
    a, b, c = run_python(header + CALL, driver=None)["main"]["tensors"]
    assert c == pytest.approx([x + ALPHA * y for x, y in zip(a, b, strict=True)])
