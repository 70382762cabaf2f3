"""The theme's own words are Chinese on the zh_CN site (docs/locales/zh_CN/LC_MESSAGES/sphinx.po)."""

from __future__ import annotations

import re

import pytest
from sitecheck import HTML

# strings pydata-sphinx-theme writes into every page (buttons, labels, tooltips)
THEME_STRINGS = [
    "Collapse Sidebar",
    "Expand Sidebar",
    "Color mode",
    "System Settings",
    "Skip to main content",
    "Back to top",
    "On this page",
    "Section Navigation",
    "Site navigation",
    "Wrap long lines",  # the code blocks' wrap toggle (layout.html, _static/code-wrap.js)
]
PAGES = [
    "index.html",
    "auto_examples/index.html",
    "auto_examples/02_module_hooks/plot_05_forward_hooks.html",
    "generated/hooks_tutorial.GradCAM.html",
    "search.html",
]


@pytest.mark.parametrize("page", PAGES)
def test_no_english_theme_string_on_the_chinese_site(page: str) -> None:
    text = (HTML / "zh_CN" / page).read_text(encoding="utf-8")
    text = re.sub(r"<(script|style)\b.*?</\1>", " ", text, flags=re.DOTALL)
    left = [s for s in THEME_STRINGS if s in text]
    assert not left, f"zh_CN/{page} still shows {left}"
    english = (HTML / "en" / page).read_text(encoding="utf-8")
    assert any(s in english for s in THEME_STRINGS)  # the check looks for the right words
