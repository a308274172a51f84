"""The explorer's page in a real browser: headless chromium through Selenium
and the system's chromedriver (tools/apt-packages.txt installs both; Selenium
cannot download a driver here).

Without the browser the tests fail under CI (``$CI`` set) and skip elsewhere.
A screenshot of each page is written under pytest's temporary folder, and
kept in ``$LOWERLINE_TEST_ARTIFACTS`` when that is set.
"""

from __future__ import annotations

import json
import os
import re
import shutil

import pytest

from lowerline.tools import opt

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"

ADD_RELU = """\
func.func @add_relu(%a: tensor<5x7xf32>, %b: tensor<5x7xf32>) -> tensor<5x7xf32> {
  %e = tensor.empty() : tensor<5x7xf32>
  %0 = linalg.add ins(%a, %b : tensor<5x7xf32>, tensor<5x7xf32>) outs(%e : tensor<5x7xf32>) -> tensor<5x7xf32>
  %c = arith.constant 0.0 : f32
  %z = linalg.fill ins(%c : f32) outs(%e : tensor<5x7xf32>) -> tensor<5x7xf32>
  %1 = linalg.max ins(%0, %z : tensor<5x7xf32>, tensor<5x7xf32>) outs(%e : tensor<5x7xf32>) -> tensor<5x7xf32>
  return %1 : tensor<5x7xf32>
}
"""


def _missing(what: str) -> None:
    message = f"{what}: tools/dev.sh installs it (tools/apt-packages.txt, the test extras)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.path.exists(path):
            _missing(f"no {path}")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        _missing("selenium is not installed")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = tmp_path_factory.mktemp("chromium-profile")
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--window-size=1400,1000",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


def _page_data(path: str) -> dict:
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    found = re.search(
        r'<script id="lowerline-data" type="application/json">(.*?)</script>', text, re.S
    )
    assert found, "the page holds no data element"
    return json.loads(found[1])


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
    driver.get_log("browser")  # drop what earlier pages logged
    driver.get("file://" + path)
    assert driver.execute_script("return document.body.dataset.ready") == "1"


def _console_errors(driver) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


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


def test_cpu_pipeline_page_loads_lists_every_pass_and_moves_between_them(browser, tmp_path):
    report = _explore_mlir(tmp_path, "builtin.module(lowerline-cpu-pipeline)")
    data = _page_data(report)
    _open(browser, report)
    assert _console_errors(browser) == []
    # The timeline lists every pass, in order.
    assert _timeline_labels(browser) == [p["label"] for p in data["passes"]]
    assert len(data["passes"]) > 20
    # Moving to the next pass shows that pass's IR.
    for step in range(1, 4):
        browser.find_element("id", "next").click()
        title = browser.find_element("id", "ir-title").text
        assert title.startswith(f"#{step} ")
        assert data["passes"][step]["label"] in title
        expected = data["texts"][data["passes"][step]["text"]]["lines"]
        assert _ir_lines(browser, ":not(.del)") == expected
    # Clicking the last pass's row shows the LLVM dialect.
    rows = browser.find_elements("css selector", "#timeline .pass-row")
    rows[-1].click()
    assert any("llvm.func" in line for line in _ir_lines(browser))
    assert not any("linalg.add" in line for line in _ir_lines(browser, ":not(.del)"))
    # The arena plan is drawn: one rectangle per planned buffer.
    buffers = browser.find_elements("css selector", "#memory svg rect.buffer")
    assert len(buffers) == len(data["memory"]["buffers"]) > 0
    assert _console_errors(browser) == []
    _screenshot(browser, tmp_path, "cpu-pipeline")


def test_diff_marks_the_lines_a_known_pass_changed(browser, tmp_path):
    pipeline = "builtin.module(func.func(linalg-generalize-named-ops),canonicalize)"
    report = _explore_mlir(tmp_path, pipeline)
    _open(browser, report)
    labels = _timeline_labels(browser)
    assert labels == ["(input)", "func.func(linalg-generalize-named-ops)", "canonicalize"]
    browser.find_elements("css selector", "#timeline .pass-row")[1].click()
    added, removed = _ir_lines(browser, ".add"), _ir_lines(browser, ".del")
    # The named ops are gone and linalg.generic stands in their place ...
    assert sum("linalg.add" in line for line in removed) == 1
    assert sum("linalg.max" in line for line in removed) == 1
    assert sum("linalg.generic" in line for line in added) == 3  # add, fill, max
    # ... and the lines the pass left alone are not marked.
    unmarked = _ir_lines(browser, ":not(.add):not(.del)")
    assert any(line.strip().startswith("func.func @add_relu") for line in unmarked)
    assert not any("linalg.generic" in line for line in unmarked)
    # Hiding removed lines leaves the pass's output only.
    browser.find_element("id", "show-removed").click()
    assert _ir_lines(browser, ".del") == []
    assert _console_errors(browser) == []


def test_search_fold_and_source_link(browser, tmp_path):
    report = _explore_mlir(tmp_path, "builtin.module(lowerline-cpu-pipeline)")
    _open(browser, report)
    search = browser.find_element("id", "search")
    search.send_keys("linalg.max")
    hits = browser.find_elements("css selector", "#timeline .pass-row.hit")
    assert hits, "the passes whose IR holds linalg.max are marked"
    assert browser.find_elements("css selector", "#ir .line.match")
    # Folding the function hides its body.
    before = len(browser.find_elements("css selector", "#ir .line:not(.hidden)"))
    browser.find_element("css selector", "#ir .fold[data-fold='1']").click()
    after = len(browser.find_elements("css selector", "#ir .line:not(.hidden)"))
    assert after < before
    # An op's source link shows its line of the input file.
    browser.find_element("css selector", "#ir .fold[data-fold='1']").click()  # unfold
    link = browser.find_elements("css selector", "#ir .line .src")[-1]
    where = link.get_attribute("data-where")
    line = int(where.rsplit(":", 1)[1])
    link.click()
    target = browser.find_element("css selector", "#source .target").get_attribute("textContent")
    assert target.endswith(ADD_RELU.split("\n")[line - 1])
    assert _console_errors(browser) == []
