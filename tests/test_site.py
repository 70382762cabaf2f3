"""Checks on the built site (run by ``nox -s docs`` after building).

Skipped when the site has not been built, so ``nox -s tests`` works on a
fresh clone.
"""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path
from typing import Any

import pytest

HTML = Path(__file__).parents[1] / "docs" / "_build" / "html"
EXAMPLES = Path(__file__).parents[1] / "examples"

pytestmark = pytest.mark.skipif(
    not (HTML / "en" / "index.html").is_file() or not (HTML / "zh_CN" / "index.html").is_file(),
    reason="site not built; run `nox -s docs`",
)


def _text(path: Path) -> str:
    raw = path.read_text(encoding="utf-8")
    return unescape(re.sub(r"<[^>]+>", "", raw))


def _pages() -> list[str]:
    return [f"auto_examples/{p.parent.name}/{p.stem}" for p in sorted(EXAMPLES.glob("*/plot_*.py"))]


@pytest.mark.parametrize("page", ["index", "api", "course_notes", *_pages()])
@pytest.mark.parametrize("language", ["en", "zh_CN"])
def test_page_exists_in_both_languages(page: str, language: str) -> None:
    path = HTML / language / f"{page}.html"
    assert path.is_file(), f"{page} missing from the {language} build"
    html = path.read_text(encoding="utf-8")
    other = "zh_CN" if language == "en" else "en"
    assert f"../{other}/{page}.html" in html, "language switcher does not link to the same page"


@pytest.mark.parametrize("page", _pages())
def test_chinese_page_has_chinese_prose(page: str) -> None:
    text = _text(HTML / "zh_CN" / f"{page}.html")
    body = text.split("Go to the end", 1)[-1]
    assert len(re.findall(r"[\u4e00-\u9fff]", body)) > 50


# Printed values that a page must show, in both languages (outputs are not translated).
KEY_OUTPUTS = {
    "auto_examples/01_python_foundations/plot_01_callbacks": ["The result is: 8"],
}


@pytest.mark.parametrize(("page", "expected"), sorted(KEY_OUTPUTS.items()))
@pytest.mark.parametrize("language", ["en", "zh_CN"])
def test_key_outputs_are_printed(page: str, expected: list[str], language: str) -> None:
    text = _text(HTML / language / f"{page}.html")
    for value in expected:
        assert value in text, f"{value!r} not printed on {language}/{page}"


def _search_index(language: str) -> dict[str, Any]:
    raw = (HTML / language / "searchindex.js").read_text(encoding="utf-8")
    payload = raw[raw.index("(") + 1 : raw.rindex(")")]
    index: dict[str, Any] = json.loads(payload)
    return index


@pytest.mark.parametrize(
    ("term", "page"),
    [
        ("回调", "auto_examples/01_python_foundations/plot_01_callbacks"),
        ("钩子", "auto_examples/01_python_foundations/plot_01_callbacks"),
    ],
)
def test_chinese_search_index_finds_page(term: str, page: str) -> None:
    """jieba segmented the Chinese text, so the term leads to the page."""
    index = _search_index("zh_CN")
    hits: set[int] = set()
    for table in ("terms", "titleterms"):
        found = index[table].get(term, [])
        hits.update(found if isinstance(found, list) else [found])
    assert hits, f"{term!r} not in the zh_CN search index"
    assert index["docnames"].index(page) in hits
