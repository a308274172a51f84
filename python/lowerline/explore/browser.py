"""The explorer's page in headless chromium, through Selenium and the
system's chromedriver (Debian's ``chromium`` and ``chromium-driver``, which
``tools/dev.sh`` installs; Selenium cannot download a driver here). Used by
the browser tests, the page's screenshot in ``docs/`` and
``bench/explore_open.py``. Selenium is a test extra: imported when used."""

from __future__ import annotations

import os
import shutil
from typing import Any

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
FLAGS = (
    "--headless=new",
    "--no-sandbox",  # root in containers and CI
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)


def missing() -> str | None:
    """Why no headless browser can start here, or None if one can."""
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.path.exists(path):
            return f"no {path} (tools/apt-packages.txt: chromium, chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    return None


def headless(profile: str, width: int = 1400, height: int = 1000) -> Any:
    """A headless chromium with a fresh profile folder ``profile``, its
    console logged (``driver.get_log("browser")``)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*FLAGS, f"--window-size={width},{height}", f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


def open_page(driver: Any, path: str) -> float:
    """Open the page at ``path``; returns the milliseconds from the start of
    navigation until its script had built the page (``lowerline-ready``)."""
    driver.get("file://" + os.path.abspath(path))
    if driver.execute_script("return document.body.dataset.ready") != "1":
        raise RuntimeError(f"{path}: the page's script did not finish")
    return float(
        driver.execute_script("return performance.getEntriesByName('lowerline-ready')[0].startTime")
    )


def console_errors(driver: Any) -> list[str]:
    """The console's errors since the last call."""
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
