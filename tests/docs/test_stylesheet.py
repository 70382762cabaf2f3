"""docs/_static/custom.css closes every block it opens, run by ``nox -s docs``.

A merge once dropped the closing braces of two ``@media print`` blocks: the
phone's rules (tables as cards, wrapped code, figure links) that followed sat
inside ``@media print`` and never applied on a screen, and no error was shown
(a browser reads an unclosed block to the end of the file).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

CSS = Path(__file__).parents[2] / "docs" / "_static" / "custom.css"


def blocks(css: str) -> list[tuple[int, int, str]]:
    """``(line, depth, text)`` of each line that starts a rule or an at-rule at column 0."""
    # comments out (their braces are prose), their lines kept for the line numbers
    css = re.sub(r"/\*.*?\*/", lambda c: "\n" * c.group().count("\n"), css, flags=re.DOTALL)
    found, depth = [], 0
    for number, line in enumerate(css.split("\n"), 1):
        if line[:1] not in ("", " ", "}"):
            found.append((number, depth, line))
        depth += line.count("{") - line.count("}")
        assert depth >= 0, f"custom.css line {number}: a '}}' closes nothing"
    assert depth == 0, f"custom.css: {depth} block(s) left open at the end"
    return found


def test_every_block_is_closed_and_each_top_level_rule_starts_at_depth_0() -> None:
    for number, depth, line in blocks(CSS.read_text(encoding="utf-8")):
        # a rule written at column 0 is meant for every medium: it must not sit in a block
        assert depth == 0, f"custom.css line {number} ({line.strip()}) is inside a block"


def test_an_unclosed_block_is_found() -> None:
    broken = "@media print {\n  .a {\n    color: red;\n}\n.b {\n  color: blue;\n}\n"
    with pytest.raises(AssertionError, match="1 block\\(s\\) left open"):
        blocks(broken)
