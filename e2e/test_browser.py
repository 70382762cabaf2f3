"""The built site as a reader meets it, in headless Chromium.

The root page, the language switcher, search in both languages, dark mode,
the 404 page, the "Edit on GitHub" link, and the Chinese downloads. Every
audited page's load is checked for errors in ``test_a11y.py``; links, images
and downloads of every page are checked without a browser in
``tests/site/test_html.py``.
"""

from __future__ import annotations

import json
import re
import sys
import zipfile
from collections.abc import Callable
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from builtsite import CJK, EXAMPLES, GALLERY_PAGES, HTML

# the rule of `nox -s downloads`: the same syntax tree, comments and docstrings set aside
sys.path.insert(0, str(Path(__file__).parents[1] / "tests" / "downloads"))
from run_downloads import script_code


@pytest.mark.parametrize(
    ("locale", "expected"), [("zh-CN", "zh_CN"), ("en-US", "en"), ("fr-FR", "en")]
)
def test_root_page_sends_reader_to_their_language(
    open_page: Callable[..., Any], locale: str, expected: str
) -> None:
    page, record, _ = open_page("index.html", locale=locale)
    page.wait_for_url(f"**/{expected}/index.html")
    assert not record.problems()


SWITCHER_PAGES = [
    "index",
    "api",
    "course_notes",
    "auto_examples/index",
    "auto_examples/01_python_foundations/index",
    *GALLERY_PAGES[:3],
]


@pytest.mark.parametrize("page_name", SWITCHER_PAGES)
def test_language_switcher_round_trip(
    open_page: Callable[..., Any], page_name: str, screenshot: Callable[..., Path]
) -> None:
    """Clicking the switcher lands on the same page in Chinese, and back."""
    page, record, _ = open_page(f"en/{page_name}.html")
    switcher = page.locator("a.lang-switcher").first
    assert switcher.get_attribute("data-lang") == "zh_CN"
    switcher.click()
    page.wait_for_url(f"**/zh_CN/{page_name}.html")
    assert page.locator("html").get_attribute("lang") == "zh-CN"
    if page_name == GALLERY_PAGES[0]:
        screenshot(page, "zh_CN-gallery-page")
    back = page.locator("a.lang-switcher").first
    assert back.get_attribute("data-lang") == "en"
    back.click()
    page.wait_for_url(f"**/en/{page_name}.html")
    assert page.locator("html").get_attribute("lang") == "en"
    assert not record.problems()


def _page_text(language: str, page: str) -> str:
    path = HTML / language / f"{page}.html"
    if not path.is_file():
        return ""
    raw = path.read_text(encoding="utf-8")
    article = raw.split('<article class="bd-article"', 1)[-1].split("</article>", 1)[0]
    return unescape(re.sub(r"<[^>]+>", "", article))


# (language, query, pages a reader expects among the results when their text has the query)
SEARCHES = [
    (
        "zh_CN",
        "钩子",
        [
            "index",
            *GALLERY_PAGES[:1],
            "auto_examples/02_module_hooks/plot_05_forward_hooks",
            "auto_examples/03_tensor_hooks/plot_10_tensor_hooks",
        ],
    ),
    (
        "zh_CN",
        "反向传播",
        [
            "auto_examples/01_python_foundations/plot_01_callbacks",
            "auto_examples/02_module_hooks/plot_07_backward_hooks",
        ],
    ),
    (
        "zh_CN",
        "热力图",
        ["index", "auto_examples/04_grad_cam/plot_16_gradcam_from_scratch"],
    ),
    (
        "en",
        "forward hook",
        [
            "auto_examples/01_python_foundations/plot_01_callbacks",
            "auto_examples/02_module_hooks/plot_05_forward_hooks",
        ],
    ),
]


@pytest.mark.parametrize(("language", "query", "candidates"), SEARCHES)
def test_search_shows_expected_pages(
    open_page: Callable[..., Any],
    screenshot: Callable[..., Path],
    stats: Any,
    language: str,
    query: str,
    candidates: list[str],
) -> None:
    """Type the query in the search dialog, press Enter, read the results list."""
    expected = [p for p in candidates if query.lower() in _page_text(language, p).lower()]
    assert expected, f"no page of the {language} site contains {query!r}; update the test"
    page, record, _ = open_page(f"{language}/index.html")
    page.keyboard.press("Control+k")
    box = page.locator("#pst-search-dialog input[name=q]")
    box.wait_for(state="visible")
    box.fill(query)
    box.press("Enter")
    page.wait_for_url("**/search.html?q=*")
    page.wait_for_function(
        "() => { const s = document.querySelector('#search-results p.search-summary');"
        " return s && s.innerText.trim().length > 0; }"
    )
    found = page.eval_on_selector_all(
        "#search-results ul.search li a", "els => els.map(a => a.getAttribute('href'))"
    )
    found_pages = {re.sub(r"\.html.*$", "", href) for href in found}
    summary = page.locator("#search-results p.search-summary").inner_text()
    stats.notes.append(f"search {language} {query!r}: {len(found_pages)} pages in the results list")
    screenshot(page, f"search-{language}-{'-'.join(query.split())}")
    missing = [p for p in expected if p not in found_pages]
    assert not missing, f"{query!r}: {missing} not in results {sorted(found_pages)} ({summary})"
    assert not record.problems()


def test_dark_mode_toggles_and_figures_stay_readable(
    open_page: Callable[..., Any], screenshot: Callable[..., Path]
) -> None:
    name = next(
        (
            p
            for p in GALLERY_PAGES
            if "sphx-glr-single-img" in (HTML / "en" / f"{p}.html").read_text(encoding="utf-8")
        ),
        None,
    )
    assert name, "no gallery page with a figure"
    page, record, _ = open_page(f"en/{name}.html", color_scheme="light")
    html = page.locator("html")
    background = "() => getComputedStyle(document.body).backgroundColor"
    light = page.evaluate(background)
    page.locator("button.theme-switch-button").first.click()
    page.locator('button.theme-change-button[data-mode="dark"]').first.click()
    assert html.get_attribute("data-theme") == "dark"
    assert html.get_attribute("data-mode") == "dark"
    dark = page.evaluate(background)
    assert dark != light, "page background did not change"
    assert _luminance(dark) < _luminance(light)
    figure = page.locator("img.sphx-glr-single-img").first
    figure.scroll_into_view_if_needed()
    figure_background = figure.evaluate("el => getComputedStyle(el).backgroundColor")
    assert _luminance(figure_background) > 0.9, (
        f"figure background {figure_background} in dark mode"
    )
    screenshot(page, "en-dark-mode")
    page.reload()
    assert html.get_attribute("data-theme") == "dark", "the choice does not survive a reload"
    page.locator("button.theme-switch-button").first.click()
    page.locator('button.theme-change-button[data-mode="light"]').first.click()
    assert html.get_attribute("data-theme") == "light"
    assert not record.problems()


def _luminance(css: str) -> float:
    r, g, b = (int(v) / 255 for v in re.findall(r"\d+", css)[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


@pytest.mark.parametrize("missing", ["no/such/page.html", "zh_CN/auto_examples/gone.html"])
def test_404_page(
    open_page: Callable[..., Any], screenshot: Callable[..., Path], missing: str
) -> None:
    page, record, response = open_page(missing)
    assert response.status == 404
    assert "Page not found" in page.title()
    assert page.locator("h1", has_text="页面未找到").count() == 1
    # styled like the site (its stylesheets use absolute URLs, so they load at any depth)
    assert page.locator("button.theme-switch-button").count() > 0
    # the browser logs the document's own 404 status; anything else is a problem
    problems = [p for p in record.problems() if f"/{missing})" not in p]
    assert not problems
    if missing.startswith("no/"):
        screenshot(page, "404")
    page.locator('a[href$="zh_CN/index.html"]', has_text="首页").first.click()
    page.wait_for_url("**/zh_CN/index.html")
    assert page.locator("html").get_attribute("lang") == "zh-CN"


def test_edit_link_points_to_the_example_script(open_page: Callable[..., Any]) -> None:
    for language in ("en", "zh_CN"):
        for name in GALLERY_PAGES[:2]:
            page, _, _ = open_page(f"{language}/{name}.html")
            href = page.locator(".editthispage a").get_attribute("href")
            page.close()
            rel = name.removeprefix("auto_examples/")
            assert href == (
                f"https://github.com/hooks-tutorial/hooks-tutorial/edit/main/examples/{rel}.py"
            )
            assert (EXAMPLES / f"{rel}.py").is_file()


def _code_cells(notebook: bytes) -> list[str]:
    """Each code cell's code without its prose (comments, docstrings)."""
    cells = json.loads(notebook)["cells"]
    return [script_code("".join(c["source"])) for c in cells if c["cell_type"] == "code"]


@pytest.mark.parametrize("language", ["zh_CN", "en"])
def test_downloads_speak_the_page_language(
    open_page: Callable[..., Any], stats: Any, tmp_path: Path, language: str
) -> None:
    """Click the download buttons: Chinese pages give Chinese prose around the same code."""
    name = GALLERY_PAGES[0]
    files = {}
    for lang in {language, "en"}:
        page, record, _ = open_page(f"{lang}/{name}.html", accept_downloads=True)
        for kind in ("python", "jupyter", "zip"):
            with page.expect_download() as info:
                page.locator(f".sphx-glr-download-{kind} a").first.click()
            target = tmp_path / lang / info.value.suggested_filename
            info.value.save_as(target)
            files[lang, kind] = target.read_bytes()
        assert not record.problems()
    script, notebook = files[language, "python"].decode(), files[language, "jupyter"]
    # a page's index entries (its search terms, English and Chinese in both languages'
    # sites) are not prose: the notebooks drop them, the scripts keep the directive
    script = re.sub(r"\n\.\. index::\n(?:   .*\n)+", "\n", script)
    prose = "".join(c for c in script if CJK.match(c))
    if language == "en":
        assert not prose, "the English download contains Chinese"
        return
    assert len(prose) > 100, "the Chinese download has no Chinese prose"
    assert script_code(files[language, "python"]) == script_code(files["en", "python"])
    assert _code_cells(notebook) == _code_cells(files["en", "jupyter"])
    markdown = "".join(
        "".join(c["source"]) for c in json.loads(notebook)["cells"] if c["cell_type"] == "markdown"
    )
    assert len(CJK.findall(markdown)) > 100
    zipped = tmp_path / "z.zip"
    zipped.write_bytes(files[language, "zip"])
    with zipfile.ZipFile(zipped) as archive:
        assert archive.read(Path(name).name + ".py") == files[language, "python"]
    stats.notes.append(f"{language} downloads of {name}: Chinese prose, English code unchanged")


def test_screenshots_of_home_pages(
    open_page: Callable[..., Any], screenshot: Callable[..., Path]
) -> None:
    for language in ("en", "zh_CN"):
        page, record, _ = open_page(f"{language}/index.html")
        screenshot(page, f"{language}-home")
        assert not record.problems()
    page, record, _ = open_page(f"en/{GALLERY_PAGES[-1]}.html")
    screenshot(page, "en-last-gallery-page")
    assert not record.problems()


def test_chinese_emphasis_is_upright_with_emphasis_dots(open_page: Callable[..., Any]) -> None:
    """zh_CN pages set emphasis with emphasis dots, not slanted Han characters (custom.css)."""
    styles = {}
    for language in ("zh_CN", "en"):
        page, _, _ = open_page(
            f"{language}/auto_examples/01_python_foundations/plot_01_callbacks.html"
        )
        styles[language] = page.locator("article em").first.evaluate(
            "e => [getComputedStyle(e).fontStyle, getComputedStyle(e).textEmphasisStyle,"
            " e.textContent]"
        )
        page.close()
    style, emphasis, text = styles["zh_CN"]
    assert CJK.search(text), text  # a Chinese emphasis, not a code name
    assert (style, emphasis) == ("normal", "dot"), styles  # "filled dot", computed
    assert styles["en"][:2] == ["italic", "none"], styles
