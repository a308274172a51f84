"""A persistent, process-safe cache of compiled artifacts.

Entries live in ``<root>/v1/<key>/`` and are published by an atomic rename of
a fully written temporary folder, so readers never see half an entry and
concurrent compiles of the same model do not corrupt each other (the first
rename wins, the other copy is dropped). The cache keeps itself under a size
limit (``LOWERLINE_CACHE_MAX_BYTES``) by evicting the least recently used
entries, never the one just published.

The key is computed by the caller (``frontend.export``) from everything the
artifact depends on: the program, the bytes of every weight, input shapes,
dtypes and baked-in numbers, options, target and tool versions.

Loading an entry runs its code (``lib.so``'s constructors run at ``dlopen``),
so the cache trusts only what this user wrote (README, "Security and failure
model"):

* the folder must belong to this user and be writable by no one else (as ssh
  judges its keys), else ``CacheError``: whoever can write there could
  rewrite any file, ``meta.json`` included; every folder above it must
  belong to this user or root and be writable by no one else unless sticky
  (``/tmp``), or the cache could be moved aside and replaced;
* ``meta.json`` (every field and every file's digest) is authenticated with an
  HMAC-SHA256 under a per-user key kept outside the cache (``cache_key_path``),
  checked before anything of the entry is loaded, then checked against the
  manifest's schema. An entry failing any check is removed and rebuilt.

``CACHEDIR.TAG`` marks a folder as a lowerline cache; ``clear`` refuses a
folder without it and removes only what lowerline creates.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import re
import shutil
import stat
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

from lowerline.errors import LowerlineError
from lowerline.pipeline.remarks import Remark
from lowerline.runtime.sizes import valid_dim

DEFAULT_MAX_BYTES = 4 << 30
LAYOUT = "v1"
MARKER = "CACHEDIR.TAG"
# The Cache Directory Tagging spec (https://bford.info/cachedir/): backup
# tools skip the folder; lowerline's own line tells its caches from others'.
TAG_SIGNATURE = "Signature: 8a477f597d28d172789f06886806bc55"
TAG_OWNER = "# This file is a cache directory tag created by lowerline."
TAG_TEXT = (
    f"{TAG_SIGNATURE}\n{TAG_OWNER}\n"
    "# For information about cache directory tags, see https://bford.info/cachedir/\n"
)
KEY_BYTES = 32
WAY_OUT = "pass cache=False or another cache_dir (lowerline compile: --no-cache)"

# What lowerline creates, and so all that ``clear`` and ``evict`` remove.
ENTRY_NAME = re.compile(r"[0-9a-f]{48}")  # frontend.export.cache_key
WORKSPACE_NAME = re.compile(r"(build|trash)-[0-9]+-[A-Za-z0-9_]+")
REPRODUCER_NAME = re.compile(r"[a-z0-9_]+-[A-Za-z0-9_]+\.mlir")  # workers._keep_reproducer


class CacheError(LowerlineError):
    """The cache cannot be used safely or at all (untrusted folder, bad key
    file, a read-only or full disk, a folder that is not a cache). The message
    names the path and the way out."""


class _BadEntry(ValueError):
    """An entry fails a check: it is removed and rebuilt, never loaded."""


def default_root() -> str:
    return os.environ.get("LOWERLINE_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "lowerline"
    )


def cache_key_path() -> str:
    """Where this user's HMAC key lives: outside the cache, so that a cache
    folder someone else could write to cannot also forge the signatures."""
    if os.environ.get("LOWERLINE_CACHE_KEY"):
        return os.environ["LOWERLINE_CACHE_KEY"]
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(config, "lowerline", "cache.key")


def untrusted(info: os.stat_result) -> str | None:
    """Why a file or folder with ``info`` cannot be trusted, or None: owned by
    another user, or writable by group or others (what ssh refuses for keys)."""
    if info.st_uid != os.geteuid():
        return f"it is owned by another user (uid {info.st_uid})"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"it is writable by other users (mode {stat.S_IMODE(info.st_mode):04o})"
    return None


def untrusted_parent(info: os.stat_result) -> str | None:
    """Why a folder above the cache cannot be trusted, or None. As ssh judges
    the folders above its keys: it must belong to this user or root, and be
    writable by no one else, unless its sticky bit (``/tmp``'s 1777) stops
    others from renaming or removing what is not theirs. Otherwise whoever can
    write it could move the cache aside and put a folder of their own there."""
    if info.st_uid not in (0, os.geteuid()):
        return f"it is owned by another user (uid {info.st_uid})"
    mode = info.st_mode
    if mode & (stat.S_IWGRP | stat.S_IWOTH) and not mode & stat.S_ISVTX:
        return f"it is writable by other users (mode {stat.S_IMODE(mode):04o}, no sticky bit)"
    return None


def parent_folders(path: str) -> list[str]:
    """The folders above ``path`` up to ``/``, as written and with links resolved
    (a link's target is what is used, the link's folder what can redirect it)."""
    folders: list[str] = []
    for start in (os.path.abspath(path), os.path.realpath(path)):
        folder = os.path.dirname(start)
        while folder not in folders:
            folders.append(folder)
            folder = os.path.dirname(folder)
    return folders


def load_key(path: str | None = None) -> bytes:
    """This user's cache key, created (0600, random) on first use."""
    path = path or cache_key_path()
    try:
        return _read_key(path)
    except FileNotFoundError:
        _create_key(path)
        return _read_key(path)


def _read_key(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        data = handle.read(KEY_BYTES + 1)
    if info.st_uid != os.geteuid():
        raise CacheError(
            f"the cache key {path} is owned by another user (uid {info.st_uid}): "
            "remove it (a new one is made), or set LOWERLINE_CACHE_KEY to a file of your own"
        )
    if info.st_mode & 0o077:
        raise CacheError(
            f"the cache key {path} can be read or written by other users "
            f"(mode {stat.S_IMODE(info.st_mode):04o}): run chmod 600 {path}, or remove it "
            "(a new one is made, and entries signed with the old one are rebuilt)"
        )
    if len(data) != KEY_BYTES:
        raise CacheError(f"the cache key {path} is not {KEY_BYTES} bytes: remove it for a new one")
    return data


def _create_key(path: str) -> None:
    """Write a new key atomically (link of a complete file), so that two
    processes creating it at once agree on one key."""
    folder = os.path.dirname(path) or "."
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix=".cache.key-", dir=folder)  # mode 0600
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(os.urandom(KEY_BYTES))
            with contextlib.suppress(FileExistsError):  # another process made one first
                os.link(temporary, path)
        finally:
            os.remove(temporary)
    except OSError as err:
        raise CacheError(
            f"cannot create the cache key {path}: {err.strerror or err}; "
            f"set LOWERLINE_CACHE_KEY to a file in a folder of your own, or {WAY_OUT}"
        ) from err


def file_digest(path: str) -> str:
    digest = hashlib.blake2b(digest_size=20)
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


def _expect(ok: bool, what: str) -> None:
    if not ok:
        raise _BadEntry(f"meta.json: {what}")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _inside(name: Any) -> bool:
    """A relative path that stays inside the entry (``lib.so``, ``ir/0-linalg.mlir``)."""
    parts = name.split("/") if isinstance(name, str) else [""]
    return all(part not in ("", ".", "..") for part in parts)


def check_manifest(meta: Any) -> None:
    """Raise ``_BadEntry`` unless ``meta`` has every field lowerline.compile
    reads, with the right types: a signed but wrong manifest (a bug, or a
    manifest of another version) is rebuilt instead of failing every compile."""
    _expect(isinstance(meta, dict), "not an object")
    files = meta.get("files")
    _expect(isinstance(files, dict) and "lib.so" in files, "files must name lib.so")
    for name, digest in files.items():
        _expect(_inside(name) and isinstance(digest, str), f"bad file entry {name!r}")
    _expect(isinstance(meta.get("entry"), str), "entry must be a string")
    arguments = meta.get("arguments")
    _expect(
        isinstance(arguments, list) and all(type(a) in (int, str) for a in arguments),
        "arguments must be a list of input indices and buffer names",
    )
    dims = meta.get("dims", {})
    _expect(
        isinstance(dims, dict)
        and all(
            isinstance(place, list) and len(place) == 2 and all(type(i) is int for i in place)
            for place in dims.values()
        ),
        "dims must map symbols to [argument, dim]",
    )
    results = meta.get("results")
    _expect(isinstance(results, list), "results must be a list")
    for result in results:
        _expect(
            isinstance(result, dict)
            and isinstance(result.get("shape"), list)
            # A dynamic dim is its size expression's text (lowerline.runtime.sizes).
            and all(valid_dim(size, set(dims)) for size in result["shape"])
            and isinstance(result.get("dtype"), str)
            and result.get("kind") in ("output", "input", "state"),
            f"bad result {result!r}",
        )
    seconds = meta.get("stage_seconds")
    _expect(
        isinstance(seconds, dict) and all(_is_number(value) for value in seconds.values()),
        "stage_seconds must map stages to numbers",
    )
    fallbacks = meta.get("fallbacks", [])
    _expect(isinstance(fallbacks, list), "fallbacks must be a list")
    for found in fallbacks:
        _expect(isinstance(found, dict), "a fallback must be an object")
        try:
            Remark.from_json(found)
        except (TypeError, ValueError) as err:
            raise _BadEntry(f"meta.json: bad fallback: {err}") from None


def _tree_size(path: str) -> int:
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):  # removed meanwhile by another process
                total += os.path.getsize(os.path.join(folder, name))
    return total


def _building(name: str, path: str | None = None) -> bool:
    """Whether ``tmp/<name>`` is the workspace of a live process (``build-<pid>-...``).

    A process killed while it compiled (the OOM killer, a test runner's
    timeout) never removes its folder, and a later process may get its pid:
    the folder is that process's only if it started before the folder was
    last changed (``path``; a second of slack, the boot time's resolution).
    """
    parts = name.split("-")
    if len(parts) < 3 or parts[0] != "build" or not parts[1].isdigit():
        return False
    pid = int(parts[1])
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    started = _process_start(pid)
    if path is None or started is None:
        return True
    try:
        changed = os.stat(path).st_mtime
    except OSError:  # removed meanwhile
        return False
    return started <= changed + 1.0


def _process_start(pid: int) -> float | None:
    """When process ``pid`` started (seconds since the epoch), from Linux's
    ``/proc``; None where that cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        with open("/proc/stat", encoding="ascii") as handle:
            boot = next(int(line.split()[1]) for line in handle if line.startswith("btime "))
        # Field 22 of the line, the 20th after the command's closing parenthesis.
        return boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError, StopIteration):
        return None


def leftover_workspaces(tmp: str) -> list[str]:
    """The build and trash folders in ``tmp`` that no live process owns."""
    if not _real_folder(tmp):
        return []
    found = []
    for name in os.listdir(tmp):
        path = os.path.join(tmp, name)
        if WORKSPACE_NAME.fullmatch(name) and _real_folder(path) and not _building(name, path):
            found.append(path)
    return found


def _real_folder(path: str) -> bool:
    """A folder, not a link to one (``clear`` never follows links out of the cache)."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


@dataclass
class Cleared:
    """What ``Cache.clear`` removed: paths and the bytes they held."""

    root: str
    entries: list[str] = field(default_factory=list)
    workspaces: list[str] = field(default_factory=list)
    reproducers: list[str] = field(default_factory=list)
    bytes: int = 0

    def summary(self) -> str:
        return (
            f"removed {len(self.entries)} entries, {len(self.reproducers)} reproducers and "
            f"{len(self.workspaces)} leftover build folders ({self.bytes} bytes) from {self.root}"
        )


@dataclass
class Cache:
    root: str
    max_bytes: int = DEFAULT_MAX_BYTES
    # The HMAC key; None: this user's key file, read on first use. A private
    # cache (cache=False) uses a key of its own that never touches the disk.
    key: bytes | None = None

    @classmethod
    def at(cls, root: str | None = None, key: bytes | None = None) -> Cache:
        """The cache in ``root`` (default: ``$LOWERLINE_CACHE_DIR`` or ``~/.cache/lowerline``)."""
        text = os.environ.get("LOWERLINE_CACHE_MAX_BYTES", "")
        try:
            limit = int(text) if text.strip() else DEFAULT_MAX_BYTES
        except ValueError:
            raise ValueError(
                f"LOWERLINE_CACHE_MAX_BYTES must be a number of bytes, got '{text}'"
            ) from None
        return cls(os.path.abspath(root or default_root()), limit, key)

    @property
    def entries(self) -> str:
        return os.path.join(self.root, LAYOUT)

    def path(self, key: str) -> str:
        return os.path.join(self.entries, key)

    def unwritable(self, err: OSError, path: str | None = None) -> CacheError:
        """The error for a cache that cannot be written (read-only, full disk):
        names the folder and the way out, instead of a bare OSError."""
        where = path or self.root
        return CacheError(
            f"the cache folder {where} cannot be written: {err.strerror or err}; {WAY_OUT}"
        )

    def prepare(self) -> None:
        """Make the folder ready for compiles: created private (0700) and tagged;
        refuse one that another user owns or can write to."""
        try:
            os.makedirs(self.root, mode=0o700, exist_ok=True)
        except OSError as err:
            raise self.unwritable(err) from err
        self.check_trusted()
        if not self.tagged():
            self._write_tag()

    def check_trusted(self) -> None:
        """Raise ``CacheError`` if the folder (or its parts) could have been
        written by anyone but this user: its entries would run their code."""
        for path in (self.root, self.entries, os.path.join(self.root, "tmp")):
            try:
                info = os.stat(path)
            except FileNotFoundError:
                continue
            reason = untrusted(info)
            if reason:
                raise CacheError(
                    f"lowerline will not use the cache folder {path}: {reason}, so its "
                    "compiled libraries could have been replaced by someone else's code. "
                    f"Make it yours and private (chown, chmod go-w), or {WAY_OUT}"
                )
        for folder in parent_folders(self.root):
            reason = untrusted_parent(os.stat(folder))
            if reason:
                raise CacheError(
                    f"lowerline will not use the cache folder {self.root}: the folder above "
                    f"it, {folder}, cannot be trusted: {reason}, so someone else could "
                    "replace the cache with a folder of their own. Make it yours or "
                    f"root's, without write access for others (or sticky, chmod +t), or {WAY_OUT}"
                )

    def tagged(self) -> bool:
        """Whether ``root`` carries lowerline's ``CACHEDIR.TAG``."""
        try:
            with open(os.path.join(self.root, MARKER), encoding="utf-8") as handle:
                lines = handle.read(4096).splitlines()
        except (OSError, ValueError):
            return False
        return bool(lines) and lines[0].startswith(TAG_SIGNATURE) and TAG_OWNER in lines

    def _write_tag(self) -> None:
        try:
            fd, temporary = tempfile.mkstemp(prefix=".tag-", dir=self.root)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    handle.write(TAG_TEXT)
                os.chmod(temporary, 0o644)
                os.replace(temporary, os.path.join(self.root, MARKER))
            except BaseException:
                with contextlib.suppress(OSError):
                    os.remove(temporary)
                raise
        except OSError as err:
            raise self.unwritable(err) from err

    def new_workspace(self) -> str:
        """A private folder to build an entry in (publish it with ``publish``);
        the folders of compiles whose process died are removed first."""
        tmp = os.path.join(self.root, "tmp")
        try:
            os.makedirs(tmp, mode=0o700, exist_ok=True)
            # Folders of compiles whose process was killed (2.5 GB of stage
            # IR once): nothing else ever removes them.
            for path in leftover_workspaces(tmp):
                shutil.rmtree(path, ignore_errors=True)
            return tempfile.mkdtemp(prefix=f"build-{os.getpid()}-", dir=tmp)
        except OSError as err:
            raise self.unwritable(err, tmp) from err

    def _secret(self) -> bytes:
        if self.key is None:
            self.key = load_key()
        return self.key

    def signature(self, key: str, meta: dict[str, Any]) -> str:
        """HMAC-SHA256 of the manifest (every field, every file's digest) and
        the entry's key, so that an entry is not valid under another key either."""
        body = json.dumps(meta, sort_keys=True, separators=(",", ":")).encode()
        message = b"lowerline-cache-" + LAYOUT.encode() + b"\0" + key.encode() + b"\0" + body
        return hmac.new(self._secret(), message, hashlib.sha256).hexdigest()

    def lookup(self, key: str) -> dict[str, Any] | None:
        """The entry's metadata if it is authentic, complete and intact; an
        entry failing any check is removed (the caller rebuilds it)."""
        folder = self.path(key)
        if not os.path.lexists(folder):
            return None
        self._secret()  # a bad key file is the user's to fix: CacheError, nothing removed
        try:
            meta = self._verified(key, folder)
        except (OSError, ValueError):
            self._remove(folder)
            return None
        with contextlib.suppress(OSError):  # evicted meanwhile: the caller loads or rebuilds
            os.utime(os.path.join(folder, "meta.json"))  # last use, for eviction
        return meta

    def _verified(self, key: str, folder: str) -> dict[str, Any]:
        """The checks, in order: the folder is this user's alone, the manifest
        is signed with this user's key, it has the schema, the files match."""
        reason = untrusted(os.lstat(folder))
        if reason or not _real_folder(folder):
            raise _BadEntry(reason or "not a folder")
        with open(os.path.join(folder, "meta.json"), encoding="utf-8") as handle:
            meta = json.load(handle)
        _expect(isinstance(meta, dict), "not an object")
        claimed = meta.pop("hmac", None)
        if not isinstance(claimed, str) or not hmac.compare_digest(
            claimed, self.signature(key, meta)
        ):
            raise _BadEntry("meta.json is not signed with this user's cache key")
        check_manifest(meta)
        for name, digest in meta["files"].items():
            if file_digest(os.path.join(folder, name)) != digest:
                raise _BadEntry(f"{name} does not match its digest")
        return meta

    def publish(self, key: str, workspace: str, meta: dict[str, Any], files: list[str]) -> str:
        """Record digests and the signature, then move ``workspace`` into place atomically."""
        meta = {
            **meta,
            "files": {name: file_digest(os.path.join(workspace, name)) for name in files},
        }
        # Signed as it will be read back: JSON makes tuples lists, keys strings.
        meta = json.loads(json.dumps(meta))
        meta["hmac"] = self.signature(key, meta)
        target = self.path(key)
        try:
            with open(os.path.join(workspace, "meta.json"), "w", encoding="utf-8") as handle:
                json.dump(meta, handle)
            os.makedirs(self.entries, mode=0o700, exist_ok=True)
        except OSError as err:
            raise self.unwritable(err) from err
        try:
            os.rename(workspace, target)
        except OSError as err:
            if not os.path.isdir(target):
                raise self.unwritable(err, self.entries) from err
            # Another process published the same key first; keep theirs.
            shutil.rmtree(workspace, ignore_errors=True)
        self.evict(keep=key)
        return target

    def _entry_names(self) -> list[str]:
        """The names in ``v1/`` that are entries lowerline made (nothing else is touched)."""
        if not os.path.isdir(self.entries):
            return []
        return [
            name
            for name in os.listdir(self.entries)
            if ENTRY_NAME.fullmatch(name) and _real_folder(self.path(name))
        ]

    def evict(self, keep: str | None = None) -> None:
        """Drop least recently used entries until the cache fits ``max_bytes``;
        ``keep`` (the entry just published) stays even if it alone is larger."""
        entries = []
        for key in self._entry_names():
            if key == keep:
                continue
            folder = self.path(key)
            try:
                used = os.path.getmtime(os.path.join(folder, "meta.json"))
            except OSError:  # half gone or never finished: first to go
                used = 0.0
            entries.append((used, _tree_size(folder), folder))
        total = sum(size for _, size, _ in entries)
        if keep is not None:
            total += _tree_size(self.path(keep))
        for _, size, folder in sorted(entries):
            if total <= self.max_bytes:
                break
            self._remove(folder)
            total -= size

    def _remove(self, folder: str) -> None:
        # Rename first so that no reader finds a half-deleted entry.
        trash = os.path.join(self.root, "tmp", f"trash-{os.getpid()}-{time.monotonic_ns()}")
        try:
            os.makedirs(os.path.dirname(trash), mode=0o700, exist_ok=True)
            os.rename(folder, trash)
        except OSError:
            return
        shutil.rmtree(trash, ignore_errors=True)

    def clear(self) -> Cleared:
        """Remove what lowerline put in the cache: entries, reproducers of
        failed compiles, leftover build folders; say exactly what went.

        Refuses (``CacheError``, nothing removed) a folder without lowerline's
        ``CACHEDIR.TAG``: ``lowerline cache clear --cache-dir`` on the wrong
        folder must not delete a user's files. Anything else in the folder,
        and folders that running compiles are building in, are left alone.
        """
        cleared = Cleared(self.root)
        if not os.path.exists(self.root):
            return cleared
        if not self.tagged():
            raise CacheError(
                f"{self.root} is not a lowerline cache (it has no {MARKER} written by "
                "lowerline): nothing was removed"
            )
        for key in self._entry_names():
            cleared.bytes += _tree_size(self.path(key))
            cleared.entries.append(self.path(key))
            self._remove(self.path(key))
        failures = os.path.join(self.root, "failures")
        if _real_folder(failures):
            for name in os.listdir(failures):
                path = os.path.join(failures, name)
                if REPRODUCER_NAME.fullmatch(name) and os.path.isfile(path):
                    with contextlib.suppress(OSError):
                        size = os.lstat(path).st_size
                        os.remove(path)
                        cleared.bytes += size
                        cleared.reproducers.append(path)
            with contextlib.suppress(OSError):  # only if nothing else is in it
                os.rmdir(failures)
        for path in leftover_workspaces(os.path.join(self.root, "tmp")):
            cleared.bytes += _tree_size(path)
            shutil.rmtree(path, ignore_errors=True)
            cleared.workspaces.append(path)
        return cleared
