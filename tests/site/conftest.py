"""The checks on the built site are skipped until ``nox -s docs`` has built it."""

from __future__ import annotations

from pathlib import Path

import pytest
from sitecheck import built


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if built():
        return
    skip = pytest.mark.skip(reason="site not built; run `nox -s docs`")
    here = Path(__file__).parent
    for item in items:
        if here in item.path.parents:
            item.add_marker(skip)
