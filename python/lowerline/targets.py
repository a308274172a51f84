"""Targets as data: what the compiler may assume about the machine.

A target is a frozen description (never an ``if`` chain in a pass): the
triple and CPU for LLVM, the vector width, which matrix and dot-product
extensions exist, the cores and the cache sizes. Passes that make decisions
(tile sizes, vector widths, threads) read these fields. ``host_cpu()``
describes the machine it runs on; ``CPU_TARGETS`` names a few others so that
tests can show the decisions change with the target. ``GPU_TARGETS`` describes
NVIDIA GPUs (``cuda:sm_80``, ...): chip, PTX ISA, shared memory, registers.
"""

from __future__ import annotations

import functools
import os
import platform
import re
from dataclasses import KW_ONLY, dataclass, replace


@dataclass(frozen=True)
class CpuTarget:
    name: str
    triple: str
    cpu: str  # LLVM's -mcpu name
    vector_bits: int  # widest SIMD register usable for f32
    fma: bool
    vnni: bool  # int8 dot products (AVX-512 VNNI / AVX-VNNI / Arm dotprod)
    amx: bool  # Intel AMX tiles
    bf16: bool  # native bf16 arithmetic (AVX512-BF16 / Arm BF16)
    cores: int
    l1d_bytes: int
    l2_bytes: int
    l3_bytes: int
    # Architectural SIMD registers: register tiles are sized from them.
    vector_registers: int = 16

    @property
    def arch(self) -> str:
        """The triple's architecture: ``x86_64``, ``aarch64``."""
        return self.triple.split("-", 1)[0]

    @property
    def f32_lanes(self) -> int:
        return self.vector_bits // 32

    @property
    def llvm_features(self) -> str:
        """``-mattr`` for what the description has beyond its ``-mcpu``: a
        host named ``x86-64-v4`` (AVX-512 without AMX) may have VNNI, which
        lowerline's int8 kernels call (``vpdpbusd``); an AArch64 CPU with
        dot products (``sdot``/``udot``) has ``+dotprod``; an AVX-512 host
        with AVX512-BF16 (Zen 4) gets ``+avx512bf16`` for ``vdpbf16ps``."""
        features = []
        if self.vnni and self.arch == "aarch64":
            features.append("+dotprod")
        elif self.vnni:
            features.append("+avx512vnni" if self.vector_bits >= 512 else "+avxvnni")
        if self.bf16 and self.arch == "x86_64" and self.vector_bits >= 512:
            features.append("+avx512bf16")
        return ",".join(features)

    @property
    def required_flags(self) -> frozenset[str]:
        """The CPU features (as Linux's ``/proc/cpuinfo`` names them) that
        code generated for this target may use: those of its ``-mcpu`` and
        of its ``-mattr``. Code loaded on a CPU lacking one may stop on an
        illegal instruction, so a saved module checks them first."""
        if self.cpu not in CPU_FLAGS:
            raise ValueError(f"no CPU feature list for -mcpu={self.cpu} (targets.CPU_FLAGS)")
        extra = {FEATURE_FLAGS[f] for f in self.llvm_features.split(",") if f}
        return CPU_FLAGS[self.cpu] | extra


# What LLVM may emit for each -mcpu lowerline uses, in /proc/cpuinfo's names:
# the SIMD, FMA and bit-manipulation extensions (x86-64-vN as the psABI
# defines the levels; cortex-a76 and neoverse-n1 are Armv8.2-A with dot products).
_X86_V2 = frozenset({"sse", "sse2", "ssse3", "sse4_1", "sse4_2", "popcnt", "cx16"})
_X86_V3 = _X86_V2 | {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "movbe", "abm", "xsave"}
_X86_V4 = _X86_V3 | {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}
_ARMV8_2 = frozenset({"fp", "asimd", "atomics", "asimdrdm", "fphp", "asimdhp", "lrcpc"})
CPU_FLAGS: dict[str, frozenset[str]] = {
    "x86-64": frozenset({"sse", "sse2"}),
    "x86-64-v3": _X86_V3,
    "haswell": _X86_V3,
    "x86-64-v4": _X86_V4,
    "sapphirerapids": _X86_V4 | {
        "avx512_vnni", "avx512_bf16", "avx512_fp16", "avx512ifma", "avx512vbmi",
        "avx512_vbmi2", "avx512_bitalg", "avx512_vpopcntdq", "avx_vnni", "gfni",
        "vaes", "vpclmulqdq", "amx_tile", "amx_bf16", "amx_int8",
    },
    # AMD Zen 4: AVX-512 with VNNI and BF16, no AMX.
    "znver4": _X86_V4 | {
        "avx512_vnni", "avx512_bf16", "avx512ifma", "avx512vbmi", "avx512_vbmi2",
        "avx512_bitalg", "avx512_vpopcntdq", "gfni", "vaes", "vpclmulqdq",
    },
    "generic": frozenset({"fp", "asimd"}),
    "cortex-a72": frozenset({"fp", "asimd"}),
    "cortex-a76": _ARMV8_2 | {"asimddp"},
    "neoverse-n1": _ARMV8_2 | {"asimddp"},
}  # fmt: skip
# -mattr features -> their /proc/cpuinfo name.
FEATURE_FLAGS = {
    "+avx512vnni": "avx512_vnni",
    "+avxvnni": "avx_vnni",
    "+dotprod": "asimddp",
    "+avx512bf16": "avx512_bf16",
}


CPU_TARGETS: dict[str, CpuTarget] = {
    "sapphirerapids": CpuTarget(
        "sapphirerapids", "x86_64-unknown-linux-gnu", "sapphirerapids", 512,
        fma=True, vnni=True, amx=True, bf16=True, cores=2,
        l1d_bytes=48 << 10, l2_bytes=2 << 20, l3_bytes=105 << 20, vector_registers=32,
    ),
    # AVX-512 VNNI and BF16 without AMX: int8 on vpdpbusd, bf16 on vdpbf16ps.
    "znver4": CpuTarget(
        "znver4", "x86_64-unknown-linux-gnu", "znver4", 512,
        fma=True, vnni=True, amx=False, bf16=True, cores=2,
        l1d_bytes=32 << 10, l2_bytes=1 << 20, l3_bytes=32 << 20, vector_registers=32,
    ),
    "haswell": CpuTarget(
        "haswell", "x86_64-unknown-linux-gnu", "haswell", 256,
        fma=True, vnni=False, amx=False, bf16=False, cores=4,
        l1d_bytes=32 << 10, l2_bytes=256 << 10, l3_bytes=8 << 20,
    ),
    # AArch64: 128-bit NEON vectors, 32 of them (v0-v31).
    "cortex-a72": CpuTarget(
        "cortex-a72", "aarch64-unknown-linux-gnu", "cortex-a72", 128,
        fma=True, vnni=False, amx=False, bf16=False, cores=4,
        l1d_bytes=32 << 10, l2_bytes=1 << 20, l3_bytes=0, vector_registers=32,
    ),
    # Armv8.2-A with dot products (sdot/udot, +dotprod).
    "cortex-a76": CpuTarget(
        "cortex-a76", "aarch64-unknown-linux-gnu", "cortex-a76", 128,
        fma=True, vnni=True, amx=False, bf16=False, cores=4,
        l1d_bytes=64 << 10, l2_bytes=512 << 10, l3_bytes=2 << 20, vector_registers=32,
    ),
    "neoverse-n1": CpuTarget(
        "neoverse-n1", "aarch64-unknown-linux-gnu", "neoverse-n1", 128,
        fma=True, vnni=True, amx=False, bf16=False, cores=4,
        l1d_bytes=64 << 10, l2_bytes=1 << 20, l3_bytes=32 << 20, vector_registers=32,
    ),
}  # fmt: skip


def _parse_size(text: str) -> int:
    match = re.fullmatch(r"(\d+)([KMG]?)", text.strip())
    if not match:
        return 0
    scale = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[match.group(2)]
    return int(match.group(1)) * scale


def _caches(root: str = "/sys/devices/system/cpu/cpu0/cache") -> dict[str, int]:
    """Data/unified cache sizes by level from sysfs: {'L1': .., 'L2': .., 'L3': ..}."""
    sizes: dict[str, int] = {}
    if not os.path.isdir(root):
        return sizes
    for entry in sorted(os.listdir(root)):
        folder = os.path.join(root, entry)
        try:
            with (
                open(os.path.join(folder, "level")) as level,
                open(os.path.join(folder, "type")) as kind,
                open(os.path.join(folder, "size")) as size,
            ):
                if kind.read().strip() in ("Data", "Unified"):
                    sizes[f"L{level.read().strip()}"] = _parse_size(size.read())
        except OSError:
            continue
    return sizes


def _cpu_flags(path: str = "/proc/cpuinfo") -> set[str]:
    try:
        with open(path) as handle:
            for line in handle:
                if line.startswith(("flags", "Features")):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def describe_host(flags: set[str], caches: dict[str, int], cores: int, machine: str) -> CpuTarget:
    """A host description from its feature flags, cache sizes and core count."""
    if machine in ("aarch64", "arm64"):
        base = CPU_TARGETS["cortex-a72"]
        return replace(
            base, name="host", cpu="generic", cores=cores,
            vnni="asimddp" in flags, bf16="bf16" in flags,
            l1d_bytes=caches.get("L1", base.l1d_bytes), l2_bytes=caches.get("L2", base.l2_bytes),
            l3_bytes=caches.get("L3", 0),
        )  # fmt: skip
    bits = 512 if "avx512f" in flags else 256 if "avx2" in flags else 128
    return CpuTarget(
        name="host",
        triple="x86_64-unknown-linux-gnu",
        cpu="sapphirerapids"
        if "amx_tile" in flags
        else "x86-64-v4"
        if bits == 512
        else "x86-64-v3"
        if bits == 256
        else "x86-64",
        vector_bits=bits,
        fma="fma" in flags,
        vnni=bool({"avx512_vnni", "avx_vnni"} & flags),
        amx="amx_tile" in flags,
        bf16="avx512_bf16" in flags,
        cores=cores,
        l1d_bytes=caches.get("L1", 32 << 10),
        l2_bytes=caches.get("L2", 1 << 20),
        l3_bytes=caches.get("L3", 0),
        vector_registers=32 if bits == 512 else 16,
    )


@functools.cache
def host_flags() -> frozenset[str]:
    """This CPU's features, as ``/proc/cpuinfo`` names them."""
    return frozenset(_cpu_flags())


def runs_here(target: CpuTarget) -> bool:
    """Whether code for ``target`` runs on this machine: its architecture and
    every CPU feature the code may use (``CpuTarget.required_flags``)."""
    return target.arch == host_arch() and target.required_flags <= host_flags()


def host_arch() -> str:
    """This machine's architecture as triples name it (``x86_64``, ``aarch64``)."""
    machine = platform.machine().lower()
    return {"arm64": "aarch64", "amd64": "x86_64"}.get(machine, machine)


@functools.cache
def host_cpu() -> CpuTarget:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return describe_host(_cpu_flags(), _caches(), cores or 1, platform.machine())


def cpu_target(name: str) -> CpuTarget:
    """``"cpu"``/``"host"`` for this machine, or a name of ``CPU_TARGETS``."""
    if name in ("cpu", "host"):
        return host_cpu()
    if name.startswith("cpu:"):
        name = name[4:]
    if name not in CPU_TARGETS:
        known = ", ".join(["cpu", *(f"cpu:{k}" for k in CPU_TARGETS)])
        raise ValueError(f"unknown CPU target '{name}'; targets: {known}")
    return CPU_TARGETS[name]


@dataclass(frozen=True)
class GpuTarget:
    """An NVIDIA GPU as the GPU passes see it: what to emit and what fits on it.

    ``chip`` and ``features`` go to ``nvvm-attach-target`` (LLVM's NVPTX
    ``-mcpu``/``-mattr``); the limits decide block sizes, shared-memory tiles
    and register budgets; ``tensor_cores`` names the matrix instructions a
    pass may use (``"wgmma"`` exists only on ``sm_90a``, which is not forward
    compatible and so is a target of its own).
    """

    name: str
    chip: str  # LLVM's NVPTX -mcpu, ptxas' -arch
    sm: int  # compute capability as a number: 80 for 8.0
    ptx_version: int  # PTX ISA as a number: 80 for .version 8.0
    features: str  # LLVM's NVPTX -mattr, e.g. "+ptx80"
    _: KW_ONLY
    warp_size: int = 32
    max_threads_per_block: int = 1024
    shared_memory_per_block: int = 48 << 10  # static limit, without opt-in
    shared_memory_per_block_optin: int  # after cudaFuncSetAttribute
    shared_memory_per_sm: int
    registers_per_thread: int = 255
    registers_per_sm: int = 65536
    sm_count: int
    l2_bytes: int
    tensor_cores: tuple[str, ...]  # matrix instructions: "mma.sync.f16", "wgmma", ...
    triple: str = "nvptx64-nvidia-cuda"


_MMA_SYNC = ("mma.sync.f16", "mma.sync.bf16", "mma.sync.tf32", "mma.sync.s8")

# PTX ISA 8.0 for all three: the lowest ISA that has sm_90a (wgmma) and so the
# widest range of drivers (any CUDA 12.x) that can JIT the PTX we embed;
# ptxas 13 accepts it for each chip. Limits: NVIDIA's A100 (sm_80) and H100 SXM
# (sm_90) figures, as cudaGetDeviceProperties reports them.
GPU_TARGETS: dict[str, GpuTarget] = {
    "sm_80": GpuTarget(
        "sm_80", "sm_80", 80, ptx_version=80, features="+ptx80", sm_count=108,
        l2_bytes=40 << 20, shared_memory_per_block_optin=163 << 10,
        shared_memory_per_sm=164 << 10, tensor_cores=_MMA_SYNC,
    ),
    "sm_90": GpuTarget(
        "sm_90", "sm_90", 90, ptx_version=80, features="+ptx80", sm_count=132,
        l2_bytes=50 << 20, shared_memory_per_block_optin=227 << 10,
        shared_memory_per_sm=228 << 10, tensor_cores=_MMA_SYNC,
    ),
    "sm_90a": GpuTarget(
        "sm_90a", "sm_90a", 90, ptx_version=80, features="+ptx80", sm_count=132,
        l2_bytes=50 << 20, shared_memory_per_block_optin=227 << 10,
        shared_memory_per_sm=228 << 10, tensor_cores=(*_MMA_SYNC, "wgmma"),
    ),
}  # fmt: skip


def is_gpu_target(name: str) -> bool:
    """Whether a target string names a GPU (``cuda:...``), so callers pick the GPU path."""
    return name.startswith("cuda:")


def gpu_target(name: str) -> GpuTarget:
    """``"cuda:sm_80"`` or ``"sm_80"``: a name of ``GPU_TARGETS``."""
    chip = name[len("cuda:") :] if is_gpu_target(name) else name
    if chip not in GPU_TARGETS:
        known = ", ".join(f"cuda:{k}" for k in GPU_TARGETS)
        raise ValueError(f"unknown GPU target '{name}'; targets: {known}")
    return GPU_TARGETS[chip]


def check_cpu_target(name: str) -> None:
    """Raise ``ValueError`` unless ``name`` is a CPU target (an option check:
    the host is accepted without detecting it)."""
    if name not in ("cpu", "host"):
        cpu_target(name)


def check_gpu_target(name: str) -> None:
    """Raise ``ValueError`` unless ``name`` is a GPU target (an option check)."""
    gpu_target(name)
