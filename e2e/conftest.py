"""Fixtures for the browser tests: a local server, error recording, axe-core.

``nox -s e2e`` runs these tests (after ``nox -s docs``); they live outside
``tests/`` and pyproject's ``testpaths`` names only the unit tests, so a plain
``pytest`` never collects them. By hand, from the repository root::

    npm ci --prefix e2e          # axe-core, pinned in e2e/package-lock.json
    pytest e2e -p no:cacheprovider -n auto

pytest-playwright provides the browser, the contexts (``new_context``) and
pages; the overrides below point it at Debian's Chromium (no browser download)
and at the local server. What this file keeps, because no package does it:
serving the built site like a static host (``serve.py``: the 404 page),
recording console errors, failed and off-site requests per page
(``builtsite.watch``), axe-core's script, named screenshots and the summary
printed at the end (with pytest-xdist's ``-n auto``, as ``nox -s e2e`` runs them,
each worker has its own server and browser and hands what it saw to the
controller, which prints the summary). Links, #fragments, images and downloads are checked
without a browser, on every page, by ``tests/site/test_html.py``.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from builtsite import HTML, READER, ROOT, Record, watch

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
    audits: int = 0  # axe-core runs (page x theme)
    screenshots: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "pages_visited": len(self.pages),
            "axe_audits": self.audits,
            "screenshots": self.screenshots,
            "notes": self.notes,
        }


STATS_KEY = pytest.StashKey[Stats]()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[STATS_KEY] = Stats()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """On a pytest-xdist worker, hand what it saw to the controller (``workeroutput``)."""
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        stats = session.config.stash[STATS_KEY]
        output["stats"] = {**stats.as_dict(), "pages_visited": sorted(stats.pages)}


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: the controller, as a worker ends
def pytest_testnodedown(node: Any, error: object) -> None:
    seen = getattr(node, "workeroutput", {}).get("stats")
    if seen is None:
        return
    stats = node.config.stash[STATS_KEY]
    stats.pages.update(seen["pages_visited"])
    stats.audits += seen["axe_audits"]
    stats.screenshots += seen["screenshots"]
    stats.notes += seen["notes"]


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
    write(f"axe-core audits (WCAG 2 A/AA, page x theme): {summary['axe_audits']}")
    write(f"screenshots: {len(stats.screenshots)} in {ARTIFACTS}")
    for note in sorted(stats.notes):
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
