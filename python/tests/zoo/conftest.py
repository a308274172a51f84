"""Fixtures of the model zoo: one compile cache for the whole session."""

import pytest


@pytest.fixture(scope="session")
def zoo_cache(tmp_path_factory) -> str:
    """Shared by every zoo case, so a model compiled twice in a session compiles once."""
    return str(tmp_path_factory.mktemp("zoo-cache"))
