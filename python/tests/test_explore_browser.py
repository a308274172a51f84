"""The explorer's page in a real browser: headless chromium through Selenium
and the system's chromedriver (tools/apt-packages.txt installs both; Selenium
cannot download a driver here).

Without the browser the tests fail under CI (``$CI`` set) and skip elsewhere.
A screenshot of each page is written under pytest's temporary folder, and
kept in ``$LOWERLINE_TEST_ARTIFACTS`` when that is set.
"""

from __future__ import annotations

import os
import shutil

import pytest
import torch
from test_explore import ADD_RELU
from test_explore_roofline import _two_layers

import lowerline
from lowerline.explore import browser, report
from lowerline.tools import opt


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    reason = browser.missing()
    if reason is not None:
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    chromium = browser.headless(str(tmp_path_factory.mktemp("chromium-profile")))
    yield chromium
    chromium.quit()


def _explore_mlir(tmp_path, pipeline: str) -> str:
    source = tmp_path / "add_relu.mlir"
    source.write_text(ADD_RELU)
    report = str(tmp_path / "report.html")
    code = opt.main(
        [str(source), f"--pass-pipeline={pipeline}", "--explore", report, "-o", os.devnull]
    )
    assert code == 0
    return report


def _open(driver, path: str) -> None:
    browser.console_errors(driver)  # drop what earlier pages logged
    browser.open_page(driver, path)


def _screenshot(driver, tmp_path, name: str) -> None:
    shot = tmp_path / f"{name}.png"
    assert driver.save_screenshot(str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    keep = os.environ.get("LOWERLINE_TEST_ARTIFACTS")
    if keep:
        os.makedirs(keep, exist_ok=True)
        shutil.copy(shot, keep)


def _timeline_labels(driver) -> list[str]:
    rows = driver.find_elements("css selector", "#timeline .pass-row .name")
    return [r.get_attribute("textContent") for r in rows]


def _ir_lines(driver, kind: str = "") -> list[str]:
    rows = driver.find_elements("css selector", f"#ir .line{kind} .code")
    return [r.get_attribute("textContent") for r in rows]


def test_cpu_pipeline_page_loads_lists_every_pass_and_moves_between_them(driver, tmp_path):
    page = _explore_mlir(tmp_path, "builtin.module(lowerline-cpu-pipeline)")
    data = report.read_page(page)
    _open(driver, page)
    assert browser.console_errors(driver) == []
    # The timeline lists every pass, in order.
    assert _timeline_labels(driver) == [p["label"] for p in data["passes"]]
    assert len(data["passes"]) > 20
    # Moving to the next pass shows that pass's IR.
    for step in range(1, 4):
        driver.find_element("id", "next").click()
        title = driver.find_element("id", "ir-title").text
        assert title.startswith(f"#{step} ")
        assert data["passes"][step]["label"] in title
        expected = report.page_text(data, data["passes"][step]["text"])
        assert _ir_lines(driver, ":not(.del)") == expected
    # Clicking the last pass's row shows the LLVM dialect.
    rows = driver.find_elements("css selector", "#timeline .pass-row")
    rows[-1].click()
    assert any("llvm.func" in line for line in _ir_lines(driver))
    assert not any("linalg.add" in line for line in _ir_lines(driver, ":not(.del)"))
    # The arena plan is drawn: one rectangle per planned buffer.
    buffers = driver.find_elements("css selector", "#memory svg rect.buffer")
    assert len(buffers) == len(data["memory"]["buffers"]) > 0
    assert browser.console_errors(driver) == []
    _screenshot(driver, tmp_path, "cpu-pipeline")


def test_diff_marks_the_lines_a_known_pass_changed(driver, tmp_path):
    pipeline = "builtin.module(func.func(linalg-generalize-named-ops),canonicalize)"
    page = _explore_mlir(tmp_path, pipeline)
    _open(driver, page)
    labels = _timeline_labels(driver)
    assert labels == ["(input)", "func.func(linalg-generalize-named-ops)", "canonicalize"]
    driver.find_elements("css selector", "#timeline .pass-row")[1].click()
    added, removed = _ir_lines(driver, ".add"), _ir_lines(driver, ".del")
    # The named ops are gone and linalg.generic stands in their place ...
    assert sum("linalg.add" in line for line in removed) == 1
    assert sum("linalg.max" in line for line in removed) == 1
    assert sum("linalg.generic" in line for line in added) == 3  # add, fill, max
    # ... and the lines the pass left alone are not marked.
    unmarked = _ir_lines(driver, ":not(.add):not(.del)")
    assert any(line.strip().startswith("func.func @add_relu") for line in unmarked)
    assert not any("linalg.generic" in line for line in unmarked)
    # Hiding removed lines leaves the pass's output only.
    driver.find_element("id", "show-removed").click()
    assert _ir_lines(driver, ".del") == []
    assert browser.console_errors(driver) == []


def test_search_fold_and_source_link(driver, tmp_path):
    page = _explore_mlir(tmp_path, "builtin.module(lowerline-cpu-pipeline)")
    _open(driver, page)
    search = driver.find_element("id", "search")
    search.send_keys("linalg.max")
    hits = driver.find_elements("css selector", "#timeline .pass-row.hit")
    assert hits, "the passes whose IR holds linalg.max are marked"
    assert driver.find_elements("css selector", "#ir .line.match")
    # Folding the function hides its body.
    before = len(driver.find_elements("css selector", "#ir .line:not(.hidden)"))
    driver.find_element("css selector", "#ir .fold[data-fold='1']").click()
    after = len(driver.find_elements("css selector", "#ir .line:not(.hidden)"))
    assert after < before
    # An op's source link shows its line of the input file.
    driver.find_element("css selector", "#ir .fold[data-fold='1']").click()  # unfold
    link = driver.find_elements("css selector", "#ir .line .src")[-1]
    where = link.get_attribute("data-where")
    line = int(where.rsplit(":", 1)[1])
    link.click()
    target = driver.find_element("css selector", "#source .target").get_attribute("textContent")
    assert target.endswith(ADD_RELU.split("\n")[line - 1])
    assert browser.console_errors(driver) == []


def test_numerics_and_remarks_tables(driver, tmp_path):
    trace = {
        "passes": [
            {"stage": "input", "label": "(input)", "seconds": 0.0, "ir": "module {\n}"},
            {"stage": "graph", "label": "cse", "seconds": 0.001, "ir": None},
        ]
    }
    rows = [
        {
            "stage": "library",
            "output": "#0 float32[3, 5]",
            "max_abs_diff": 2e-7,
            "tolerance": "rtol=0.0001, atol=1e-05",
            "ok": True,
        },
        {
            "stage": "library",
            "output": "#1 float32[3]",
            "max_abs_diff": "nan",
            "tolerance": "rtol=0.0001, atol=1e-05",
            "ok": False,
        },
    ]
    remark = {
        "pass_flag": "lowerline-vectorize",
        "op": "linalg.generic",
        "message": "left as loops: a gather",
        "kind": "fallback",
        "frames": ["/m.py:3:0"],
    }
    page = report.write_report(
        str(tmp_path / "n.html"), trace, report.ExploreData("t", [remark], rows)
    )
    _open(driver, page)
    assert browser.console_errors(driver) == []
    cells = [c.text for c in driver.find_elements("css selector", "#numerics td")]
    assert cells[-1] == "outside" and "ok" in cells
    fallback = driver.find_element("css selector", "#remarks td.kind-fallback")
    assert fallback.text == "fallback"
    assert driver.find_element("css selector", "#ir-title").text.startswith("#0 input")


def test_the_quantization_table_marks_layers_over_one_step(driver, tmp_path):
    trace = {
        "passes": [{"stage": "input", "label": "(input)", "seconds": 0.0, "ir": "module {\n}"}]
    }
    layer = {"kind": "linear", "output_scale": 0.02, "batches": 4}
    quantization = {
        "layers": [
            {**layer, "name": "first", "kernel": "linalg.matmul i8", "max_steps": 0.5},
            {**layer, "name": "second", "kernel": "float", "max_steps": 1.5},
        ],
        "skipped": ["head"],
        "max_abs_error": 0.01,
        "mean_abs_error": 0.002,
        "float_max_abs": 3.0,
        "max_abs_error_vs_qdq": 0.001,
        "calibrate_seconds": 0.2,
        "ok": False,
    }
    data = report.ExploreData("t", quantization=quantization)
    _open(driver, report.write_report(str(tmp_path / "q.html"), trace, data))
    assert browser.console_errors(driver) == []
    rows = driver.find_elements("css selector", "#quantization tr")
    cells = [[c.text for c in row.find_elements("css selector", "td")] for row in rows]
    cells = [row for row in cells if row]
    assert [row[0] for row in cells] == ["first", "second"]
    assert [row[-1] for row in cells] == ["ok", "over one step"]
    assert "left in float: head" in driver.find_element("css selector", "#quantization").text
    _screenshot(driver, tmp_path, "quantization")


def test_the_divergent_pass_is_marked_and_shown(driver, tmp_path):
    module = "module {\n  func.func @f() {\n    return\n  }\n}"
    trace = {
        "passes": [
            {"stage": "input", "label": "(input)", "seconds": 0.0, "ir": module},
            {"stage": "graph", "label": "canonicalize", "seconds": 0.001, "ir": None},
            {
                "stage": "graph",
                "label": "test-break",
                "seconds": 0.002,
                "ir": module.replace("return", "func.return"),
            },
            {"stage": "tiled", "label": "cse", "seconds": 0.001, "ir": None},
        ]
    }
    divergence = {
        "stage": "graph",
        "label": "test-break",
        "op": "func.return",
        "mismatch": "output #0: 1.0 where eager torch gives 0.0",
        "before": "b.mlir",
        "after": "a.mlir",
        "command": "lowerline-opt b.mlir --pass-pipeline='builtin.module(test-break)'",
    }
    data = report.ExploreData("t", bisection={"divergence": divergence})
    page = report.write_report(str(tmp_path / "b.html"), trace, data)
    _open(driver, page)
    assert browser.console_errors(driver) == []
    diverged = driver.find_elements("css selector", "#timeline .pass-row.diverged")
    assert [row.get_attribute("data-index") for row in diverged] == ["2"]
    assert driver.find_element("id", "ir-title").text.startswith("#2 graph / test-break")
    banner = driver.find_element("id", "bisection").text
    assert "first divergent pass: test-break (stage graph)" in banner
    assert "reproduce: lowerline-opt b.mlir" in banner


def test_the_roofline_has_one_dot_per_timed_kernel(driver, tmp_path):
    torch.manual_seed(0)
    compiled = lowerline.compile(
        _two_layers().eval(), torch.randn(3, 7), cache_dir=str(tmp_path / "c")
    )
    page = compiled.explore(str(tmp_path / "roofline.html"))
    kernels = report.read_page(page)["roofline"]["kernels"]
    _open(driver, page)
    assert browser.console_errors(driver) == []
    dots = driver.find_elements("css selector", "#roofline svg.roofline circle.kernel")
    assert len(dots) == len([k for k in kernels if k["intensity"] and k["flops"]]) > 0
    assert driver.find_elements("css selector", "#roofline svg.roofline polyline.peak")
    tips = [d.find_element("css selector", "title").get_attribute("textContent") for d in dots]
    assert all(t.startswith("kernel #") and "GFLOP/s" in t for t in tips)
    rows = driver.find_elements("css selector", "#roofline table tr")
    assert len(rows) == 1 + len(kernels)  # the header, a row per kernel
    driver.execute_script("document.getElementById('roofline').scrollIntoView()")
    _screenshot(driver, tmp_path, "roofline")
