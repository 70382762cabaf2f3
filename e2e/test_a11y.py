"""In the browser: no WCAG 2 A/AA violation, no error, and the keyboard alone.

axe-core audits every tutorial page and one page of each other kind (home,
API summary, the hook cheat sheet, an API class and function page, module source and its index,
gallery index, general index, search, 404), in both languages and in the
light and the dark theme (WCAG 2 A and AA rules only); the same page loads
record console errors (and fonts the browser refuses), JavaScript exceptions,
failed requests, requests to other hosts and images that did not load, and
check that every icon drawn (a private-use character in the icon fonts) has
its glyph in the font file the page loads: a missing one is an empty box. The checks that need no browser
(language, alt text, links and #fragments, images, downloads) run on every
page in ``tests/site/test_html.py``. Then: the language switcher and the
solution dropdowns work with the keyboard alone, and the keyboard focus is
always visible.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from builtsite import (
    GALLERY_PAGES,
    HTML,
    READER,
    SHOWN_ICONS,
    Record,
    audited_pages,
    missing_icons,
    watch,
)

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

BROKEN_IMAGES = """() => Array.from(document.images)
  .filter(i => i.loading !== 'lazy' && (!i.complete || i.naturalWidth === 0))
  .map(i => i.currentSrc || i.src)"""


@pytest.fixture(scope="module")
def themed_pages(
    browser: Any, browser_context_args: dict[str, Any], axe_script: str, server: str
) -> Iterator[dict[str, tuple[Any, Record]]]:
    """One page per theme, reused for every audit (a page load is far cheaper than a context).

    The site follows the reader's colour scheme (``default_mode = "auto"``), so
    each context asks for its theme; axe-core is injected into every document,
    and each page records what goes wrong while it is open.
    """
    pages = {}
    for theme in THEMES:
        context = browser.new_context(**browser_context_args, **READER, color_scheme=theme)
        context.set_default_timeout(20_000)
        context.add_init_script(script=axe_script)
        page = context.new_page()
        pages[theme] = (page, watch(page, server))
    yield pages
    for page, _ in pages.values():
        page.context.close()


@pytest.mark.parametrize("path", audited_pages())
def test_page_is_accessible_and_loads_cleanly(
    path: str, themed_pages: dict[str, tuple[Any, Record]], server: str, stats: Any
) -> None:
    """axe-core finds no WCAG 2 A/AA violation, in either theme; nothing fails to load;
    every icon the page draws has its glyph in the font file the page loads."""
    problems = []
    for theme, (page, record) in themed_pages.items():
        record.clear()
        response = page.goto(server + path, wait_until="load")
        if response.status != 200:
            problems.append(f"{path}: HTTP {response.status}")
        page.wait_for_function(f"document.documentElement.dataset.theme === '{theme}'")
        stats.audits += 1
        stats.pages.add(page.url)
        for violation in page.evaluate(AXE_RUN):
            problems += [
                f"{violation['rule']} ({violation['impact']}) on {path}, {theme} theme: "
                f"{violation['help']}\n    {node['target']}: {node['html']}"
                for node in violation["nodes"]
            ]
        problems += [
            f"{theme} theme: image did not load: {src}" for src in page.evaluate(BROKEN_IMAGES)
        ]
        problems += [
            f"{theme} theme: {p}" for p in missing_icons(page.evaluate(SHOWN_ICONS), server)
        ]
        problems += [f"{theme} theme: {problem}" for problem in record.problems()]
    assert not problems, f"{len(problems)} problems on {path}:\n" + "\n".join(problems)


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
