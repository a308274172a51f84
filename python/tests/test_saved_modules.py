"""Issue 17, item 5: ``compiled.save(path)`` and ``lowerline.load(path)``.

One file that loads and runs in a process where ``mlir``, ``torch_mlir`` and
``llvm`` cannot be imported (and no file of theirs is mapped), refused when
altered, truncated or signed with another key, refused on a CPU lacking a
feature its code uses, and never half written.
"""

import hashlib
import hmac
import importlib.util
import json
import os
import struct
import subprocess
import sys

import pytest
import torch
from test_aarch64_targets import Mlp

import lowerline
from lowerline import saved
from lowerline.driver.cache import load_key
from lowerline.targets import CPU_TARGETS, host_arch, host_flags


class Counter(torch.nn.Module):
    """A buffer forward updates, a number input, a dict with a number output."""

    def __init__(self):
        super().__init__()
        self.register_buffer("count", torch.zeros((), dtype=torch.int64))
        self.scale = torch.nn.Parameter(torch.randn(5))

    def forward(self, x, shift: float):
        self.count += 1
        y = x * self.scale + shift
        return {"y": y, "total": y.sum().item(), "count": self.count.clone()}


@pytest.fixture(scope="module")
def mlp(cache_dir):
    torch.manual_seed(0)
    model = Mlp().eval()
    compiled = lowerline.compile(model, torch.randn(3, 37), cache_dir=cache_dir)
    compiled(torch.randn(1, 37))  # a second specialization: batch 1
    return model, compiled


@pytest.fixture()
def saved_mlp(mlp, tmp_path):
    path = str(tmp_path / "mlp.lowerline")
    mlp[1].save(path)
    return path


# Run in a child: the compiler packages cannot be imported, and nothing of
# theirs may be mapped (the bundled OpenMP runtime comes from the file).
CHILD = r"""
import importlib.abc, json, os, sys
BLOCKED = ("mlir", "torch_mlir", "llvm")

class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{name} is blocked in this test")

sys.meta_path.insert(0, Block())
for name in BLOCKED:
    sys.modules[name] = None

import torch
import lowerline

module = lowerline.load(sys.argv[1])
cases = torch.load(sys.argv[2])
worst = max((module(x) - y).abs().max().item() for x, y in cases)
with open("/proc/self/maps") as maps:
    mapped = sorted({line.split()[-1] for line in maps if "/" in line})
loaded = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED and sys.modules[m])
print(json.dumps({"worst": worst, "mapped": mapped, "loaded": loaded}))
"""


def _compiler_folders() -> list[str]:
    """Where the mlir and llvm wheels live (namespace packages: no __file__)."""
    specs = [importlib.util.find_spec(name) for name in ("mlir", "llvm")]
    return [folder for spec in specs if spec for folder in spec.submodule_search_locations or ()]


def test_a_saved_module_runs_where_the_compiler_cannot_be_imported(mlp, saved_mlp, tmp_path):
    model, _ = mlp
    cases = []
    for batch in (3, 1):
        x = torch.randn(batch, 37)
        with torch.no_grad():
            cases.append((x, model(x)))
    torch.save(cases, tmp_path / "cases.pt")
    done = subprocess.run(
        [sys.executable, "-c", CHILD, saved_mlp, str(tmp_path / "cases.pt")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["worst"] < 1e-4
    assert report["loaded"] == []
    folders = _compiler_folders()
    assert [p for p in report["mapped"] if any(p.startswith(f) for f in folders)] == []
    # Multithreaded code: its OpenMP runtime came from the file, not from the venv.
    assert not any(p.endswith("/libiomp5.so") for p in report["mapped"])


def test_numbers_containers_and_buffers_survive_the_round_trip(tmp_path, cache_dir):
    torch.manual_seed(1)
    model = Counter().eval()
    x = torch.randn(4, 5)
    compiled = lowerline.compile(model, x, 0.5, cache_dir=cache_dir)
    first = compiled(x, 0.5)
    assert int(model.count) == 1
    path = str(tmp_path / "counter.lowerline")
    compiled.save(path)
    loaded = lowerline.load(path)
    out = loaded(x, 0.5)
    assert set(out) == {"y", "total", "count"} and isinstance(out["total"], float)
    torch.testing.assert_close(out["y"], first["y"])
    # The buffer's value when saved, then updated by the loaded module's own calls.
    assert int(out["count"]) == 2 == int(loaded.state["count"])
    assert int(model.count) == 1  # the module's own buffer is not the loaded one's
    with pytest.raises(RuntimeError, match=r"no specialization .* x=\[4, 5\], shift=0\.5"):
        loaded(x, 0.25)
    with pytest.raises(TypeError, match=r"x: expected dtype torch\.float32, got torch\.float64"):
        loaded(x.double(), 0.5)


def _parts(path: str) -> tuple[dict, list[bytes]]:
    """The header and blobs of a saved file (the format of lowerline.saved)."""
    with open(path, "rb") as handle:
        data = handle.read()
    start = len(saved.MAGIC) + 8
    (size,) = struct.unpack_from("<Q", data, len(saved.MAGIC))
    header = json.loads(data[start : start + size])
    blobs, offset = [], start + size
    for length in header["blobs"]:
        blobs.append(data[offset : offset + length])
        offset += length
    return header, blobs


def _rewrite(path: str, header: dict, blobs: list[bytes], key: bytes) -> None:
    """The file again, with ``header`` and ``blobs``, signed with ``key``."""
    header = {**header, "blobs": [len(b) for b in blobs]}
    text = json.dumps(header).encode()
    body = b"".join([saved.MAGIC, struct.pack("<Q", len(text)), text, *blobs])
    with open(path, "wb") as handle:
        handle.write(body + hmac.new(key, body, hashlib.sha256).digest())


@pytest.mark.parametrize("damage", ["flip", "truncate", "append", "empty"])
def test_an_altered_or_truncated_file_is_refused(saved_mlp, damage):
    with open(saved_mlp, "rb") as handle:
        data = bytearray(handle.read())
    if damage == "flip":
        data[len(data) // 2] ^= 1
    elif damage == "truncate":
        data = data[: len(data) - 100]
    elif damage == "append":
        data += b"\0"
    else:
        data = bytearray()
    with open(saved_mlp, "wb") as handle:
        handle.write(data)
    with pytest.raises(lowerline.LoadError, match=f"{saved_mlp} (is refused|is not a module)"):
        lowerline.load(saved_mlp)


CONSTRUCTOR = r"""
#include <stdio.h>
__attribute__((constructor)) static void planted(void) {
    FILE *f = fopen("%s", "w");
    if (f) { fputs("ran\n", f); fclose(f); }
}
"""


def test_a_planted_library_signed_with_another_key_never_runs(saved_mlp, tmp_path):
    """Whoever alters the file can recompute any digest in it, not the HMAC."""
    marker = tmp_path / "constructor-ran"
    source = tmp_path / "planted.c"
    source.write_text(CONSTRUCTOR % marker)
    planted = tmp_path / "planted.so"
    subprocess.run(["cc", "-shared", "-fPIC", str(source), "-o", str(planted)], check=True)
    header, blobs = _parts(saved_mlp)
    blobs[header["specializations"][0]["library"]] = planted.read_bytes()
    _rewrite(saved_mlp, header, blobs, os.urandom(32))
    with pytest.raises(lowerline.LoadError, match="signed with another key"):
        lowerline.load(saved_mlp)
    assert not marker.exists()


def test_moving_files_between_machines_takes_an_explicit_key(mlp, tmp_path):
    path = str(tmp_path / "shared.lowerline")
    key = os.urandom(32)
    mlp[1].save(path, key=key)
    x = torch.randn(3, 37)
    torch.testing.assert_close(lowerline.load(path, key=key)(x), mlp[1](x))
    with pytest.raises(lowerline.LoadError, match="key="):
        lowerline.load(path)  # this user's own key is another one
    with pytest.raises(TypeError, match="key takes bytes"):
        lowerline.load(path, key=b"short")


def test_a_cpu_lacking_a_feature_of_the_code_is_named(saved_mlp):
    header, blobs = _parts(saved_mlp)
    header["target"]["flags"] += ["lowerline_made_up_feature"]
    _rewrite(saved_mlp, header, blobs, load_key())
    with pytest.raises(lowerline.LoadError, match="this CPU lacks: lowerline_made_up_feature;"):
        lowerline.load(saved_mlp)
    header["target"]["arch"] = "riscv64" if host_arch() != "riscv64" else "aarch64"
    _rewrite(saved_mlp, header, blobs, load_key())
    with pytest.raises(lowerline.LoadError, match=f"code .*; this machine is {host_arch()}"):
        lowerline.load(saved_mlp)


def test_code_for_a_named_cpu_this_one_is_not_is_refused(tmp_path, cache_dir):
    """A named target of this architecture whose features this host lacks
    (cpu:sapphirerapids on a host without AMX, for one), found from the data."""
    lacking = [
        (name, sorted(t.required_flags - host_flags()))
        for name, t in CPU_TARGETS.items()
        if t.arch == host_arch() and not t.required_flags <= host_flags()
    ]
    if not lacking:
        pytest.skip("this CPU has the features of every named target of its architecture")
    name, missing = lacking[0]
    torch.manual_seed(0)
    x = torch.randn(2, 37)
    compiled = lowerline.compile(Mlp().eval(), x, target=f"cpu:{name}", cache_dir=cache_dir)
    path = str(tmp_path / f"{name}.lowerline")
    compiled.save(path)
    with pytest.raises(lowerline.LoadError) as info:
        lowerline.load(path)
    assert f"target 'cpu:{name}'" in str(info.value)
    assert f"this CPU lacks: {', '.join(missing)};" in str(info.value)


def test_a_failed_save_leaves_the_old_file_and_no_temporary(mlp, tmp_path, monkeypatch):
    path = tmp_path / "model.lowerline"
    path.write_bytes(b"previous")

    def full_disk(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(saved.os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space left"):
        mlp[1].save(str(path))
    assert path.read_bytes() == b"previous"
    assert os.listdir(tmp_path) == ["model.lowerline"]


def test_a_file_that_is_no_saved_module_is_named(tmp_path):
    path = tmp_path / "model.pt"
    path.write_bytes(b"PK\3\4" * 40)
    with pytest.raises(lowerline.LoadError, match=f"{path} is not a module saved by lowerline"):
        lowerline.load(str(path))
    with pytest.raises(lowerline.LoadError, match="cannot read"):
        lowerline.load(str(tmp_path / "missing"))


def test_code_that_needs_the_compilers_libraries_is_not_saved():
    """A library needing MLIR's runtime (which needs libMLIR and libLLVM)
    cannot run without the compiler packages: save says so up front."""
    runner_utils = os.path.join(_compiler_folders()[0], "lib", "libmlir_c_runner_utils.so")
    with open(runner_utils, "rb") as handle:
        library = handle.read()
    with pytest.raises(
        lowerline.LoadError, match=r"needs lib(LLVM|MLIR)\.so, which a saved file does not"
    ):
        saved._bundled([library], [])
    assert saved._needed(b"not an ELF file") == []


def test_a_module_compiled_without_the_cache_saves_too(tmp_path):
    """cache=False signs its private entries with a key of its own: save
    still checks the library against that entry before signing the file."""
    torch.manual_seed(2)
    model = Mlp().eval()
    x = torch.randn(5, 37)
    compiled = lowerline.compile(model, x, cache=False, num_threads=1)
    path = str(tmp_path / "private.lowerline")
    compiled.save(path)
    with torch.no_grad():
        torch.testing.assert_close(lowerline.load(path)(x), model(x), rtol=1e-4, atol=1e-5)
    header, _ = _parts(path)
    assert header["libraries"] == []  # one thread: no OpenMP runtime to carry
