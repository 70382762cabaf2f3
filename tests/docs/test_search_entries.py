"""docs/_ext/search_entries.py: an incremental build keeps every page's index entries."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

EXT = Path(__file__).parents[2] / "docs" / "_ext"


def index_entries(html: Path) -> set[str]:
    text = (html / "searchindex.js").read_text(encoding="utf-8")
    return set(json.loads(text[text.index("(") + 1 : text.rindex(")")])["indexentries"])


def build_twice(tmp_path: Path, extensions: list[str]) -> tuple[set[str], set[str]]:
    """Build a two-page project, edit one page, build again; the entries after each."""
    source = tmp_path / "source"
    source.mkdir()
    (source / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(EXT)!r})\nextensions = {extensions!r}\n",
        encoding="utf-8",
    )
    (source / "index.rst").write_text(
        "Home\n====\n\n.. toctree::\n\n   hooks\n   handles\n", encoding="utf-8"
    )
    (source / "hooks.rst").write_text(
        "Hooks\n=====\n\n.. index:: register_forward_hook\n\nForward hooks.\n", encoding="utf-8"
    )
    (source / "handles.rst").write_text(
        "Handles\n=======\n\n.. index:: remove hook\n\nHandles.\n", encoding="utf-8"
    )
    html = tmp_path / "html"
    command = [sys.executable, "-m", "sphinx", "-q", "-W", "-b", "html", str(source), str(html)]
    subprocess.run(command, check=True)
    first = index_entries(html)
    (source / "handles.rst").write_text(
        "Handles\n=======\n\n.. index:: remove hook\n\nHandles, edited.\n", encoding="utf-8"
    )
    subprocess.run(command, check=True)
    return first, index_entries(html)


def test_an_incremental_build_keeps_the_entries_of_the_pages_it_does_not_write(
    tmp_path: Path,
) -> None:
    first, second = build_twice(tmp_path, ["search_entries"])
    assert first == {"register_forward_hook", "remove hook"}
    assert second == first


def test_without_it_sphinx_loses_them(tmp_path: Path) -> None:
    # sphinx-doc/sphinx#12599: when this fails, Sphinx keeps the entries itself and
    # docs/_ext/search_entries.py can go
    first, second = build_twice(tmp_path, [])
    if second == first:
        pytest.fail("Sphinx now keeps index entries in incremental builds: drop search_entries")
    assert second == {"remove hook"}
