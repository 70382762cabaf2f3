"""Local Sphinx extension for the bilingual hooks-tutorial site.

Both languages are built separately and published side by side as ``/en/``
and ``/zh_CN/`` (see ``nox -s docs``). This extension:

- ``config-inited``: derives every absolute URL from one site root, so the
  canonical link, OpenGraph ``og:url``, the sitemap and the 404 page's links
  carry the language folder (``<root>/zh_CN/...``). The root is
  ``$HOOKS_TUTORIAL_SITE_URL`` (set by the publishing workflow), else
  ``html_baseurl`` from ``conf.py``; on Read the Docs its own canonical URL.
- ``html-page-context``: the URL of the same page in the other language, for
  the navbar language switcher (``_templates/lang-switcher.html``) and hreflang
  alternates.
- ``build-finished``: works around Sphinx 9.0's zh search (issue #14229:
  ``language_data.js`` sets ``window.Stemmer = ChineseStemmer`` which is never
  defined, so the search page hangs on "Searching..."). The fix is merged
  upstream but in no released Sphinx yet; delete ``fix_zh_search`` once the
  docs group requires a Sphinx that has it.

What packages do instead (no code here): gallery edit links are the theme's
``edit_page_url_template`` (``conf.py``); math is MathML, from Docutils'
converter (``mathml.py``). Each piece below exists because no
installed package does its job; the reason is in its docstring.
- ``reset_torch``: a sphinx-gallery reset hook that undoes global state an
  example may leave behind (global module hooks, grad mode, thread count);
  ``freeze_survivors`` keeps sphinx-gallery's garbage collection between
  examples cheap.
- ``localized_downloads`` (loaded from here): Chinese .py/.ipynb/.zip
  downloads in the zh_CN build.
"""

from __future__ import annotations

import gc
import os
from html import escape
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


def _other(language: str) -> str:
    return "en" if language == "zh_CN" else "zh_CN"


def _slash(url: str) -> str:
    return url if url.endswith("/") else url + "/"


# -- URLs ---------------------------------------------------------------------


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


# -- after the build ------------------------------------------------------------


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
    """Undo global torch state that one example could leak into the next.

    Each page also runs on the number of threads ``OMP_NUM_THREADS`` names, when it
    is set. sphinx-gallery's workers (``"parallel"`` in conf.py) get it from joblib:
    cores // workers, or the builder's own value. joblib also sets MKL_NUM_THREADS
    to its default when the builder did not, and torch takes the smaller of the two,
    so a build run with ``OMP_NUM_THREADS=2`` ran its pages on one thread.
    """
    del gallery_conf, fname
    import torch  # noqa: PLC0415 - only the examples' process needs torch
    from torch.nn.modules import module as nn_module  # noqa: PLC0415

    threads = os.environ.get("OMP_NUM_THREADS", "")
    if threads.isdigit() and int(threads) > 0:
        torch.set_num_threads(int(threads))
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


def freeze_survivors(gallery_conf: dict[str, Any], fname: str) -> None:
    """Collect the last example's garbage, then exempt what survives from later collections.

    sphinx-gallery runs a full ``gc.collect()`` before every example. With
    Sphinx, torch and matplotlib loaded, each one walked 300,000 to 700,000
    objects (about 0.5 s; 18 s of a 2-minute build). Freezing the survivors
    (``gc.freeze``) leaves only what the last example made for the next
    collection to walk.
    Frozen objects are still freed by reference counting; only a cycle among
    them would outlive the build process, never the other way round.
    """
    del gallery_conf, fname
    gc.collect()
    gc.freeze()


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("bilingual_site_root", None, "html", types=(str, type(None)))
    app.connect("config-inited", configure_site, priority=100)
    app.connect("html-page-context", add_page_context)
    app.connect("build-finished", fix_zh_search)
    app.setup_extension("localized_downloads")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
