"""docs/_ext/fast_path.py, page_numbers.py and reading_time.py: what guides a reader through the site.

Pure functions first, then small Sphinx builds of a three-page path (English,
Chinese, gettext) that check what a reader gets: the box, the banners with the
right step and next page, the numbered titles, the reading and running time,
and the warning for a prerequisite that the path has not reached yet.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from docutils import nodes

EXT = Path(__file__).parents[2] / "docs" / "_ext"
sys.path.insert(0, str(EXT))

import fast_path
import page_numbers
import provenance
import reading_time

# -- page numbers --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("docname", "number"),
    [
        ("auto_examples/01_python_foundations/plot_01_callbacks", "1"),
        ("auto_examples/04_grad_cam/plot_18b_measuring_cams", "18b"),
        ("auto_examples/08_troubleshooting/plot_40_error_messages", "40"),
        ("auto_examples/index", None),
        ("auto_examples/04_grad_cam/index", None),
        ("course_notes", None),
        ("generated/hooks_tutorial.GradCAM", None),
    ],
)
def test_the_page_number_is_the_one_in_the_file_name(docname: str, number: str | None) -> None:
    assert page_numbers.page_number(docname) == number


# -- reading time ----------------------------------------------------------------------


def test_words_and_han_characters_are_counted_apart() -> None:
    assert reading_time.count("A hook's output, register_forward_hook and 3.5 s.") == (7, 0)
    # Han characters one by one, Latin names as words, punctuation not at all
    assert reading_time.count("前向钩子（register_forward_hook）保存输出。") == (1, 8)


@pytest.mark.parametrize(
    ("words", "characters", "minutes"),
    [(0, 0, 1), (1, 0, 1), (238, 0, 1), (239, 0, 2), (0, 255, 1), (0, 256, 2), (238, 255, 2)],
)
def test_minutes_are_rounded_up_at_the_stated_rates(
    words: int, characters: int, minutes: int
) -> None:
    text = "word " * words + "字" * characters
    assert reading_time.minutes(text) == minutes


def test_prose_leaves_out_code_outputs_formulas_and_marked_parts() -> None:
    section = nodes.section()
    section += nodes.title("", "Title")
    section += nodes.paragraph("", "Two words")
    section += nodes.literal_block("", "code code code")
    section += nodes.math_block("", r"\frac{a}{b}")
    section += nodes.container("", nodes.paragraph("", "banner"), classes=["no-search"])
    section += nodes.container("", nodes.paragraph("", "Download"), classes=["sphx-glr-footer"])
    paragraph = nodes.paragraph("", "with ")
    paragraph += nodes.literal("", "inline_code")
    section += paragraph
    assert reading_time.prose(section).split() == ["Title", "Two", "words", "with", "inline_code"]


@pytest.mark.parametrize(
    ("seconds", "language", "expected"),
    [
        (None, "en", "About 3 min to read."),
        (4.25, "en", "About 3 min to read; the code ran in 4.2 s when this site was built."),
        (0.01, "en", "About 3 min to read; the code ran in under 0.1 s when this site was built."),
        (None, "zh_CN", "阅读约需 3 分钟。"),
        (4.25, "zh_CN", "阅读约需 3 分钟；构建本站时，代码运行用时 4.2 秒。"),
        (4.25, "fr", "About 3 min to read; the code ran in 4.2 s when this site was built."),
    ],
)
def test_the_line_in_each_language(seconds: float | None, language: str, expected: str) -> None:
    assert reading_time.line(3, seconds, language) == expected


def test_the_run_time_is_sphinx_gallerys_when_it_was_written_during_the_run(
    tmp_path: Path,
) -> None:
    cost = tmp_path / "plot_01_a.cost.json"
    started = time.time()
    assert provenance.gallery_seconds(cost, started) is None  # no record: the wall time
    cost.write_text(json.dumps({"time": 2.5, "memory": 0.0}), encoding="utf-8")
    assert provenance.gallery_seconds(cost, started - 1) == 2.5
    os.utime(cost, (started - 100, started - 100))  # left by an earlier run
    assert provenance.gallery_seconds(cost, started) is None


# -- the fast path: its pieces ------------------------------------------------------------


def test_counts_are_words_up_to_twenty() -> None:
    assert fast_path.count_in_words(10, "en") == "ten"
    assert fast_path.count_in_words(10, "zh_CN") == "十"
    assert fast_path.count_in_words(2, "zh_CN") == "两"
    assert fast_path.count_in_words(20, "en") == "twenty"
    assert fast_path.count_in_words(21, "en") == "21"


def test_double_back_quotes_make_literals() -> None:
    parts = fast_path.inline_text("why ``register_backward_hook`` fails")
    assert [type(p).__name__ for p in parts] == ["Text", "literal", "Text"]
    assert parts[1].astext() == "register_backward_hook"
    with pytest.raises(ValueError, match="unbalanced"):
        fast_path.inline_text("a ``b")


def test_the_position_on_the_path_and_the_next_step() -> None:
    config = type("Config", (), {"fast_path": [("a", "A", "甲"), ("b", "B", "乙")]})
    path = fast_path.steps(config)
    assert fast_path.position(path, "a") == (1, path[1])
    assert fast_path.position(path, "b") == (2, None)
    assert fast_path.position(path, "c") is None
    config.fast_path = [("a", "A", "甲"), ("a", "A", "甲")]
    with pytest.raises(ValueError, match="twice"):
        fast_path.steps(config)


# -- a small site with a path of three pages ---------------------------------------------

PAGES = {
    "plot_01_start": ("Start here", "Prerequisites", []),
    "plot_02_middle": ("The middle", "Prerequisites", ["plot_01_start"]),
    "plot_03_end": ("The end", "Prerequisites", ["plot_02_middle"]),
    "plot_04_aside": ("An aside", "Prerequisites", []),
}
PATH = ["plot_01_start", "plot_02_middle", "plot_03_end"]


def write_site(source: Path, pages: dict[str, tuple[str, str, list[str]]]) -> None:
    chapter = source / "auto_examples" / "ch"
    chapter.mkdir(parents=True)
    steps = [("course", "the notes, for ``context``.", "笔记，作为 ``背景``。")] + [
        (f"auto_examples/ch/{name}", f"gives {name}.", f"给出 {name}。") for name in PATH
    ]
    (source / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(EXT)!r})\n"
        "extensions = ['page_numbers', 'reading_time', 'fast_path']\n"
        "locale_dirs = ['locales/']\ngettext_compact = False\n"
        "reading_time_pages = r'auto_examples/.+/plot_\\w+|course'\n"
        f"fast_path = {steps!r}\n",
        encoding="utf-8",
    )
    toctree = "\n".join(f"   auto_examples/ch/{name}" for name in pages)
    (source / "index.rst").write_text(
        f"Home\n====\n\n.. _fast-path:\n\n.. fast-path::\n\n.. toctree::\n\n   course\n   auto_examples/index\n{toctree}\n",
        encoding="utf-8",
    )
    (source / "auto_examples" / "index.rst").write_text(
        "Tutorials\n=========\n\nAll of them.\n", encoding="utf-8"
    )
    (source / "course.rst").write_text("Course\n======\n\n" + "Read. " * 300, encoding="utf-8")
    for name, (title, label, needs) in pages.items():
        links = ", ".join(f":doc:`{n}`" for n in needs) or "none"
        body = f"{title}\n{'=' * len(title)}\n\n**{label}**: {links}.\n\nSome prose here.\n\n"
        body += "::\n\n   " + "code " * 2000 + "\n\nMore\n----\n\nThe end of the page.\n"
        (chapter / f"{name}.rst").write_text(body, encoding="utf-8")
    # page 2 ran in 2.5 s (the record provenance.py writes beside sphinx-gallery's outputs)
    (chapter / "plot_02_middle.provenance.json").write_text(
        json.dumps({"seconds": 2.5}), encoding="utf-8"
    )


def sphinx(source: Path, out: Path, *options: str, builder: str = "html") -> str:
    run = subprocess.run(
        [sys.executable, "-m", "sphinx", "-q", "-b", builder, *options, str(source), str(out)],
        capture_output=True,
        text=True,
        check=True,
    )
    return run.stderr


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    source = tmp_path_factory.mktemp("site") / "source"
    write_site(source, PAGES)
    messages = source / "locales" / "zh_CN" / "LC_MESSAGES" / "auto_examples" / "ch"
    messages.mkdir(parents=True)
    (messages / "plot_02_middle.po").write_text(
        'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
        'msgid "The middle"\nmsgstr "中间"\n',
        encoding="utf-8",
    )
    built = {}
    for language in ("en", "zh_CN"):
        built[language] = source.parent / language
        warnings = sphinx(source, built[language], "-D", f"language={language}")
        assert "WARNING" not in warnings, warnings
    built["gettext"] = source.parent / "gettext"
    sphinx(source, built["gettext"], builder="gettext")
    return built


def text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", html)).strip()


def banners(html: str) -> list[str]:
    return re.findall(r'<div class="fast-path-banner no-search[^"]*">(.*?)</div>', html, re.DOTALL)


@pytest.mark.parametrize(
    ("page", "step", "following"),
    [
        ("course", 1, "auto_examples/ch/plot_01_start"),
        ("auto_examples/ch/plot_01_start", 2, "auto_examples/ch/plot_02_middle"),
        ("auto_examples/ch/plot_02_middle", 3, "auto_examples/ch/plot_03_end"),
    ],
)
def test_each_step_says_where_it_is_and_links_the_next(
    site: dict[str, Path], page: str, step: int, following: str
) -> None:
    html = (site["en"] / f"{page}.html").read_text(encoding="utf-8")
    found = banners(html)
    assert len(found) == 2, "a banner under the title and one at the end"
    assert found[0] == found[1]
    assert f"Fast path to Grad-CAM, step {step} of 4. Next on the path:" in text(found[0])
    links = [
        posixpath.normpath(posixpath.join(posixpath.dirname(page), href))
        for href in re.findall(r'href="([^"]+)"', found[0])
    ]
    assert links == ["index.html#fast-path", f"{following}.html"]
    depth = page.count("/")
    # under the title (after the times line), and the page's last element
    head = html.split("</h1>", 1)[1]
    assert head.lstrip().startswith('<p class="page-times no-search">')
    assert head.index("fast-path-banner") < head.index("Some prose" if depth else "Read.")
    assert html.rindex("fast-path-banner") > html.rindex(
        "The end of the page" if depth else "Read."
    )


def test_the_last_step_links_the_other_pages(site: dict[str, Path]) -> None:
    html = (site["en"] / "auto_examples/ch/plot_03_end.html").read_text(encoding="utf-8")
    (banner, _) = banners(html)
    assert "step 4 of 4. The last step; the other pages: Tutorials" in text(banner)
    assert 'href="../index.html"' in banner


def test_a_page_off_the_path_has_no_banner(site: dict[str, Path]) -> None:
    html = (site["en"] / "auto_examples/ch/plot_04_aside.html").read_text(encoding="utf-8")
    assert banners(html) == []
    assert "page-times" in html  # but its times


def test_the_banner_speaks_chinese_and_shows_the_translated_title(site: dict[str, Path]) -> None:
    html = (site["zh_CN"] / "auto_examples/ch/plot_01_start.html").read_text(encoding="utf-8")
    assert "Grad-CAM 快速路线：第 2 步，共 4 步。路线上的下一页：2. 中间" in text(banners(html)[0])


@pytest.mark.parametrize(("language", "count"), [("en", "four"), ("zh_CN", "四")])
def test_the_box_counts_and_lists_the_path(
    site: dict[str, Path], language: str, count: str
) -> None:
    html = (site[language] / "index.html").read_text(encoding="utf-8")
    box = html.split('id="fast-path"', 1)[1].split("</ol>", 1)[0]
    title = text(box.split('<p class="admonition-title">', 1)[1].split("</p>", 1)[0])
    assert count in title
    links = re.findall(r'<li><p><a class="reference internal" href="([^"]+)"', box)
    assert links == ["course.html", *(f"auto_examples/ch/{name}.html" for name in PATH)]
    # steps show the page's number beside its title, and what they give, with literals
    items = [text(item) for item in re.findall(r"<li>(.*?)</li>", box, re.DOTALL)]
    if language == "en":
        assert items[0] == "Course: the notes, for context."
        assert items[2] == "The middle (page 2): gives plot_02_middle."
    else:
        assert items[2] == "中间（第 2 页）：给出 plot_02_middle。"
    assert "<code" in box


@pytest.mark.parametrize("language", ["en", "zh_CN"])
def test_titles_show_the_page_number_everywhere(site: dict[str, Path], language: str) -> None:
    html = (site[language] / "auto_examples/ch/plot_03_end.html").read_text(encoding="utf-8")
    assert '<h1><span class="page-number">3. </span>The end' in html
    assert "<title>3. The end" in html
    # a :doc: link to another page (the prerequisites) shows that page's number
    middle = "中间" if language == "zh_CN" else "The middle"
    assert f'<span class="doc">2. {middle}</span>' in html


def test_the_catalog_messages_keep_the_titles_as_written(site: dict[str, Path]) -> None:
    pot = (site["gettext"] / "auto_examples" / "ch" / "plot_02_middle.pot").read_text("utf-8")
    assert 'msgid "The middle"' in pot
    assert "2. " not in pot
    assert "Fast path" not in (site["gettext"] / "index.pot").read_text(encoding="utf-8")


def test_times_come_from_the_prose_and_the_run(site: dict[str, Path]) -> None:
    def times(language: str, page: str) -> str:
        html = (site[language] / f"{page}.html").read_text(encoding="utf-8")
        return text(html.split('<p class="page-times no-search">', 1)[1].split("</p>", 1)[0])

    # 300 words of prose: two minutes; the 2000 words of code are not read
    assert times("en", "course") == "About 2 min to read."
    assert times("en", "auto_examples/ch/plot_01_start") == "About 1 min to read."
    assert times("en", "auto_examples/ch/plot_02_middle") == (
        "About 1 min to read; the code ran in 2.5 s when this site was built."
    )
    assert times("zh_CN", "auto_examples/ch/plot_02_middle") == (
        "阅读约需 1 分钟；构建本站时，代码运行用时 2.5 秒。"
    )
    assert "page-times" not in (site["en"] / "index.html").read_text(encoding="utf-8")


def test_a_prerequisite_later_on_the_path_is_a_warning(tmp_path: Path) -> None:
    pages = {**PAGES, "plot_02_middle": ("The middle", "Prerequisites", ["plot_04_aside"])}
    write_site(tmp_path / "source", pages)
    warnings = sphinx(tmp_path / "source", tmp_path / "html")
    assert re.search(
        r"fast path: auto_examples/ch/plot_02_middle \(step 3\) names "
        r"auto_examples/ch/plot_04_aside as a prerequisite, which is not an earlier step",
        warnings,
    ), warnings


def test_a_page_missing_from_the_site_is_a_warning(tmp_path: Path) -> None:
    write_site(tmp_path / "source", {k: v for k, v in PAGES.items() if k != "plot_03_end"})
    warnings = sphinx(tmp_path / "source", tmp_path / "html")
    assert "fast path: no page 'auto_examples/ch/plot_03_end'" in warnings
