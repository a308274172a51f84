"""Per-kernel timing and the roofline of the explorer: the timers are in
explorer builds only, every kernel has a row whose figures agree with the
counts and times it was made from, the kernels' times fit in the measured
calls, and the machine's peaks are measured once and then read from the
cache. No assertion on a timing's value: this machine is shared. The page
in a browser: test_explore_browser.py."""

from __future__ import annotations

import json

import pytest
import torch

import lowerline
from lowerline.explore import report, roofline


def _two_layers() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(7, 13), torch.nn.ReLU(), torch.nn.Linear(13, 5))


def _explore(tmp_path, batch: int) -> dict:
    torch.manual_seed(0)
    x = torch.randn(batch, 7)
    compiled = lowerline.compile(_two_layers().eval(), x, cache_dir=str(tmp_path / "cache"))
    page = compiled.explore(str(tmp_path / f"page-{batch}.html"))
    # A normal compile of the same module has no timers.
    assert "lowerline_kernel" not in compiled.ir("loops")
    return report.read_page(page)


@pytest.mark.parametrize("batch", [1, 6])
def test_every_kernel_has_a_row_that_fits_in_the_call(tmp_path, batch):
    data = _explore(tmp_path, batch)
    # The explorer's build ran the timer pass, in the loops stage.
    timers = [p for p in data["passes"] if p["label"].startswith(roofline.TIMER_PASS)]
    assert [p["stage"] for p in timers] == ["loops"]
    # The stage numerics JIT-run the loops stage's IR, timer calls and all.
    assert [r["stage"] for r in data["numerics"] if r["ok"]][3:5] == ["loops", "llvm"]
    found = data["roofline"]
    rows, wall = found["kernels"], found["wall_ns"]
    assert [row["index"] for row in rows] == list(range(len(rows))) and rows
    # The two matmuls' multiply-adds are counted, each kernel once.
    assert sum(row["flop"] for row in rows) >= 2 * batch * (7 * 13 + 13 * 5)
    for row in rows:
        assert row["ns"] > 0 and row["bytes"] > 0
        assert row["runs"] == found["calls"]  # once in each timed call
        assert row["flops"] == pytest.approx(row["flop"] / (row["ns"] / 1e9))
        assert row["bytes_per_s"] == pytest.approx(row["bytes"] / (row["ns"] / 1e9))
        roof = min(found["peak"]["flops"], row["intensity"] * found["peak"]["bytes_per_s"])
        assert row["fraction"] == pytest.approx(row["flops"] / roof)
    # Each kernel's time is a mean over the timed calls, inside each call:
    # together they take less than the slowest call.
    assert 0 < wall[0] <= wall[1]
    assert sum(row["ns"] for row in rows) <= wall[1]


def test_peaks_are_measured_once_per_machine_and_thread_count(tmp_path):
    measured = []

    def measure(threads: int) -> dict:
        measured.append(threads)
        return {"flops": 1e9 * threads, "bytes_per_s": 1e8, "how": "test"}

    first = roofline.peaks(str(tmp_path), 2, measure)
    again = roofline.peaks(str(tmp_path), 2, measure)
    other = roofline.peaks(str(tmp_path), 1, measure)
    assert measured == [2, 1]
    assert (first["cached"], again["cached"], other["cached"]) == (False, True, False)
    assert again["flops"] == first["flops"] == 2e9 and other["flops"] == 1e9
    assert len(json.loads((tmp_path / roofline.PEAKS_FILE).read_text())) == 2


def test_a_damaged_peaks_file_is_measured_again(tmp_path):
    (tmp_path / roofline.PEAKS_FILE).write_text("{not json")
    found = roofline.peaks(str(tmp_path), 1, lambda t: {"flops": 1.0, "bytes_per_s": 1.0})
    assert found["cached"] is False
    assert roofline.peaks(str(tmp_path), 1, lambda t: {})["cached"] is True


def test_the_second_explore_reads_the_cached_peaks(tmp_path, monkeypatch):
    monkeypatch.setenv("LOWERLINE_CACHE_DIR", str(tmp_path / "user-cache"))
    first = _explore(tmp_path / "one", 2)["roofline"]["peak"]
    second = _explore(tmp_path / "two", 2)["roofline"]["peak"]
    assert (first["cached"], second["cached"]) == (False, True)
    assert second["flops"] == first["flops"] and second["key"] == first["key"]
    assert (tmp_path / "user-cache" / roofline.PEAKS_FILE).exists()


def test_kernel_remarks_parse_and_others_are_ignored():
    remarks = [
        {
            "pass_flag": roofline.TIMER_PASS,
            "op": "scf.for",
            "message": "kernel 1: ? flop, 64 bytes",
        },
        {
            "pass_flag": roofline.TIMER_PASS,
            "op": "scf.forall",
            "message": "kernel 0: 10 flop, 8 bytes",
            "frames": ["/m.py:3:0", "/m.py:9:0"],
        },
        {
            "pass_flag": "lowerline-vectorize",
            "op": "linalg.generic",
            "message": "kernel 5: 1 flop, 1 bytes",
        },
    ]
    found = roofline.kernels(remarks)
    assert [(k["index"], k["flop"], k["bytes"], k["source"]) for k in found] == [
        (0, 10, 8, "/m.py:9:0"),
        (1, None, 64, ""),
    ]
    timing = {"kernel_ns": [1000.0, 500.0], "kernel_calls": [3, 3]}
    rows = roofline.rows(found, timing, {"flops": 1e12, "bytes_per_s": 1e9})
    assert rows[0]["intensity"] == 10 / 8 and rows[0]["fraction"] == pytest.approx(1e7 / 1.25e9)
    assert rows[1]["flops"] is None and rows[1]["fraction"] is None
