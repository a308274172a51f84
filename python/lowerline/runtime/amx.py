"""Intel AMX state for libraries whose kernels use AMX tiles.

Linux leaves the AMX tile data (8 KB of register state per thread) off until
a process asks for it: the first tile instruction of a process that did not
faults (SIGILL). A process asks once with
``arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)``; the permission then
holds for all its threads, those started before included (the kernel keeps
it on the thread group). lowerline-amx-tiles marks a library whose code uses
tiles with the exported byte ``lowerline_uses_amx``; ``TileState.ensure`` runs
before every call of a library (compiled, cached or saved), and asks for
the permission the first time such a library is called.

A library with tiles on a CPU without AMX is refused with an error (a saved
module's target check refuses it before: its target's CPU features include
``amx_tile``; a module compiled in this process for another target is
caught here), instead of the illegal instruction its first call would be.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import threading

from lowerline.targets import host_flags

# The marker lowerline-amx-tiles exports from a library with tile code.
MARKER = "lowerline_uses_amx"
# <asm/prctl.h> and the x86 XSAVE feature number of the tile data.
SYS_ARCH_PRCTL = 158  # x86-64
ARCH_REQ_XCOMP_PERM = 0x1023
XFEATURE_XTILEDATA = 18

_lock = threading.Lock()
_granted = False


class AmxUnavailable(OSError):
    """A library uses AMX tiles that this CPU or kernel cannot run."""


def uses_amx(lib: ctypes.CDLL) -> bool:
    try:
        ctypes.c_uint8.in_dll(lib, MARKER)
    except ValueError:
        return False
    return True


class TileState:
    """The AMX state a library's calls need: nothing for a library without
    tile code; else ``ensure`` (before each call) raises ``AmxUnavailable``
    on a CPU without AMX, and asks Linux for the state the first time."""

    def __init__(self, lib: ctypes.CDLL, library: str) -> None:
        self._library = library
        self._ready = not uses_amx(lib)

    def ensure(self) -> None:
        if self._ready:
            return
        if platform.machine() != "x86_64" or "amx_tile" not in host_flags():
            raise AmxUnavailable(
                errno.ENOTSUP,
                f"{self._library} uses Intel AMX tiles (compiled for a target with AMX, "
                "such as cpu:sapphirerapids), which this CPU lacks; compile for target='cpu'",
            )
        request_permission()
        self._ready = True


def request_permission() -> None:
    """``arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)``, once per process."""
    global _granted
    with _lock:
        if _granted:
            return
        libc = ctypes.CDLL(None, use_errno=True)
        syscall = libc.syscall
        syscall.restype = ctypes.c_long
        syscall.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_long]
        if syscall(SYS_ARCH_PRCTL, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) != 0:
            code = ctypes.get_errno()
            raise AmxUnavailable(
                code,
                "the kernel refused AMX tile state to this process "
                f"(arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA): {os.strerror(code)}); "
                "a Linux kernel of 5.16 or later is needed to run AMX code",
            )
        _granted = True
