"""Object emission: target-driven (triple and CPU) and position independent."""

import os
import platform
import subprocess

import pytest
from mlir import ir

from lowerline.driver import objects
from lowerline.driver.objects import ObjectError, emit_object, link_shared_library, llvm_tool
from lowerline.targets import cpu_target
from lowerline.tools import cli

# What `vector.fma` on vector<32xf32> becomes in the LLVM dialect, and a
# constant table read through a pointer (weights): with absolute addressing it
# would need text relocations in a shared library.
FMA_AND_TABLE = """
llvm.mlir.global internal constant @table(dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>)
    {addr_space = 0 : i32} : !llvm.array<4 x f32>
llvm.func @fma(%a: vector<32xf32>, %b: vector<32xf32>, %c: vector<32xf32>) -> vector<32xf32> {
  %r = llvm.intr.fmuladd(%a, %b, %c) : (vector<32xf32>, vector<32xf32>, vector<32xf32>) -> vector<32xf32>
  llvm.return %r : vector<32xf32>
}
llvm.func @lookup(%i: i64) -> f32 {
  %t = llvm.mlir.addressof @table : !llvm.ptr
  %p = llvm.getelementptr %t[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v = llvm.load %p : !llvm.ptr -> f32
  llvm.return %v : f32
}
"""

# Parses and translates to LLVM IR; llc rejects the instruction.
BAD_ASM = """
llvm.func @bad() {
  llvm.inline_asm has_side_effects "not_an_instruction %eax", "" : () -> ()
  llvm.return
}
"""

# Not in the LLVM dialect: mlir-translate refuses it.
NOT_LLVM = "func.func @f() { return }"

ELF_MACHINE = {62: "x86_64", 183: "aarch64"}


def _module(text: str) -> ir.Module:
    with ir.Context():
        return ir.Module.parse(text)


def _machine(path) -> str:
    with open(path, "rb") as handle:
        header = handle.read(20)
    assert header[:4] == b"\x7fELF"
    return ELF_MACHINE.get(int.from_bytes(header[18:20], "little"), "?")


def _tool(name: str, *args) -> str:
    return subprocess.run(
        [llvm_tool(name), *map(str, args)], capture_output=True, text=True, check=True
    ).stdout


def _leftovers(folder) -> list[str]:
    return sorted(name for name in os.listdir(folder) if name.startswith("."))


HOST_ARCH = {"amd64": "x86_64", "arm64": "aarch64"}.get(
    platform.machine().lower(), platform.machine().lower()
)


def test_host_object_links_into_a_library_without_text_relocations(tmp_path):
    obj, lib = tmp_path / "main.o", tmp_path / "lib.so"
    emit_object(_module(FMA_AND_TABLE), str(obj), cpu_target("host"))
    assert _machine(obj) == HOST_ARCH
    assert "T fma" in _tool("llvm-nm", "--defined-only", obj)
    assert _leftovers(tmp_path) == []
    link_shared_library(str(obj), str(lib), cpu_target("host"))
    dynamic = _tool("llvm-readelf", "-d", lib)
    assert "Dynamic section" in dynamic
    assert "TEXTREL" not in dynamic


@pytest.mark.skipif(HOST_ARCH != "x86_64", reason="checks x86 assembly")
def test_sapphirerapids_fma_uses_zmm_and_haswell_ymm(tmp_path):
    module = _module(FMA_AND_TABLE)
    for name, register in (("sapphirerapids", "%zmm"), ("haswell", "%ymm")):
        obj = tmp_path / f"{name}.o"
        emit_object(module, str(obj), cpu_target(name))
        fmas = [line for line in _tool("llvm-objdump", "-d", obj).splitlines() if "vfmadd" in line]
        assert fmas and all(register in line for line in fmas), (name, fmas)


def test_cortex_a72_object_is_aarch64(tmp_path):
    obj = tmp_path / "arm.o"
    emit_object(_module(FMA_AND_TABLE), str(obj), cpu_target("cortex-a72"))
    assert _machine(obj) == "aarch64"
    assert "fmla" in _tool("llvm-objdump", "-d", obj)


@pytest.mark.skipif(HOST_ARCH == "aarch64", reason="needs a host that is not aarch64")
def test_linking_for_another_architecture_is_refused(tmp_path):
    obj = tmp_path / "arm.o"
    emit_object(_module(FMA_AND_TABLE), str(obj), cpu_target("cortex-a72"))
    with pytest.raises(ObjectError, match=r"cannot link a shared library for aarch64-"):
        link_shared_library(str(obj), str(tmp_path / "lib.so"), cpu_target("cortex-a72"))
    assert not (tmp_path / "lib.so").exists()


def test_llc_failure_names_the_step_and_leaves_nothing(tmp_path):
    obj = tmp_path / "main.o"
    obj.write_bytes(b"previous")
    with pytest.raises(ObjectError) as info:
        emit_object(_module(BAD_ASM), str(obj), cpu_target("haswell"))
    message = str(info.value)
    assert message.startswith("object step 'llc' failed (exit status 1):")
    assert "-mtriple=x86_64-unknown-linux-gnu -mcpu=haswell -relocation-model=pic" in message
    assert "not_an_instruction" in message
    assert len(message.splitlines()) <= 1 + objects.STDERR_LINES + 1
    assert obj.read_bytes() == b"previous"  # never half written
    assert _leftovers(tmp_path) == []


def test_translate_failure_names_the_step(tmp_path):
    with pytest.raises(ObjectError, match=r"object step 'mlir-translate' failed .*\n.*func\.func"):
        emit_object(_module(NOT_LLVM), str(tmp_path / "main.o"), cpu_target("host"))
    assert os.listdir(tmp_path) == []


def test_missing_tool_names_the_step(tmp_path, monkeypatch):
    monkeypatch.setattr(objects, "llvm_tool", lambda name: str(tmp_path / "missing" / name))
    with pytest.raises(ObjectError, match=r"object step 'opt' failed: cannot find '.*/opt'"):
        emit_object(_module(FMA_AND_TABLE), str(tmp_path / "main.o"), cpu_target("host"))
    assert os.listdir(tmp_path) == []


def test_cli_object_target(tmp_path, capsys):
    source = tmp_path / "in.mlir"
    source.write_text(FMA_AND_TABLE)
    obj = tmp_path / "arm.o"
    assert cli.main(["object", str(source), "-o", str(obj), "--target", "cortex-a72"]) == 0
    assert capsys.readouterr().out == f"wrote {obj}\n"
    assert _machine(obj) == "aarch64"

    assert cli.main(["object", str(source), "-o", str(tmp_path / "x.o"), "--target", "z80"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("lowerline: error: unknown CPU target 'z80'; targets: ")
    assert len(err.splitlines()) == 1
    assert not (tmp_path / "x.o").exists()
