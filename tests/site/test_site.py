"""Checks on the built site (run by ``nox -s docs`` after building).

Skipped when the site has not been built, so ``nox -s tests`` works on a
fresh clone.
"""

from __future__ import annotations

import ast
import json
import re
import sys
import zipfile
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from babel.messages.pofile import read_po
from sitecheck import EXAMPLES, HTML, prose
from sphinx_gallery.py_source_parser import remove_ignore_blocks

sys.path.insert(0, str(Path(__file__).parents[2] / "docs" / "_ext"))
from code_comments import HAN, code_tokens, comments, docstrings  # docs/_ext, on the path above
from download_language import marked_script
from figure_texts import TEXTS, has_words, message
from PIL import Image, ImageChops


def _text(path: Path) -> str:
    raw = path.read_text(encoding="utf-8")
    return unescape(re.sub(r"<[^>]+>", "", raw))


def _pages() -> list[str]:
    return [f"auto_examples/{p.parent.name}/{p.stem}" for p in sorted(EXAMPLES.glob("*/plot_*.py"))]


@pytest.mark.parametrize("page", ["index", "api", "course_notes", *_pages()])
@pytest.mark.parametrize("language", ["en", "zh_CN"])
def test_page_exists_in_both_languages(page: str, language: str) -> None:
    path = HTML / language / f"{page}.html"
    assert path.is_file(), f"{page} missing from the {language} build"
    html = path.read_text(encoding="utf-8")
    other = "zh_CN" if language == "en" else "en"
    assert f"../{other}/{page}.html" in html, "language switcher does not link to the same page"


@pytest.mark.parametrize("page", _pages())
def test_chinese_page_has_chinese_prose(page: str) -> None:
    text = _text(HTML / "zh_CN" / f"{page}.html")
    body = text.split("Go to the end", 1)[-1]
    assert len(re.findall(r"[\u4e00-\u9fff]", body)) > 50


@pytest.mark.parametrize("page", ["index", "api", "course_notes", *_pages()])
@pytest.mark.parametrize("language", ["en", "zh_CN"])
def test_no_unrendered_markup_in_prose(page: str, language: str) -> None:
    # A reST role or literal that did not close shows its backticks to the reader:
    # in Chinese, an end-string followed directly by "（" does not close.
    text = prose(page, language)
    leftovers = re.findall(r".{0,30}(?:``|:(?:obj|doc|math|ref|func|class|meth):`).{0,30}", text)
    assert not leftovers, f"unrendered reST markup in {language}/{page}: {leftovers}"


def _search_index(language: str) -> dict[str, Any]:
    raw = (HTML / language / "searchindex.js").read_text(encoding="utf-8")
    payload = raw[raw.index("(") + 1 : raw.rindex(")")]
    index: dict[str, Any] = json.loads(payload)
    return index


@pytest.mark.parametrize(
    ("term", "page"),
    [
        ("回调", "auto_examples/01_python_foundations/plot_01_callbacks"),
        ("钩子", "auto_examples/01_python_foundations/plot_01_callbacks"),
    ],
)
def test_chinese_search_index_finds_page(term: str, page: str) -> None:
    """jieba segmented the Chinese text, so the term leads to the page."""
    index = _search_index("zh_CN")
    hits: set[int] = set()
    for table in ("terms", "titleterms"):
        found = index[table].get(term, [])
        hits.update(found if isinstance(found, list) else [found])
    assert hits, f"{term!r} not in the zh_CN search index"
    assert index["docnames"].index(page) in hits


# -- downloads: Chinese pages offer the same code with Chinese prose -------------------

TEXT_BLOCK = re.compile(
    r"(?P<header>^#{20,}.*|^# ?%%.*)\s(?P<text>(?:^#.*\s?)*)", flags=re.MULTILINE
)
ADORNMENT = re.compile(r"""([=\-`:.'"~^_*+#<>])\1{2,}""")


def _download(language: str, page: str, kind: str) -> bytes:
    """The file behind a page's download button (kind: python, jupyter, zip)."""
    html = (HTML / language / f"{page}.html").read_text(encoding="utf-8")
    match = re.search(rf'sphx-glr-download-{kind}\b.*?href="([^"]+)"', html, flags=re.DOTALL)
    assert match, f"no {kind} download on {language}/{page}"
    return (HTML / language / page).parent.joinpath(unescape(match[1])).read_bytes()


def _code(script: bytes) -> str:
    """A gallery script without its prose: the docstring and the ``# %%`` text blocks."""
    text = script.decode("utf-8")
    tree = ast.parse(text)
    first = tree.body[0] if tree.body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
        text = "\n".join(text.split("\n")[first.end_lineno :])
    return TEXT_BLOCK.sub(lambda m: m["header"] + "\n", text)


def _cells(notebook: bytes, kind: str) -> list[str]:
    cells = json.loads(notebook)["cells"]
    return ["".join(c["source"]) for c in cells if c["cell_type"] == kind]


def _cjk(text: str) -> int:
    return len(re.findall(r"[\u4e00-\u9fff]", text))


def _paragraphs(script: bytes) -> list[str]:
    """The prose paragraphs of a gallery script: its docstring's and its text blocks'."""
    text = script.decode("utf-8")
    docstring = ast.get_docstring(ast.parse(text)) or ""
    blocks = [docstring] + [
        "\n".join(line.removeprefix("#").removeprefix(" ") for line in m["text"].splitlines())
        for m in TEXT_BLOCK.finditer(text)
    ]
    return [p for block in blocks for p in re.split(r"\n\s*\n", block) if p.strip()]


def _is_prose(paragraph: str) -> bool:
    """English words to translate: not a directive, a literal block or a bare title bar."""
    if paragraph.startswith((" ", "..")) or paragraph.lstrip().startswith(".."):
        return False
    words = re.sub(r"``.*?``|:[\w:]+:`[^`]*`|`[^`]*`", " ", paragraph, flags=re.DOTALL)
    return len(re.findall(r"\b[A-Za-z]{2,}\b", words)) >= 3


LOCALES = Path(__file__).parents[2] / "docs" / "locales" / "zh_CN" / "LC_MESSAGES"


def _kept_as_is(page: str) -> set[str]:
    """The page's messages whose translation is the English itself (names, quoted errors)."""
    with (LOCALES / f"{page}.po").open("rb") as f:
        return {m.id for m in read_po(f) if isinstance(m.id, str) and m.id == m.string}


def _untranslated(english: list[str], chinese: list[str], kept: set[str]) -> list[str]:
    """English paragraphs whose Chinese counterpart has no Chinese, unless kept on purpose."""
    left = []
    for en, zh in zip(english, chinese, strict=True):
        lines = en.strip().splitlines()
        title = len(lines) == 2 and ADORNMENT.fullmatch(lines[1].strip()) is not None
        text = lines[0].strip() if title else " ".join(line.strip() for line in lines)
        if _is_prose(en) and not _cjk(zh) and text not in kept:
            left.append(en[:80])
    return left


@pytest.mark.parametrize("page", _pages())
def test_english_downloads_are_the_examples(page: str) -> None:
    """The page's script, without the hidden checks (ignore blocks) that the build runs, and
    with the line that tells the exercise checks its language."""
    script = EXAMPLES / f"{page.removeprefix('auto_examples/')}.py"
    python = _download("en", page, "python")
    expected = remove_ignore_blocks(script.read_text(encoding="utf-8"))
    assert python.decode("utf-8") == marked_script(expected, "en")
    assert b"sphinx_gallery_start_ignore" not in python
    assert b"sphinx_gallery_start_ignore" not in _download("en", page, "jupyter")
    assert _cjk(" ".join(_cells(_download("en", page, "jupyter"), "markdown"))) == 0


@pytest.mark.parametrize("page", _pages())
def test_chinese_downloads_translate_prose_only(page: str, tmp_path: Path) -> None:
    """Same code tokens (comments set aside); every English paragraph and Markdown cell in
    Chinese."""
    en_py, zh_py = _download("en", page, "python"), _download("zh_CN", page, "python")
    assert code_tokens(_code(zh_py)) == code_tokens(_code(en_py))
    english, chinese = _paragraphs(en_py), _paragraphs(zh_py)
    assert len(chinese) == len(english), "the Chinese script has other paragraphs"
    kept = _kept_as_is(page)
    left = _untranslated(english, chinese, kept)
    assert not left, f"paragraphs left in English in the Chinese script: {left}"
    en_nb, zh_nb = _download("en", page, "jupyter"), _download("zh_CN", page, "jupyter")
    assert [code_tokens(c) for c in _cells(zh_nb, "code")] == [
        code_tokens(c) for c in _cells(en_nb, "code")
    ]
    en_md, zh_md = _cells(en_nb, "markdown"), _cells(zh_nb, "markdown")
    assert len(zh_md) == len(en_md)
    left = [
        e[:80]
        for e, z in zip(en_md, zh_md, strict=True)
        if _is_prose(e) and not _cjk(z) and e.strip().lstrip("#").strip() not in kept
    ]
    assert not left, f"Markdown cells left in English in the Chinese notebook: {left}"
    assert "\\ " not in " ".join(zh_md), "reST escapes left in Markdown"
    assert b"sphinx_gallery_start_ignore" not in zh_py
    archive = tmp_path / "example.zip"
    archive.write_bytes(_download("zh_CN", page, "zip"))
    name = page.rsplit("/", 1)[-1]
    with zipfile.ZipFile(archive) as zipped:
        assert zipped.read(f"{name}.py") == zh_py
        assert zipped.read(f"{name}.ipynb") == zh_nb


def _conf_pages(name: str) -> list[str]:
    """A list of pages in docs/conf.py: a literal, or every page (``TUTORIAL_PAGES``).

    Read without running conf.py, which imports torch.
    """
    conf = ast.parse((Path(__file__).parents[2] / "docs" / "conf.py").read_text("utf-8"))
    for node in conf.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == name:
            if getattr(node.value, "id", "") == "TUTORIAL_PAGES":
                return _pages()
            pages: list[str] = ast.literal_eval(node.value)
            return pages
    msg = f"docs/conf.py has no {name}"
    raise LookupError(msg)


def _comment_pages() -> list[str]:
    return _conf_pages("code_comment_pages")


def _page_code(page: str, language: str) -> list[str]:
    """The text of a page's Python code blocks, as the reader sees them."""
    raw = (HTML / language / f"{page}.html").read_text(encoding="utf-8")
    blocks = re.findall(
        r'<div class="highlight-Python notranslate">.*?<pre>(.*?)</pre>', raw, re.DOTALL
    )
    return [unescape(re.sub(r"<[^>]+>", "", block)) for block in blocks]


def _comment_texts(codes: list[str]) -> list[str]:
    """Every comment a reader sees in ``codes`` (with words or not)."""
    return [c.text for code in codes for c in comments(code, words_only=False)]


def _english_docstrings(codes: list[str]) -> list[str]:
    """The docstrings of functions and classes in ``codes`` that have no Chinese."""
    return [d.text for code in codes for d in docstrings(code) if not HAN.search(d.text)]


def _english(texts: list[str]) -> list[str]:
    """The comments that have an English word and no Chinese."""
    return [t for t in texts if re.search(r"[A-Za-z]{2,}", t) and not HAN.search(t)]


def test_the_listed_pages_exist() -> None:
    assert set(_comment_pages()) <= set(_pages())
    assert _comment_pages() == _pages(), "every page's comments are translated"
    assert _conf_pages("figure_text_pages") == _pages(), "every page's figures are translated"


@pytest.mark.parametrize("page", _comment_pages())
def test_chinese_code_comments_are_chinese(page: str) -> None:
    """On a listed page, every comment with words is Chinese: on the page, in the script and
    in the notebook, and there are as many as in English (none dropped); so is every
    docstring of a function or class (code_tokens, above, sees one dropped)."""
    en_page, zh_page = (
        _comment_texts(_page_code(page, "en")),
        _comment_texts(_page_code(page, "zh_CN")),
    )
    assert len(zh_page) == len(en_page)
    assert not [c for c in en_page if HAN.search(c)], "Chinese in the English page's code"
    assert not _english(zh_page), "English comments on the zh_CN page"
    zh_py = _code(_download("zh_CN", page, "python"))
    en_py = _code(_download("en", page, "python"))
    script = _comment_texts([zh_py])
    assert len(script) == len(_comment_texts([en_py]))
    assert not _english(script), "English comments in the zh_CN script"
    notebook = _comment_texts(_cells(_download("zh_CN", page, "jupyter"), "code"))
    assert not _english(notebook), "English comments in the notebook"
    assert not _english_docstrings(_page_code(page, "zh_CN")), "English docstrings on the page"
    assert not _english_docstrings([zh_py]), "English docstrings in the zh_CN script"
    zh_cells = _cells(_download("zh_CN", page, "jupyter"), "code")
    assert not _english_docstrings(zh_cells), "English docstrings in the notebook"


def test_comment_checks_fail_on_english_left_behind() -> None:
    """The test above sees one English comment among Chinese ones, and an English
    docstring among Chinese ones."""
    code = "x = 1  # 一个\ny = 2  # still English\nz = [1, 2]  # [2]\n"
    assert _english(_comment_texts([code])) == ["still English"]
    code = 'def f():\n    """返回 ``x``。"""\n\n\ndef g():\n    """Still English."""\n'
    assert _english_docstrings([code]) == ["Still English."]


def _figure_srcs(page: str, language: str) -> list[str]:
    raw = (HTML / language / f"{page}.html").read_text(encoding="utf-8")
    return re.findall(r'<img\b[^>]*class="sphx-glr-(?:single|multi)-img"[^>]*>', raw)


@pytest.mark.parametrize("page", _conf_pages("figure_text_pages"))
def test_chinese_figures_are_drawn_again_with_chinese_words(page: str) -> None:
    """A listed page's zh_CN figures are their own files: other pixels than the English
    at the same width, and every recorded word of the figure has a Chinese translation."""
    english, chinese = _figure_srcs(page, "en"), _figure_srcs(page, "zh_CN")
    assert len(chinese) == len(english)
    with (LOCALES / f"{page}.po").open("rb") as f:
        catalog = {m.id: m.string for m in read_po(f) if isinstance(m.id, str)}
    folder = (HTML / "en" / page).parent
    for en_tag, zh_tag in zip(english, chinese, strict=True):
        en_src = unescape(re.search(r'src="([^"]+)"', en_tag)[1])  # type: ignore[index]
        zh_src = unescape(re.search(r'src="([^"]+)"', zh_tag)[1])  # type: ignore[index]
        assert "_zh_CN" not in en_src
        assert zh_src.endswith("_zh_CN.webp"), f"{page}: the zh_CN page shows {zh_src}"
        with (
            Image.open(folder / en_src) as en,
            Image.open((HTML / "zh_CN" / page).parent / zh_src) as zh,
        ):
            assert zh.width == en.width
            assert ImageChops.difference(en.convert("RGB"), zh.convert("RGB")).getbbox()
        name = Path(en_src).name
        texts = next(EXAMPLES.parent.glob(f"docs/auto_examples/*/images/{name}{TEXTS}"))
        for text in filter(has_words, json.loads(texts.read_text(encoding="utf-8"))):
            template = message(text)[0]  # numbers are placeholders: they differ by CPU
            translated = catalog.get(template) or ""
            kept = translated == template  # a model's token, a module name: kept on purpose
            assert kept or HAN.search(translated), f"{page}: {text!r} is not translated"


@pytest.mark.parametrize("page", _pages())
def test_downloads_tell_the_exercise_checks_their_language(page: str, tmp_path: Path) -> None:
    """hooks_tutorial.exercises reads the language from the script or notebook it runs in."""
    from hooks_tutorial.exercises._language import (  # noqa: PLC0415 - the reader's side
        NOTEBOOK_KEY,
        _from_notebook,
        _from_script,
    )

    for language in ("en", "zh_CN"):
        script = tmp_path / f"{language}.py"
        script.write_bytes(_download(language, page, "python"))
        assert _from_script(str(script)) == language
        notebook = tmp_path / f"{language}.ipynb"
        notebook.write_bytes(_download(language, page, "jupyter"))
        assert json.loads(notebook.read_bytes())["metadata"][NOTEBOOK_KEY] == language
        assert _from_notebook(str(notebook)) == language


def test_prose_checks_fail_on_english_left_behind() -> None:
    """The two tests above catch one paragraph that fell back to English."""
    english = b'"""Title\n=====\n\nWhat this page shows you.\n"""\n\n# %%\n# Hooks run late here.\n'
    chinese = b'"""\xe6\xa0\x87\xe9\xa2\x98\n=====\n\nWhat this page shows you.\n"""\n\n# %%\n# \xe9\x92\xa9\xe5\xad\x90\n'
    found = _untranslated(_paragraphs(english), _paragraphs(chinese), set())
    assert found == ["What this page shows you."]
    # a paragraph whose catalog translation is the English itself is kept on purpose
    assert _untranslated(_paragraphs(english), _paragraphs(chinese), set(found)) == []


def test_download_all_zips_match_the_language(tmp_path: Path) -> None:
    for language in ("en", "zh_CN"):
        html = (HTML / language / "auto_examples" / "index.html").read_text(encoding="utf-8")
        hrefs = re.findall(r'href="([^"]+auto_examples_python\.zip)"', html)
        assert hrefs, f"no download-all link on {language}/auto_examples/index"
        archive = tmp_path / f"{language}.zip"
        archive.write_bytes((HTML / language / "auto_examples" / unescape(hrefs[0])).read_bytes())
        with zipfile.ZipFile(archive) as zipped:
            names = sorted(n for n in zipped.namelist() if n.endswith(".py"))
            pages = [n for n in names if not Path(n).name.startswith("_")]
            assert pages == [f"{p.removeprefix('auto_examples/')}.py" for p in _pages()]
            # a page's index entries are search terms in both languages, not prose
            prose = sum(
                _cjk(re.sub(r"\n\.\. index::\n(?:   .*\n)+", "\n", zipped.read(n).decode("utf-8")))
                for n in pages
            )
            # the pages' helper scripts (docs/_ext/companions.py), as they are
            helpers = {n: zipped.read(n) for n in names if n not in pages}
        assert (prose > 0) == (language == "zh_CN")
        assert helpers == {
            f"{h.parent.name}/{h.name}": h.read_bytes() for page in _pages() for h in _helpers(page)
        }


def _helpers(page: str) -> list[Path]:
    """The helper scripts (``_name.py``) next to a page that the page names."""
    script = EXAMPLES / f"{page.removeprefix('auto_examples/')}.py"
    text = script.read_text(encoding="utf-8")
    return [
        helper
        for helper in sorted(script.parent.glob("_*.py"))
        if re.search(rf"\b{re.escape(helper.stem)}\b", text)
    ]


def test_a_page_that_needs_helpers_names_them() -> None:
    # page 30 imports _launch, which starts _ddp_worker.py (and _ddp_solutions.py) in every process
    page = "auto_examples/06_pytorch_uses_hooks/plot_30_distributed_data_parallel"
    assert [h.name for h in _helpers(page)] == ["_ddp_solutions.py", "_ddp_worker.py", "_launch.py"]


@pytest.mark.parametrize("page", [p for p in _pages() if _helpers(p)])
@pytest.mark.parametrize("language", ["en", "zh_CN"])
def test_page_zips_carry_the_helpers(page: str, language: str, tmp_path: Path) -> None:
    """A reader who downloads a page's zip gets every file it needs to run."""
    archive = tmp_path / "page.zip"
    archive.write_bytes(_download(language, page, "zip"))
    with zipfile.ZipFile(archive) as zipped:
        for helper in _helpers(page):
            assert zipped.read(helper.name) == helper.read_bytes(), helper.name


# -- sitemap and OpenGraph ------------------------------------------------------------

NOT_IN_SITEMAP = {"search.html", "genindex.html", "404.html"}


def _site_pages(language: str) -> set[str]:
    root = HTML / language
    return {
        p.relative_to(root).as_posix()
        for p in root.rglob("*.html")
        if not p.relative_to(root)
        .as_posix()
        .startswith(("_static/", "_sources/", "_downloads/", "_modules/"))
        and p.name not in NOT_IN_SITEMAP
    }


@pytest.mark.parametrize("language", ["en", "zh_CN"])
def test_sitemap_lists_every_page_with_its_translation(language: str) -> None:
    xml = (HTML / language / "sitemap.xml").read_text(encoding="utf-8")
    entries = re.findall(r"<url>(.*?)</url>", xml, flags=re.DOTALL)
    listed = set()
    for entry in entries:
        (loc,) = re.findall(r"<loc>([^<]+)</loc>", entry)
        assert f"/{language}/" in loc, loc
        rel = loc.split(f"/{language}/", 1)[1]
        listed.add(rel)
        alternates = dict(re.findall(r'hreflang="([^"]+)" href="([^"]+)"', entry))
        assert alternates == {
            "en": loc.replace(f"/{language}/", "/en/", 1),
            "zh-CN": loc.replace(f"/{language}/", "/zh_CN/", 1),
        }
    assert listed == _site_pages(language)


@pytest.mark.parametrize("language", ["en", "zh_CN"])
def test_opengraph_and_canonical_urls_carry_the_language(language: str) -> None:
    for rel in sorted(_site_pages(language)):
        html = (HTML / language / rel).read_text(encoding="utf-8")
        og = dict(re.findall(r'<meta property="og:(\w+)" content="([^"]*)"', html))
        (canonical,) = re.findall(r'<link rel="canonical" href="([^"]+)"', html)
        assert canonical.endswith(f"/{language}/{rel}"), (rel, canonical)
        assert og.get("url") == canonical, rel
        assert og.get("title"), rel
        assert og.get("site_name") == "hooks-tutorial"
        if rel.startswith("auto_examples/") and "/plot_" in rel:
            assert og.get("description"), rel
