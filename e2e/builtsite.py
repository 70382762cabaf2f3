"""What the browser tests share: the built site's pages (``nox -s docs`` builds them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

ROOT = Path(__file__).parents[1]
HTML = ROOT / "docs" / "_build" / "html"
EXAMPLES = ROOT / "examples"
LANGUAGES = ("en", "zh_CN")
# the browser contexts: a reader's desktop browser (tests may override each option)
READER: dict[str, Any] = {"locale": "en-US", "viewport": {"width": 1280, "height": 900}}
GALLERY_PAGES = [
    f"auto_examples/{p.parent.name}/{p.stem}" for p in sorted(EXAMPLES.glob("*/plot_*.py"))
]


def built_pages(*, root: bool = True) -> list[str]:
    """Every HTML page of both languages (and the root pages unless ``root=False``)."""
    pages = ["index.html", "404.html"] if root else []
    for language in LANGUAGES:
        for path in sorted((HTML / language).rglob("*.html")):
            rel = path.relative_to(HTML).as_posix()
            if not any(part in rel for part in ("/_static/", "/_sources/", "/_downloads/")):
                pages.append(rel)
    return [p for p in pages if (HTML / p).is_file()]
