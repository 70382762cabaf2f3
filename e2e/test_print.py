"""The fast path prints (issue 33, item 8): each of its pages, on paper, is the article alone.

docs/_static/custom.css (``@media print``) hides the site's chrome (navigation,
sidebars, footers, download buttons), gives the article the paper's width,
wraps long code lines and prints the folded solutions open; the page's first
script prints in the light theme even when the screen shows the dark one
(docs/_templates/layout.html). Each page keeps its fast-path banners: its
step, and the next page by number and title. These tests print every page of
the path (conf.py's ``fast_path``) in both languages, from a screen in the dark
theme.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from typing import Any

import pytest
from builtsite import LANGUAGES, ROOT

CONF = ROOT / "docs" / "conf.py"
CHROME = [
    ".bd-header",
    ".bd-sidebar-primary",
    ".bd-sidebar-secondary",
    ".bd-footer",
    ".prev-next-footer",
    ".sphx-glr-download-link-note",
    ".sphx-glr-footer",
    ".headerlink",
]


def fast_path() -> list[str]:
    """The docnames of ``fast_path`` in docs/conf.py, read without running conf.py."""
    for node in ast.parse(CONF.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "fast_path" for t in node.targets
        ):
            return [docname for docname, _, _ in ast.literal_eval(node.value)]
    msg = "docs/conf.py has no fast_path"
    raise LookupError(msg)


def _luminance(css: str) -> float:
    r, g, b = (int(v) / 255 for v in re.findall(r"\d+", css)[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("docname", fast_path())
def test_a_fast_path_page_prints_its_article_alone(
    open_page: Callable[..., Any], language: str, docname: str
) -> None:
    page, record, _ = open_page(f"{language}/{docname}.html", color_scheme="dark")
    assert page.locator("html").get_attribute("data-theme") == "dark"
    # what the page's colours are at the moment of printing (after its own beforeprint)
    page.evaluate(
        """() => addEventListener("beforeprint", () => {
             window.printed = [document.documentElement.dataset.theme,
                               getComputedStyle(document.querySelector("article p")).color];
           })"""
    )
    page.pdf(format="A4")  # prints: beforeprint, then afterprint
    theme, color = page.evaluate("window.printed")
    assert theme == "light"
    assert _luminance(color) < 0.3, f"text {color} on white paper"
    assert page.locator("html").get_attribute("data-theme") == "dark", "the screen's theme is back"

    page.emulate_media(media="print")
    for selector in CHROME:
        shown = [e for e in page.locator(selector).all() if e.is_visible()]
        assert not shown, f"{selector} is printed"
    banners = page.locator("article .fast-path-banner")
    assert banners.count() == 2
    assert all(banner.is_visible() for banner in banners.all())
    # the article takes the paper's width; nothing runs off its right edge
    width = page.evaluate("document.documentElement.clientWidth")
    assert page.locator("article").bounding_box()["width"] > 0.9 * width
    cut = page.evaluate(
        """() => [...document.querySelectorAll("article pre, article table")]
                 .filter(e => e.scrollWidth > e.clientWidth + 1).length"""
    )
    assert cut == 0, f"{cut} code blocks or tables are cut off at the right"
    # the solutions, folded on screen, are printed open
    folded = page.locator("article details > :not(summary)").all()
    assert all(part.is_visible() for part in folded), "a solution prints folded"
    assert not record.problems()
