"""Which language a check speaks, and the two-language text it says.

The tutorial's downloads exist in English and in Chinese, and their code is
the same byte for byte: only the prose differs. So the language cannot come
from the code that calls the check; it is recorded beside it, where the
check can read it:

- a downloaded script holds a comment line such as
  ``# hooks_tutorial.exercises language: zh_CN`` (the site writes it into the
  ``.py`` files it offers; edit it to switch);
- a downloaded notebook holds ``"hooks_tutorial_language": "zh_CN"`` in its
  metadata. The check finds the notebook through what Jupyter and VS Code
  tell the kernel (``JPY_SESSION_NAME``, ``__vsc_ipynb_file__``).

When neither can be read (an uploaded notebook, code typed in a console),
the learner's locale decides (``LANG`` and friends, ``zh*`` means Chinese),
and English is the default. ``set_language`` or the environment variable
``HOOKS_TUTORIAL_LANGUAGE`` overrides all of these.
"""

from __future__ import annotations

import json
import locale
import os
import re
import unicodedata
from pathlib import Path
from typing import Any, NamedTuple

__all__ = ["CHOSEN", "LANGUAGES", "Text", "detect_language", "wrap"]

LANGUAGES = ("en", "zh_CN")
ENVIRONMENT_VARIABLE = "HOOKS_TUTORIAL_LANGUAGE"
NOTEBOOK_KEY = "hooks_tutorial_language"
SCRIPT_MARKER = re.compile(r"^#\s*hooks_tutorial\.exercises language:\s*(\w+)", re.MULTILINE)


class Text(NamedTuple):
    """One message in both languages, with ``{name}`` fields filled by :meth:`format`."""

    en: str
    zh_CN: str

    def format(self, language: str, **values: object) -> str:
        """The message in ``language`` ("en" or "zh_CN"), its fields filled."""
        template = self.zh_CN if language == "zh_CN" else self.en
        return template.format(**values)


CHOSEN: dict[str, str | None] = {"language": None}  # what set_language (in __init__) chose


def _known(language: str | None) -> str | None:
    """``language`` as one of LANGUAGES ("zh", "zh_CN.UTF-8", "Chinese_China" -> "zh_CN")."""
    if not language:
        return None
    lowered = language.strip().lower()
    if lowered.startswith(("zh", "chinese")):
        return "zh_CN"
    if lowered.startswith("en"):
        return "en"
    return None


def _from_script(filename: str) -> str | None:
    if not filename.endswith(".py"):
        return None
    try:
        head = Path(filename).read_text(encoding="utf-8", errors="replace")[:4000]
    except OSError:
        return None
    found = SCRIPT_MARKER.search(head)
    return _known(found.group(1)) if found else None


def _from_notebook(path: str) -> str | None:
    if not path.endswith(".ipynb"):
        return None
    try:
        notebook = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    metadata = notebook.get("metadata", {}) if isinstance(notebook, dict) else {}
    value = metadata.get(NOTEBOOK_KEY) if isinstance(metadata, dict) else None
    return _known(value) if isinstance(value, str) else None


def _from_locale() -> str | None:
    for name in ("LC_ALL", "LC_MESSAGES", "LANG", "LANGUAGE"):
        value = os.environ.get(name)
        if value and value not in ("C", "POSIX") and not value.startswith("C."):
            return _known(value.split(":")[0])
    try:
        current = locale.getlocale()[0]
    except ValueError:
        return None
    return _known(current)


def detect_language(filename: str, namespace: dict[str, Any]) -> tuple[str, str]:
    """The language of the checks and where it came from.

    Parameters
    ----------
    filename : str
        The file of the code that called the check (a script, or a notebook
        cell's temporary name).
    namespace : dict
        That code's global variables (VS Code puts the notebook's path there).

    Returns
    -------
    tuple of str
        ``(language, source)``: the language, and ``"set_language"``,
        ``"environment"``, ``"script"``, ``"notebook"``, ``"locale"`` or
        ``"default"``.
    """
    if CHOSEN["language"] is not None:
        return CHOSEN["language"], "set_language"
    chosen = _known(os.environ.get(ENVIRONMENT_VARIABLE))
    if chosen:
        return chosen, "environment"
    chosen = _from_script(filename)
    if chosen:
        return chosen, "script"
    for path in (namespace.get("__vsc_ipynb_file__"), os.environ.get("JPY_SESSION_NAME")):
        chosen = _from_notebook(path) if isinstance(path, str) else None
        if chosen:
            return chosen, "notebook"
    chosen = _from_locale()
    if chosen:
        return chosen, "locale"
    return "en", "default"


# -- wrapping, for both languages -------------------------------------------------


def _wide(char: str) -> bool:
    return unicodedata.east_asian_width(char) in ("W", "F")


_NO_LINE_START = set("，。、；：！？）」』》”’")
_TOKEN = re.compile(r"\s+|[^\s]")


def wrap(text: str, width: int = 79) -> str:
    """Wrap ``text`` at ``width`` columns (a Chinese character takes two), paragraph by paragraph.

    A line may break at a space, or between two Chinese characters (never
    before a closing punctuation mark); inline code in backquotes stays whole.
    """
    return "\n".join(_wrap_paragraph(p, width) for p in text.split("\n"))


def _units(paragraph: str) -> list[tuple[bool, str]]:
    """(break allowed before it, text) pieces of ``paragraph``, spaces dropped."""
    units: list[tuple[bool, str]] = []
    space = False
    for part in re.split(r"(`[^`]*`|\s+)", paragraph):
        if not part:
            continue
        if part.isspace():
            space = True
            continue
        if part.startswith("`"):
            if units and not space and not _wide(units[-1][1][-1]):  # "(`x`": keep together
                units[-1] = (units[-1][0], units[-1][1] + part)
            else:
                units.append((True, (" " if space and units else "") + part))
            space = False
            continue
        for char in part:
            previous_wide = bool(units) and _wide(units[-1][1][-1])
            breakable = space or ((_wide(char) or previous_wide) and char not in _NO_LINE_START)
            if units and not breakable:
                units[-1] = (units[-1][0], units[-1][1] + char)
            else:
                units.append((True, (" " if space and units else "") + char))
            space = False
    return units


def _width(text: str) -> int:
    return sum(2 if _wide(c) else 1 for c in text)


def _wrap_paragraph(paragraph: str, width: int) -> str:
    lines: list[str] = []
    line = ""
    for _, unit in _units(paragraph):
        if line and _width(line + unit) > width:
            lines.append(line)
            line = unit.lstrip(" ")
        else:
            line += unit
    lines.append(line)
    return "\n".join(lines)
