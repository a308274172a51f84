"""How long the explorer's page takes to open in headless chromium.

For a model of the suite (``bench/models``, batch 1) or a model file, writes
the page (``CompiledModule.explore``), then opens it ``--runs`` times in one
headless chromium (a fresh profile; Debian's chromium and chromedriver) and
reports, for each run, the milliseconds from the start of navigation until
the page's script had built it (the ``lowerline-ready`` mark: JSON parsed,
timeline, tables and the first pass's IR in the DOM). Also the page's size,
its passes, and the seconds to write it. ``--screenshot`` saves the window
(the README's picture: ``docs/explore-classifier.png``).

    .venv/bin/python bench/explore_open.py transformer_encoder
    .venv/bin/python bench/explore_open.py python/lowerline/examples/classifier.py \
        --screenshot docs/explore-classifier.png --show lowerline-tile-and-fuse

Results: bench/explore.md. Never a timed assertion in a test.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH)


def _model(name: str):
    if name.endswith(".py"):
        from lowerline.driver.compile_cli import load_model_file

        return load_model_file(name)
    from models import MODELS

    return MODELS[name](1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="a name of bench/models' MODELS or a model .py file")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--page", help="where the page goes (default: a temporary file)")
    parser.add_argument("--screenshot", help="save a PNG of the page here")
    parser.add_argument("--show", help="the pass (its label) on screen for the screenshot")
    args = parser.parse_args()

    import lowerline
    from lowerline.explore import browser

    reason = browser.missing()
    if reason:
        print(f"cannot run: {reason}")
        return 1
    model, inputs = _model(args.model)
    folder = tempfile.mkdtemp(prefix="lowerline-explore-bench-")
    page = args.page or os.path.join(folder, "page.html")
    compiled = lowerline.compile(model, *inputs)
    start = time.perf_counter()
    compiled.explore(page, *inputs, title=f"{os.path.basename(args.model)} for cpu")
    written = time.perf_counter() - start
    driver = browser.headless(os.path.join(folder, "profile"))
    try:
        times = [browser.open_page(driver, page) for _ in range(args.runs)]
        errors = browser.console_errors(driver)
        passes = driver.execute_script("return DATA.passes.length")
        if args.show:
            driver.execute_script(
                "select(DATA.passes.findIndex(p => p.label === arguments[0]))", args.show
            )
        if args.screenshot:
            driver.save_screenshot(args.screenshot)
    finally:
        driver.quit()
    print(f"model: {args.model}; machine: {platform.processor() or platform.machine()}")
    size = os.path.getsize(page) / 1e6
    print(f"page: {size:.1f} MB, {passes} passes, written in {written:.1f} s")
    print(f"open (ms, navigation start to ready): {', '.join(f'{t:.0f}' for t in times)}")
    print(f"median {statistics.median(times):.0f} ms; console errors: {len(errors)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
