"""Where the checks are kept: one function per exercise, with its messages beside it.

A check is a plain function that receives the learner's answer. It runs the
answer on small cases; when something is wrong it raises :class:`Problem`
with the name of a message and the values that message shows; when all is
well it returns the values of its ``passed`` message. The messages are
:class:`~hooks_tutorial.exercises._language.Text` pairs (English, Chinese)
given to :func:`exercise`, right above the check they belong to.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ._language import Text

__all__ = ["CHECKS", "MESSAGES", "PROSE", "Problem", "exercise", "exercise_id", "prose"]

Values = dict[str, object]
Check = Callable[[Any], Values]

CHECKS: dict[str, Check] = {}
MESSAGES: dict[str, dict[str, Text]] = {}  # exercise -> message name -> text
PROSE: set[str] = set()  # exercises answered in words: no check


class Problem(Exception):  # a finding of a check, raised to stop it
    """What a check found wrong: a message name and the values it shows.

    Parameters
    ----------
    name : str
        The message's name, a keyword given to :func:`exercise` for that
        exercise (or one of the messages every check shares).
    **values
        The message's ``{fields}``.
    """

    def __init__(self, name: str, /, **values: object) -> None:
        super().__init__(name)
        self.name = name
        self.values = values


def exercise_id(exercise: str) -> str:
    """``"5.1"`` -> ``"05.1"``, ``"27B.2"`` -> ``"27b.2"``: page number, a dot, exercise number.

    Raises
    ------
    ValueError
        If ``exercise`` does not look like ``"05.1"``.
    """
    found = re.fullmatch(r"\s*(\d+)([a-zA-Z]?)\.(\d+)\s*", str(exercise))
    if found is None:
        msg = (
            f"an exercise is named by its page and its number, like '05.1' (page 5, "
            f"exercise 1); got {exercise!r}"
        )
        raise ValueError(msg)
    page, letter, number = found.groups()
    return f"{int(page):02d}{letter.lower()}.{int(number)}"


def exercise(name: str, **messages: Text) -> Callable[[Check], Check]:
    """Register the decorated function as the check of exercise ``name``.

    Parameters
    ----------
    name : str
        ``"05.1"``: page 5, exercise 1.
    **messages : Text
        The check's messages by name; ``passed`` is required.
    """
    if "passed" not in messages:
        msg = f"exercise {name}: a check needs a 'passed' message"
        raise ValueError(msg)

    def register(check: Check) -> Check:
        CHECKS[name] = check
        MESSAGES[name] = messages
        return check

    return register


def prose(*names: str) -> None:
    """Register exercises that ask why: they are answered in words, without a check."""
    PROSE.update(names)
