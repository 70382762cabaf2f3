"""The built hook cheat sheet shows every row of ``docs/cheatsheet.toml``, in both languages.

``tests/test_cheatsheet.py`` checks the rows against torch; here the built page:
each row is there with its anchor, its registering call (linked to PyTorch's
documentation unless the row says otherwise), the calls, a label in every cell
for the one-card-per-hook layout of a phone, and links to the pages that
teach it; the Chinese page's prose cells are Chinese; the home page links to
the sheet.
"""

from __future__ import annotations

import re
import sys
from html import unescape
from pathlib import Path

import pytest
from sitecheck import HTML, LANGUAGES

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SHEET = tomllib.loads(
    (Path(__file__).parents[2] / "docs" / "cheatsheet.toml").read_text(encoding="utf-8")
)
CJK = re.compile(r"[\u4e00-\u9fff]")
CELL = re.compile(r'<td class="cs-(?P<column>\w+)">(?P<html>.*?)</td>', re.DOTALL)


def text(html: str) -> str:
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html))).strip()


def rows(language: str) -> dict[str, dict[str, str]]:
    """Each table row of the built sheet: id -> column -> the cell's HTML."""
    page = (HTML / language / "cheatsheet.html").read_text(encoding="utf-8")
    found = {}
    for match in re.finditer(
        r'<tr class="[^"]*" id="hook-(?P<id>[\w-]+)">(.*?)</tr>', page, re.DOTALL
    ):
        found[match["id"]] = {cell["column"]: cell["html"] for cell in CELL.finditer(match[2])}
    return found


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_row_is_on_the_page(language: str) -> None:
    built = rows(language)
    assert list(built) == [row["id"] for row in SHEET["row"]]
    for row in SHEET["row"]:
        cells = built[row["id"]]
        assert list(cells) == ["hook", "fires", "returns", "remove", "pages"], row["id"]
        for column, html in cells.items():
            assert html.lstrip().startswith('<p class="cs-label">'), (row["id"], column)
        hook = text(cells["hook"])
        for code in (row["register"], *row["calls"]):
            assert " ".join(code.split()) in hook, (row["id"], code)
        to_pytorch = 'href="https://docs.pytorch.org/' in cells["hook"]
        assert to_pytorch == row.get("link", True), row["id"]
        for page in row["pages"]:
            assert f'href="auto_examples/{page}.html"' in cells["pages"], (row["id"], page)


def test_the_chinese_cells_are_chinese() -> None:
    for row_id, cells in rows("zh_CN").items():
        for column in ("fires", "returns", "remove", "pages"):
            prose = re.sub(r"<code.*?</code>", "", cells[column], flags=re.DOTALL)
            label = re.search(r'<p class="cs-label">(.*?)</p>', prose, re.DOTALL)
            assert label, (row_id, column)
            assert CJK.search(label[1]), (row_id, column, label[1])
            body = text(prose[label.end() :])
            assert not body or CJK.search(body), (row_id, column, body)


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_home_page_links_to_the_sheet(language: str) -> None:
    home = (HTML / language / "index.html").read_text(encoding="utf-8")
    article = home.split('<article class="bd-article">', 1)[1].split("</article>", 1)[0]
    assert 'href="cheatsheet.html"' in article
