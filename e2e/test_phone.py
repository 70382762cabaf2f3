"""Figures, tables and code on a phone (390 x 844) and a laptop (1366 x 768): issue 33, item 2.

What the build checks without a browser: every gallery figure's text is at
least 9 CSS px (font size) and its image panels at least 72 px wide when the
figure is shrunk to a 390 px phone's column (``docs/_ext/figures.py``, from the
texts matplotlib draws). Here Chromium lays the pages out:

- figures: each is a link to its largest image (a tap opens it full size, a
  phone can zoom there), reachable with the keyboard, the image's alt text its
  name; on the phone a figure fills the column, on the laptop it keeps its size;
- tables: no page scrolls sideways, and every table fits its column, with no
  cell squeezed (a cell whose text wraps is at least 6 em wide) or
  taller than most of a screen: on the phone each row is a card whose cells are
  named by their column's header; on the laptop tables stay tables;
- code: every line's end can be seen without scrolling (long lines wrap, with
  a hanging indent that adds no line), on pages 16 and 17, on both screens;
  the toggle on each block (named in the page's language, ``aria-pressed``)
  turns wrapping off for the page, a block that then scrolls can be focused,
  and the choice survives a reload; copying a block still copies its code.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from builtsite import CJK

PHONE = {
    "viewport": {"width": 390, "height": 844},
    "device_scale_factor": 2,
    "is_mobile": True,
    "has_touch": True,
}
LAPTOP = {"viewport": {"width": 1366, "height": 768}}
SCREENS = {"phone": PHONE, "laptop": LAPTOP}
PAGE_16 = "auto_examples/04_grad_cam/plot_16_gradcam_from_scratch.html"
PAGE_17 = "auto_examples/04_grad_cam/plot_17_gradcam_library.html"
TABLE_PAGES = [
    "course_notes.html",
    "api.html",
    "auto_examples/01_python_foundations/plot_02_callbacks_vs_decorators.html",
    "auto_examples/07_language_models/plot_37_interpretability_libraries.html",
    "generated/hooks_tutorial.SimpleCNN.html",
]

NO_SIDEWAYS_PAGE = (
    "() => document.documentElement.scrollWidth <= document.documentElement.clientWidth"
)


def _load_lazy_images(page: Any) -> None:
    """Scroll to each image that can be seen (not in a folded solution) until it loads."""
    images = page.locator("article img:not(details:not([open]) img)")
    for index in range(images.count()):
        images.nth(index).scroll_into_view_if_needed()
        images.nth(index).evaluate(
            "(img) => img.complete && img.naturalWidth > 0 || "
            "new Promise((done) => img.addEventListener('load', done, {once: true}))"
        )


@pytest.mark.parametrize("screen", SCREENS)
@pytest.mark.parametrize("language", ["en", "zh_CN"])
def test_each_figure_opens_full_size(
    open_page: Callable[..., Any],
    screenshot: Callable[..., Path],
    language: str,
    screen: str,
) -> None:
    page, record, _ = open_page(f"{language}/{PAGE_17}", **SCREENS[screen])
    _load_lazy_images(page)
    figures = page.evaluate(
        """() => [...document.querySelectorAll("article img.sphx-glr-single-img")].map((img) => {
            const link = img.closest("a");
            const column = img.closest("section").getBoundingClientRect().width;
            return {alt: img.alt, href: link && link.href, cls: link && link.className,
                    folded: img.closest("details:not([open])") !== null,
                    shown: img.getBoundingClientRect().width, natural: img.naturalWidth,
                    width: Number(img.getAttribute("width")), column};
        })"""
    )
    assert len(figures) >= 8, figures
    for figure in figures:
        assert figure["cls"] == "sphx-glr-figure-link", figure
        assert figure["alt"], figure  # the link's name
        assert figure["href"].endswith("_2_00x.webp"), figure  # the largest file
        if figure["folded"]:  # in a solution the reader has not opened
            continue
        assert figure["shown"] <= figure["column"] + 0.5, figure
        if screen == "laptop":  # shown at its own width, as before
            assert figure["shown"] == pytest.approx(min(figure["width"], figure["column"]), abs=1)
        else:  # a phone's column is narrower than any of page 17's figures
            assert figure["shown"] == pytest.approx(figure["column"], abs=1), figure
    assert page.evaluate(NO_SIDEWAYS_PAGE)

    link = page.locator("a.sphx-glr-figure-link").nth(1)
    link.scroll_into_view_if_needed()
    screenshot(page, f"phone-figure-{language}-{screen}")
    link.focus()
    assert page.evaluate("document.activeElement.className") == "sphx-glr-figure-link"
    href = link.get_attribute("href")
    if screen == "phone":
        link.tap()
    else:
        page.keyboard.press("Enter")
    page.wait_for_url(f"**/{Path(href).name}")
    size = page.evaluate(
        "() => [document.images[0].naturalWidth, document.images[0].naturalHeight]"
    )
    assert size[0] == 2 * figures[1]["width"], size  # the 2x file, twice the 1x width
    assert not record.problems()


@pytest.mark.parametrize("screen", SCREENS)
@pytest.mark.parametrize("language", ["en", "zh_CN"])
def test_tables_read_well(
    open_page: Callable[..., Any],
    screenshot: Callable[..., Path],
    language: str,
    screen: str,
) -> None:
    for path in TABLE_PAGES:
        page, record, _ = open_page(f"{language}/{path}", **SCREENS[screen])
        assert page.evaluate(NO_SIDEWAYS_PAGE), path
        tables = page.evaluate(
            """() => [...document.querySelectorAll("article table")].map((table) => {
                const box = table.parentElement.getBoundingClientRect();
                const cells = [...table.querySelectorAll("tbody td")].map((td) => {
                    const r = td.getBoundingClientRect();
                    // the lines of text: the tops of the text's boxes, 10 px or more apart
                    const tops = [];
                    const walker = document.createTreeWalker(td, NodeFilter.SHOW_TEXT);
                    while (walker.nextNode()) {
                        const range = document.createRange();
                        range.selectNodeContents(walker.currentNode);
                        for (const box of range.getClientRects()) {
                            if (box.width > 0) tops.push(box.top);
                        }
                    }
                    tops.sort((a, b) => a - b);
                    const lines = tops.filter((top, i) => i === 0 || top - tops[i - 1] > 10);
                    return {w: r.width, h: r.height, lines: Math.max(lines.length, 1),
                            em: parseFloat(getComputedStyle(td).fontSize),
                            label: td.dataset.label || "",
                            before: getComputedStyle(td, "::before").content};
                });
                return {display: getComputedStyle(table).display,
                        width: table.getBoundingClientRect().width, column: box.width,
                        headers: table.querySelectorAll("thead th").length, cells};
            })"""
        )
        assert tables, path
        for table in tables:
            where = f"{language}/{path}: {table['width']:.0f} px in {table['column']:.0f} px"
            assert table["width"] <= table["column"] + 1, where  # fits: nothing to scroll
            for cell in table["cells"]:
                # no column a few characters wide: a cell whose text wraps is at least 6 em
                # wide (the course notes' narrowest column held two characters)
                if cell["lines"] > 1:
                    assert cell["w"] >= 6 * cell["em"], (where, cell)
                assert cell["h"] <= 600, (where, cell)  # no cell taller than most of a screen
            if screen == "laptop":
                assert table["display"] == "table", where
                continue
            assert table["display"] == "block", where  # rows as cards
            if table["headers"]:  # each cell names its column
                assert all(c["label"] and c["before"] == f'"{c["label"]}"' for c in table["cells"])
                if language == "zh_CN" and path == "course_notes.html":  # translated headers
                    assert any(CJK.search(c["label"]) for c in table["cells"]), where
        if path == "course_notes.html":
            page.locator("article table").first.scroll_into_view_if_needed()
            screenshot(page, f"phone-table-{language}-{screen}")
        assert not record.problems(), path
        page.close()


CODE_BLOCKS = r"""() => [...document.querySelectorAll("div.highlight > pre")].map((pre) => {
    const box = pre.getBoundingClientRect();
    // where each line's last visible character ends (the spaces at a wrap hang past the
    // edge, as CSS has them: they are no part of what must be seen)
    const ends = [...pre.querySelectorAll(":scope > .code-line")].map((line) => {
        const walker = document.createTreeWalker(line, NodeFilter.SHOW_TEXT);
        let last = null;
        while (walker.nextNode()) {
            const at = walker.currentNode.data.search(/\S\s*$/);
            if (at >= 0) last = [walker.currentNode, at];
        }
        if (last === null) return box.left;  // an empty line
        const range = document.createRange();
        range.setStart(last[0], last[1]);
        range.setEnd(last[0], last[1] + 1);
        return range.getBoundingClientRect().right;
    });
    const lineHeight = parseFloat(getComputedStyle(pre).lineHeight);
    const folded = [...pre.querySelectorAll(":scope > .code-line")]
        .filter((line) => line.getBoundingClientRect().height > 1.5 * lineHeight).length;
    return {scroll: pre.scrollWidth, client: pre.clientWidth, height: box.height, folded,
            right: box.right - parseFloat(getComputedStyle(pre).paddingRight) + 1,
            lines: pre.querySelectorAll(":scope > .code-line").length,
            text: pre.textContent, ends, tabindex: pre.tabIndex,
            pressed: pre.parentElement.querySelector("button.code-wrap-button")
                ?.getAttribute("aria-pressed")};
})"""


@pytest.mark.parametrize("screen", SCREENS)
@pytest.mark.parametrize("language", ["en", "zh_CN"])
def test_every_code_line_end_can_be_reached(
    open_page: Callable[..., Any],
    screenshot: Callable[..., Path],
    language: str,
    screen: str,
) -> None:
    for path in (PAGE_16, PAGE_17):
        page, record, _ = open_page(f"{language}/{path}", **SCREENS[screen])
        wrapped = page.evaluate(CODE_BLOCKS)
        assert len(wrapped) > 30, path
        for block in wrapped:
            first = block["text"].split("\n")[0][:40]
            assert block["pressed"] == "true", first
            assert block["scroll"] <= block["client"], first  # nothing hidden to the right
            assert all(end <= block["right"] for end in block["ends"]), (first, block["ends"])
            # one span per line, the text unchanged (what the copy button copies)
            assert block["lines"] == block["text"].rstrip("\n").count("\n") + 1, first
        label = page.locator("button.code-wrap-button").first.get_attribute("aria-label")
        assert (CJK.search(label) is not None) == (language == "zh_CN"), label
        if path == PAGE_16:
            page.locator("div.highlight").nth(3).scroll_into_view_if_needed()
            screenshot(page, f"phone-code-{language}-{screen}")

        # off: the lines stay whole; a block that now scrolls can be reached with the keyboard
        page.locator("button.code-wrap-button").first.click()
        whole = page.evaluate(CODE_BLOCKS)
        assert page.evaluate("document.documentElement.dataset.codeWrap") == "off"
        assert all(b["pressed"] == "false" for b in whole)
        assert [b["text"] for b in whole] == [b["text"] for b in wrapped]
        scrolling = [b for b in whole if b["scroll"] > b["client"]]
        if screen == "phone":
            assert len(scrolling) > 10, path  # 22 of page 16's 31 blocks before wrapping
        assert all(b["tabindex"] == 0 for b in scrolling)
        for before, after in zip(wrapped, whole, strict=True):
            if before["folded"] == 0:  # no line wrapped: the line spans add no height
                assert before["height"] == pytest.approx(after["height"], abs=1)
        page.reload()
        assert page.evaluate("document.documentElement.dataset.codeWrap") == "off"
        page.locator("button.code-wrap-button").first.click()  # back on, for the next page
        assert page.evaluate("localStorage.getItem('code-wrap')") == "on"
        assert not record.problems(), path
        page.close()
