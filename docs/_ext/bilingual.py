"""Local Sphinx extension for the bilingual hooks-tutorial site.

- ``html-page-context``: the URL of the same page in the other language, for
  the navbar language switcher (``_templates/lang-switcher.html``).
- ``build-finished``: work around Sphinx 9.0's zh search (issue #14229:
  ``language_data.js`` sets ``window.Stemmer = ChineseStemmer`` which is never
  defined, so the search page hangs on "Searching...").
- ``reset_torch``: a sphinx-gallery reset hook that undoes global state an
  example may leave behind (global module hooks, grad mode).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

LANGUAGES = {"en": "English", "zh_CN": "简体中文"}


def _other(language: str) -> str:
    return "en" if language == "zh_CN" else "zh_CN"


def add_switcher_context(
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
    app.connect("html-page-context", add_switcher_context)
    app.connect("build-finished", fix_zh_search)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
