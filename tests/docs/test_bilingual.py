"""Unit tests of docs/_ext/bilingual.py and of conf.py's edit-link template (``nox -s docs``).

Each piece is called with the few attributes of the Sphinx application it reads
(``SimpleNamespace`` stand-ins), so no Sphinx build runs here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jinja2
import pytest
import torch

DOCS = Path(__file__).parents[2] / "docs"
sys.path.insert(0, str(DOCS / "_ext"))

import bilingual


def _config(language: str = "en", baseurl: str = "https://example.org/site") -> Any:
    return SimpleNamespace(language=language, html_baseurl=baseurl)


# -- configure_site ---------------------------------------------------------------------


@pytest.mark.parametrize("language", ["en", "zh_CN"])
def test_site_urls_carry_the_language_folder(
    language: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(bilingual.SITE_URL_ENV, raising=False)
    monkeypatch.delenv("READTHEDOCS_CANONICAL_URL", raising=False)
    config = _config(language)
    bilingual.configure_site(SimpleNamespace(), config)
    assert config.bilingual_site_root == "https://example.org/site/"
    assert config.html_baseurl == f"https://example.org/site/{language}/"
    assert config.ogp_site_url == config.html_baseurl
    assert config.site_url == "https://example.org/site/"
    assert config.sitemap_url_scheme == "{lang}{link}"
    assert config.sitemap_locales == ["en", "zh_CN"]
    assert config.notfound_urls_prefix == f"/site/{language}/"
    body = config.notfound_context["body"]
    # the 404 page links both home pages, its own language first
    assert 'href="/site/en/index.html"' in body
    assert 'href="/site/zh_CN/index.html"' in body
    assert body.index("页面未找到") > body.index("Page not found") or language == "zh_CN"
    assert body.startswith("<h1>Page not found") == (language == "en")


def test_the_environment_variable_sets_the_site_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(bilingual.SITE_URL_ENV, "https://pages.example.com/hooks")
    monkeypatch.delenv("READTHEDOCS_CANONICAL_URL", raising=False)
    config = _config("zh_CN")
    bilingual.configure_site(SimpleNamespace(), config)
    assert config.html_baseurl == "https://pages.example.com/hooks/zh_CN/"


def test_read_the_docs_chooses_its_own_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("READTHEDOCS_CANONICAL_URL", "https://x.readthedocs.io/zh-cn/latest")
    config = _config("zh_CN")
    bilingual.configure_site(SimpleNamespace(), config)
    assert config.bilingual_site_root is None
    assert config.html_baseurl == "https://x.readthedocs.io/zh-cn/latest/"
    assert config.sitemap_url_scheme == "{link}"
    assert config.sitemap_locales == [None]


# -- add_page_context ---------------------------------------------------------------------


def _app(language: str, site_root: str | None) -> Any:
    config = SimpleNamespace(language=language, bilingual_site_root=site_root)
    return SimpleNamespace(config=config)


def test_page_context_links_the_same_page_in_the_other_language() -> None:
    context: dict[str, Any] = {"content_root": "../../", "metatags": "<meta />"}
    page = "auto_examples/01_x/plot_01_a"
    bilingual.add_page_context(_app("zh_CN", "https://e.org/"), page, "page.html", context, None)
    assert context["lang_current"] == "zh_CN"
    assert context["lang_other"] == "en"
    assert context["lang_other_label"] == "English"
    assert context["lang_other_url"] == f"../../../en/{page}.html"
    assert context["metatags"].startswith("<meta />")
    for lang, tag in (("en", "en"), ("zh_CN", "zh-CN")):
        alternate = f'hreflang="{tag}" href="https://e.org/{lang}/{page}.html"'
        assert alternate in context["metatags"]


@pytest.mark.parametrize(("page", "root"), [("search", "https://e.org/"), ("index", None)])
def test_no_alternates_for_search_pages_or_without_a_site_root(page: str, root: str | None) -> None:
    context: dict[str, Any] = {}
    bilingual.add_page_context(_app("en", root), page, "page.html", context, None)
    assert context["lang_other_url"] == f"./../zh_CN/{page}.html"
    assert "hreflang" not in context.get("metatags", "")


# -- fix_zh_search ---------------------------------------------------------------------------


def _search_app(tmp_path: Path, text: str) -> Any:
    (tmp_path / "_static").mkdir()
    (tmp_path / "_static" / "language_data.js").write_text(text, encoding="utf-8")
    return SimpleNamespace(outdir=str(tmp_path), builder=SimpleNamespace(format="html"))


def test_zh_search_uses_the_english_stemmer_when_chinese_is_undefined(tmp_path: Path) -> None:
    app = _search_app(tmp_path, "var x = 1;\nwindow.Stemmer = ChineseStemmer;\n")
    bilingual.fix_zh_search(app, None)
    text = (tmp_path / "_static" / "language_data.js").read_text(encoding="utf-8")
    assert text == "var x = 1;\nwindow.Stemmer = EnglishStemmer;\n"


def test_zh_search_is_untouched_once_sphinx_defines_the_stemmer(tmp_path: Path) -> None:
    fixed = "var ChineseStemmer = function() {};\nwindow.Stemmer = ChineseStemmer;\n"
    app = _search_app(tmp_path, fixed)
    bilingual.fix_zh_search(app, None)
    assert (tmp_path / "_static" / "language_data.js").read_text(encoding="utf-8") == fixed


# -- reset_torch ------------------------------------------------------------------------------


def test_reset_torch_removes_global_hooks_and_enables_grad() -> None:
    from torch.nn.modules import module as nn_module  # noqa: PLC0415

    handle = nn_module.register_module_forward_hook(lambda module, args, output: None)
    torch.set_grad_enabled(False)
    try:
        assert len(nn_module._global_forward_hooks) == 1
        bilingual.reset_torch({}, "plot_x.py")
        assert len(nn_module._global_forward_hooks) == 0
        assert torch.is_grad_enabled()
    finally:
        handle.remove()
        torch.set_grad_enabled(True)


def test_reset_torch_gives_a_page_the_threads_omp_num_threads_names() -> None:
    # as in a sphinx-gallery worker of a build run with OMP_NUM_THREADS=2: joblib set
    # MKL_NUM_THREADS=1, and torch started on one thread
    code = (
        "import sys, torch; sys.path.insert(0, sys.argv[1]); import bilingual; "
        "before = torch.get_num_threads(); bilingual.reset_torch({}, 'plot_x.py'); "
        "print(before, torch.get_num_threads())"
    )
    env = os.environ | {"OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "1"}
    result = subprocess.run(
        [sys.executable, "-c", code, str(DOCS / "_ext")],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    assert result.stdout.split() == ["1", "2"]


# -- conf.py: the theme's edit_page_url_template ------------------------------------------------


def _conf() -> dict[str, Any]:
    namespace: dict[str, Any] = {"__file__": str(DOCS / "conf.py")}
    exec(compile((DOCS / "conf.py").read_text(encoding="utf-8"), "conf.py", "exec"), namespace)  # noqa: S102
    return namespace


@pytest.mark.parametrize(
    ("file_name", "path"),
    [
        (
            "auto_examples/04_grad_cam/plot_18_cam_family.rst",
            "/edit/main/examples/04_grad_cam/plot_18_cam_family.py",
        ),
        (
            "auto_examples/01_python_foundations/index.rst",
            "/edit/main/examples/01_python_foundations/GALLERY_HEADER.rst",
        ),
        ("auto_examples/index.rst", "/tree/main/examples"),
        ("generated/hooks_tutorial.GradCAM.rst", "/tree/main/src/hooks_tutorial"),
        ("api.rst", "/edit/main/docs/api.rst"),
        ("course_notes.md", "/edit/main/docs/course_notes.md"),
    ],
)
def test_edit_links_point_at_the_file_to_edit(file_name: str, path: str) -> None:
    conf = _conf()
    template = conf["html_context"]["edit_page_url_template"]
    # as pydata-sphinx-theme renders it: doc_path gets a trailing slash
    url = jinja2.Template(template).render(
        file_name=file_name, doc_path="docs/", repository=conf["REPOSITORY"]
    )
    assert url == conf["REPOSITORY"] + path
    repo = Path(__file__).parents[2]
    if "/edit/" in path:
        assert (repo / path.split("/edit/main/")[1]).is_file()
