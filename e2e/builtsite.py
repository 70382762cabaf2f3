"""What the browser tests share: the built site's pages (``nox -s docs`` builds them)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parents[1]
HTML = ROOT / "docs" / "_build" / "html"
EXAMPLES = ROOT / "examples"
LANGUAGES = ("en", "zh_CN")
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

    The home page, the API summary, an API class page and an API function page,
    a module's source (viewcode) and the source index, the gallery index, the
    general index, search and 404.
    """
    return [
        "index",
        "api",
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
            if msg.type == "error"
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
