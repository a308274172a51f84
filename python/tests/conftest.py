"""Fixtures for every test: nothing a test compiles lands in ~/.cache, and
every lowerline pass's output is checked against the attribute protocol."""

import os

import pytest

# Set at import, before any compile worker starts: workers inherit it.
os.environ["LOWERLINE_CHECK_PROTOCOL"] = "1"


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("cache"))


@pytest.fixture(autouse=True)
def _no_home_cache(cache_dir, monkeypatch):
    """Whatever a test forgets to pass goes to its module's cache folder."""
    monkeypatch.setenv("LOWERLINE_CACHE_DIR", cache_dir)
