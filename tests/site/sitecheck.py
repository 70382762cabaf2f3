"""Helpers for the checks on the built site (``nox -s docs`` runs them).

``nox -s docs`` runs them after building the site; without a built site they
fail at once, naming that command (``nox -s tests`` does not collect them).
They read the built HTML and never run a page again: each page checks its own
claims while the build runs it (hidden blocks beside the sentences,
``docs/_ext/solutions.py`` for the exercises' answers; see CONTRIBUTING.md).
"""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

HTML = Path(__file__).parents[2] / "docs" / "_build" / "html"
EXAMPLES = Path(__file__).parents[2] / "examples"
LANGUAGES = ("en", "zh_CN")


def built() -> bool:
    return (HTML / "en" / "index.html").is_file() and (HTML / "zh_CN" / "index.html").is_file()


def page_path(page: str) -> str:
    """``"15"`` or ``"plot_15_train_cnn"`` -> ``"auto_examples/04_grad_cam/plot_15_train_cnn"``."""
    stem = page if page.startswith("plot_") else None
    for script in sorted(EXAMPLES.glob("*/plot_*.py")):
        if script.stem == stem or script.stem.startswith(f"plot_{page}_"):
            return f"auto_examples/{script.parent.name}/{script.stem}"
    if (HTML / "en" / f"{page}.html").is_file():
        return page
    msg = f"no tutorial page {page!r}"
    raise LookupError(msg)


def html(page: str, language: str = "en") -> str:
    return (HTML / language / f"{page_path(page)}.html").read_text(encoding="utf-8")


def prose(page: str, language: str = "en") -> str:
    """The page's text without its code and output blocks (whitespace collapsed)."""
    raw = html(page, language)
    raw = raw.split('<article class="bd-article">', 1)[-1].split("</article>", 1)[0]
    raw = re.sub(r'<div class="highlight[^"]*">.*?</pre></div>', " ", raw, flags=re.DOTALL)
    raw = re.sub(r"<(script|style)\b.*?</\1>", " ", raw, flags=re.DOTALL)
    text = unescape(re.sub(r"<[^>]+>", " ", raw))
    return re.sub(r"\s+", " ", text)
