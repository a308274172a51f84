"""A real sticky kernel fault on the GPU, then a lowerline call (bench/gpu-h100.md).

Run on the GPU machine as ``PYTHONPATH=python python3 fault_check.py BUNDLE``
(a bundle of ``lowerline.tools.gpu_check build`` holding mlp_b8); needs CuPy.
"""

import sys
import time

import cupy

from lowerline.runtime import cuda, gpu_bundle

folder = sys.argv[1]
manifest = gpu_bundle.read_manifest(folder)
gpu_bundle.open_runtime_libraries(folder, manifest["stubs"] + manifest["runtime"])
case = next(c for c in gpu_bundle.cases(manifest) if c.name == "mlp_b8")
function = gpu_bundle.load_case(folder, case)
inputs, expected = gpu_bundle.case_tensors(folder, case)
print("before the fault:", gpu_bundle.compare(function(inputs), expected, case.rtol, case.atol))
start = time.perf_counter()
for _ in range(10000):
    cuda.check_faults("timing")
print(f"check_faults: {(time.perf_counter() - start) / 10000 * 1e6:.2f} us per call")
# Another kernel in the same (primary) context writes to address 16: illegal.
kernel = cupy.RawKernel(r'extern "C" __global__ void f(int *p) { p[threadIdx.x] = 1; }', "f")
kernel((1,), (32,), (cupy.uint64(16),))
try:
    cupy.cuda.runtime.deviceSynchronize()
except Exception as error:
    print("cupy:", type(error).__name__, error)
# What the call did before check_faults: the library's entry alone.
old = function._native(inputs)
print(
    "after the fault, without check_faults:",
    gpu_bundle.compare(old, expected, case.rtol, case.atol),
)
try:
    out = function(inputs)
    print("after the fault, returned:", gpu_bundle.compare(out, expected, case.rtol, case.atol))
except cuda.GpuFault as fault:
    print("after the fault, raised GpuFault:", fault)
