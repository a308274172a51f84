"""Saved compiled modules: ``CompiledModule.save(path)`` writes one file and
``lowerline.load(path)`` runs it in a process without the compiler.

Loading imports neither ``mlir`` nor ``torch_mlir`` (nor any lowerline module
that does: python/tests/test_layers.py checks this module's imports) and
maps no file of the compiler packages: the shared libraries the code needs
besides the C library (the OpenMP runtime of multithreaded code) travel in
the file, and libraries are loaded from memory (``memfd_create``), never
from a file someone else could swap. torch is needed: a loaded module takes
and returns torch tensors in the structures the compiled one does, writes
back what ``forward`` mutates and draws its random seeds from torch's
generator, exactly as ``lowerline.compile``'s modules do (a C program
without Python uses ``lowerline.export`` instead).

The file (format 1)::

    MAGIC                 16 bytes
    header size           8 bytes, little endian
    header                JSON: target, input and output structure, one record
                          per specialization (entry, arguments, results, arena)
    blobs                 the header's ``blobs`` sizes, back to back: each
                          specialization's library, bundled libraries, buffers
    HMAC-SHA256           32 bytes, of everything before it

The HMAC is keyed like the compile cache's signatures (``driver.cache``):
by default this user's cache key (``~/.config/lowerline/cache.key``, or
``$LOWERLINE_CACHE_KEY``), which never leaves the machine. A digest stored
in the file could be recomputed by whoever alters it; the HMAC cannot
without the key. So a truncated or altered file is refused before any of it
is parsed or run, and so is a file saved by another user or on another
machine: to move files between machines, save and load with the same
explicit ``key=`` (bytes, a secret shared by both, at least 16 bytes). It
is a shared secret, not a public-key signature: whoever can verify a file
can also sign one (the standard library has no public-key signatures).

After the HMAC, the load checks that this machine runs the code: the same
architecture and every CPU feature the target's code may use
(``targets.CpuTarget.required_flags``, against ``/proc/cpuinfo``); a
missing one is named in a ``LoadError`` rather than met as an illegal
instruction later.

The file is written to a temporary file beside ``path`` and renamed: a
reader never sees half a file.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import hashlib
import hmac
import json
import os
import re
import struct
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch.utils import _pytree as pytree

from lowerline import __version__
from lowerline.driver.cache import load_key
from lowerline.errors import LowerlineError
from lowerline.frontend.export import InputSpec
from lowerline.runtime import calls
from lowerline.runtime.libraries import openmp_library
from lowerline.runtime.native import MemoryStats, NativeFunction
from lowerline.targets import cpu_target, host_arch, host_flags, is_gpu_target

if TYPE_CHECKING:
    from lowerline.api import CompiledModule, Specialization

MAGIC = b"lowerline-save\x00\x01"
FORMAT = 1
_SIZE = struct.Struct("<Q")
_TAG_BYTES = hashlib.sha256().digest_size
MIN_KEY_BYTES = 16
# Libraries every Linux system has: never bundled.
_SYSTEM_LIBRARY = re.compile(
    r"(libc|libm|libdl|libpthread|librt|libgcc_s|libstdc\+\+)\.so(\.\d+)*|ld-linux.*\.so.*"
)
# Where a bundled library comes from, by its name in DT_NEEDED.
_BUNDLED_SOURCES = {"libiomp5.so": openmp_library}


class LoadError(LowerlineError):
    """A saved module cannot be written or loaded here: not a saved module,
    altered or truncated, signed with another key, or for a CPU this is not.
    The message names the file and the reason."""


# -- writing -------------------------------------------------------------------


def save_module(compiled: CompiledModule, path: str, key: bytes | None = None) -> None:
    """Write ``compiled`` (every specialization, its buffers' current values)
    to the single file ``path``, signed with ``key`` (default: this user's
    cache key)."""
    if is_gpu_target(compiled.target):
        raise LoadError(f"save is for CPU targets; '{compiled.target}' is a GPU target")
    secret = _secret(key)
    in_spec = compiled._in_spec
    assert in_spec is not None  # set by the first specialization
    target = cpu_target(compiled.options.target)
    blobs: list[bytes] = []
    records = [_specialization(compiled, sp, blobs) for sp in compiled.specializations]
    libraries = _bundled(list(blobs), blobs)
    header = {
        "format": FORMAT,
        "lowerline": __version__,
        "target": {
            "name": compiled.target,
            "arch": target.arch,
            "flags": sorted(target.required_flags),
        },
        "in_spec": _dump_spec(in_spec),
        "state": [_buffer(name, t, blobs) for name, t in compiled._state.items()],
        "libraries": libraries,
        "specializations": records,
    }
    header["blobs"] = [len(blob) for blob in blobs]
    _write_signed(path, json.dumps(header).encode(), blobs, secret)


def _specialization(compiled: CompiledModule, sp: Specialization, blobs: list[bytes]) -> dict:
    """The header record of one specialization; its library joins ``blobs``."""
    meta, library = _verified_library(compiled, sp)
    blobs.append(library)
    return {
        "library": len(blobs) - 1,
        "entry": meta["entry"],
        "inputs": [_input(spec) for spec in sp.inputs],
        "aliases": [list(alias) for alias in sp.aliases],
        "arguments": sp.arguments,
        "writes": sp.writes,
        "results": [{"shape": r["shape"], "dtype": r["dtype"]} for r in meta["results"]],
        "arena": meta.get("arena"),
        "outputs": [_output_kind(kind) for kind in sp.outputs],
        "out_spec": _dump_spec(sp.out_spec),
    }


def _verified_library(compiled: CompiledModule, sp: Specialization) -> tuple[dict, bytes]:
    """The specialization's cache manifest and ``lib.so``, as the signed
    entry records them: what is signed into the file is what the compiler wrote."""
    cache = compiled._cache
    meta = cache.lookup(os.path.basename(sp.artifacts_dir))
    library = os.path.join(sp.artifacts_dir, "lib.so")
    data = b""
    with contextlib.suppress(OSError), open(library, "rb") as handle:
        data = handle.read()
    digest = hashlib.blake2b(data, digest_size=20).hexdigest()
    if meta is None or meta["files"].get("lib.so") != digest:
        raise LoadError(
            f"cannot save: the compiled library {library} is gone or no longer matches its "
            "cache entry (evicted or cleared); compile the module again and save it"
        )
    return meta, data


def _input(spec: InputSpec) -> dict:
    if spec.is_tensor:
        return {
            "name": spec.name,
            "shape": list(spec.shape or ()),
            "dtype": _dtype_name(spec.dtype),
        }
    kind, value = calls.number_key(spec.value)
    return {"name": spec.name, "number": kind.__name__, "value": value}


def _output_kind(kind: tuple) -> list:
    if kind[0] == "tensor":
        return ["tensor"]
    if kind[0] == "number":
        return ["number", kind[1].__name__]
    try:
        json.dumps(kind[1])
    except TypeError:
        raise LoadError(
            f"cannot save: the module returns the constant {kind[1]!r} "
            f"({type(kind[1]).__name__}), which a saved file cannot hold"
        ) from None
    return ["constant", kind[1]]


def _dump_spec(spec: pytree.TreeSpec) -> str:
    try:
        return pytree.treespec_dumps(spec)
    except (TypeError, NotImplementedError) as err:
        raise LoadError(
            f"cannot save: the module's inputs or outputs use a container torch's pytree "
            f"cannot serialize ({err}); return tuples, lists or dicts"
        ) from None


def _buffer(name: str, tensor: torch.Tensor, blobs: list[bytes]) -> dict:
    """A mutated buffer's current value, as raw bytes in ``blobs``."""
    flat = tensor.detach().contiguous().reshape(-1)
    blobs.append(flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b"")
    return {
        "name": name,
        "shape": list(tensor.shape),
        "dtype": _dtype_name(tensor.dtype),
        "blob": len(blobs) - 1,
    }


def _bundled(libraries: list[bytes], blobs: list[bytes]) -> list[dict]:
    """The libraries ``libraries`` need beyond the system's, read from their
    ``DT_NEEDED`` entries, appended to ``blobs``."""
    needed = sorted({name for library in libraries for name in _needed(library)})
    records = []
    for name in needed:
        if _SYSTEM_LIBRARY.fullmatch(name):
            continue
        find = _BUNDLED_SOURCES.get(name)
        source = find() if find else None
        if source is None:
            raise LoadError(
                f"cannot save: the compiled code needs {name}, which a saved file does not "
                "carry (it belongs to the compiler packages)"
            )
        with open(source, "rb") as handle:
            data = handle.read()
        others = [n for n in _needed(data) if not _SYSTEM_LIBRARY.fullmatch(n)]
        if others:
            raise LoadError(f"cannot save: {source} needs {', '.join(others)}")
        blobs.append(data)
        records.append({"name": name, "blob": len(blobs) - 1})
    return records


_PT_LOAD, _PT_DYNAMIC, _DT_NEEDED, _DT_STRTAB = 1, 2, 1, 5


def _needed(data: bytes) -> list[str]:
    """The ``DT_NEEDED`` names of a 64-bit little-endian ELF shared object
    (the only kind lowerline links); [] for anything else."""
    if data[:6] != b"\x7fELF\x02\x01":
        return []
    (phoff,) = _SIZE.unpack_from(data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    headers = [struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize) for i in range(phnum)]
    # (file offset, virtual address, size) of the loaded segments and the dynamic one.
    loads = [
        (offset, vaddr, size) for kind, _, offset, vaddr, _, size in headers if kind == _PT_LOAD
    ]
    dynamic = [(offset, size) for kind, _, offset, _, _, size in headers if kind == _PT_DYNAMIC]
    if not dynamic:
        return []
    start, size = dynamic[0]
    entries = [struct.unpack_from("<qQ", data, pos) for pos in range(start, start + size, 16)]
    strtab = next((value for tag, value in entries if tag == _DT_STRTAB), -1)
    # The string table is found by address: the file offset of the segment holding it.
    bases = [o + strtab - v for o, v, n in loads if v <= strtab < v + n]
    if not bases:
        return []
    names = []
    for tag, value in entries:
        if tag == _DT_NEEDED:
            first = bases[0] + value
            names.append(data[first : data.index(b"\0", first)].decode())
    return names


def _write_signed(path: str, header: bytes, blobs: Iterable[bytes], secret: bytes) -> None:
    """Write the file through a temporary file beside ``path``, then rename it."""
    folder = os.path.dirname(os.path.abspath(path))
    mac = hmac.new(secret, digestmod=hashlib.sha256)
    fd, temporary = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", dir=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            for part in (MAGIC, _SIZE.pack(len(header)), header, *blobs):
                mac.update(part)
                handle.write(part)
            handle.write(mac.digest())
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(temporary)
        raise


def _secret(key: bytes | None) -> bytes:
    if key is None:
        return load_key()
    if not isinstance(key, bytes) or len(key) < MIN_KEY_BYTES:
        raise TypeError(f"key takes bytes (at least {MIN_KEY_BYTES}), got {type(key).__name__}")
    return key


def _dtype_name(dtype: torch.dtype | None) -> str:
    return str(dtype).removeprefix("torch.")


# -- loading -------------------------------------------------------------------


def load(path: str, key: bytes | None = None) -> LoadedModule:
    """The module saved in ``path``, ready to call; ``key``: the one it was
    saved with (default: this user's cache key)."""
    secret = _secret(key)
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as err:
        raise LoadError(f"cannot read {path}: {err.strerror or err}") from None
    header, blobs = _authentic(path, data, secret)
    _check_machine(path, header["target"])
    return LoadedModule(path, header, blobs)


def _authentic(path: str, data: bytes, secret: bytes) -> tuple[dict, list[memoryview]]:
    """The header and blobs of ``data``, once its HMAC proves it is whole and
    was signed with ``secret``; nothing of it is parsed before."""
    start = len(MAGIC) + _SIZE.size
    if len(data) < start + _TAG_BYTES or not data.startswith(MAGIC[:-1]):
        raise LoadError(f"{path} is not a module saved by lowerline (or it is truncated)")
    body, tag = memoryview(data)[:-_TAG_BYTES], data[-_TAG_BYTES:]
    if not hmac.compare_digest(hmac.new(secret, body, hashlib.sha256).digest(), tag):
        raise LoadError(
            f"{path} is refused: it was altered or truncated, or signed with another key "
            "than this one (a file saved by another user or on another machine loads with "
            "key=, the key it was saved with)"
        )
    if data[len(MAGIC) - 1] != FORMAT:
        raise LoadError(f"{path} is format {data[len(MAGIC) - 1]}; this lowerline reads {FORMAT}")
    size = _SIZE.unpack_from(data, len(MAGIC))[0]
    header = json.loads(bytes(body[start : start + size]))
    blobs, offset = [], start + size
    for length in header["blobs"]:
        blobs.append(body[offset : offset + length])
        offset += length
    return header, blobs


def _check_machine(path: str, target: dict) -> None:
    """Refuse code this machine cannot run, naming what it lacks."""
    if target["arch"] != host_arch():
        raise LoadError(
            f"{path} holds {target['arch']} code (target '{target['name']}'); "
            f"this machine is {host_arch()}"
        )
    missing = sorted(set(target["flags"]) - host_flags())
    if missing:
        raise LoadError(
            f"{path} was compiled for target '{target['name']}', whose code uses CPU "
            f"features this CPU lacks: {', '.join(missing)}; compile for this machine "
            "(target='cpu') and save again"
        )


# The anonymous files of the libraries loaded from saved modules: open for good.
_MEMORY_FILES: list[int] = []


def _memory_file(name: str, data: memoryview) -> str:
    """A path to ``data`` in an anonymous, sealed file (memfd) to ``dlopen``:
    no file on disk that someone could swap between the check and the load.

    Its descriptor stays open for the life of the process: the library keeps
    the name ``/proc/self/fd/N`` while loaded (ctypes never unloads), and
    dlopen would take a later library given the same name, once N is reused,
    for this one.
    """
    fd = os.memfd_create(f"lowerline-{name}", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    _MEMORY_FILES.append(fd)
    while data:
        data = data[os.write(fd, data) :]
    seals = fcntl.F_SEAL_WRITE | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)
    return f"/proc/self/fd/{fd}"


def _loaded(name: str) -> bool:
    """Whether a library of this soname is in the process already (the
    OpenMP runtime must not be loaded twice)."""
    try:
        ctypes.CDLL(name, mode=os.RTLD_NOLOAD)
    except OSError:
        return False
    return True


@dataclass
class _Saved:
    """One saved specialization, loaded."""

    inputs: list[InputSpec]
    key: tuple
    arguments: list[int | str]
    writes: list[int | str]
    outputs: list[tuple]
    out_spec: pytree.TreeSpec
    function: NativeFunction

    def call(self, flat: list, state: dict[str, torch.Tensor]) -> Any:
        results = self.function([calls.argument(a, flat, state) for a in self.arguments])
        for target, value in zip(self.writes, results, strict=False):
            (flat[target] if isinstance(target, int) else state[target]).copy_(value)
        tensors = iter(results[len(self.writes) :])
        return pytree.tree_unflatten(
            [calls.output(kind, tensors) for kind in self.outputs], self.out_spec
        )


_NUMBERS = {"bool": bool, "int": int, "float": float}


class LoadedModule:
    """A module loaded from a saved file: called like the compiled module,
    on the input shapes and numbers it was compiled for (no compiler here
    to make another specialization)."""

    def __init__(self, path: str, header: dict, blobs: list[memoryview]):
        self.path = path
        self.target: str = header["target"]["name"]
        self._in_spec = pytree.treespec_loads(header["in_spec"])
        self.state = {b["name"]: _tensor(b, blobs) for b in header["state"]}
        for library in header["libraries"]:
            if not _loaded(library["name"]):
                ctypes.CDLL(_memory_file(library["name"], blobs[library["blob"]]))
        self.specializations = [_load_specialization(r, blobs) for r in header["specializations"]]
        self._by_key = {sp.key: sp for sp in self.specializations}
        self._specs = self.specializations[0].inputs
        self._tensor_positions = [i for i, spec in enumerate(self._specs) if spec.is_tensor]
        self._last: _Saved | None = None

    def __call__(self, *args: Any) -> Any:
        flat, in_spec = pytree.tree_flatten(args)
        if in_spec != self._in_spec or len(flat) != len(self._specs):
            names = ", ".join(spec.name for spec in self._specs)
            raise TypeError(
                f"expected inputs structured as {self._in_spec} ({names}), got {in_spec}"
            )
        key = calls.call_key(self._specs, flat, self._tensor_positions)
        found = self._by_key.get(key)
        if found is None:
            raise RuntimeError(
                f"{self.path} has no specialization for this call (input shapes, numbers or "
                f"aliasing); it has: {'; '.join(map(_describe, self.specializations))}"
            )
        self._last = found
        return found.call(flat, self.state)

    def memory(self) -> MemoryStats:
        """What the last call allocated (as ``CompiledModule.memory``)."""
        if self._last is None:
            raise RuntimeError("memory() reports on the last call: call the loaded module first")
        return self._last.function.memory()


def _describe(sp: _Saved) -> str:
    return ", ".join(
        f"{spec.name}={list(spec.shape or ()) if spec.is_tensor else spec.value!r}"
        for spec in sp.inputs
    )


def _load_specialization(record: dict, blobs: list[memoryview]) -> _Saved:
    inputs = [_input_spec(item) for item in record["inputs"]]
    library = _memory_file(f"{record['entry']}.so", blobs[record["library"]])
    results = [(tuple(r["shape"]), _dtype(r["dtype"])) for r in record["results"]]
    function = NativeFunction(library, record["entry"], results, record["arena"])
    aliases = tuple(tuple(alias) for alias in record["aliases"])
    shapes = [tuple(s.shape or ()) if s.is_tensor else calls.number_key(s.value) for s in inputs]
    key = (*shapes, aliases)
    return _Saved(
        inputs=inputs,
        key=key,
        arguments=record["arguments"],
        writes=record["writes"],
        outputs=[_kind(kind) for kind in record["outputs"]],
        out_spec=pytree.treespec_loads(record["out_spec"]),
        function=function,
    )


def _input_spec(item: dict) -> InputSpec:
    if "dtype" in item:
        return InputSpec(item["name"], tuple(item["shape"]), _dtype(item["dtype"]))
    number = _NUMBERS[item["number"]]
    value = float.fromhex(item["value"]) if number is float else number(item["value"])
    return InputSpec(item["name"], value=value)


def _kind(kind: list) -> tuple:
    if kind[0] == "number":
        return ("number", _NUMBERS[kind[1]])
    return tuple(kind)


def _dtype(name: str) -> torch.dtype:
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise LoadError(f"unknown dtype '{name}' in a saved module")
    return dtype


def _tensor(record: dict, blobs: list[memoryview]) -> torch.Tensor:
    dtype, shape = _dtype(record["dtype"]), tuple(record["shape"])
    data = blobs[record["blob"]]
    if not len(data):
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(bytearray(data), dtype=torch.uint8).view(dtype).reshape(shape)
