"""Light pages (issue 26, item 3), checked on the built site of both languages.

``benchmarks/bench_lighthouse.py`` measures the pages in Lighthouse; these checks
keep what it found fixed (docs/_ext/light.py, mathml.py, figures.py,
_templates/layout.html):

- math is MathML written at build time: no MathJax, and no TeX left for a script;
- nothing in ``<head>`` holds the first paint but the stylesheets and the one
  small script that inline code needs (``documentation_options.js``); the search
  scripts load on the search page only, Font Awesome's script nowhere;
- the icon fonts hold the icons the pages show, and little else;
- every page has a meta description in its language (an API page: its summary);
- figures far down a page load lazily; every image has its size;
- no link reads as a bare "start", "here", "more" ... (sphinx-gallery linked
  variables of built-in types and tensors to their types' pages: ``start`` ->
  ``float``, ``more`` -> ``torch.Tensor``).
"""

from __future__ import annotations

import re
from functools import cache
from html import unescape
from pathlib import Path

import pytest
from sitecheck import HTML, LANGUAGES

CJK = re.compile(r"[\u4e00-\u9fff]")
SKIPPED = {"search.html", "genindex.html", "404.html"}


def content_pages(language: str) -> list[Path]:
    """The pages a reader arrives at (not search, index, 404 or highlighted source)."""
    root = HTML / language
    return [
        path
        for path in sorted(root.rglob("*.html"))
        if path.name not in SKIPPED
        and not any(part.startswith("_") for part in path.relative_to(root).parts[:-1])
    ]


@cache
def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def head(text: str) -> str:
    return text.split("</head>", 1)[0]


def article(text: str) -> str:
    return text.split('<article class="bd-article">', 1)[-1].split("</article>", 1)[0]


def test_there_are_pages_to_check() -> None:
    for language in LANGUAGES:
        pages = content_pages(language)
        assert len(pages) > 60, language
        assert HTML / language / "auto_examples/04_grad_cam/plot_18_cam_family.html" in pages


# -- math ---------------------------------------------------------------------------


@pytest.mark.parametrize("language", LANGUAGES)
def test_math_is_mathml_without_mathjax(language: str) -> None:
    math_pages = 0
    for path in content_pages(language):
        text = read(path)
        assert not re.search(r"<script[^>]*mathjax|window\.MathJax", text, flags=re.IGNORECASE), (
            path
        )
        body = article(text)
        if "<math" in body:
            math_pages += 1
        # no TeX left for a script to typeset: \( \) \[ \] $$ or a TeX command
        prose = re.sub(r"<(pre|math|script)\b.*?</\1>", " ", body, flags=re.DOTALL)
        prose = unescape(re.sub(r"<[^>]+>", " ", prose))
        leftovers = re.findall(
            r".{0,30}(?:\\[()[\]]|\$\$|\\(?:frac|sum|partial|alpha)\b).{0,30}", prose
        )
        assert not leftovers, f"{path}: TeX left in the page: {leftovers}"
    assert math_pages >= 10, math_pages  # the CAM pages, their API pages, ...


@pytest.mark.parametrize("language", LANGUAGES)
def test_page_18_shows_each_methods_formula(language: str) -> None:
    body = article(read(HTML / language / "auto_examples/04_grad_cam/plot_18_cam_family.html"))
    blocks = re.findall(r'<div class="math notranslate">(.*?)</div>', body, flags=re.DOTALL)
    assert len(blocks) >= 7, len(blocks)  # one formula per method at least
    for block in blocks:
        assert block.strip().startswith('<math display="block">'), block[:80]
    # Grad-CAM: ReLU of a sum over channels, in a row sized like \Big( ... \Big)
    assert any(
        '<mi mathvariant="normal">ReLU</mi>' in b and "∑" in b and 'minsize="1.623em"' in b
        for b in blocks
    )
    # inline math in the prose: the notation paragraph (A^k, g^k, y^c)
    assert body.count('<span class="math notranslate"><math>') >= 5


# -- what holds the first paint ---------------------------------------------------------


@pytest.mark.parametrize("language", LANGUAGES)
def test_head_scripts_do_not_block_the_first_paint(language: str) -> None:
    for path in content_pages(language):
        tags = re.findall(r"<script\b[^>]*\bsrc=\"([^\"]+)\"[^>]*>", head(read(path)))
        scripts = re.findall(r"<script\b[^>]*\bsrc=\"[^\"]+\"[^>]*>", head(read(path)))
        assert tags, path
        assert not any("fontawesome.js" in src for src in tags), path  # its SVG icons: none
        for src, tag in zip(tags, scripts, strict=True):
            if "documentation_options.js" in src:
                continue
            assert re.search(r"\b(defer|async)\b", tag), f"{path}: {tag} blocks the page"


@pytest.mark.parametrize("language", LANGUAGES)
def test_no_script_runs_before_a_deferred_script_it_follows(language: str) -> None:
    # a synchronous <script src> after a deferred one runs first: on the search page,
    # searchtools.js then called doctools.js's _ready before it existed
    pages = [*content_pages(language), HTML / language / "search.html"]
    for path in pages:
        scripts = re.findall(r"<script\b[^>]*\bsrc=\"[^\"]+\"[^>]*>", read(path))
        deferred = False
        for tag in scripts:
            if re.search(r"\b(defer|async)\b", tag):
                deferred = True
            else:
                assert not deferred, f"{path}: {tag} runs before the deferred scripts above it"


@pytest.mark.parametrize("language", LANGUAGES)
def test_basic_css_is_linked_without_the_theme_css_that_imports_it(language: str) -> None:
    # _templates/layout.html links basic.css itself, in place of the theme's theme.css,
    # which holds nothing else (one round trip less before the first paint)
    theme_css = (HTML / language / "_static" / "styles" / "theme.css").read_text(encoding="utf-8")
    rules = re.sub(r"/\*.*?\*/", "", theme_css, flags=re.DOTALL).split()
    assert rules == ["@import", '"../basic.css";'], theme_css
    for path in content_pages(language):
        links = re.findall(r'<link [^>]*href="([^"]+\.css)[^"]*"', head(read(path)))
        assert not any("styles/theme.css" in link for link in links), path
        assert (
            sum(link.endswith("/basic.css") or link == "_static/basic.css" for link in links) == 1
        )
        assert [link.rsplit("/", 1)[-1] for link in links][:2] == [
            "basic.css",
            "pydata-sphinx-theme.css",
        ], path


@pytest.mark.parametrize("language", LANGUAGES)
def test_search_scripts_load_on_the_search_page_only(language: str) -> None:
    for path in content_pages(language):
        text = read(path)
        assert "searchindex.js" not in text, path
        assert "searchtools.js" not in text, path
    search = read(HTML / language / "search.html")
    assert "searchindex.js" in search
    assert "searchtools.js" in search


# -- icon font --------------------------------------------------------------------------


@pytest.mark.parametrize("language", LANGUAGES)
def test_icon_fonts_hold_the_icons_the_pages_show(language: str) -> None:
    pytest.importorskip("brotli")  # WOFF2 (the docs dependency group has it)
    from fontTools.ttLib import TTFont  # noqa: PLC0415

    static = HTML / language / "_static"
    css = (static / "styles" / "pydata-sphinx-theme.css").read_text(encoding="utf-8")
    icons = {
        name.strip().lstrip("."): code
        for selectors, code in re.findall(r'([^{}]*)\{--fa:"\\([0-9a-f]+) ?"\}', css)
        for name in selectors.split(",")
    }
    used = set()
    for path in content_pages(language):
        used |= set(re.findall(r'class="[^"]*\bfa-solid\b[^"]*"', read(path)))
    names = {n for tag in used for n in re.findall(r"fa-[a-z0-9-]+", tag)} - {"fa-solid", "fa-lg"}
    assert {"fa-magnifying-glass", "fa-language", "fa-bars"} <= names, names
    fonts = static / "vendor" / "fontawesome" / "webfonts"
    solid = set(TTFont(fonts / "fa-solid-900.woff2").getBestCmap())
    for name in names:
        assert name in icons, f"{name}: no CSS rule (the icon would not show)"
        assert int(icons[name], 16) in solid, f"{name}: not in the solid font"
    assert len(icons) < 100, len(icons)  # Font Awesome has about 2,000
    for font in fonts.glob("*.woff2"):
        assert font.stat().st_size < 10 * 1024, font  # whole: 25-115 KiB


# -- descriptions -----------------------------------------------------------------------


def description(text: str) -> str | None:
    match = re.search(r'<meta name="description" content="([^"]*)"', head(text))
    return unescape(match.group(1)) if match else None


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_page_has_a_meta_description_in_its_language(language: str) -> None:
    for path in content_pages(language):
        text = read(path)
        said = description(text)
        assert said, f"{path}: no meta description"
        assert len(said) > 15, f"{path}: {said!r}"
        if "/generated/" in path.as_posix():
            continue  # API pages: the docstring's summary, below
        if language == "zh_CN":
            assert CJK.search(said), f"{path}: {said!r} is not Chinese"
        else:
            assert not CJK.search(said), f"{path}: {said!r}"


@pytest.mark.parametrize("language", LANGUAGES)
def test_an_api_page_is_described_by_its_summary(language: str) -> None:
    pages = sorted((HTML / language / "generated").glob("hooks_tutorial.*.html"))
    assert len(pages) > 20
    for path in pages:
        text = read(path)
        first = re.search(r"<dd>\s*<p>(.*?)</p>", article(text), flags=re.DOTALL)
        assert first, path
        # the summary's text, with its formulas (MathML on the page, TeX in the
        # description) as wildcards
        pieces = re.split(r'<span class="math notranslate">.*?</span>', first.group(1))
        words = [" ".join(unescape(re.sub(r"<[^>]+>", "", p)).split()) for p in pieces]
        said = description(text)
        assert said is not None, path
        whole = re.fullmatch(r"\s*.+?\s*".join(map(re.escape, words)), said)
        cut = said.endswith("...") and " ".join(words).startswith(said[:-3][: len(words[0])])
        assert whole or cut, f"{path}: {said!r} is not {words!r}"
    grad_cam = description(read(HTML / language / "generated/hooks_tutorial.GradCAM.html"))
    assert grad_cam is not None
    assert "Grad-CAM" in grad_cam
    assert "Examples using" not in grad_cam


# -- images ---------------------------------------------------------------------------


@pytest.mark.parametrize("language", LANGUAGES)
def test_figures_far_down_a_page_load_lazily(language: str) -> None:
    for page in ("plot_17_gradcam_library", "plot_18_cam_family"):
        text = read(HTML / language / f"auto_examples/04_grad_cam/{page}.html")
        images = re.findall(r"<img\b[^>]*>", article(text))
        assert images, page
        for tag in images:
            assert 'loading="lazy"' in tag, tag
            assert re.search(r'\bwidth="\d+"', tag), tag
            assert re.search(r'\bheight="\d+"', tag), tag


# -- links ----------------------------------------------------------------------------

# the link texts that tell a reader (and a search engine) nothing: Lighthouse's list
# for English, and the Chinese ones
VAGUE = {"here", "more", "this", "start", "go", "click here", "read more", "learn more"}
VAGUE |= {"这里", "点击这里", "更多", "此处", "链接"}


@pytest.mark.parametrize("language", LANGUAGES)
def test_links_say_where_they_go(language: str) -> None:
    for path in content_pages(language):
        text = read(path)
        builtin_variable = r'<a class="[^"]*backref-module-builtins [^"]*backref-instance\b'
        assert not re.search(builtin_variable, text), f"{path}: a variable links to its type"
        tensor_variable = r'<a class="[^"]*backref-instance\b[^>]*title="torch.Tensor"'
        assert not re.search(tensor_variable, text), f"{path}: a variable links to torch.Tensor"
        for inner in re.findall(r"<a\b[^>]*\bhref=[^>]*>(.*?)</a>", text, flags=re.DOTALL):
            label = " ".join(unescape(re.sub(r"<[^>]+>", "", inner)).split()).lower()
            assert label not in VAGUE, f"{path}: a link reads {label!r}"


@pytest.mark.parametrize("language", LANGUAGES)
def test_code_tokens_are_merged_like_pygments_does(language: str) -> None:
    # the code blocks that sphinx-gallery links (``highlight-Python``; the Solutions'
    # code blocks are Sphinx's own, highlighted by Pygments: ``highlight-python``)
    run = re.compile(r'<span class="([a-z0-9]+)">[^<]*</span><span class="\1">')
    blocks = 0
    for path in sorted((HTML / language / "auto_examples").rglob("plot_*.html")):
        for code in re.findall(
            r'<div class="highlight-Python notranslate">(.*?)</pre>', read(path), flags=re.DOTALL
        ):
            blocks += 1
            found = run.findall(code)
            assert not found, f"{path}: {len(found)} runs of one token class in separate spans"
    assert blocks > 100, blocks
