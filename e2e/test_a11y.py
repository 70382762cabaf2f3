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

import re
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

# Code blocks are most of a tutorial page's elements (page 35: 5,189 of 7,287 are the
# highlighted code's token spans), and axe-core computes the contrast of each of them: that
# was half of every audit. Tokens that look alike on a page have the same contrast, so
# before each audit the spans whose look was already seen on the page (class, colour,
# font size and weight, opacity, and the background of the token and of every element
# around it) are marked, and color-contrast skips the marked ones: every look of code
# on every page is still measured, once (page 35: 47 looks). The other rules never applied
# to a token span (a class and text, no role, no link); they run on every element.
# test_the_sampled_audit_still_finds_a_faint_code_token checks that a faint look is found.
SAME_LOOK = "data-axe-same-look"
MARK_SAME_LOOK = """mark => {
  for (const el of document.querySelectorAll(`[${mark}]`)) el.removeAttribute(mark);
  const backgrounds = new Map();
  const background = (el) => {
    if (!el) return '';
    if (!backgrounds.has(el)) {
      const colour = getComputedStyle(el).backgroundColor;
      backgrounds.set(el, (colour === 'rgba(0, 0, 0, 0)' ? '' : colour) + '/' + background(el.parentElement));
    }
    return backgrounds.get(el);
  };
  const seen = new Set();
  for (const el of document.querySelectorAll('div.highlight pre span')) {
    if (el.children.length) continue;
    const s = getComputedStyle(el);
    const look = [el.className, s.color, s.fontSize, s.fontWeight, s.opacity, background(el)].join('|');
    if (seen.has(look)) el.setAttribute(mark, '');
    else seen.add(look);
  }
  return seen.size;
}"""
# axe.configure (public): color-contrast's own selector is '*'
SKIP_SAME_LOOK = (
    "mark => axe.configure({rules: [{id: 'color-contrast', selector: `*:not([${mark}])`}]})"
)

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
def audit_page(
    browser: Any, browser_context_args: dict[str, Any], axe_script: str, server: str
) -> Iterator[tuple[Any, Record]]:
    """One page, reused for every audit (a page load is far cheaper than a context).

    axe-core is injected into every document, and the page records what goes
    wrong while it is open.
    """
    context = browser.new_context(**browser_context_args, **READER)
    context.set_default_timeout(20_000)
    context.add_init_script(script=axe_script)
    page = context.new_page()
    yield page, watch(page, server)
    context.close()


# The theme's colours change with CSS transitions (0.15 s; the search button's also run
# while a page loads): a colour measured before its transition ends is halfway between
# the themes, and axe-core reported the search button's text in the light theme just
# after the switch. The audited page drops its transitions, so every colour is the one a
# reader sees once the page has settled (the colours themselves are the site's own).
NO_TRANSITIONS = "*, *::before, *::after { transition: none !important; }"


def open_settled(page: Any, url: str) -> Any:
    """Open ``url`` and drop its transitions (``NO_TRANSITIONS``); the response."""
    response = page.goto(url, wait_until="load")
    page.add_style_tag(content=NO_TRANSITIONS)
    return response


def set_theme(page: Any, theme: str) -> None:
    """Ask for the reader's colour scheme; the site follows it (``default_mode = "auto"``).
    Call ``open_settled`` first: without transitions, the new colours are there at once."""
    page.emulate_media(color_scheme=theme)
    page.wait_for_function(f"document.documentElement.dataset.theme === '{theme}'")


def audit(page: Any, where: str) -> list[str]:
    """axe-core's WCAG 2 A/AA violations on the open page, each code look measured once."""
    page.evaluate(MARK_SAME_LOOK, SAME_LOOK)
    page.evaluate(SKIP_SAME_LOOK, SAME_LOOK)
    return [
        f"{violation['rule']} ({violation['impact']}) on {where}: "
        f"{violation['help']}\n    {node['target']}: {node['html']}"
        for violation in page.evaluate(AXE_RUN)
        for node in violation["nodes"]
    ]


# the theme each page loads in: every other page, and the other one in the other language
FIRST_THEME = {
    path: THEMES[(i + path.startswith("zh_CN/")) % 2] for i, path in enumerate(audited_pages())
}


@pytest.mark.parametrize("path", FIRST_THEME)
def test_page_is_accessible_and_loads_cleanly(
    path: str, audit_page: tuple[Any, Record], server: str, stats: Any
) -> None:
    """axe-core finds no WCAG 2 A/AA violation, in either theme; nothing fails to load;
    every icon the page draws has its glyph in the font file the page loads.

    The page loads once, in the light theme or (every other page) the dark one,
    and is audited, then switched to the other theme (as when the reader's
    system switches) and audited again.
    """
    page, record = audit_page
    record.clear()
    first = FIRST_THEME[path]
    page.emulate_media(color_scheme=first)
    response = open_settled(page, server + path)
    problems = [f"{path}: HTTP {response.status}"] if response.status != 200 else []
    for theme in (first, *(t for t in THEMES if t != first)):
        set_theme(page, theme)
        stats.audits += 1
        stats.pages.add(page.url)
        problems += audit(page, f"{path}, {theme} theme")
        problems += [
            f"{theme} theme: image did not load: {src}" for src in page.evaluate(BROKEN_IMAGES)
        ]
        problems += [
            f"{theme} theme: {p}" for p in missing_icons(page.evaluate(SHOWN_ICONS), server)
        ]
    problems += [f"loaded in the {first} theme: {problem}" for problem in record.problems()]
    assert not problems, f"{len(problems)} problems on {path}:\n" + "\n".join(problems)


@pytest.mark.parametrize("theme", THEMES)
def test_the_sampled_audit_still_finds_a_faint_code_token(
    theme: str, audit_page: tuple[Any, Record], server: str
) -> None:
    """Only one token of each look is measured: a faint look is still reported, once, in
    the theme where it is faint (the other theme's tokens are left as they are)."""
    page, _ = audit_page
    page.emulate_media(color_scheme=theme)
    open_settled(page, server + "en/" + GALLERY_PAGES[4] + ".html")
    set_theme(page, theme)
    background = page.evaluate(
        "() => getComputedStyle(document.querySelector('div.highlight pre')).backgroundColor"
    )
    # a grey close to the code's background: about 1.3:1 (text needs 4.5:1)
    red, green, blue = (
        round(0.85 * int(c) + 0.15 * 128) for c in re.findall(r"\d+", background)[:3]
    )
    page.add_style_tag(
        content=f"html[data-theme={theme}] div.highlight .nb {{ color: rgb({red}, {green}, {blue}) }}"
    )
    faint = page.evaluate("() => document.querySelectorAll('div.highlight pre span.nb').length")
    problems = audit(page, "test")
    contrast = [p for p in problems if p.startswith("color-contrast")]
    assert faint > 1, "the page shows no builtin name (class nb) to make faint"
    assert 1 <= len(contrast) < faint, problems  # found, and measured once per look
    assert all('class="nb"' in p for p in contrast), contrast
    assert len(problems) == len(contrast), problems  # nothing else changed


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
