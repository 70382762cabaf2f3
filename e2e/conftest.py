"""Fixtures for the browser tests: a local server, error recording, link checks, axe-core.

``nox -s e2e`` runs these tests (after ``nox -s docs``); they live outside
``tests/`` and pyproject's ``testpaths`` names only ``tests``, so a plain
``pytest`` never collects them. By hand, from the repository root::

    npm ci --prefix e2e          # axe-core, pinned in e2e/package-lock.json
    pytest e2e -p no:cacheprovider

pytest-playwright provides the browser, the contexts (``new_context``) and
pages; the overrides below point it at Debian's Chromium (no browser download)
and at the local server. What this file keeps, because no package does it:
serving the built site like a static host (``serve.py``: the 404 page),
recording console errors, failed and off-site requests per page, checking
every link and #fragment once, axe-core's script, named screenshots and the
summary printed at the end.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urldefrag, urlsplit

import pytest
from builtsite import HTML, READER, ROOT

ARTIFACTS = ROOT / "e2e-artifacts"
AXE = Path(__file__).parent / "node_modules" / "axe-core" / "axe.min.js"
CHROMIUM = os.environ.get("HOOKS_TUTORIAL_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


# -- what the run saw, printed at the end -------------------------------------------


@dataclass
class Stats:
    pages: set[str] = field(default_factory=set)
    links: int = 0  # link, image, script and stylesheet references checked
    urls: set[str] = field(default_factory=set)  # distinct internal URLs fetched
    anchors: int = 0  # references with a #fragment whose target was checked
    downloads: set[str] = field(default_factory=set)
    external: Counter[str] = field(default_factory=Counter)  # host -> links (not fetched)
    audits: int = 0  # axe-core runs (page x theme)
    screenshots: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "pages_visited": len(self.pages),
            "references_checked": self.links,
            "distinct_internal_urls": len(self.urls),
            "fragments_checked": self.anchors,
            "downloads_checked": len(self.downloads),
            "external_links_by_host": dict(self.external.most_common()),
            "axe_audits": self.audits,
            "screenshots": self.screenshots,
            "notes": self.notes,
        }


STATS_KEY = pytest.StashKey[Stats]()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[STATS_KEY] = Stats()


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    stats = config.stash.get(STATS_KEY, None)
    if stats is None or not stats.pages:
        return
    summary = stats.as_dict()
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "summary.json").write_text(
        json.dumps(summary, indent=2, ensure_ascii=False), encoding="utf-8"
    )
    write = terminalreporter.write_line
    terminalreporter.section("browser test summary")
    write(f"pages visited in Chromium: {summary['pages_visited']}")
    write(
        f"references checked (links, images, scripts, stylesheets): {summary['references_checked']}"
        f" ({summary['distinct_internal_urls']} distinct internal URLs fetched,"
        f" {summary['fragments_checked']} #fragments checked)"
    )
    write(f"downloads checked: {summary['downloads_checked']}")
    write(f"axe-core audits (WCAG 2 A/AA, page x theme): {summary['axe_audits']}")
    hosts = ", ".join(f"{h} {n}" for h, n in stats.external.most_common())
    write(f"external links (not fetched: the tests run offline): {hosts or 'none'}")
    write(f"screenshots: {len(stats.screenshots)} in {ARTIFACTS}")
    for note in stats.notes:
        write(note)


@pytest.fixture(scope="session")
def stats(request: pytest.FixtureRequest) -> Stats:
    return request.config.stash[STATS_KEY]


# -- the site and its server ----------------------------------------------------------


@pytest.fixture(scope="session")
def site() -> Path:
    missing = [
        p for p in ("en/index.html", "zh_CN/index.html", "index.html") if not (HTML / p).is_file()
    ]
    if missing:
        pytest.exit(
            f"the site is not built ({', '.join(missing)} missing in {HTML}): run `nox -s docs` first",
            returncode=1,
        )
    return HTML


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="session")
def server(site: Path) -> Iterator[str]:
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("serve.py")), str(site), str(port)]
    )
    base = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(base + "en/index.html", timeout=2):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.exit(f"the test server did not start on {base}", returncode=1)
                time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=10)


# -- the browser: pytest-playwright's fixtures, pointed at Debian's Chromium -----------


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    if not Path(CHROMIUM).is_file():
        pytest.exit(
            f"no Chromium at {CHROMIUM}: `apt-get install chromium chromium-driver` "
            "(nox -s e2e does this when run as root)",
            returncode=1,
        )
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_ARGS}


@pytest.fixture(scope="session")
def base_url(server: str) -> str:
    return server


@dataclass
class Record:
    """What went wrong while a page was open."""

    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)
    external_requests: list[str] = field(default_factory=list)

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


@pytest.fixture
def open_page(new_context: Callable[..., Any], server: str, stats: Stats) -> Callable[..., Any]:
    """Open a URL path in a fresh page that records errors; returns (page, record, response).

    Keyword options go to pytest-playwright's ``new_context`` (``locale``,
    ``color_scheme``, ``accept_downloads``, ...).
    """

    def open_(path: str, context: Any = None, **options: Any) -> tuple[Any, Record, Any]:
        if context is None:
            context = new_context(**{**READER, **options})
            context.set_default_timeout(20_000)
        page = context.new_page()
        record = watch(page, server)
        response = page.goto(server + path.lstrip("/"), wait_until="load")
        stats.pages.add(page.url.split("#")[0].split("?")[0])
        return page, record, response

    return open_


# -- link checking ---------------------------------------------------------------------

ID_ATTR = re.compile(r"""\s(?:id|name)=["']([^"']+)["']""")


class LinkChecker:
    """Fetch each internal URL once; check #fragments against the target's ids."""

    def __init__(self, base: str, stats: Stats) -> None:
        self.base = base
        self.stats = stats
        self.status: dict[str, int] = {}
        self.ids: dict[str, set[str]] = {}
        self.sizes: dict[str, int] = {}

    def _fetch(self, url: str) -> int:
        if url not in self.status:
            try:
                with urllib.request.urlopen(url, timeout=10) as response:
                    body = response.read()
                    self.status[url] = response.status
                    self.sizes[url] = len(body)
                    if response.headers.get_content_type() == "text/html":
                        text = body.decode("utf-8", "replace")
                        self.ids[url] = {unescape(m) for m in ID_ATTR.findall(text)}
            except urllib.error.HTTPError as error:
                self.status[url] = error.code
            self.stats.urls.add(url)
        return self.status[url]

    def check(self, url: str) -> str | None:
        """A problem with ``url``, or None. External URLs are counted, not fetched."""
        if url.startswith(("mailto:", "javascript:", "data:", "tel:")):
            return None
        if not url.startswith(self.base):
            self.stats.external[urlsplit(url).netloc] += 1
            return None
        self.stats.links += 1
        target, fragment = urldefrag(url)
        target = target.split("?")[0]
        status = self._fetch(target)
        if status != 200:
            return f"{url}: HTTP {status}"
        if target.endswith("/"):
            return None
        if fragment and target in self.ids:
            self.stats.anchors += 1
            if unquote(fragment) not in self.ids[target]:
                return f"{url}: no element with id {unquote(fragment)!r} on that page"
        return None

    def size(self, url: str) -> int:
        self._fetch(url)
        return self.sizes.get(url, 0)


@pytest.fixture(scope="session")
def links(server: str, stats: Stats) -> LinkChecker:
    return LinkChecker(server, stats)


# -- axe-core ---------------------------------------------------------------------------


@pytest.fixture(scope="session")
def axe_script() -> str:
    """axe-core's browser script, installed by ``npm ci --prefix e2e`` (nox -s e2e does it)."""
    if not AXE.is_file():
        pytest.exit(
            f"axe-core is not installed ({AXE} missing): run `npm ci --prefix e2e`",
            returncode=1,
        )
    return AXE.read_text(encoding="utf-8")


# -- artifacts --------------------------------------------------------------------------


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


@pytest.fixture
def screenshot(artifacts: Path, stats: Stats) -> Callable[[Any, str], Path]:
    """A named screenshot of what a reader sees (pytest-playwright's --screenshot names
    files after the test and takes one per test; these are chosen views)."""

    def take(page: Any, name: str) -> Path:
        path = artifacts / f"{name}.png"
        page.screenshot(path=str(path), full_page=False)
        stats.screenshots.append(path.name)
        return path

    return take
