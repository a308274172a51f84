"""lowerline.compile's persistent cache: hits across processes without any
worker, a key that covers everything an artifact depends on, damaged entries
rebuilt and never loaded, concurrent compiles, a size limit, clearing."""

import gc
import json
import os
import subprocess
import sys
import time

import pytest
import torch

import lowerline
from lowerline.driver import workers
from lowerline.driver.cache import Cache
from lowerline.frontend import export
from lowerline.frontend.export import cache_key, export_program

TESTS = os.path.dirname(os.path.abspath(__file__))


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 16)
        self.fc2 = torch.nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def make_model(seed: int = 0) -> MLP:
    """The same weights in every process for the same seed."""
    torch.manual_seed(seed)
    return MLP().eval()


def example(rows: int = 2) -> torch.Tensor:
    return torch.linspace(-1, 1, rows * 8).reshape(rows, 8)


def eager(model: torch.nn.Module, *args):
    with torch.no_grad():
        return model(*args)


@pytest.fixture(autouse=True)
def _no_home_cache(tmp_path, monkeypatch):
    """Whatever a test forgets to pass, nothing lands in ~/.cache."""
    monkeypatch.setenv("LOWERLINE_CACHE_DIR", str(tmp_path / "default-cache"))
    monkeypatch.delenv("LOWERLINE_CACHE_MAX_BYTES", raising=False)


def _entries(cache_dir) -> list[str]:
    folder = os.path.join(cache_dir, "v1")
    return sorted(os.listdir(folder)) if os.path.isdir(folder) else []


# -- a new process ------------------------------------------------------------

CHILD = """
import json, sys
sys.path.insert(0, {tests!r})
import torch
import lowerline
from lowerline.driver import workers
from lowerline.frontend import export
from test_compile_cache import eager, example, make_model

# The key hashes lowerline's own source: pin it, so that a file saved while
# the test runs does not make these processes disagree on the key.
export.tool_versions = lambda: "pinned by test_compile_cache"

model, x = make_model(), example()
compiled = lowerline.compile(model, x, cache_dir=sys.argv[1])
difference = (compiled(x) - eager(model, x)).abs().max().item()
print(json.dumps({{"hit": compiled.cache_hit, "jobs": dict(workers.jobs),
                  "difference": difference, "entry": compiled.artifacts_dir}}))
"""


def _start_child(cache_dir: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOWERLINE_")}
    env["LOWERLINE_CACHE_KEY"] = os.environ["LOWERLINE_CACHE_KEY"]  # this user's key
    return subprocess.Popen(
        [sys.executable, "-c", CHILD.format(tests=TESTS), cache_dir],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _result(child: subprocess.Popen) -> dict:
    out, err = child.communicate(timeout=300)
    assert child.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def raced_cache(tmp_path_factory) -> tuple[str, list[dict]]:
    """Three processes that compile the same model into one empty cache at once."""
    cache_dir = str(tmp_path_factory.mktemp("raced"))
    children = [_start_child(cache_dir) for _ in range(3)]
    return cache_dir, [_result(child) for child in children]


def test_three_processes_compiling_at_once_all_succeed_into_one_entry(raced_cache):
    cache_dir, results = raced_cache
    for result in results:
        assert result["difference"] < 1e-5
    assert len({result["entry"] for result in results}) == 1
    (key,) = _entries(cache_dir)
    assert Cache.at(cache_dir).lookup(key) is not None  # intact: every digest matches
    # No half-built workspace is left behind.
    assert os.listdir(os.path.join(cache_dir, "tmp")) == []


def test_second_compile_in_a_new_process_runs_no_worker_job(raced_cache):
    cache_dir, _ = raced_cache
    result = _result(_start_child(cache_dir))
    assert result["hit"] is True
    # The import worker was started ahead of the export (ImportWorker.prestart),
    # but neither it nor a compile worker got a job: no pass ran.
    assert result["jobs"] == {}
    assert result["difference"] < 1e-5


# -- the key ---------------------------------------------------------------------


def test_changing_a_weight_in_place_compiles_anew_and_is_never_stale(tmp_path):
    model, x = make_model(), example()
    first = lowerline.compile(model, x, cache_dir=tmp_path)
    before = eager(model, x)
    with torch.no_grad():
        model.fc2.bias[0] += 1.0
    after = eager(model, x)
    assert not torch.allclose(before, after)

    launched = workers.jobs["compile"]
    second = lowerline.compile(model, x, cache_dir=tmp_path)
    assert not second.cache_hit
    assert workers.jobs["compile"] == launched + 1
    torch.testing.assert_close(second(x), after)
    assert len(_entries(tmp_path)) == 2
    # A compiled module holds the weights it was compiled with ...
    torch.testing.assert_close(first(x), before)
    # ... and does not mix them with the changed ones in a new specialization.
    with pytest.raises(RuntimeError, match="weights changed since lowerline"):
        first(example(rows=3))


class Scale(torch.nn.Module):
    def forward(self, x):
        return x * 2


def test_key_covers_input_shapes_dtypes_and_options(tmp_path):
    model, x = make_model(), example()
    assert not lowerline.compile(model, x, cache_dir=tmp_path).cache_hit
    assert lowerline.compile(model, x, cache_dir=tmp_path).cache_hit
    assert lowerline.compile(make_model(), x, cache_dir=tmp_path).cache_hit  # equal weights
    wider = lowerline.compile(model, example(rows=5), cache_dir=tmp_path)
    assert not wider.cache_hit
    torch.testing.assert_close(wider(example(rows=5)), eager(model, example(rows=5)))
    assert not lowerline.compile(model, x, cache_dir=tmp_path, widen_i1=False).cache_hit

    single = lowerline.compile(Scale(), torch.ones(3), cache_dir=tmp_path)
    double = lowerline.compile(Scale(), torch.ones(3, dtype=torch.float64), cache_dir=tmp_path)
    assert not double.cache_hit
    assert double(torch.ones(3, dtype=torch.float64)).dtype == torch.float64
    assert single.artifacts_dir != double.artifacts_dir
    assert len(_entries(tmp_path)) == 5


def test_key_covers_target_and_host_cpu(monkeypatch):
    program = export_program(make_model(), (example(),))
    key = cache_key(program, "{}", "cpu")
    assert key == cache_key(export_program(make_model(), (example(),)), "{}", "cpu")
    assert key != cache_key(program, "{}", "nvptx")
    assert key != cache_key(program, '{"widen_i1": false}', "cpu")
    monkeypatch.setattr(export, "host_cpu", lambda: "x86_64|another cpu|sse2")
    assert key != cache_key(program, "{}", "cpu")


# -- damaged entries ---------------------------------------------------------------


def _truncate_library(entry: str) -> None:
    library = os.path.join(entry, "lib.so")
    with open(library, "rb") as handle:
        data = handle.read()
    # A new file, as a crash half way through writing it leaves: truncating the
    # file in place would also truncate the copy this process has mapped.
    os.remove(library)
    with open(library, "wb") as handle:
        handle.write(data[: len(data) // 2])


def _garble_meta(entry: str) -> None:
    with open(os.path.join(entry, "meta.json"), "w", encoding="utf-8") as handle:
        handle.write('{"entry": "main", "files": {"lib.so": ')


def _forget_library(entry: str) -> None:
    path = os.path.join(entry, "meta.json")
    with open(path, encoding="utf-8") as handle:
        meta = json.load(handle)
    del meta["files"]["lib.so"]
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(meta, handle)


@pytest.mark.parametrize("damage", [_truncate_library, _garble_meta, _forget_library])
def test_damaged_entry_is_rebuilt_never_loaded(tmp_path, damage):
    model, x = make_model(), example()
    entry = lowerline.compile(model, x, cache_dir=tmp_path).artifacts_dir
    damage(entry)
    key = os.path.basename(entry)

    launched = workers.jobs["compile"]
    again = lowerline.compile(model, x, cache_dir=tmp_path)
    assert not again.cache_hit
    assert workers.jobs["compile"] == launched + 1
    assert again.artifacts_dir == entry
    torch.testing.assert_close(again(x), eager(model, x))
    assert Cache.at(str(tmp_path)).lookup(key) is not None  # rebuilt, intact
    assert lowerline.compile(model, x, cache_dir=tmp_path).cache_hit


# -- where the cache is, how big, clearing it -------------------------------------


def test_cache_folder_comes_from_the_environment_unless_given(tmp_path, monkeypatch):
    monkeypatch.setenv("LOWERLINE_CACHE_DIR", str(tmp_path / "from-env"))
    model, x = make_model(), example()
    compiled = lowerline.compile(model, x)
    assert compiled.artifacts_dir.startswith(str(tmp_path / "from-env" / "v1"))
    given = lowerline.compile(model, x, cache_dir=tmp_path / "given")
    assert given.artifacts_dir.startswith(str(tmp_path / "given" / "v1"))
    assert not given.cache_hit


def _size(folder: str) -> int:
    return sum(
        os.path.getsize(os.path.join(root, name))
        for root, _, names in os.walk(folder)
        for name in names
    )


def test_size_limit_evicts_least_recently_used_entries(tmp_path, monkeypatch):
    x = example()
    models = [make_model(seed) for seed in range(3)]
    first = lowerline.compile(models[0], x, cache_dir=tmp_path)
    size = _size(first.artifacts_dir)
    monkeypatch.setenv("LOWERLINE_CACHE_MAX_BYTES", str(int(size * 2.5)))
    second = lowerline.compile(models[1], x, cache_dir=tmp_path)
    assert len(_entries(tmp_path)) == 2
    # Last uses long ago, the first before the second; then a hit on the first.
    now = time.time()
    os.utime(os.path.join(first.artifacts_dir, "meta.json"), (now - 200, now - 200))
    os.utime(os.path.join(second.artifacts_dir, "meta.json"), (now - 100, now - 100))
    assert lowerline.compile(models[0], x, cache_dir=tmp_path).cache_hit  # used last now
    third = lowerline.compile(models[2], x, cache_dir=tmp_path)
    assert not os.path.exists(second.artifacts_dir)  # least recently used: evicted
    assert os.path.exists(first.artifacts_dir) and os.path.exists(third.artifacts_dir)
    # A library that is loaded keeps working after its entry is evicted.
    torch.testing.assert_close(second(x), eager(models[1], x))

    # Even an entry larger than the limit is kept until it is loaded.
    monkeypatch.setenv("LOWERLINE_CACHE_MAX_BYTES", "1")
    fourth = lowerline.compile(make_model(3), x, cache_dir=tmp_path)
    torch.testing.assert_close(fourth(x), eager(make_model(3), x))
    assert _entries(tmp_path) == [os.path.basename(fourth.artifacts_dir)]


def test_bad_size_limit_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("LOWERLINE_CACHE_MAX_BYTES", "4G")
    with pytest.raises(ValueError, match="LOWERLINE_CACHE_MAX_BYTES must be a number of bytes"):
        Cache.at("/nonexistent")


def test_clear_empties_the_cache_but_not_running_builds(tmp_path):
    model, x = make_model(), example()
    lowerline.compile(model, x, cache_dir=tmp_path)
    os.makedirs(tmp_path / "failures")
    (tmp_path / "failures" / "llvm-1.mlir").write_text("module {}\n")
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # After the live one: a new workspace removes the folders of dead processes itself.
    live = Cache.at(str(tmp_path)).new_workspace()
    os.makedirs(tmp_path / "tmp" / f"build-{dead}-abandoned")

    cleared = Cache.at(str(tmp_path)).clear()
    assert len(cleared.entries) == 1
    assert cleared.reproducers == [str(tmp_path / "failures" / "llvm-1.mlir")]
    assert cleared.workspaces == [str(tmp_path / "tmp" / f"build-{dead}-abandoned")]
    assert _entries(tmp_path) == []
    assert not os.path.exists(tmp_path / "failures")
    assert os.listdir(tmp_path / "tmp") == [os.path.basename(live)]
    assert not lowerline.compile(model, x, cache_dir=tmp_path).cache_hit


def test_without_cache_the_artifacts_go_with_the_compiled_module(tmp_path):
    model, x = make_model(), example()
    compiled = lowerline.compile(model, x, cache=False)
    folder = compiled.artifacts_dir
    assert not folder.startswith(str(tmp_path))
    torch.testing.assert_close(compiled(x), eager(model, x))
    assert os.path.exists(folder)
    del compiled
    gc.collect()
    assert not os.path.exists(folder)
