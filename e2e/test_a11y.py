"""Accessibility: no WCAG 2 A/AA violation, and what axe-core cannot see.

axe-core audits every page of both languages in the light and the dark theme
(WCAG 2 A and AA rules only). Then, by other means: each page declares its
language, each figure's alternative text says what it shows, the language
switcher and the solution dropdowns work with the keyboard alone, and the
keyboard focus is always visible.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from builtsite import GALLERY_PAGES, HTML, LANGUAGES, READER, built_pages

THEMES = ("light", "dark")

AXE_RUN = """async () => {
  const results = await axe.run(document, {
    runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa']},
    resultTypes: ['violations'],
  });
  return results.violations.map(v => ({
    rule: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map(n => ({target: n.target.join(' '), html: n.html.slice(0, 160), why: n.failureSummary})),
  }));
}"""


@pytest.fixture(scope="module")
def themed_pages(
    browser: Any, browser_context_args: dict[str, Any], axe_script: str
) -> Iterator[dict[str, Any]]:
    """One page per theme, reused for every audit (a page load is far cheaper than a context).

    The site follows the reader's colour scheme (``default_mode = "auto"``), so
    each context asks for its theme; axe-core is injected into every document.
    """
    pages = {}
    for theme in THEMES:
        context = browser.new_context(**browser_context_args, **READER, color_scheme=theme)
        context.set_default_timeout(20_000)
        context.add_init_script(script=axe_script)
        pages[theme] = context.new_page()
    yield pages
    for page in pages.values():
        page.context.close()


@pytest.mark.parametrize("path", built_pages(root=False))
def test_no_wcag_violation(
    path: str, themed_pages: dict[str, Any], server: str, stats: Any
) -> None:
    """axe-core finds no WCAG 2 A/AA violation on the page, in either theme."""
    problems = []
    for theme, page in themed_pages.items():
        page.goto(server + path, wait_until="load")
        page.wait_for_function(f"document.documentElement.dataset.theme === '{theme}'")
        stats.audits += 1
        stats.pages.add(page.url)
        for violation in page.evaluate(AXE_RUN):
            problems += [
                f"{violation['rule']} ({violation['impact']}) on {path}, {theme} theme: "
                f"{violation['help']}\n    {node['target']}: {node['html']}"
                for node in violation["nodes"]
            ]
    assert not problems, f"{len(problems)} WCAG 2 A/AA violations:\n" + "\n".join(problems)


# -- what axe-core cannot see -----------------------------------------------------------


class _Scan(HTMLParser):
    """The ``lang`` of ``<html>`` and the figures' (src, alt) of one built page."""

    def __init__(self) -> None:
        super().__init__()
        self.lang: str | None = None
        self.figures: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attr = dict(attrs)
        if tag == "html":
            self.lang = attr.get("lang")
        classes = (attr.get("class") or "").split()
        if tag == "img" and {"sphx-glr-single-img", "sphx-glr-multi-img"} & set(classes):
            self.figures.append((attr.get("src") or "", attr.get("alt")))


def _scan(path: str) -> _Scan:
    scan = _Scan()
    scan.feed((HTML / path).read_text(encoding="utf-8"))
    return scan


def test_every_page_declares_its_language() -> None:
    """Screen readers pick their voice from ``<html lang>``: en and zh-CN."""
    wrong = []
    for path in built_pages():
        language = path.split("/", 1)[0] if "/" in path else "en"
        expected = language.replace("_", "-")
        lang = _scan(path).lang
        if lang != expected:
            wrong.append(f"{path}: lang={lang!r}, expected {expected!r}")
    assert not wrong, "\n".join(wrong)


# Gallery pages with a figure that has no title, so that sphinx-gallery falls back to
# the script's file name ("plot 15 train cnn") as its alternative text. The example
# scripts are not this test's to change: each such figure needs a title
# (``ax.set_title`` or ``fig.suptitle``) that says what it shows; then its page
# leaves this list (the test fails until it does: strict xfail).
UNTITLED_FIGURES: dict[str, str] = {}  # page -> figure without a title (expected to fail)


def _file_name_alt(src: str) -> str:
    """sphinx-gallery's fallback alt text: the image file name without prefix and number."""
    stem = re.sub(r"_\d_\d\dx$", "", Path(src).stem)  # srcset variants
    return re.sub(r"[-,_]", " ", stem[len("sphx_glr_") : -len("_001")])


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(
            f"{language}/{name}",
            marks=[
                pytest.mark.xfail(
                    reason=f"{name}: {UNTITLED_FIGURES[name]} has no title", strict=True
                )
            ]
            if name in UNTITLED_FIGURES
            else [],
        )
        for language in LANGUAGES
        for name in GALLERY_PAGES
    ],
)
def test_figures_have_alt_text_that_says_what_they_show(path: str) -> None:
    """Each figure's alt text comes from its title, not from the script's file name."""
    bad = []
    for src, alt in _scan(f"{path}.html").figures:
        if not alt or not alt.strip():
            bad.append(f"{Path(src).name} has no alt text")
        elif alt.strip() == _file_name_alt(src):
            bad.append(f"{Path(src).name}: alt={alt!r}, the file name (the figure has no title)")
    assert not bad, f"{path}: figures whose alt text does not say what they show:\n" + "\n".join(
        bad
    )


# -- the keyboard alone --------------------------------------------------------------------

FOCUSED = """() => {
  const el = document.activeElement;
  if (!el || el === document.body) return null;
  const style = getComputedStyle(el);
  const outline = style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) > 0;
  const shadow = style.boxShadow !== 'none';
  const box = el.getBoundingClientRect();
  return {
    tag: el.tagName.toLowerCase(),
    cls: el.className && el.className.baseVal === undefined ? el.className : '',
    text: (el.innerText || el.getAttribute('aria-label') || '').trim().slice(0, 40),
    visible: outline || shadow,
    shown: box.width > 0 && box.height > 0,
    focusVisible: el.matches(':focus-visible'),
  };
}"""


def _tab_until(page: Any, selector: str, limit: int = 400) -> list[dict[str, Any]]:
    """Press Tab until the focused element matches ``selector``; every stop on the way."""
    stops = []
    for _ in range(limit):
        page.keyboard.press("Tab")
        stop = page.evaluate(FOCUSED)
        if stop is None:
            continue
        stops.append(stop)
        if page.evaluate("s => document.activeElement.matches(s)", selector):
            return stops
    pytest.fail(f"{selector} not reached after {limit} presses of Tab on {page.url}")


def _invisible_focus(stops: list[dict[str, Any]]) -> list[str]:
    return [
        f"<{s['tag']} class={s['cls']!r}> {s['text']!r}"
        for s in stops
        if s["shown"] and not (s["focusVisible"] and s["visible"])
    ]


@pytest.mark.parametrize(("language", "other"), [("en", "zh_CN"), ("zh_CN", "en")])
def test_language_switcher_works_with_the_keyboard(
    open_page: Any, language: str, other: str
) -> None:
    """Tab reaches the switcher, with visible focus, and Enter opens the other language."""
    name = GALLERY_PAGES[0]
    page, record, _ = open_page(f"{language}/{name}.html")
    stops = _tab_until(page, "a.lang-switcher")
    assert not _invisible_focus(stops), _invisible_focus(stops)
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/{other}/{name}.html")
    assert page.locator("html").get_attribute("lang") == other.replace("_", "-")
    assert not record.problems()


def _page_with_dropdown() -> str:
    for name in GALLERY_PAGES:
        if "sd-dropdown" in (HTML / "en" / f"{name}.html").read_text(encoding="utf-8"):
            return name
    pytest.fail("no gallery page has a dropdown (the exercises' solutions)")


@pytest.mark.parametrize(("language", "theme"), [("en", "light"), ("zh_CN", "dark")])
def test_solution_dropdown_works_with_the_keyboard(
    open_page: Any, stats: Any, language: str, theme: str
) -> None:
    """Tab reaches the solutions; Enter and Space open and close them; focus stays visible.

    Every element Tab stops at on the way (links in code, copy buttons, the
    sidebars) must show where the focus is.
    """
    name = _page_with_dropdown()
    page, record, _ = open_page(f"{language}/{name}.html", color_scheme=theme)
    summary = "details.sd-dropdown > summary"
    details = page.locator("details.sd-dropdown").first
    body = details.locator(".sd-summary-content, .sd-card-body").first
    stops = _tab_until(page, summary, limit=1000)
    assert not _invisible_focus(stops), (
        f"focus not visible on {name} ({theme} theme): {_invisible_focus(stops)}"
    )
    stats.notes.append(
        f"keyboard: {len(stops)} Tab stops on {language}/{name} ({theme} theme), focus visible"
    )
    assert details.get_attribute("open") is None, "the solutions start folded"
    page.keyboard.press("Enter")
    assert details.get_attribute("open") is not None, "Enter did not open the solutions"
    assert body.is_visible()
    page.keyboard.press("Space")
    assert details.get_attribute("open") is None, "Space did not close the solutions"
    page.keyboard.press("Space")
    assert details.get_attribute("open") is not None, "Space did not open the solutions"
    assert not record.problems()
