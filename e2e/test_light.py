"""Light pages on a phone, as only a browser sees them (issue 26, item 3).

``tests/site/test_light_pages.py`` checks the built HTML (MathML, deferred scripts,
icon font, lazy figures); here Chromium lays page 18 out at a phone's width:

- each figure keeps its aspect ratio (the ``height`` attribute no longer
  squeezes it into the column);
- the formulas are laid out by the browser as MathML (each has a size; no
  script typesets them), and a formula wider than the column scrolls inside it,
  reachable with the keyboard, instead of widening the page;
- the cut icon font loads (Chromium's font sanitizer accepts it), and the page
  loads without an error.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

PHONE = {"viewport": {"width": 360, "height": 740}, "device_scale_factor": 2, "is_mobile": True}
PAGE_18 = "auto_examples/04_grad_cam/plot_18_cam_family.html"


@pytest.mark.parametrize("language", ["en", "zh_CN"])
def test_page_18_on_a_phone(
    open_page: Callable[..., Any], screenshot: Callable[..., Path], language: str
) -> None:
    page, record, _ = open_page(f"{language}/{PAGE_18}", **PHONE)
    page.wait_for_load_state("networkidle")
    width = page.evaluate("document.documentElement.clientWidth")
    assert page.evaluate("document.documentElement.scrollWidth") <= width  # no sideways page

    figures = page.locator("article img")
    assert figures.count() > 0
    for index in range(figures.count()):  # lazy: each loads once it comes near
        figures.nth(index).scroll_into_view_if_needed()
        figures.nth(index).evaluate(
            "(img) => img.complete && img.naturalWidth > 0 || "
            "new Promise((done) => img.addEventListener('load', done, {once: true}))"
        )
    sizes = page.evaluate(
        """() => [...document.querySelectorAll("article img")].map((img) => ({
            w: img.clientWidth, h: img.clientHeight,
            nw: img.naturalWidth, nh: img.naturalHeight}))"""
    )
    for size in sizes:
        assert size["nw"] > 0, size
        assert size["w"] <= width
        assert size["h"] / size["w"] == pytest.approx(size["nh"] / size["nw"], rel=0.03), size

    maths = page.evaluate(
        """() => [...document.querySelectorAll("article math")].map((m) => {
            const box = m.getBoundingClientRect();
            return {w: box.width, h: box.height, block: m.getAttribute("display") === "block"};
        })"""
    )
    assert len(maths) > 20
    assert all(m["w"] > 0 and m["h"] > 0 for m in maths)
    assert not page.evaluate("'MathJax' in window")
    wide = page.evaluate(
        """() => [...document.querySelectorAll("div.math > math")]
            .filter((d) => d.scrollWidth > d.clientWidth)
            .map((d) => ({tabindex: d.getAttribute("tabindex"), width: d.clientWidth}))"""
    )
    assert wide, "at 360 px, the Grad-CAM++ formula is wider than the column"
    for box in wide:
        assert box["tabindex"] == "0", box
        assert box["width"] <= width

    fonts = page.evaluate(
        """async () => { await document.fonts.ready; return [...document.fonts]
            .filter((f) => f.family.includes("Font Awesome"))
            .map((f) => ({family: f.family, weight: f.weight, status: f.status})); }"""
    )
    assert any(f["status"] == "loaded" for f in fonts), fonts
    assert not any(f["status"] == "error" for f in fonts), fonts
    page.locator("#the-methods").scroll_into_view_if_needed()
    screenshot(page, f"light-page18-phone-{language}")
    assert not record.problems()
