"""A persistent, process-safe cache of compiled artifacts.

Entries live in ``<root>/v1/<key>/`` and are published by an atomic rename of
a fully written temporary folder, so readers never see half an entry and
concurrent compiles of the same model do not corrupt each other (the first
rename wins, the other copy is dropped). ``meta.json`` records a digest of
every file; an entry whose files do not match is removed and rebuilt, never
loaded. The cache keeps itself under a size limit (``LOWERLINE_CACHE_MAX_BYTES``)
by evicting the least recently used entries, never the one just published.

The key is computed by the caller (``frontend.export``) from everything the
artifact depends on: the program, the bytes of every weight, input shapes,
dtypes and baked-in numbers, options, target and tool versions.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from typing import Any

DEFAULT_MAX_BYTES = 4 << 30
LAYOUT = "v1"


def default_root() -> str:
    return os.environ.get("LOWERLINE_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "lowerline"
    )


def file_digest(path: str) -> str:
    digest = hashlib.blake2b(digest_size=20)
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


def _tree_size(path: str) -> int:
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):  # removed meanwhile by another process
                total += os.path.getsize(os.path.join(folder, name))
    return total


def _building(name: str) -> bool:
    """Whether ``tmp/<name>`` is the workspace of a live process (``build-<pid>-...``)."""
    parts = name.split("-")
    if len(parts) < 3 or parts[0] != "build" or not parts[1].isdigit():
        return False
    try:
        os.kill(int(parts[1]), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class Cache:
    root: str
    max_bytes: int = DEFAULT_MAX_BYTES

    @classmethod
    def at(cls, root: str | None = None) -> Cache:
        """The cache in ``root`` (default: ``$LOWERLINE_CACHE_DIR`` or ``~/.cache/lowerline``)."""
        text = os.environ.get("LOWERLINE_CACHE_MAX_BYTES", "")
        try:
            limit = int(text) if text.strip() else DEFAULT_MAX_BYTES
        except ValueError:
            raise ValueError(
                f"LOWERLINE_CACHE_MAX_BYTES must be a number of bytes, got '{text}'"
            ) from None
        return cls(os.path.abspath(root or default_root()), limit)

    @property
    def entries(self) -> str:
        return os.path.join(self.root, LAYOUT)

    def path(self, key: str) -> str:
        return os.path.join(self.entries, key)

    def new_workspace(self) -> str:
        """A private folder to build an entry in (publish it with ``publish``)."""
        os.makedirs(os.path.join(self.root, "tmp"), exist_ok=True)
        return tempfile.mkdtemp(prefix=f"build-{os.getpid()}-", dir=os.path.join(self.root, "tmp"))

    def lookup(self, key: str) -> dict[str, Any] | None:
        """The entry's metadata if it is complete and intact; drops a damaged one."""
        folder = self.path(key)
        meta_path = os.path.join(folder, "meta.json")
        if not os.path.isdir(folder):
            return None
        try:
            with open(meta_path, encoding="utf-8") as handle:
                meta = json.load(handle)
            if "lib.so" not in meta["files"]:
                raise ValueError("no lib.so")
            for name, digest in meta["files"].items():
                if file_digest(os.path.join(folder, name)) != digest:
                    raise ValueError(f"{name} does not match its digest")
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            self._remove(folder)
            return None
        with contextlib.suppress(OSError):  # evicted meanwhile: the caller loads or rebuilds
            os.utime(meta_path)  # last use, for eviction
        return meta

    def publish(self, key: str, workspace: str, meta: dict[str, Any], files: list[str]) -> str:
        """Record digests, then move ``workspace`` into place atomically."""
        meta = {
            **meta,
            "files": {name: file_digest(os.path.join(workspace, name)) for name in files},
        }
        with open(os.path.join(workspace, "meta.json"), "w", encoding="utf-8") as handle:
            json.dump(meta, handle)
        os.makedirs(self.entries, exist_ok=True)
        target = self.path(key)
        try:
            os.rename(workspace, target)
        except OSError:
            # Another process published the same key first; keep theirs.
            shutil.rmtree(workspace, ignore_errors=True)
        self.evict(keep=key)
        return target

    def evict(self, keep: str | None = None) -> None:
        """Drop least recently used entries until the cache fits ``max_bytes``;
        ``keep`` (the entry just published) stays even if it alone is larger."""
        if not os.path.isdir(self.entries):
            return
        entries = []
        for key in os.listdir(self.entries):
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
            os.makedirs(os.path.dirname(trash), exist_ok=True)
            os.rename(folder, trash)
        except OSError:
            return
        shutil.rmtree(trash, ignore_errors=True)

    def clear(self) -> int:
        """Remove every entry, reproducer and leftover; returns how many entries there were.

        Folders that running compiles are building in are left to them.
        """
        count = 0
        if os.path.isdir(self.entries):
            for key in os.listdir(self.entries):
                count += 1
                self._remove(self.path(key))
        shutil.rmtree(os.path.join(self.root, "failures"), ignore_errors=True)
        tmp = os.path.join(self.root, "tmp")
        if os.path.isdir(tmp):
            for name in os.listdir(tmp):
                if not _building(name):
                    shutil.rmtree(os.path.join(tmp, name), ignore_errors=True)
        return count
