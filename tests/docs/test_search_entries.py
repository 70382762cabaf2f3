"""``nox -s docs`` writes every page (``sphinx-build -a``): a second build keeps the index entries.

The search puts the page that teaches a term first through the page's
``.. index::`` entries, which Sphinx writes to ``searchindex.js`` as
``indexentries``. An incremental build starts from the previous
``searchindex.js`` and adds the pages it writes again, but does not read the
previous file's ``indexentries`` back (sphinx-doc/sphinx#12599): after editing
one page, the index held that page's entries only, and the search ranking
broke. The same holds for sphinx-sitemap, which lists the pages a build
writes. ``-a`` (write all pages; the environment, and so the gallery's runs,
are still reused) keeps both complete, with public options only.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

NOXFILE = Path(__file__).parents[2] / "noxfile.py"


def index_entries(html: Path) -> set[str]:
    text = (html / "searchindex.js").read_text(encoding="utf-8")
    return set(json.loads(text[text.index("(") + 1 : text.rindex(")")])["indexentries"])


def build_twice(tmp_path: Path, *options: str) -> tuple[set[str], set[str]]:
    """Build a two-page project, edit one page, build again; the entries after each."""
    source = tmp_path / "source"
    source.mkdir()
    (source / "conf.py").write_text("extensions = []\n", encoding="utf-8")
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
    command = [sys.executable, "-m", "sphinx", "-q", "-W", *options, "-b", "html"]
    subprocess.run([*command, str(source), str(html)], check=True)
    first = index_entries(html)
    (source / "handles.rst").write_text(
        "Handles\n=======\n\n.. index:: remove hook\n\nHandles, edited.\n", encoding="utf-8"
    )
    subprocess.run([*command, str(source), str(html)], check=True)
    return first, index_entries(html)


def test_writing_every_page_keeps_the_entries(tmp_path: Path) -> None:
    first, second = build_twice(tmp_path, "-a")
    assert first == {"register_forward_hook", "remove hook"}
    assert second == first


def test_an_incremental_build_loses_them(tmp_path: Path) -> None:
    # sphinx-doc/sphinx#12599: when this fails, Sphinx keeps the entries itself, and
    # the docs session's -a is needed only for the sitemap
    first, second = build_twice(tmp_path)
    assert second == {"remove hook"}, (first, second)


def test_the_docs_session_writes_every_page() -> None:
    assert '"-a"' in NOXFILE.read_text(encoding="utf-8")
