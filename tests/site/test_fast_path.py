"""The fast path to Grad-CAM, page numbers and reading times, on the built site, both languages.

The path is one list, ``fast_path`` in docs/conf.py (docs/_ext/fast_path.py
draws everything from it). These tests read that list and the built HTML:

- the box on the home page and the tutorials' index links exactly the path's
  pages, in order, and its title counts them;
- every page of the path carries two banners (under the title, at the end)
  that state its step, "n of N", and link the next page of the path (the last,
  the tutorials' index) and the box;
- every tutorial page shows its number before its title, in the heading and in
  the navigation, and every page number the prose cites is a page of the site;
- every tutorial page shows its reading time, derived from its prose in its
  language, and its running time, the one its provenance line reports.
"""

from __future__ import annotations

import ast
import json
import posixpath
import re
from html import unescape
from html.parser import HTMLParser
from pathlib import Path

import pytest
from sitecheck import EXAMPLES, HTML, LANGUAGES, html, page_path, prose

CONF = Path(__file__).parents[2] / "docs" / "conf.py"
BOXES = ["index", "auto_examples/index"]
TUTORIALS = sorted(p.stem.split("_")[1] for p in EXAMPLES.glob("*/plot_*.py"))


def fast_path() -> list[str]:
    """The docnames of ``fast_path`` in conf.py, read without running conf.py."""
    for node in ast.parse(CONF.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "fast_path" for t in node.targets
        ):
            return [docname for docname, _, _ in ast.literal_eval(node.value)]
    msg = "docs/conf.py has no fast_path"
    raise LookupError(msg)


PATH = fast_path()
COUNT = {
    "en": [
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
    ],
    "zh_CN": ["两", "三", "四", "五", "六", "七", "八", "九", "十", "十一", "十二"],
}


def resolve(page: str, href: str) -> str:
    """The page (without ``.html``, with its #fragment) that a relative link on ``page`` names."""
    target, _, fragment = href.partition("#")
    path = posixpath.normpath(posixpath.join(posixpath.dirname(page), target)).removesuffix(".html")
    return f"{path}#{fragment}" if fragment else path


def text(fragment: str) -> str:
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", "", fragment))).strip()


def read(page: str, language: str) -> str:
    return (HTML / language / f"{page}.html").read_text(encoding="utf-8")


class _Box(HTMLParser):
    """The fast-path box: its title and its steps' links (the first link of each item)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.depth = 0
        self.title: str | None = None
        self.in_title = False
        self.links: list[str] = []
        self.item_link = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        classes = (attributes.get("class") or "").split()
        if tag == "div":
            if self.depth:
                self.depth += 1
            elif "fast-path" in classes and "admonition" in classes:
                self.depth = 1
                self.title = ""
        elif self.depth and tag == "p" and "admonition-title" in classes:
            self.in_title = True
        elif self.depth and tag == "li":
            self.item_link = True
        elif self.depth and tag == "a" and self.item_link:
            self.links.append(attributes.get("href") or "")
            self.item_link = False

    def handle_endtag(self, tag: str) -> None:
        if tag == "div" and self.depth:
            self.depth -= 1
        elif tag == "p":
            self.in_title = False

    def handle_data(self, data: str) -> None:
        if self.in_title and self.title is not None:
            self.title += data


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("page", BOXES)
def test_the_box_lists_the_path_in_order_and_counts_it(page: str, language: str) -> None:
    box = _Box()
    box.feed(read(page, language))
    assert box.title, f"{language}/{page}: no fast-path box"
    targets = [resolve(page, href) for href in box.links]
    assert targets == PATH, f"{language}/{page}: the box links {targets}"
    assert COUNT[language][len(PATH) - 2] in box.title, box.title
    assert "Grad-CAM" in box.title
    for target in targets:
        assert (HTML / language / f"{target}.html").is_file(), f"{language}/{target} is missing"


BANNER = re.compile(r'<div class="fast-path-banner no-search[^"]*">(.*?)</div>', re.DOTALL)
STEP = {
    "en": r"^Fast path to Grad-CAM, step (\d+) of (\d+)\. (?:Next on the path|The last step; "
    r"the other pages): (.+)$",
    "zh_CN": r"^Grad-CAM 快速路线：第 (\d+) 步，共 (\d+) 步。(?:路线上的下一页|这是最后一步；其余各页)：(.+)$",
}


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("step", range(1, len(PATH) + 1))
def test_each_step_states_its_position_and_links_the_next(step: int, language: str) -> None:
    page = PATH[step - 1]
    raw = read(page, language)
    banners = BANNER.findall(raw)
    assert len(banners) == 2, f"{language}/{page}: {len(banners)} banners"
    # one under the title, one as the page's last element, above the theme's footer
    article = raw.split('<article class="bd-article">', 1)[1].split("</article>", 1)[0]
    top = re.search(
        r'</h1>\s*(?:<p class="page-times[^"]*">.*?</p>\s*)?<div class="fast-path-banner',
        article,
        re.DOTALL,
    )
    assert top, f"{language}/{page}: the first banner is not right under the title"
    *_, last = BANNER.finditer(article)
    assert re.fullmatch(r"(?:\s*</section>)+\s*", article[last.end() :]), "not the page's end"
    found = re.match(STEP[language], text(banners[0]))
    assert found, text(banners[0])
    assert (int(found[1]), int(found[2])) == (step, len(PATH))
    links = [resolve(page, href) for href in re.findall(r'href="([^"]+)"', banners[0])]
    following = PATH[step] if step < len(PATH) else "auto_examples/index"
    assert links == ["index#fast-path", following]
    # the link shows the next page's title as its heading shows it (with its number)
    heading = re.search(r"<h1>(.*?)<a class=\"headerlink\"", read(following, language), re.DOTALL)
    assert heading is not None
    assert text(heading[1]) == found[3]
    assert 'id="fast-path"' in read("index", language)


def number(page: str) -> str:
    """``"05"`` -> ``"5"``, ``"18b"`` -> ``"18b"``: the number the prose cites."""
    return page.lstrip("0")


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("page", TUTORIALS)
def test_the_title_shows_the_page_number(page: str, language: str) -> None:
    raw = html(page, language)
    assert f'<h1><span class="page-number">{number(page)}. </span>' in raw
    assert re.search(rf"<title>{re.escape(number(page))}\. ", raw)


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_navigation_numbers_every_tutorial(language: str) -> None:
    raw = read("auto_examples/index", language)
    nav = raw.split('<nav class="bd-docs-nav', 1)[1].split("</nav>", 1)[0]
    entries = re.findall(r'<a class="reference internal" href="([^"]+)">(.*?)</a>', nav, re.DOTALL)
    numbered = {}
    for href, label in entries:
        found = re.search(r"plot_(\d+[a-z]?)_", href)
        if found:
            numbered[found[1]] = text(label)
    assert sorted(numbered) == TUTORIALS
    for page, label in numbered.items():
        assert label.startswith(f"{number(page)}. "), label


CITED = {
    "en": r"\b[Pp]ages? (\d+[a-z]?)\b(?:(?:, | and )(\d+[a-z]?)\b)?",
    "zh_CN": r"第 (\d+[a-z]?) 页",
}


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_page_number_the_prose_cites_is_a_page(language: str) -> None:
    pages = {number(page) for page in TUTORIALS}
    cited: dict[str, set[str]] = {}
    for page in TUTORIALS:
        for found in re.finditer(CITED[language], prose(page, language)):
            for value in filter(None, found.groups()):
                cited.setdefault(value, set()).add(page)
    assert cited, "no page cites another by number: is the pattern still right?"
    unknown = {value: sorted(where) for value, where in cited.items() if value not in pages}
    assert not unknown, f"{language}: cited page numbers that no title shows: {unknown}"


TIMES = {
    "en": r"^About (\d+) min to read(?:; the code ran in (?:under )?([\d.]+) s when this site "
    r"was built)?\.$",
    "zh_CN": r"^阅读约需 (\d+) 分钟(?:；构建本站时，代码运行用时 ?(?:不到 )?([\d.]+) 秒)?。$",
}
WORDS = re.compile(r"[A-Za-z0-9]+(?:['’_.\-][A-Za-z0-9]+)*")
HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def read_prose(raw: str) -> str:
    """What a reader reads on a page: the article without code, outputs, math and chrome."""
    article = raw.split('<article class="bd-article">', 1)[1].split("</article>", 1)[0]
    for pattern in (
        r'<div class="highlight[^"]*">.*?</pre></div>',
        r"<pre\b.*?</pre>",
        r"<math\b.*?</math>",
        r'<div class="sphx-glr-download-link-note.*?</div>',
        r'<div class="sphx-glr-footer.*?</div>\s*</div>',
        r'<p class="(?:sphx-glr-signature|provenance|page-times)[^"]*">.*?</p>',
        r'<div class="fast-path-banner.*?</div>',
        r'<a class="headerlink".*?</a>',
        r"<(script|style)\b.*?</\1>",
    ):
        article = re.sub(pattern, " ", article, flags=re.DOTALL)
    return text(article)


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("page", TUTORIALS)
def test_every_tutorial_shows_its_reading_and_running_time(page: str, language: str) -> None:
    raw = html(page, language)
    line = re.search(r'</h1>\s*<p class="page-times no-search">(.*?)</p>', raw, re.DOTALL)
    assert line, f"{language}/{page}: no times under the title"
    found = re.match(TIMES[language], text(line[1]))
    assert found, text(line[1])
    minutes, seconds = int(found[1]), found[2]
    # reading time: the page's own prose, in its language, at 238 words or 255 Han
    # characters a minute, rounded up. Recounted here from the HTML, whose text differs
    # from the doctree's by a few words (the title's number, a list marker): 0.1 min,
    # about 24 words, either way.
    prose_ = read_prose(raw)
    estimate = len(WORDS.findall(prose_)) / 238 + len(HAN.findall(prose_)) / 255
    assert minutes - 1 - 0.1 < estimate <= minutes + 0.1, (minutes, estimate)
    # running time: what the run that made the outputs took, as the provenance line says
    record = HTML.parents[1] / f"{page_path(page)}.provenance.json"
    assert record.is_file(), f"page {page} was not run in this build"
    recorded = json.loads(record.read_text(encoding="utf-8"))["seconds"]
    assert seconds == (f"{recorded:.1f}" if recorded >= 0.05 else "0.1")
