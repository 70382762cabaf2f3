"""Local Sphinx extension for the bilingual hooks-tutorial site.

Both languages are built separately and published side by side as ``/en/``
and ``/zh_CN/`` (see ``nox -s docs``). This extension:

- ``config-inited``: derives every absolute URL from one site root, so the
  canonical link, OpenGraph ``og:url``, the sitemap and the 404 page's links
  carry the language folder (``<root>/zh_CN/...``). The root is
  ``$HOOKS_TUTORIAL_SITE_URL`` (set by the publishing workflow), else
  ``html_baseurl`` from ``conf.py``; on Read the Docs its own canonical URL.
  It also serves MathJax from ``_static`` (package ``sphinx-mathjax-offline``),
  so pages with math work offline and load nothing from a CDN.
- ``html-page-context``: the URL of the same page in the other language, for
  the navbar language switcher (``_templates/lang-switcher.html``), hreflang
  alternates, and an "Edit on GitHub" link that, on gallery pages, points to
  the example script under ``examples/`` instead of the generated page.
- ``build-finished``: completes the sitemap after incremental builds, and
  works around Sphinx 9.0's zh search (issue #14229:
  ``language_data.js`` sets ``window.Stemmer = ChineseStemmer`` which is never
  defined, so the search page hangs on "Searching...").
- ``reset_torch``: a sphinx-gallery reset hook that undoes global state an
  example may leave behind (global module hooks, grad mode).
- ``localized_downloads`` (loaded from here): Chinese .py/.ipynb/.zip
  downloads in the zh_CN build.
"""

from __future__ import annotations

import os
import shutil
from fnmatch import fnmatch
from html import escape
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.util import logging

logger = logging.getLogger(__name__)

LANGUAGES = {"en": "English", "zh_CN": "简体中文"}
HREFLANG = {"en": "en", "zh_CN": "zh-CN"}
SITE_URL_ENV = "HOOKS_TUTORIAL_SITE_URL"
# the MathJax files a page with TeX math needs (the full package is 24 MB)
MATHJAX_FILES = [
    "tex-chtml.js",
    "output/chtml/fonts",
    "input/tex/extensions",
    "a11y",
    "ui",
]


def _other(language: str) -> str:
    return "en" if language == "zh_CN" else "zh_CN"


def _slash(url: str) -> str:
    return url if url.endswith("/") else url + "/"


# -- URLs ---------------------------------------------------------------------


def _mathjax_dir() -> Path | None:
    try:
        dist = distribution("sphinx-mathjax-offline")
    except PackageNotFoundError:
        return None
    path = Path(str(dist.locate_file("sphinx-mathjax-offline/static/mathjax")))
    return path if (path / "tex-chtml.js").is_file() else None


def configure_site(app: Sphinx, config: Config) -> None:
    del app
    language = config.language or "en"
    rtd = os.environ.get("READTHEDOCS_CANONICAL_URL")
    if rtd:  # one Read the Docs project per language, URL chosen by RTD
        root = None
        page_base = _slash(rtd)
        config.site_url = page_base
        config.sitemap_url_scheme = "{link}"
        config.sitemap_locales = [None]
    else:
        root = _slash(os.environ.get(SITE_URL_ENV) or config.html_baseurl)
        page_base = f"{root}{language}/"
        config.site_url = root
        config.sitemap_url_scheme = "{lang}{link}"
        config.sitemap_locales = list(LANGUAGES)
    config.bilingual_site_root = root
    config.html_baseurl = page_base  # canonical links
    config.ogp_site_url = page_base
    prefix = urlsplit(page_base).path or "/"
    config.notfound_urls_prefix = _slash(prefix)
    home = _slash(urlsplit(root).path) if root else "/"
    links = {
        "en": f'<a href="{home}en/index.html">Home page (English)</a>',
        "zh_CN": f'<a href="{home}zh_CN/index.html" lang="zh-CN">首页（简体中文）</a>',
    }
    parts = {
        "en": "<h1>Page not found</h1><p>This page does not exist (any more). "
        f"Go to the {links['en']}, or use the search.</p>",
        "zh_CN": '<h1 lang="zh-CN">页面未找到</h1><p lang="zh-CN">这个页面不存在（或已被移走）。'
        f"请回到{links['zh_CN']}，或使用搜索。</p>",
    }
    config.notfound_context = {
        "title": "Page not found · 页面未找到",
        "body": parts[language] + parts[_other(language)],
    }
    if _mathjax_dir() is not None:
        config.mathjax_path = "mathjax/tex-chtml.js"
    else:
        logger.warning(
            "bilingual: sphinx-mathjax-offline is not installed, so math pages load "
            "MathJax from a CDN; install the docs dependency group (`nox -s docs`)"
        )


def add_page_context(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    del templatename, doctree
    language = app.config.language or "en"
    other = _other(language)
    root = context.get("content_root", "./")
    context["lang_current"] = language
    context["lang_other"] = other
    context["lang_other_label"] = LANGUAGES[other]
    context["lang_other_url"] = f"{root}../{other}/{pagename}.html"
    site_root = getattr(app.config, "bilingual_site_root", None)
    if site_root and pagename not in ("404", "search", "genindex"):
        alternates = "".join(
            f'\n<link rel="alternate" hreflang="{HREFLANG[lang]}" '
            f'href="{escape(site_root)}{lang}/{escape(pagename)}.html" />'
            for lang in LANGUAGES
        )
        context["metatags"] = context.get("metatags", "") + alternates
    edit = _example_source(app, pagename)
    if edit is not None and "get_edit_provider_and_url" in context:
        url = _edit_url(context, edit)
        if url is not None:
            context["get_edit_provider_and_url"] = lambda: ("GitHub", url)


def _example_source(app: Sphinx, pagename: str) -> str | None:
    """Repository path of the file a gallery page is generated from, or None."""
    conf = getattr(app.config, "sphinx_gallery_conf", None) or {}
    srcdir = Path(app.srcdir)
    repo = srcdir.parent
    for examples, gallery in zip(
        conf.get("examples_dirs", []), conf.get("gallery_dirs", []), strict=False
    ):
        if not (pagename == gallery or pagename.startswith(gallery + "/")):
            continue
        rel = pagename[len(gallery) :].lstrip("/")
        base = (srcdir / examples / rel).resolve()
        if rel.endswith("index") or rel == "":
            folder = base.parent if rel else base
            candidates = [
                folder / name for name in ("GALLERY_HEADER.rst", "README.rst", "README.txt")
            ]
        else:
            candidates = [base.with_suffix(".py")]
        for path in candidates:
            if path.is_file():
                return path.relative_to(repo).as_posix()
    return None


def _edit_url(context: dict[str, Any], path: str) -> str | None:
    user, repo, version = (context.get(k) for k in ("github_user", "github_repo", "github_version"))
    if not (user and repo and version):
        return None
    return f"https://github.com/{user}/{repo}/edit/{version}/{path}"


# -- after the build ------------------------------------------------------------


def complete_sitemap(app: Sphinx, exception: Exception | None) -> None:
    """List every page in the sitemap, not only those written by this build.

    sphinx-sitemap collects pages as they are written, so an incremental build
    would publish a sitemap of the changed pages only. This runs just before it.
    """
    links = getattr(app.env.app, "sitemap_links", None) if exception is None else None
    if links is None or app.builder.format != "html":
        return
    queued: dict[str, str | None] = {}
    while not links.empty():
        link, last_updated = links.get()
        queued[link] = last_updated
    for docname in sorted(app.env.found_docs):
        link = app.builder.get_target_uri(docname)
        if not any(fnmatch(link, pattern) for pattern in app.config.sitemap_excludes):
            queued.setdefault(link, None)
    for link, last_updated in sorted(queued.items()):
        links.put((link, last_updated))


def copy_mathjax(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    source = _mathjax_dir()
    if source is None:
        return
    target = Path(app.outdir) / "_static" / "mathjax"
    for rel in MATHJAX_FILES:
        src, dst = source / rel, target / rel
        if src.is_dir():
            shutil.copytree(src, dst, dirs_exist_ok=True)
        elif src.is_file():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)


def fix_zh_search(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    path = Path(app.outdir) / "_static" / "language_data.js"
    if not path.is_file():
        return
    text = path.read_text(encoding="utf-8")
    broken = "window.Stemmer = ChineseStemmer;"
    if broken in text and "ChineseStemmer =" not in text and "function ChineseStemmer" not in text:
        # The zh index stems Latin words with the English stemmer (see
        # sphinx.search.zh), so the browser must use the same one.
        path.write_text(text.replace(broken, "window.Stemmer = EnglishStemmer;"), encoding="utf-8")
        logger.info("bilingual: patched language_data.js (Sphinx issue #14229)")


def reset_torch(gallery_conf: dict[str, Any], fname: str) -> None:
    """Undo global torch state that one example could leak into the next."""
    del gallery_conf, fname
    import torch  # noqa: PLC0415 - only the examples' process needs torch
    from torch.nn.modules import module as nn_module  # noqa: PLC0415

    torch.set_grad_enabled(True)
    for name in (
        "_global_forward_pre_hooks",
        "_global_forward_hooks",
        "_global_backward_pre_hooks",
        "_global_backward_hooks",
        "_global_forward_hooks_always_called",
        "_global_forward_hooks_with_kwargs",
    ):
        registry = getattr(nn_module, name, None)
        if registry is not None:
            registry.clear()


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("bilingual_site_root", None, "html", types=(str, type(None)))
    app.connect("config-inited", configure_site, priority=100)
    # after the theme's edit-link setup (priority 500)
    app.connect("html-page-context", add_page_context, priority=600)
    app.connect("build-finished", fix_zh_search)
    app.connect("build-finished", copy_mathjax)
    app.connect("build-finished", complete_sitemap, priority=400)  # before sphinx-sitemap
    app.setup_extension("localized_downloads")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
