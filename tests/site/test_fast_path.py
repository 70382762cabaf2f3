"""The fast path to Grad-CAM, on the home page and the tutorial index, in both languages.

Both pages carry a marked box ("Fast path: a working Grad-CAM in nine pages") that
starts at the course-notes page and lists nine tutorial pages in order. These tests
check, on the built HTML of both languages, that the box is there, that its links
are exactly those pages in that order, and that every link resolves to a page of the
same language.
"""

from __future__ import annotations

import posixpath
import re
from html.parser import HTMLParser

import pytest
from sitecheck import HTML, LANGUAGES, page_path

FAST_PATH = ["01", "05", "07", "08", "10", "15", "16", "17", "18"]
PAGES = ["index", "auto_examples/index"]


class _BoxLinks(HTMLParser):
    """The internal links inside the tip admonition whose title names the fast path."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.depth = 0  # div nesting inside a tip admonition; 0 = outside
        self.title = ""
        self.in_title = False
        self.boxes: list[tuple[str, list[str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        classes = (attributes.get("class") or "").split()
        if tag == "div":
            if self.depth:
                self.depth += 1
            elif "admonition" in classes and "tip" in classes:
                self.depth = 1
                self.boxes.append(("", []))
        elif self.depth and tag == "p" and "admonition-title" in classes:
            self.in_title = True
        elif self.depth and tag == "a" and "internal" in classes:
            self.boxes[-1][1].append(attributes.get("href") or "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "div" and self.depth:
            self.depth -= 1
        elif tag == "p" and self.in_title:
            self.in_title = False
            self.boxes[-1] = (self.title.strip(), self.boxes[-1][1])
            self.title = ""

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title += data


def fast_path_box(page: str, language: str) -> tuple[str, list[str]]:
    parser = _BoxLinks()
    parser.feed((HTML / language / f"{page}.html").read_text(encoding="utf-8"))
    boxes = [box for box in parser.boxes if "Grad-CAM" in box[0]]
    assert len(boxes) == 1, f"{language}/{page}: expected one fast-path box, found {len(boxes)}"
    return boxes[0]


def resolve(page: str, href: str) -> str:
    """The page (without ``.html``) that a relative link on ``page`` points to."""
    target = href.split("#", 1)[0]
    path = posixpath.normpath(posixpath.join(posixpath.dirname(page), target))
    return path.removesuffix(".html")


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("page", PAGES)
def test_fast_path_links_resolve_in_order(page: str, language: str) -> None:
    _, links = fast_path_box(page, language)
    targets = [resolve(page, href) for href in links]
    expected = ["course_notes", *(page_path(p) for p in FAST_PATH)]
    assert targets == expected, f"{language}/{page}: the fast path links {targets}"
    for target in targets:
        assert (HTML / language / f"{target}.html").is_file(), f"{language}/{target} is missing"


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("page", PAGES)
def test_fast_path_title_counts_its_pages(page: str, language: str) -> None:
    # "Fast path: a working Grad-CAM in nine pages" / "快速路线：九页读到能用的 Grad-CAM"
    title, _ = fast_path_box(page, language)
    nine = "nine" if language == "en" else "九"
    assert nine in title
    assert len(FAST_PATH) == 9
    assert re.search(r"Grad-CAM", title)
