"""Helpers for the checks on the built site (``nox -s docs`` runs them).

``nox -s docs`` runs them after building the site; without a built site they
fail at once, naming that command (``nox -s tests`` does not collect them).

Claims: each tutorial page's prose is checked against what the page printed in
``test_claims_<page>.py`` (one file per page; ``plot_05`` -> ``test_claims_05.py``).
A claim test reads the printed output with :func:`outputs`, parses numbers with
:func:`number` / :func:`numbers`, and asserts what the sentence says; where the
sentence quotes a number, :func:`prose` checks that both languages quote it.
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


def outputs(page: str, language: str = "en") -> str:
    """The text printed by the page's code (sphinx-gallery output blocks), in order."""
    blocks = re.findall(
        r'<div class="sphx-glr-script-out[^"]*">(.*?)</pre>', html(page, language), flags=re.DOTALL
    )
    return "\n".join(unescape(re.sub(r"<[^>]+>", "", b)) for b in blocks)


def prose(page: str, language: str = "en") -> str:
    """The page's text without its code and output blocks (whitespace collapsed)."""
    raw = html(page, language)
    raw = raw.split('<article class="bd-article">', 1)[-1].split("</article>", 1)[0]
    raw = re.sub(r'<div class="highlight[^"]*">.*?</pre></div>', " ", raw, flags=re.DOTALL)
    raw = re.sub(r"<(script|style)\b.*?</\1>", " ", raw, flags=re.DOTALL)
    text = unescape(re.sub(r"<[^>]+>", " ", raw))
    return re.sub(r"\s+", " ", text)


def match(pattern: str, text: str) -> re.Match[str]:
    found = re.search(pattern, text)
    assert found is not None, f"no output matches {pattern!r}"
    return found


def number(pattern: str, text: str) -> float:
    """The first group of ``pattern`` in ``text`` as a float (fails if absent)."""
    return float(match(pattern, text)[1])


def numbers(pattern: str, text: str) -> list[float]:
    """All groups of the first match of ``pattern`` as floats."""
    return [float(v) for v in match(pattern, text).groups()]


def quoted_in_both_languages(page: str, *values: str) -> None:
    """Each value (as printed) appears in the prose of both the English and Chinese page."""
    for language in LANGUAGES:
        text = prose(page, language)
        for value in values:
            assert value in text, f"{value!r} not quoted in the {language} prose of {page}"
