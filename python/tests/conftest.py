"""Fixtures for every test: nothing a test compiles lands in ~/.cache."""

import pytest


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("cache"))


@pytest.fixture(autouse=True)
def _no_home_cache(cache_dir, monkeypatch):
    """Whatever a test forgets to pass goes to its module's cache folder."""
    monkeypatch.setenv("LOWERLINE_CACHE_DIR", cache_dir)
