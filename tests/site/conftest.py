"""The checks on the built site need it: without ``nox -s docs`` they fail at once."""

from __future__ import annotations

from pathlib import Path

import pytest
from sitecheck import HTML, built


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    if built() or not any(here in item.path.parents for item in items):
        return
    pytest.exit(
        f"the site checks in {here} need the built site ({HTML}/en and {HTML}/zh_CN): "
        "run `nox -s docs`, which builds it and then runs them",
        returncode=1,
    )
