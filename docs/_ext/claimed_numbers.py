"""The numbers a sentence states: shared by ``solutions.py`` and ``docs/tools/i18n.py``.

Both check that prose quotes what the pages print: ``solutions.py`` that an
answer's numbers were printed by its own solution, and that its translation
states the same ones; ``i18n.py check`` that every translated message states
the numbers of its English source. Only ``re``: the tests' environment, which
has no Sphinx, imports it too.
"""

from __future__ import annotations

import re

_W = "A-Za-z0-9_"
NUMBER = re.compile(rf"(?<![{_W}.\-])-?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![{_W}]|\.\d)")
# "page 17", "exercise 2", "step 0", "Solution 1", "第 17 页" name a page, an exercise,
# a step, not a value; "torch 2.9" names a release
NOT_A_CLAIM = re.compile(
    r"(?:[Pp]ages?|[Ee]xercises?|[Ss]teps?|[Ss]olutions?|[Cc]hapters?|[Ss]ections?|练习|第"
    r"|torch|torchvision|Python)\s*$"
)


def claimed_numbers(text: str) -> set[str]:
    """The numbers ``text`` states, without those that name a page, exercise or step."""
    return {m.group() for m in NUMBER.finditer(text) if not NOT_A_CLAIM.search(text[: m.start()])}


def printed(number: str, output: str) -> bool:
    """``number`` appears in ``output`` with the same digits (0.21 is not in 0.213)."""
    return re.search(rf"(?<![\d.]){re.escape(number)}(?!\d)", output) is not None


def without_markup(raw: str) -> str:
    """reST prose without inline code, math and roles (names and formulas, not claims)."""
    raw = re.sub(r"``.*?``", " ", raw, flags=re.DOTALL)
    raw = re.sub(r":[\w:]+:`[^`]*`", " ", raw)
    raw = re.sub(r"\$[^$]+\$", " ", raw)  # MyST math
    return re.sub(r"\s+", " ", raw).strip()


def quoted_values(text: str) -> set[str]:
    """The numbers of ``text`` a translation must keep: all but single digits.

    Chinese writes small counts as words (两个, 三倍) where English has digits,
    and the other way round; any number with two or more digits, a decimal
    point or an exponent is a value the translation must quote as it is.
    """
    return {n for n in claimed_numbers(without_markup(text)) if not re.fullmatch(r"-?\d", n)}
