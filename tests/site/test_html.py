"""Every built page, read as HTML without a browser: language, alt text, links, offline.

These checks need only the built files, so they run on every page of both
languages (and the root pages); the browser tests (``nox -s e2e``) load one
page of each kind, and every tutorial page, in Chromium for what only a browser
sees (scripts, requests made at run time, axe-core, the keyboard).

- ``<html lang>`` is the page's language (screen readers pick their voice from it);
- every image has alternative text, and a gallery figure's says what it shows;
- every internal link, image, script, stylesheet and download exists (a download
  is not empty), and every ``#fragment`` names an element of its target page;
- nothing the page loads (images, scripts, stylesheets) comes from another host:
  the site works offline;
- a page's canonical URL is its own;
- names in the examples' code link to the API pages, PyTorch's and Python's docs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import pytest
from sitecheck import EXAMPLES, HTML, LANGUAGES

SITE = "http://site.invalid/"  # stands for the site's root while resolving URLs
GALLERY_PAGES = [
    f"auto_examples/{p.parent.name}/{p.stem}" for p in sorted(EXAMPLES.glob("*/plot_*.py"))
]


def built_pages() -> list[str]:
    """Every HTML page of both languages and the root pages, relative to ``HTML``."""
    pages = ["index.html", "404.html"]
    for language in LANGUAGES:
        for path in sorted((HTML / language).rglob("*.html")):
            rel = path.relative_to(HTML).as_posix()
            if not any(part in rel for part in ("/_static/", "/_sources/", "/_downloads/")):
                pages.append(rel)
    return [p for p in pages if (HTML / p).is_file()]


@dataclass
class Reference:
    kind: str  # link, image, script, resource
    url: str
    download: bool = False


@dataclass
class Scan:
    """What one page holds: its language, ids, references, images and canonical URL."""

    lang: str | None = None
    ids: set[str] = field(default_factory=set)
    references: list[Reference] = field(default_factory=list)
    images: list[tuple[str, str | None, set[str]]] = field(default_factory=list)
    canonical: str | None = None
    code_links: list[str] = field(default_factory=list)  # names in example code


class _Parser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.scan = Scan()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attr = {name: value or "" for name, value in attrs}
        scan = self.scan
        for name in ("id", "name"):
            if attr.get(name):
                scan.ids.add(attr[name])
        classes = set(attr.get("class", "").split())
        if tag == "html":
            scan.lang = dict(attrs).get("lang")
        elif tag == "a" and "href" in attr:
            download = "download" in attr or "download" in classes
            scan.references.append(Reference("link", attr["href"], download))
            if any(c.startswith("sphx-glr-backref") for c in classes):
                scan.code_links.append(attr["href"])
        elif tag == "img":
            scan.images.append((attr.get("src", ""), dict(attrs).get("alt"), classes))
            scan.references.append(Reference("image", attr.get("src", "")))
            for candidate in filter(None, attr.get("srcset", "").split(",")):
                scan.references.append(Reference("image", candidate.split()[0]))
        elif tag == "script" and attr.get("src"):
            scan.references.append(Reference("script", attr["src"]))
        elif tag == "link" and attr.get("href"):
            rel = attr.get("rel", "").split()
            if "canonical" in rel:
                scan.canonical = attr["href"]
            elif "alternate" not in rel:  # the other language's address, not loaded
                scan.references.append(Reference("resource", attr["href"]))


@cache
def scan(page: str) -> Scan:
    parser = _Parser()
    parser.feed((HTML / page).read_text(encoding="utf-8"))
    return parser.scan


def _target(page: str, url: str) -> tuple[str | None, str]:
    """The built file ``url`` points to (None for another host) and its fragment."""
    parts = urlsplit(urljoin(SITE + page, url))
    if f"{parts.scheme}://{parts.netloc}/" != SITE:
        return None, ""
    path = unquote(parts.path).removeprefix("/")
    if path == "" or path.endswith("/"):
        path += "index.html"
    return path, unquote(parts.fragment)


PAGES = built_pages()


@pytest.mark.parametrize("page", PAGES)
def test_page_declares_its_language(page: str) -> None:
    """``<html lang>`` is en on English (and root) pages, zh-CN on Chinese ones."""
    language = page.split("/", 1)[0] if "/" in page else "en"
    assert scan(page).lang == language.replace("_", "-")


@pytest.mark.parametrize("page", PAGES)
def test_internal_references_resolve(page: str) -> None:
    """Links, images, scripts, stylesheets and downloads exist; fragments name an element."""
    problems = []
    for ref in scan(page).references:
        if ref.url.startswith(("mailto:", "javascript:", "data:", "tel:")):
            continue
        path, fragment = _target(page, ref.url)
        if path is None:
            continue  # another host: links to it are not fetched (checks run offline)
        file = HTML / path
        if not file.is_file():
            problems.append(f"broken {ref.kind}: {ref.url} ({path} does not exist)")
        elif ref.download and file.stat().st_size == 0:
            problems.append(f"empty download: {ref.url}")
        elif fragment and file.suffix == ".html" and fragment not in scan(path).ids:
            problems.append(f"{ref.url}: no element with id {fragment!r} on {path}")
    assert not problems, f"{page}:\n" + "\n".join(problems)


@pytest.mark.parametrize("page", PAGES)
def test_nothing_loads_from_another_host(page: str) -> None:
    """Images, scripts and stylesheets come from the site itself: it works offline."""
    elsewhere = [
        f"{ref.kind}: {ref.url}"
        for ref in scan(page).references
        if ref.kind != "link"
        and not ref.url.startswith("data:")
        and _target(page, ref.url)[0] is None
    ]
    assert not elsewhere, f"{page} loads from other hosts:\n" + "\n".join(elsewhere)


@pytest.mark.parametrize(
    "page", [p for p in PAGES if p.startswith(("en/", "zh_CN/")) and not p.endswith("/404.html")]
)
def test_canonical_url_is_the_page_itself(page: str) -> None:
    canonical = scan(page).canonical
    if page.endswith("/search.html"):
        return
    assert canonical is not None, f"{page} has no canonical URL"
    assert canonical.endswith("/" + page), f"canonical URL {canonical} for {page}"


@pytest.mark.parametrize("page", PAGES)
def test_images_have_alt_text(page: str) -> None:
    """Every image has an ``alt`` attribute (empty only for a decorative image)."""
    missing = [src for src, alt, _ in scan(page).images if alt is None]
    assert not missing, f"{page}: images without alt text: {missing}"


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
    "page",
    [
        pytest.param(
            f"{language}/{name}.html",
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
def test_figures_have_alt_text_that_says_what_they_show(page: str) -> None:
    """Each figure's alt text comes from its title, not from the script's file name."""
    bad = []
    for src, alt, classes in scan(page).images:
        if not {"sphx-glr-single-img", "sphx-glr-multi-img"} & classes:
            continue
        if not alt or not alt.strip():
            bad.append(f"{Path(src).name} has no alt text")
        elif alt.strip() == _file_name_alt(src):
            bad.append(f"{Path(src).name}: alt={alt!r}, the file name (the figure has no title)")
    assert not bad, f"{page}: figures whose alt text does not say what they show:\n" + "\n".join(
        bad
    )


def test_code_links_to_api_documentation() -> None:
    """Names in the examples' code link to the library's API pages, PyTorch's and Python's."""
    hosts: dict[str, int] = {}
    for name in GALLERY_PAGES:
        for href in scan(f"en/{name}.html").code_links:
            path, _ = _target(f"en/{name}.html", href)
            host = "API pages" if path is not None else urlsplit(href).netloc
            hosts[host] = hosts.get(host, 0) + 1
    assert hosts.get("API pages", 0) > 0, hosts
    assert hosts.get("docs.pytorch.org", 0) > 0, hosts
    assert hosts.get("docs.python.org", 0) > 0, hosts


def test_every_page_was_checked() -> None:
    """Both languages have the same pages, and there are tutorial pages among them."""
    english = {p.removeprefix("en/") for p in PAGES if p.startswith("en/")}
    chinese = {p.removeprefix("zh_CN/") for p in PAGES if p.startswith("zh_CN/")}
    assert english == chinese
    assert {f"{name}.html" for name in GALLERY_PAGES} <= english
