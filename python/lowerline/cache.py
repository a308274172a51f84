"""A persistent, process-safe cache of compiled artifacts.

Entries live in ``<root>/v1/<key>/`` and are published by an atomic rename of
a fully written temporary folder, so readers never see half an entry and
concurrent compiles of the same model do not corrupt each other (the first
rename wins, the other copy is dropped). ``meta.json`` records a digest of
every file; an entry whose files do not match is removed and rebuilt, never
loaded. The cache keeps itself under a size limit by evicting the least
recently used entries.

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


@dataclass
class Cache:
    root: str
    max_bytes: int = DEFAULT_MAX_BYTES

    @classmethod
    def at(cls, root: str | None = None) -> Cache:
        limit = int(os.environ.get("LOWERLINE_CACHE_MAX_BYTES", DEFAULT_MAX_BYTES))
        return cls(os.path.abspath(root or default_root()), limit)

    @property
    def entries(self) -> str:
        return os.path.join(self.root, LAYOUT)

    def path(self, key: str) -> str:
        return os.path.join(self.entries, key)

    def new_workspace(self) -> str:
        """A private folder to build an entry in (publish it with ``publish``)."""
        os.makedirs(os.path.join(self.root, "tmp"), exist_ok=True)
        return tempfile.mkdtemp(prefix="build-", dir=os.path.join(self.root, "tmp"))

    def lookup(self, key: str) -> dict[str, Any] | None:
        """The entry's metadata if it is complete and intact; drops a damaged one."""
        folder = self.path(key)
        meta_path = os.path.join(folder, "meta.json")
        if not os.path.isdir(folder):
            return None
        try:
            with open(meta_path, encoding="utf-8") as handle:
                meta = json.load(handle)
            for name, digest in meta["files"].items():
                if file_digest(os.path.join(folder, name)) != digest:
                    raise ValueError(f"{name} does not match its digest")
        except (OSError, ValueError, KeyError, TypeError):
            self._remove(folder)
            return None
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
        self.evict()
        return target

    def evict(self) -> None:
        if not os.path.isdir(self.entries):
            return
        entries = []
        for key in os.listdir(self.entries):
            folder = self.path(key)
            meta = os.path.join(folder, "meta.json")
            used = os.path.getmtime(meta) if os.path.exists(meta) else 0.0
            entries.append((used, _tree_size(folder), folder))
        total = sum(size for _, size, _ in entries)
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
        """Remove every entry; returns how many there were."""
        count = len(os.listdir(self.entries)) if os.path.isdir(self.entries) else 0
        for name in ("v1", "tmp", "failures"):
            shutil.rmtree(os.path.join(self.root, name), ignore_errors=True)
        return count
