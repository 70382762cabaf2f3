"""Readable by machines: ``llms.txt`` and each page's Markdown twin, in both languages.

sphinx-llm-friendly writes them during the HTML build (``docs/_ext/markdown_twins.py``
says what this site adds): ``<language>/llms.txt`` lists every page with a link to
its twin, ``<page>.md`` next to ``<page>.html``, which the HTML page announces with
``<link rel="alternate" type="text/markdown">``. A twin holds the page's prose, its
code and everything the code printed; the zh_CN twins come from the Chinese build.
"""

from __future__ import annotations

import re
from functools import cache
from html import unescape
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import pytest
from sitecheck import EXAMPLES, HTML, LANGUAGES, html, outputs

SITE = "http://site.invalid/"  # stands for the site's root while resolving links
TUTORIALS = [
    f"auto_examples/{p.parent.name}/{p.stem}" for p in sorted(EXAMPLES.glob("*/plot_*.py"))
]
# [text](url) or [text](url "title"), with one level of [] in the text
LINK = re.compile(r'\[((?:[^\[\]]|\[[^\]]*\])*)\]\(([^)\s]+)(?: "[^"]*")?\)')
CJK = re.compile(r"[\u4e00-\u9fff]")
CODE = re.compile(r"^```.*?^```$|`[^`\n]+`", re.MULTILINE | re.DOTALL)  # fenced blocks, inline code
DIRECTIVE_OR_ROLE = re.compile(
    r"^\.\. [\w:-]+::|:(?:doc|ref|class|func|meth|obj|mod|math):`", re.MULTILINE
)


def _twins(language: str) -> list[Path]:
    root = HTML / language
    return sorted(p for p in root.rglob("*.md") if not p.relative_to(root).parts[0].startswith("_"))


def _file(base: str, url: str) -> Path | None:
    """The built file that ``url``, found in the file at ``base`` (relative to HTML), names."""
    parts = urlsplit(urljoin(SITE + base, url))
    if f"{parts.scheme}://{parts.netloc}/" != SITE:
        return None
    return HTML / unquote(parts.path).removeprefix("/")


@cache
def _llms_txt(language: str) -> dict[Path, str]:
    """The pages that ``<language>/llms.txt`` links to, with their titles."""
    text = (HTML / language / "llms.txt").read_text(encoding="utf-8")
    links = {}
    for title, url in LINK.findall(text):
        target = _file(f"{language}/llms.txt", url)
        assert target is not None, f"{language}/llms.txt links to another host: {url}"
        links[target] = title
    return links


def _title(page: str, language: str) -> str:
    """The page's ``<h1>``, as text."""
    h1 = re.search(r"<h1[^>]*>(.*?)</h1>", html(page.rsplit("/", 1)[-1], language), re.DOTALL)
    assert h1, page
    text = re.sub(r'<a class="headerlink".*?</a>', "", h1.group(1), flags=re.DOTALL)
    return unescape(re.sub(r"<[^>]+>", "", text)).strip()


@pytest.mark.parametrize("language", LANGUAGES)
def test_llms_txt_links_to_every_tutorial_page_and_nowhere_else(language: str) -> None:
    links = _llms_txt(language)
    missing = [p for p in links if not p.is_file()]
    assert not missing, f"{language}/llms.txt links to files that were not built: {missing}"
    for page in TUTORIALS:
        twin = HTML / language / f"{page}.md"
        assert twin in links, f"{language}/llms.txt does not link to {page}.md"
        assert links[twin] == _title(page, language), page
    # and to every other page that has a twin (the API pages, the chapter indexes)
    assert set(links) == set(_twins(language))


@pytest.mark.parametrize("page", TUTORIALS)
@pytest.mark.parametrize("language", LANGUAGES)
def test_every_tutorial_page_has_its_markdown_twin(page: str, language: str) -> None:
    twin = HTML / language / f"{page}.md"
    assert twin.is_file(), f"no Markdown twin {language}/{page}.md"
    text = twin.read_text(encoding="utf-8")
    # the page's title, as the twin's only top-level heading
    first = text.splitlines()[0]
    assert re.sub(r"[`*\\]", "", first) == f"# {_title(page, language)}"
    # every line the page's code printed, as the HTML page shows it
    printed = [line for line in outputs(page.rsplit("/", 1)[-1], language).splitlines() if line]
    assert printed, f"{page} prints nothing"
    missing = [line for line in printed if line not in text]
    assert not missing, f"{language}/{page}.md lacks printed lines: {missing[:3]}"
    # its code, in Python fences, and no reST left over
    assert "```python\n" in text
    assert not DIRECTIVE_OR_ROLE.findall(text), DIRECTIVE_OR_ROLE.findall(text)
    # in the page's language (outputs and code are the same in both)
    chinese = len(CJK.findall(text))
    assert chinese > 200 if language == "zh_CN" else chinese == 0, (language, chinese)


@pytest.mark.parametrize("page", TUTORIALS)
@pytest.mark.parametrize("language", LANGUAGES)
def test_the_html_page_announces_its_twin(page: str, language: str) -> None:
    source = (HTML / language / f"{page}.html").read_text(encoding="utf-8")
    (href,) = re.findall(r'<link rel="alternate" type="text/markdown" href="([^"]+)"', source)
    assert _file(f"{language}/{page}.html", href) == HTML / language / f"{page}.md"
    # and has no "copy as Markdown" button: the extension's labels are English only
    assert "scrapy-copy-as-markdown" not in source


@pytest.mark.parametrize("language", LANGUAGES)
def test_twins_link_only_to_built_files_and_to_what_their_page_links_to(language: str) -> None:
    """No twin sends a reader (or a crawler) anywhere its HTML page does not."""
    problems = []
    for twin in _twins(language):
        rel = twin.relative_to(HTML).as_posix()
        page_html = twin.with_suffix(".html").read_text(encoding="utf-8")
        page_links = {unescape(h) for h in re.findall(r'href="([^"]+)"', page_html)}
        full = twin.read_text(encoding="utf-8")
        for _, url in LINK.findall(CODE.sub("", full)):  # a link is outside code
            target = _file(rel, url)
            if target is None and url not in page_links:
                problems.append(f"{rel}: {url} (another host, not linked from the page)")
            elif target is not None and not target.is_file():
                problems.append(f"{rel}: {url} (no such file)")
        # any other address, in prose or in code, is one that the page shows too
        bare = re.findall(r"https?://[^\s)\"'>`]+", LINK.sub("", full))
        shown = unescape(page_html)
        problems += [f"{rel}: {url} (not on the page)" for url in bare if url not in shown]
    assert not problems, "\n".join(problems[:20])
    llms = (HTML / language / "llms.txt").read_text(encoding="utf-8")
    assert not re.findall(r"https?://", llms), "llms.txt names another host"
