"""Targets as data: what the compiler may assume about the machine.

A target is a frozen description (never an ``if`` chain in a pass): the
triple and CPU for LLVM, the vector width, which matrix and dot-product
extensions exist, the cores and the cache sizes. Passes that make decisions
(tile sizes, vector widths, threads) read these fields. ``host_cpu()``
describes the machine it runs on; ``CPU_TARGETS`` names a few others so that
tests can show the decisions change with the target.
"""

from __future__ import annotations

import functools
import os
import platform
import re
from dataclasses import dataclass, replace


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

    @property
    def f32_lanes(self) -> int:
        return self.vector_bits // 32


CPU_TARGETS: dict[str, CpuTarget] = {
    "sapphirerapids": CpuTarget(
        "sapphirerapids", "x86_64-unknown-linux-gnu", "sapphirerapids", 512,
        fma=True, vnni=True, amx=True, bf16=True, cores=2,
        l1d_bytes=48 << 10, l2_bytes=2 << 20, l3_bytes=105 << 20,
    ),
    "haswell": CpuTarget(
        "haswell", "x86_64-unknown-linux-gnu", "haswell", 256,
        fma=True, vnni=False, amx=False, bf16=False, cores=4,
        l1d_bytes=32 << 10, l2_bytes=256 << 10, l3_bytes=8 << 20,
    ),
    "cortex-a72": CpuTarget(
        "cortex-a72", "aarch64-unknown-linux-gnu", "cortex-a72", 128,
        fma=True, vnni=False, amx=False, bf16=False, cores=4,
        l1d_bytes=32 << 10, l2_bytes=1 << 20, l3_bytes=0,
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
    )


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
