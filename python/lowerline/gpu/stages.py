"""The GPU stages of DESIGN.md as textual pipelines (the CPU ones: stages.py).

    linalg --graph--> graph --tiled--> tiled --bufferized--> bufferized
           --loops--> loops --llvm--> llvm (+ PTX, cubin, fatbin)

- **tiled**: contractions and their epilogues tiled into thread blocks
  (``lowerline-gpu-tile-and-fuse``), on tensors;
- **bufferized**: buffers, then every op mapped to blocks and threads with
  operand tiles in shared memory (``lowerline-gpu-distribute``): the *mapped*
  IR, which also runs on the CPU (``cpu_emulation``);
- **loops**: ``gpu.launch`` per block forall with barriers and shared
  attributions, buffers on the device, kernels outlined into a
  ``gpu.module`` with its NVVM target;
- **llvm**: kernels lowered to NVVM and the host to LLVM calls of the MLIR
  CUDA runtime; ``gpu-module-to-binary`` gives the PTX (the compile worker
  assembles cubins and the fatbin with ptxas and fatbinary).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lowerline.cpu.stages import CpuOptions
from lowerline.cpu.stages import bufferized as cpu_bufferized
from lowerline.cpu.stages import graph as cpu_graph
from lowerline.cpu.stages import llvm as cpu_llvm
from lowerline.cpu.stages import loops as cpu_loops
from lowerline.pipeline.options import one_of, opt
from lowerline.pipeline.pass_api import NamedPipeline
from lowerline.targets import check_gpu_target, gpu_target


@dataclass(frozen=True)
class GpuOptions:
    target: str = opt(
        "sm_80",
        "GPU: a name of lowerline.targets.GPU_TARGETS (sm_80, sm_90, ...)",
        check=check_gpu_target,
    )
    opt_level: int = opt(3, "LLVM optimization level of the kernels (nvvm-attach-target O)")
    binary: str = opt(
        "fatbin",
        "kernel image the library embeds: 'fatbin' (cubin for the target + PTX) or 'ptx' "
        "(JIT-compiled by the driver when loaded)",
        check=one_of("fatbin", "ptx"),
    )
    cpu_emulation: bool = opt(
        True, "also build the mapped IR for the CPU (CompiledModule.run_on_cpu)"
    )


def graph(o: GpuOptions) -> str:
    return cpu_graph(CpuOptions(), vector_rows=False)


def tiled(o: GpuOptions) -> str:
    return (
        "func.func(lowerline-fold-constant-transposes),"
        f"lowerline-gpu-tile-and-fuse{{target={o.target}}},canonicalize,cse"
    )


def bufferized(o: GpuOptions) -> str:
    # One buffer per value freed at the end (no early frees: a free between
    # launches would be a synchronizing gpu.dealloc).
    return cpu_bufferized(CpuOptions(buffer_reuse=False, arena=False), vector_rows=False) + (
        ",lowerline-gpu-distribute,canonicalize,cse"
    )


def loops(o: GpuOptions) -> str:
    t = gpu_target(o.target)
    return (
        "lowerline-gpu-map-to-launch,"
        # Booleans as bytes (LLVM's memref lowering aborts on i1 loads and
        # stores), on loops: the pass rewrites loads and stores, not linalg.
        "func.func(convert-linalg-to-loops),"
        "lowerline-widen-i1-memrefs,"
        "lowerline-gpu-host-buffers,"
        "gpu-launch-sink-index-computations,"
        "gpu-kernel-outlining,"
        "lowerline-gpu-align-shared-memory,"
        f"nvvm-attach-target{{chip={t.chip} features={t.features} O={o.opt_level}}},"
        "canonicalize,cse"
    )


# The vector transfers of the thread tiles become loads and stores before
# convert-gpu-to-nvvm (which lowers vector ops to LLVM but not transfers).
_KERNEL_LOWERING = (
    "lowerline-gpu-dp4a,"
    "gpu.module("
    "convert-vector-to-scf{full-unroll target-rank=1},"
    "expand-strided-metadata,"
    "lower-affine,"
    "convert-scf-to-cf,"
    # Vector accesses claim their vector's alignment: lowerline-gpu-distribute
    # vectorizes only accesses it proved aligned (lowerline.passes.gpu.alignment).
    "convert-vector-to-llvm{use-vector-alignment},"
    "convert-gpu-to-nvvm,"
    "convert-index-to-llvm,"
    "convert-arith-to-llvm,"
    "reconcile-unrealized-casts,"
    "canonicalize,cse)"
)

_HOST_LOWERING = (
    "func.func(gpu-async-region),"
    "func.func(llvm-request-c-wrappers),"
    "expand-strided-metadata,"
    "lower-affine,"
    "convert-scf-to-cf,"
    "gpu-to-llvm,"
    "finalize-memref-to-llvm{use-generic-functions=true},"
    "convert-to-llvm,"
    "reconcile-unrealized-casts,"
    "canonicalize,cse"
)


def llvm(o: GpuOptions) -> str:
    """Kernels -> NVVM (PTX in the gpu.binary), host -> LLVM with runtime calls."""
    return f"{_KERNEL_LOWERING},{_HOST_LOWERING},gpu-module-to-binary{{format=isa}}"


GPU_STAGES: tuple[tuple[str, Callable[[GpuOptions], str]], ...] = (
    ("graph", graph),
    ("tiled", tiled),
    ("bufferized", bufferized),
    ("loops", loops),
    ("llvm", llvm),
)


def gpu(o: GpuOptions) -> str:
    return ",".join(build(o) for _, build in GPU_STAGES)


# The mapped IR (bufferized stage) on the CPU: GPU memory spaces dropped,
# foralls in order, then the CPU's loops and llvm stages on one thread.
def cpu_emulation(o: GpuOptions) -> str:
    cpu = CpuOptions(num_threads=1)
    return f"lowerline-gpu-shared-to-host-memory,{cpu_loops(cpu)},{cpu_llvm(cpu)}"


# The named pipelines of these stages, as data: lowerline.pipeline.registry
# reads this tuple; this module never imports the registry.
PIPELINES: tuple[NamedPipeline, ...] = tuple(
    NamedPipeline(flag, summary, GpuOptions, build, uses)
    for flag, summary, build, uses in (
        ("lowerline-gpu-to-tiled", "graph -> tiled for a GPU (thread blocks)", tiled, ("target",)),
        (
            "lowerline-gpu-to-bufferized",
            "tiled -> bufferized for a GPU (threads, shared memory: the mapped IR)",
            bufferized,
            (),
        ),
        (
            "lowerline-gpu-to-loops",
            "bufferized -> loops for a GPU (gpu.launch, device buffers, kernels outlined)",
            loops,
            ("target", "opt_level"),
        ),
        ("lowerline-gpu-to-llvm", "loops -> NVVM kernels (PTX) and LLVM host code", llvm, ()),
        (
            "lowerline-gpu-pipeline",
            "linalg on tensors -> NVVM/PTX and LLVM: every GPU stage",
            gpu,
            ("target", "opt_level"),
        ),
        (
            "lowerline-gpu-emulate-on-cpu",
            "mapped GPU IR (bufferized stage) -> LLVM for the CPU, threads in order",
            cpu_emulation,
            (),
        ),
    )
)
