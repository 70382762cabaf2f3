"""What the browser tests share: the built site's pages (``nox -s docs`` builds them)."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parents[1]
HTML = ROOT / "docs" / "_build" / "html"
EXAMPLES = ROOT / "examples"
LANGUAGES = ("en", "zh_CN")
CJK = re.compile(r"[\u4e00-\u9fff]")  # a Chinese character
# the browser contexts: a reader's desktop browser (tests may override each option)
READER: dict[str, Any] = {"locale": "en-US", "viewport": {"width": 1280, "height": 900}}
GALLERY_PAGES = [
    f"auto_examples/{p.parent.name}/{p.stem}" for p in sorted(EXAMPLES.glob("*/plot_*.py"))
]


def _first(pattern: str, marker: str = "") -> list[str]:
    """The first English page matching ``pattern`` (whose HTML holds ``marker``), as a name."""
    for path in sorted((HTML / "en").glob(pattern)):
        if marker in path.read_text(encoding="utf-8"):
            return [path.relative_to(HTML / "en").with_suffix("").as_posix()]
    return []


def template_pages() -> list[str]:
    """One page of each kind other than the tutorial pages (names, without the language).

    The home page, the API summary, the hook cheat sheet (tables drawn by
    docs/_ext/cheatsheet.py), an API class page and an API function page, a
    module's source (viewcode) and the source index, the gallery index, the
    general index, search and 404.
    """
    return [
        "index",
        "api",
        "cheatsheet",
        *_first("generated/hooks_tutorial.*.html", '<dl class="py class">'),
        *_first("generated/hooks_tutorial.*.html", '<dl class="py function">'),
        *_first("_modules/hooks_tutorial/*.html"),
        "_modules/index",
        "auto_examples/index",
        "genindex",
        "search",
        "404",
    ]


def audited_pages() -> list[str]:
    """The pages the browser audits: every tutorial page and one page of each other
    kind, in both languages (``tests/site/test_html.py`` reads every page without
    a browser)."""
    names = [*GALLERY_PAGES, *template_pages()]
    return [f"{language}/{name}.html" for language in LANGUAGES for name in names]


FONT_ERROR = re.compile(r"OTS parsing error|Failed to decode downloaded font")

# every icon drawn on the page: a private-use character in an element's text or in
# its ::before / ::after, with the font face (family, weight) the browser picked for
# it and the file that face loads (from the page's @font-face rules)
SHOWN_ICONS = """() => {
  const faces = {};
  for (const sheet of document.styleSheets) {
    let rules; try { rules = sheet.cssRules; } catch (e) { continue; }
    for (const rule of rules) {
      if (!(rule instanceof CSSFontFaceRule)) continue;
      const url = /url\\(["']?([^"')]+)/.exec(rule.style.getPropertyValue('src'));
      const family = rule.style.getPropertyValue('font-family').replace(/["'\\\\]/g, '');
      if (url) faces[family + '/' + rule.style.getPropertyValue('font-weight')] =
        new URL(url[1], sheet.href || location.href).href;
    }
  }
  const icons = [];
  for (const el of document.querySelectorAll('*')) {
    for (const pseudo of [null, '::before', '::after']) {
      const style = getComputedStyle(el, pseudo);
      if (style.display === 'none') continue;
      const own = el.childNodes.length === 1 && el.firstChild.nodeType === 3;
      const text = pseudo ? style.content : (own ? el.textContent : '');
      if (!text || text === 'none') continue;
      for (const c of text) {
        const code = c.codePointAt(0);
        if (code < 0xe000 || code > 0xf8ff) continue;
        const family = style.fontFamily.split(',')[0].replace(/["']/g, '').trim();
        const key = family + '/' + style.fontWeight;
        icons.push({code, face: key, file: faces[key] || null,
                    where: el.tagName.toLowerCase() + '.' + String(el.className).trim().split(/\\s+/).join('.') + (pseudo || '')});
      }
    }
  }
  return icons;
}"""


@functools.cache
def _glyphs(font: Path) -> frozenset[int]:
    from fontTools.ttLib import TTFont  # noqa: PLC0415  (fonttools[woff]: the e2e group)

    cmap = TTFont(font).getBestCmap() or {}
    return frozenset(cmap)


def missing_icons(icons: list[dict[str, Any]], server: str) -> list[str]:
    """The icons (from ``SHOWN_ICONS``) whose glyph is not in the font file the page loads.

    A missing glyph shows as an empty box, and no console message says so.
    """
    problems = set()
    for icon in icons:
        shown = f"U+{icon['code']:04X} in {icon['face']} ({icon['where']})"
        if not icon["file"] or not icon["file"].startswith(server):
            problems.add(f"icon {shown}: no font file of this site is declared for it")
        elif icon["code"] not in _glyphs(HTML / icon["file"][len(server) :]):
            problems.add(f"icon {shown}: {icon['file'][len(server) :]} has no glyph for it")
    return sorted(problems)


@dataclass
class Record:
    """What went wrong while a page was open."""

    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)
    external_requests: list[str] = field(default_factory=list)

    def clear(self) -> None:
        for found in (
            self.console_errors,
            self.page_errors,
            self.failed_requests,
            self.external_requests,
        ):
            found.clear()

    def problems(self) -> list[str]:
        return (
            [f"console error: {m}" for m in self.console_errors]
            + [f"JavaScript exception: {m}" for m in self.page_errors]
            + [f"failed request: {m}" for m in self.failed_requests]
            + [
                f"request to another host (the site must work offline): {m}"
                for m in self.external_requests
            ]
        )


def watch(page: Any, server: str) -> Record:
    """Record the page's errors and failed requests; abort requests to other hosts."""
    record = Record()
    # requests to any other host are aborted (and reported): the site must work offline
    elsewhere = re.compile("^(?!" + re.escape(server) + "|data:|blob:)")

    def block(route: Any) -> None:
        record.external_requests.append(route.request.url)
        route.abort()

    page.route(elsewhere, block)
    page.on(
        "console",
        lambda msg: (
            record.console_errors.append(f"{msg.text} ({msg.location.get('url')})")
            # a font the browser refuses is only a warning in Chromium's console
            if msg.type == "error" or (msg.type == "warning" and FONT_ERROR.search(msg.text))
            else None
        ),
    )
    page.on("pageerror", lambda error: record.page_errors.append(str(error)))
    page.on(
        "requestfailed",
        lambda request: (
            None
            if request.url in record.external_requests
            # a navigation cut short by the root page's own redirect is not a
            # broken link (those arrive as HTTP errors in the "response" handler)
            or (request.is_navigation_request() and request.failure == "net::ERR_ABORTED")
            # the favicon is fetched after the page loads; a test that navigates on at
            # once cancels it (a missing favicon arrives as an HTTP error instead)
            or (request.url.endswith("/favicon.svg") and request.failure == "net::ERR_ABORTED")
            # so are the lazy images (the gallery's thumbnails) still loading when a test
            # clicks on: test_language_switcher_round_trip failed once that way on the
            # gallery index. A missing image is an HTTP error, and BROKEN_IMAGES (test_a11y)
            # finds one that does not load
            or (request.resource_type == "image" and request.failure == "net::ERR_ABORTED")
            else record.failed_requests.append(f"{request.url}: {request.failure}")
        ),
    )
    page.on(
        "response",
        lambda response: (
            record.failed_requests.append(f"{response.url}: HTTP {response.status}")
            if response.status >= 400
            and not response.url.endswith("/404.html")
            and response.request.resource_type != "document"
            else None
        ),
    )
    return record
