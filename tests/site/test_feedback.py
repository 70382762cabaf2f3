"""Every page of both languages ends with "Feedback on this page" (issue 33, item 8).

The link (``docs/_templates/feedback.html``) opens a new issue on the
repository, titled with the page's title in the page's language, with the
page's address as its text. Checked on every built HTML page of ``en/`` and
``zh_CN/``: the link is there once, in the page's language, points to the
repository named in ``pyproject.toml``, and its title and text are the page's
own (the title as the page's ``<title>`` shows it, the address as its
canonical link gives it).
"""

from __future__ import annotations

import re
import sys
from html import unescape
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from sitecheck import HTML, LANGUAGES

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).parents[2]
REPOSITORY = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
    "urls"
]["Source"]
WORDS = {"en": "Feedback on this page", "zh_CN": "反馈本页问题"}
LINK = re.compile(r'<a class="feedback-link" href="(?P<href>[^"]*)">(?P<text>.*?)</a>', re.DOTALL)
TITLE = re.compile(r"<title>(?P<title>.*?)</title>", re.DOTALL)
CANONICAL = re.compile(r'<link rel="canonical" href="(?P<href>[^"]*)"')
CJK = re.compile(r"[\u4e00-\u9fff]")


def pages() -> list[str]:
    """Every HTML page that Sphinx wrote, in both languages, relative to ``HTML``."""
    found = []
    for language in LANGUAGES:
        for path in sorted((HTML / language).rglob("*.html")):
            rel = path.relative_to(HTML).as_posix()
            if not any(part in rel for part in ("/_static/", "/_sources/", "/_downloads/")):
                found.append(rel)
    return found


PAGES = pages()


def page_title(html: str) -> str:
    """The page's own title: its ``<title>`` without the site's name after it."""
    match = TITLE.search(html)
    assert match, "no <title>"
    return re.sub(r"\s+(?:—|-)\s+hooks-tutorial$", "", unescape(match["title"]).strip())


@pytest.mark.parametrize("page", PAGES)
def test_page_has_a_feedback_link_titled_with_the_page(page: str) -> None:
    html = (HTML / page).read_text(encoding="utf-8")
    links = LINK.findall(html)
    assert len(links) == 1, f"{page}: {len(links)} feedback links"
    (href, text), language = links[0], page.split("/", 1)[0]
    assert re.sub(r"<[^>]+>|\s+", " ", text).strip() == WORDS[language]
    url = urlsplit(unescape(href))
    assert f"{url.scheme}://{url.netloc}{url.path}" == f"{REPOSITORY}/issues/new"
    query = parse_qs(url.query, strict_parsing=True)
    assert set(query) == {"title", "body"}
    assert query["title"] == [page_title(html)]
    canonical = CANONICAL.search(html)
    address = query["body"][0]
    if canonical:
        assert address == canonical["href"]
    assert address.endswith(f"/{page}")


def test_the_titles_are_in_the_pages_language() -> None:
    """The Chinese pages' issues carry their Chinese titles (and so differ from English)."""
    for name in ("cheatsheet.html", "auto_examples/02_module_hooks/plot_05_forward_hooks.html"):
        titles = {}
        for language in LANGUAGES:
            html = (HTML / language / name).read_text(encoding="utf-8")
            ((href, _),) = LINK.findall(html)
            titles[language] = parse_qs(urlsplit(unescape(href)).query)["title"][0]
        assert not CJK.search(titles["en"]), titles
        assert CJK.search(titles["zh_CN"]), titles


def test_every_page_was_checked() -> None:
    assert {p.removeprefix("en/") for p in PAGES if p.startswith("en/")} == {
        p.removeprefix("zh_CN/") for p in PAGES if p.startswith("zh_CN/")
    }
    assert len(PAGES) > 100
