"""Disassembly of compiled code by function, for tests that check which
instructions a kernel uses (x86 libraries and AArch64 objects alike)."""

import re
import subprocess

from lowerline.driver.objects import llvm_tool


def functions(path: str, objdump: str | None = None) -> dict[str, str]:
    """Symbol -> its disassembly, for each function of the object or library
    ``path``, by ``objdump`` (default: the llvm wheel's llvm-objdump; GNU
    objdump's output has the same shape)."""
    text = subprocess.run(
        [objdump or llvm_tool("llvm-objdump"), "-d", "--no-show-raw-insn", path],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    found: dict[str, str] = {}
    for block in re.split(r"\n(?=[0-9a-f]+ <)", text):
        header = re.match(r"[0-9a-f]+ <([^>]+)>:", block)
        if header:
            found[header.group(1)] = block
    return found
