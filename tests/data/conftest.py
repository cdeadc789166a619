"""Fixtures of the data tests: the shared folder of real data sets."""

import pytest

from tests.data.loader_files import SHARED_DATA


@pytest.fixture(scope="module")
def shared_data():
    """The shared data folder, or a skip when this checkout has none."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data folder not found: {SHARED_DATA}")
    return SHARED_DATA
