"""Issue 20, items 1, 2 and 6: the cache trusts only what this user wrote,
``cache clear`` removes only what lowerline made, and a full or read-only disk
never hides a CompileError behind a raw OSError."""

import errno
import json
import os
import shutil
import subprocess
import sys

import pytest
import torch
from test_compile_cache import _result, _size, _start_child, eager, example, make_model
from test_compile_errors import BoolHead

import lowerline
from lowerline.driver import cache as cache_module
from lowerline.driver import workers
from lowerline.driver.cache import Cache, CacheError, file_digest
from lowerline.errors import LowerlineError
from lowerline.tools import cli

# -- item 1: a folder others can write to is refused ------------------------------


def test_world_writable_cache_folder_is_refused(tmp_path):
    folder = tmp_path / "shared"
    folder.mkdir()
    os.chmod(folder, 0o777)
    with pytest.raises(CacheError, match="writable by other users") as info:
        lowerline.compile(make_model(), example(), cache_dir=folder)
    assert str(folder) in str(info.value) and "cache=False" in str(info.value)
    assert not os.path.exists(folder / "v1")  # nothing compiled into it


def test_a_folder_owned_by_another_user_is_untrusted(tmp_path, monkeypatch):
    info = os.stat(tmp_path)
    assert cache_module.untrusted(info) is None
    monkeypatch.setattr(cache_module.os, "geteuid", lambda: info.st_uid + 1)
    assert "owned by another user" in cache_module.untrusted(info)
    with pytest.raises(CacheError, match="owned by another user"):
        Cache.at(str(tmp_path)).check_trusted()


def test_a_cache_below_a_folder_others_can_write_is_refused(tmp_path):
    """Issue 20: the folders above the cache are checked too, as ssh does:
    whoever can write one could move the cache aside and put theirs there."""
    shared = tmp_path / "shared"
    (shared / "me").mkdir(parents=True)
    os.chmod(shared, 0o775)
    folder = shared / "me" / "cache"
    with pytest.raises(CacheError, match="writable by other users") as info:
        lowerline.compile(make_model(), example(), cache_dir=folder)
    message = str(info.value)
    assert f"the folder above it, {shared}, cannot be trusted" in message
    assert "cache=False" in message
    assert not os.path.exists(folder / "v1")
    # With the sticky bit (as /tmp has), others cannot move what is not theirs.
    os.chmod(shared, 0o1777)
    Cache.at(str(folder)).prepare()


def test_a_link_to_the_cache_counts_the_folders_of_both(tmp_path):
    private, shared = tmp_path / "private", tmp_path / "shared"
    (private / "cache").mkdir(parents=True, mode=0o700)
    shared.mkdir()
    os.chmod(shared, 0o777)
    (shared / "link").symlink_to(private / "cache")
    with pytest.raises(CacheError, match=f"the folder above it, {shared}, cannot be trusted"):
        Cache.at(str(shared / "link")).prepare()
    Cache.at(str(private / "cache")).prepare()


def test_a_parent_folder_owned_by_another_user_is_untrusted(tmp_path, monkeypatch):
    theirs = tmp_path / "theirs"
    (theirs / "cache").mkdir(parents=True)
    assert cache_module.untrusted_parent(os.stat(theirs)) is None
    as_root = os.geteuid() == 0
    if as_root:
        os.chown(theirs, 12345, -1)
    else:  # then the cache folder itself is "another user's" too
        monkeypatch.setattr(cache_module.os, "geteuid", lambda: os.stat(theirs).st_uid + 1)
    assert "owned by another user" in cache_module.untrusted_parent(os.stat(theirs))
    with pytest.raises(CacheError, match="owned by another user") as info:
        Cache.at(str(theirs / "cache")).check_trusted()
    if as_root:
        assert f"the folder above it, {theirs}, cannot be trusted" in str(info.value)
    # root's folders ("/") are trusted by everyone.
    assert cache_module.untrusted_parent(os.stat("/")) is None


def test_key_file_readable_by_others_is_refused(tmp_path, monkeypatch):
    path = tmp_path / "config" / "cache.key"
    monkeypatch.setenv("LOWERLINE_CACHE_KEY", str(path))
    key = cache_module.load_key()
    assert len(key) == 32 and os.stat(path).st_mode & 0o777 == 0o600
    assert cache_module.load_key() == key  # made once
    os.chmod(path, 0o644)
    with pytest.raises(CacheError, match="chmod 600"):
        cache_module.load_key()
    os.chmod(path, 0o600)
    monkeypatch.setattr(cache_module.os, "geteuid", lambda: os.stat(path).st_uid + 1)
    with pytest.raises(CacheError, match="owned by another user"):
        cache_module.load_key()


def test_key_defaults_to_the_config_folder_outside_the_cache(monkeypatch, tmp_path):
    monkeypatch.delenv("LOWERLINE_CACHE_KEY")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert cache_module.cache_key_path() == str(tmp_path / "lowerline" / "cache.key")


# -- item 1: a tampered entry never runs -------------------------------------------

CONSTRUCTOR = r"""
#include <stdio.h>
__attribute__((constructor)) static void planted(void) {
    FILE *f = fopen("%s", "w");
    if (f) { fputs("ran\n", f); fclose(f); }
}
"""


def _planted_library(tmp_path, marker) -> str:
    source = tmp_path / "planted.c"
    source.write_text(CONSTRUCTOR % marker)
    library = str(tmp_path / "planted.so")
    compiler = os.environ.get("CC") or shutil.which("cc") or "gcc"
    subprocess.run([compiler, "-shared", "-fPIC", str(source), "-o", library], check=True)
    return library


def test_tampered_library_with_recomputed_digests_never_runs(tmp_path):
    marker = tmp_path / "constructor-ran"
    planted = _planted_library(tmp_path, marker)
    # The planted library is live: loading it runs its constructor.
    subprocess.run([sys.executable, "-c", f"import ctypes; ctypes.CDLL({planted!r})"], check=True)
    assert marker.exists()
    marker.unlink()
    # Fresh processes, so that no copy of the entry's library is loaded already.
    cache_dir = str(tmp_path / "cache")
    entry = _result(_start_child(cache_dir))["entry"]
    # What the attacker of issue 20 did: swap lib.so, recompute the digests.
    shutil.copyfile(planted, os.path.join(entry, "lib.so"))
    meta_path = os.path.join(entry, "meta.json")
    with open(meta_path, encoding="utf-8") as handle:
        meta = json.load(handle)
    meta["files"] = {name: file_digest(os.path.join(entry, name)) for name in meta["files"]}
    with open(meta_path, "w", encoding="utf-8") as handle:
        json.dump(meta, handle)

    again = _result(_start_child(cache_dir))
    assert again["hit"] is False and again["jobs"]["compile"] == 1  # evicted, rebuilt
    assert again["difference"] < 1e-5
    assert not marker.exists()  # the planted constructor never ran
    assert Cache.at(cache_dir).lookup(os.path.basename(entry)) is not None  # the rebuilt one


def _resign(entry: str, change) -> None:
    """Rewrite meta.json with ``change`` applied and a valid signature: only
    the schema check stands between it and a load."""
    path = os.path.join(entry, "meta.json")
    with open(path, encoding="utf-8") as handle:
        meta = json.load(handle)
    del meta["hmac"]
    change(meta)
    meta["hmac"] = Cache.at(os.path.dirname(os.path.dirname(entry))).signature(
        os.path.basename(entry), meta
    )
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(meta, handle)


@pytest.mark.parametrize(
    "change",
    [
        lambda meta: meta.update(entry=7),
        lambda meta: meta.update(arguments="0"),
        lambda meta: meta.update(results=[{"kind": "output", "shape": ["3"], "dtype": "f"}]),
        lambda meta: meta.update(stage_seconds=[1.0]),
        lambda meta: meta.update(fallbacks=[{"nonsense": 1}]),
        lambda meta: meta.update(files=["lib.so"]),
        lambda meta: meta.pop("entry"),
    ],
    ids=["entry", "arguments", "results", "stage_seconds", "fallbacks", "files", "missing"],
)
def test_signed_manifest_with_wrong_fields_is_evicted_and_rebuilt(tmp_path, change):
    model, x = make_model(), example()
    entry = lowerline.compile(model, x, cache_dir=tmp_path).artifacts_dir
    _resign(entry, change)
    launched = workers.jobs["compile"]
    again = lowerline.compile(model, x, cache_dir=tmp_path)  # no KeyError, TypeError, ...
    assert not again.cache_hit and workers.jobs["compile"] == launched + 1
    torch.testing.assert_close(again(x), eager(model, x))
    assert lowerline.compile(model, x, cache_dir=tmp_path).cache_hit


def test_an_entry_is_not_valid_under_another_key(tmp_path):
    model, x = make_model(), example()
    entry = lowerline.compile(model, x, cache_dir=tmp_path).artifacts_dir
    other = os.path.join(os.path.dirname(entry), "0" * 48)
    shutil.copytree(entry, other)
    assert Cache.at(str(tmp_path)).lookup("0" * 48) is None
    assert not os.path.exists(other)


# -- item 2: clear removes only lowerline's files ------------------------------------


def _users_folder(root) -> None:
    """The folder of issue 20: a user's files where lowerline's would be."""
    for path in ("tmp/myproject/thesis.tex", "failures/log.txt", "v1/notes/todo.txt"):
        os.makedirs(os.path.dirname(root / path), exist_ok=True)
        (root / path).write_text("mine\n")


def _all_files(root) -> list[str]:
    return sorted(
        os.path.relpath(os.path.join(folder, name), root)
        for folder, _, names in os.walk(root)
        for name in names
    )


def test_clear_refuses_a_folder_that_is_not_a_cache(tmp_path, capsys):
    _users_folder(tmp_path)
    before = _all_files(tmp_path)
    with pytest.raises(CacheError, match="not a lowerline cache"):
        Cache.at(str(tmp_path)).clear()
    assert _all_files(tmp_path) == before
    assert cli.main(["cache", "clear", "--cache-dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "not a lowerline cache" in err and "nothing was removed" in err
    assert _all_files(tmp_path) == before


def test_clear_on_a_cache_removes_only_lowerlines_files_and_says_which(tmp_path, capsys):
    model, x = make_model(), example()
    entry = lowerline.compile(model, x, cache_dir=tmp_path).artifacts_dir
    _users_folder(tmp_path)
    (tmp_path / "failures" / "llvm-abc123.mlir").write_text("module {}\n")
    os.makedirs(tmp_path / "tmp" / "trash-1-2")
    size = _size(entry)

    assert cli.main(["cache", "clear", "--cache-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"removed {entry}" in out
    assert f"removed {tmp_path / 'failures' / 'llvm-abc123.mlir'}" in out
    assert f"removed {tmp_path / 'tmp' / 'trash-1-2'}" in out
    assert "removed 1 entries, 1 reproducers and 1 leftover build folders" in out
    assert f"({size + len('module {}') + 1} bytes)" in out
    assert _all_files(tmp_path) == [
        "CACHEDIR.TAG",
        "failures/log.txt",
        "tmp/myproject/thesis.tex",
        "v1/notes/todo.txt",
    ]


def test_a_new_cache_is_tagged_per_the_cachedir_spec(tmp_path):
    lowerline.compile(make_model(), example(), cache_dir=tmp_path / "new")
    tag = (tmp_path / "new" / "CACHEDIR.TAG").read_text()
    assert tag.startswith("Signature: 8a477f597d28d172789f06886806bc55\n")
    assert "lowerline" in tag
    assert os.stat(tmp_path / "new").st_mode & 0o777 == 0o700


# -- item 6: full and read-only disks ---------------------------------------------------


def test_full_disk_while_saving_the_reproducer_keeps_the_compile_error(cache_dir, monkeypatch):
    def full_disk(source, out):
        out.write("half a")
        out.flush()
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(workers, "_copy_text", full_disk)
    with pytest.raises(lowerline.CompileError) as info:
        lowerline.compile(BoolHead().eval(), torch.randn(2, 32), widen_i1=False, tile=False)
    error = info.value
    assert error.stage == "llvm" and error.pass_name
    assert any("integralElementType.getWidth() >= 8" in d for d in error.diagnostics)
    assert error.reproducer is None and error.command is None
    assert "no reproducer" in str(error) and os.strerror(errno.ENOSPC) in str(error)
    failures = os.path.join(cache_dir, "failures")
    assert not os.path.isdir(failures) or os.listdir(failures) == []  # no empty file left


def test_read_only_failures_folder_keeps_the_compile_error(tmp_path):
    stage_input = tmp_path / "input.mlir"
    stage_input.write_text("module {}\n")
    blocked = tmp_path / "file-not-folder"
    blocked.write_text("")
    path, why = workers._keep_reproducer(str(stage_input), str(blocked / "failures"), "llvm")
    assert path is None and str(blocked / "failures") in why


@pytest.mark.parametrize("code", [errno.EROFS, errno.ENOSPC])
def test_read_only_or_full_cache_folder_names_the_way_out(tmp_path, monkeypatch, code):
    # Tests run as root, which ignores permissions: the disk's answer is simulated.
    def refuse(*args, **kwargs):
        raise OSError(code, os.strerror(code))

    lowerline.compile(Scale(), torch.ones(3), cache_dir=tmp_path)  # the folder exists
    monkeypatch.setattr(cache_module.tempfile, "mkdtemp", refuse)
    with pytest.raises(CacheError) as info:
        lowerline.compile(make_model(), example(), cache_dir=tmp_path)
    message = str(info.value)
    assert isinstance(info.value, LowerlineError) and not isinstance(info.value, OSError)
    assert str(tmp_path) in message and "cache=False" in message
    assert os.strerror(code) in message


def test_full_disk_when_publishing_names_the_way_out(tmp_path, monkeypatch):
    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(cache_module.json, "dump", full)
    with pytest.raises(CacheError, match="cache=False"):
        lowerline.compile(make_model(), example(), cache_dir=tmp_path)
    assert os.listdir(tmp_path / "tmp") == []  # the workspace is gone


def test_cache_false_needs_no_key_file(monkeypatch, tmp_path):
    monkeypatch.setenv("LOWERLINE_CACHE_KEY", str(tmp_path / "missing" / "cache.key"))
    compiled = lowerline.compile(make_model(), example(), cache=False)
    torch.testing.assert_close(compiled(example()), eager(make_model(), example()))
    assert not os.path.exists(tmp_path / "missing")


class Scale(torch.nn.Module):
    def forward(self, x):
        return x * 2


def test_the_key_file_is_made_atomically(tmp_path, monkeypatch):
    monkeypatch.setenv("LOWERLINE_CACHE_KEY", str(tmp_path / "k" / "cache.key"))
    cache_module.load_key()
    assert os.listdir(tmp_path / "k") == ["cache.key"]  # no temporary file left
