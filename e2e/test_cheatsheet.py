"""The hook cheat sheet and the feedback link, as a reader meets them (issue 33, item 8).

``tests/site/test_cheatsheet_page.py`` and ``tests/site/test_feedback.py`` read
the built HTML of every page; here Chromium lays the sheet out and prints it:

- on a 390 px phone the tables become one card per hook, each cell under its
  label, and nothing is wider than the screen;
- printed (A4), the sheet takes one or two pages, without the site's
  navigation, and ends with its last line (the theme's scroll containers once
  cut the end of the article off);
- "Feedback on this page" is visible under the article, in the page's
  language, and titles the new issue with the page's title.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

PHONE = {"viewport": {"width": 390, "height": 844}, "device_scale_factor": 2, "is_mobile": True}
SHEET = "cheatsheet.html"
WORDS = {"en": "Feedback on this page", "zh_CN": "反馈本页问题"}


@pytest.mark.parametrize("language", ["en", "zh_CN"])
def test_the_sheet_on_a_phone(
    open_page: Callable[..., Any], screenshot: Callable[..., Path], language: str
) -> None:
    page, record, _ = open_page(f"{language}/{SHEET}", **PHONE)
    width = page.evaluate("document.documentElement.clientWidth")
    assert page.evaluate("document.documentElement.scrollWidth") <= width  # no sideways page
    layout = page.evaluate(
        """() => {
          const tables = [...document.querySelectorAll("table.hook-cheatsheet")];
          const cells = tables.flatMap((t) => [...t.querySelectorAll("td")]);
          return {
            tables: tables.length,
            heads: tables.map((t) => getComputedStyle(t.querySelector("thead")).display),
            cells: cells.length,
            labels: cells.filter((td) => {
              const label = td.querySelector(".cs-label");
              return label && getComputedStyle(label).display !== "none" && label.offsetHeight > 0;
            }).length,
            widest: Math.max(...cells.map((td) => td.getBoundingClientRect().right)),
            overflowing: cells.filter((td) => td.scrollWidth > td.clientWidth + 1).length,
          };
        }"""
    )
    assert layout["tables"] == 7, layout
    assert set(layout["heads"]) == {"none"}, layout
    assert layout["cells"] > 100, layout
    assert layout["labels"] == layout["cells"], layout  # every cell says what it is
    assert layout["widest"] <= width, layout
    assert layout["overflowing"] == 0, layout
    page.locator("#hook-forward-hook").scroll_into_view_if_needed()
    screenshot(page, f"cheatsheet-phone-{language}")
    assert not record.problems()


@pytest.mark.parametrize("language", ["en", "zh_CN"])
def test_the_sheet_prints_on_two_a4_pages(
    open_page: Callable[..., Any], artifacts: Path, language: str
) -> None:
    page, record, _ = open_page(f"{language}/{SHEET}")
    page.emulate_media(media="print")
    hidden = page.evaluate(
        """() => ["#pst-header", "#pst-primary-sidebar", ".bd-footer-article",
                  ".prev-next-footer", ".bd-footer"]
          .map((s) => document.querySelector(s))
          .filter((e) => e && getComputedStyle(e).display !== "none")
          .map((e) => e.id || e.className)"""
    )
    assert hidden == [], f"printed with the page: {hidden}"
    # the tables, with their header row (one card per hook is for screens only)
    heads = page.evaluate(
        """() => [...document.querySelectorAll("table.hook-cheatsheet thead")]
          .map((h) => getComputedStyle(h).display)"""
    )
    assert set(heads) == {"table-header-group"}, heads
    pdf = page.pdf(format="A4", print_background=True)
    (artifacts / f"cheatsheet-{language}.pdf").write_bytes(pdf)
    pages = len(re.findall(rb"/Type\s*/Page\b", pdf))
    assert 1 <= pages <= 2, f"{pages} A4 pages"
    # the article ends with the untaught hooks: their last one is laid out, not cut off
    last = page.locator("ul.hook-cheatsheet-untaught li").last
    assert last.bounding_box() is not None
    assert not record.problems()


@pytest.mark.parametrize(
    ("language", "name"),
    [
        ("en", SHEET),
        ("zh_CN", SHEET),
        ("zh_CN", "auto_examples/02_module_hooks/plot_05_forward_hooks.html"),
        ("en", "index.html"),
    ],
)
def test_feedback_link(open_page: Callable[..., Any], language: str, name: str) -> None:
    page, record, _ = open_page(f"{language}/{name}")
    link = page.locator("a.feedback-link")
    assert link.count() == 1
    link.scroll_into_view_if_needed()
    assert link.is_visible()
    assert link.inner_text().strip() == WORDS[language]
    query = parse_qs(urlsplit(link.get_attribute("href")).query)
    title = re.sub(r"\s+—\s+hooks-tutorial$", "", page.title())
    assert query["title"] == [title]
    assert query["body"][0].endswith(f"/{language}/{name}")
    assert not record.problems()
