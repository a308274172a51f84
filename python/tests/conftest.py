"""Fixtures for every test: nothing a test compiles lands in ~/.cache, and
every lowerline pass's output is checked against the attribute protocol."""

import os
import tempfile

import pytest

# Set at import, before any compile worker starts: workers inherit it.
os.environ["LOWERLINE_CHECK_PROTOCOL"] = "1"
# The cache's HMAC key (lowerline.driver.cache): one per test run, never the
# user's ~/.config/lowerline/cache.key; child processes inherit it.
os.environ["LOWERLINE_CACHE_KEY"] = os.path.join(
    tempfile.mkdtemp(prefix="lowerline-test-key-"), "cache.key"
)

# Teams of the compiled size (lowerline.runtime.teams sizes them by the
# machine's load by default): multithreaded code runs its 2-thread paths
# whatever else the machine runs. test_omp_teams.py tests the default.
os.environ.setdefault("LOWERLINE_OMP_TEAMS", "fixed")


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("cache"))


@pytest.fixture(autouse=True)
def _no_home_cache(cache_dir, monkeypatch):
    """Whatever a test forgets to pass goes to its module's cache folder."""
    monkeypatch.setenv("LOWERLINE_CACHE_DIR", cache_dir)
