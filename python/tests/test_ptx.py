import os
import pathlib
import stat
import struct

import pytest

from lowerline.gpu import ptx
from lowerline.gpu.ptx import (
    CudaToolError,
    KernelResources,
    PtxasError,
    assemble,
    fatbin,
    find_tool,
    parse_ptxas_report,
)

FIXTURE = pathlib.Path(__file__).parent / "data" / "scale_sm80.ptx"


def _have(tool):
    try:
        find_tool(tool)
    except CudaToolError:
        return False
    return True


needs_ptxas = pytest.mark.skipif(
    not _have("ptxas"), reason="ptxas not found (set LOWERLINE_CUDA_PATH to a CUDA toolkit)"
)
needs_fatbinary = pytest.mark.skipif(
    not _have("fatbinary") or not _have("ptxas"),
    reason="fatbinary/ptxas not found (set LOWERLINE_CUDA_PATH to a CUDA toolkit)",
)


# --- the -v report, as ptxas 13.0 printed it ---------------------------------

SM80_REPORT = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'scale' for 'sm_80'
ptxas info    : Function properties for scale
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 9 registers, used 1 barriers, 1024 bytes smem, 392 bytes cmem[0]
ptxas info    : Compile time = 3.264 ms
"""

# sm_90 puts no parameters in cmem[0]: the field is missing.
SM90_REPORT = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'scale' for 'sm_90'
ptxas info    : Function properties for scale
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 1 barriers, 1024 bytes smem
ptxas info    : Compile time = 4.120 ms
"""

# Two entries, spills under -maxrregcount, a non-inlined device function whose
# properties follow the second entry, module-level __constant__ (cmem[3]).
SPILL_REPORT = """\
ptxas info    : Overriding maximum register limit 256 for 'tiny' with  24 of maxrregcount option
ptxas info    : Overriding maximum register limit 256 for 'spill' with  24 of maxrregcount option
ptxas warning : Registers are spilled to local memory in function 'spill', \
1928 bytes spill stores, 2464 bytes spill loads
ptxas info    : 0 bytes gmem, 256 bytes cmem[3]
ptxas info    : Compiling entry function 'tiny' for 'sm_80'
ptxas info    : Function properties for tiny
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, used 0 barriers, 360 bytes cmem[0]
ptxas info    : Compile time = 1.951 ms
ptxas info    : Compiling entry function 'spill' for 'sm_80'
ptxas info    : Function properties for spill
    1296 bytes stack frame, 1928 bytes spill stores, 2464 bytes spill loads
ptxas info    : Used 24 registers, used 0 barriers, 1296 bytes cumulative stack size, \
368 bytes cmem[0]
ptxas info    : Compile time = 144.493 ms
ptxas info    : Function properties for _Z6helperPfi
    16 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
"""

# Relocatable (-c): the device function's properties come first.
RELOCATABLE_REPORT = """\
ptxas info    : 0 bytes gmem, 256 bytes cmem[3]
ptxas info    : Function properties for _Z6helperPfi
    8 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 7 registers, 8 bytes cumulative stack size
ptxas info    : Compile time = 7.851 ms
ptxas info    : Compiling entry function 'tiny' for 'sm_80'
ptxas info    : Function properties for tiny
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, 360 bytes cmem[0], 16 bytes cmem[2]
"""


def _kernel(name, arch, **fields):
    base = dict.fromkeys(
        (
            "registers",
            "spill_store_bytes",
            "spill_load_bytes",
            "shared_bytes",
            "stack_bytes",
            "barriers",
            "constant_bytes",
        ),
        0,
    )
    return KernelResources(name=name, arch=arch, **{**base, **fields})


def test_report_with_every_field():
    assert parse_ptxas_report(SM80_REPORT) == [
        _kernel("scale", "sm_80", registers=9, barriers=1, shared_bytes=1024, constant_bytes=392)
    ]


def test_report_without_cmem():
    assert parse_ptxas_report(SM90_REPORT) == [
        _kernel("scale", "sm_90", registers=10, barriers=1, shared_bytes=1024)
    ]


def test_report_with_spills_and_a_device_function():
    tiny, spill = parse_ptxas_report(SPILL_REPORT)
    assert tiny == _kernel("tiny", "sm_80", registers=8, constant_bytes=360)
    assert spill == _kernel(
        "spill",
        "sm_80",
        registers=24,
        stack_bytes=1296,
        spill_store_bytes=1928,
        spill_load_bytes=2464,
        constant_bytes=368,
    )


def test_report_of_relocatable_code_skips_device_functions_and_sums_banks():
    assert parse_ptxas_report(RELOCATABLE_REPORT) == [
        _kernel("tiny", "sm_80", registers=8, constant_bytes=376)
    ]


def test_report_with_only_a_header_gives_zeros():
    report = "ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"
    assert parse_ptxas_report(report) == [_kernel("k", "sm_90a")]
    assert parse_ptxas_report("") == []


# --- finding the tools ---------------------------------------------------------


def _fake_tool(folder, name):
    path = folder / "bin" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_cuda_path_variable_wins(tmp_path, monkeypatch):
    tool = _fake_tool(tmp_path, "ptxas")
    monkeypatch.setenv("LOWERLINE_CUDA_PATH", str(tmp_path))
    assert find_tool("ptxas") == tool


def test_path_comes_before_the_default_folder(tmp_path, monkeypatch):
    tool = _fake_tool(tmp_path, "ptxas")
    monkeypatch.delenv("LOWERLINE_CUDA_PATH", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    assert find_tool("ptxas") == tool


def test_missing_tool_names_itself_and_the_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("LOWERLINE_CUDA_PATH", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(ptx, "_FALLBACK_BIN", str(tmp_path / "none"))
    with pytest.raises(CudaToolError, match=r"'ptxas'.*LOWERLINE_CUDA_PATH"):
        find_tool("ptxas")
    assert issubclass(CudaToolError, RuntimeError)


def test_bad_arch_is_refused_before_running_anything():
    with pytest.raises(ValueError, match="not a CUDA architecture"):
        assemble(FIXTURE.read_text(), "-o/etc/passwd")


# --- real ptxas and fatbinary runs -------------------------------------------------


def _elf_sm(cubin):
    """The SM a CUDA ELF was built for: bits 8..15 of e_flags."""
    assert cubin[:4] == b"\x7fELF"
    assert struct.unpack_from("<H", cubin, 18)[0] == 190  # EM_CUDA
    return (struct.unpack_from("<I", cubin, 48)[0] >> 8) & 0xFF


@needs_ptxas
@pytest.mark.parametrize(("arch", "sm", "cmem"), [("sm_80", 80, True), ("sm_90", 90, False)])
def test_fixture_assembles(tmp_path, arch, sm, cmem):
    out = tmp_path / "scale.cubin"
    cubin, kernels = assemble(FIXTURE.read_text(), arch, str(out))
    assert _elf_sm(cubin) == sm
    assert out.read_bytes() == cubin
    assert [p.name for p in tmp_path.iterdir()] == ["scale.cubin"]  # no temp files left
    (kernel,) = kernels
    assert (kernel.name, kernel.arch) == ("scale", arch)
    assert kernel.shared_bytes == 1024 and kernel.barriers == 1
    assert 0 < kernel.registers <= 255
    assert (kernel.spill_store_bytes, kernel.spill_load_bytes, kernel.stack_bytes) == (0, 0, 0)
    assert (kernel.constant_bytes > 0) == cmem


@needs_ptxas
def test_without_output_path_only_bytes_come_back(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cubin, _ = assemble(FIXTURE.read_text(), "sm_80")
    assert _elf_sm(cubin) == 80 and list(tmp_path.iterdir()) == []


@needs_ptxas
def test_bad_ptx_raises_with_the_line(tmp_path):
    text = FIXTURE.read_text()
    line = text.splitlines().index("\tbar.sync \t0;") + 1
    bad = text.replace("\tbar.sync \t0;", "\tbar.snyc \t0;")
    out = tmp_path / "bad.cubin"
    with pytest.raises(PtxasError) as info:
        assemble(bad, "sm_90", out)
    error = info.value
    assert isinstance(error, RuntimeError) and error.arch == "sm_90"
    assert f"kernel.ptx, line {line}; error" in str(error)
    assert str(error).startswith("ptxas failed for sm_90:")
    assert "bar.snyc" in error.stderr or f"line {line}" in error.stderr
    assert not out.exists() and list(tmp_path.iterdir()) == []


@needs_ptxas
def test_ptx_too_old_for_the_arch_is_an_error():
    old = FIXTURE.read_text().replace(".version 8.0", ".version 7.0")
    assemble(old, "sm_80")  # 7.0 is enough for sm_80 ...
    with pytest.raises(PtxasError, match=r"does not support \.target sm_90"):
        assemble(old.replace(".target sm_80", ".target sm_90"), "sm_90")


def _fatbin_images(data):
    """(kind, sm, payload) per image; kind 1 is PTX, 2 is ELF."""
    magic, version, header, size = struct.unpack_from("<IHHQ", data, 0)
    assert (magic, version, header) == (0xBA55ED50, 1, 16)
    assert header + size == len(data)
    images, offset = [], header
    while offset < len(data):
        kind, _, image_header, payload = struct.unpack_from("<HHIQ", data, offset)
        sm = struct.unpack_from("<I", data, offset + 0x1C)[0]
        start = offset + image_header
        images.append((kind, sm, data[start : start + payload]))
        offset = start + payload
    return images


@needs_fatbinary
def test_fatbin_holds_the_cubins_and_the_ptx(tmp_path):
    text = FIXTURE.read_text()
    cubins = {arch: assemble(text, arch)[0] for arch in ("sm_80", "sm_90a")}
    out = tmp_path / "scale.fatbin"
    data = fatbin(text, cubins, str(out))
    assert data[:4] == b"\x50\xed\x55\xba"  # 0xba55ed50, little-endian
    assert out.read_bytes() == data and [p.name for p in tmp_path.iterdir()] == ["scale.fatbin"]
    images = _fatbin_images(data)
    assert [(kind, sm) for kind, sm, _ in images] == [(2, 80), (2, 90), (1, 80)]
    assert images[0][2] == cubins["sm_80"] and images[1][2] == cubins["sm_90a"]


@needs_fatbinary
def test_fatbin_of_ptx_alone_uses_its_target():
    text = FIXTURE.read_text().replace(".target sm_80", ".target sm_90")
    assert [(kind, sm) for kind, sm, _ in _fatbin_images(fatbin(text, {}))] == [(1, 90)]


def test_fatbin_needs_a_ptx_target():
    with pytest.raises(ValueError, match=r"\.target"):
        fatbin(".version 8.0\n", {})


def test_failing_fatbinary_is_reported(tmp_path, monkeypatch):
    fake = tmp_path / "bin" / "fatbinary"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'nvFatbin error: invalid architecture' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("LOWERLINE_CUDA_PATH", str(tmp_path))
    out = tmp_path / "x.fatbin"
    with pytest.raises(CudaToolError, match="invalid architecture"):
        fatbin(FIXTURE.read_text(), {}, out)
    assert not out.exists()
    assert os.listdir(tmp_path) == ["bin"]
