"""Small tools the checks share: run learner code and see what it printed or returned."""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from ._registry import Problem

__all__ = [
    "close_to_a_printed_number",
    "integers_in",
    "numbers_in",
    "printed_by",
    "require_callable",
    "returned_type",
    "spy_forward_hook",
]


def require_callable(answer: object) -> Callable[..., Any]:
    """``answer`` if it can be called, else the shared ``not_callable`` problem."""
    if not callable(answer):
        raise Problem("not_callable", got=type(answer).__name__)
    return answer


def printed_by(function: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, str]:
    """Call ``function`` and return what it returned and what it printed."""
    with contextlib.redirect_stdout(io.StringIO()) as out:
        result = function(*args, **kwargs)
    return result, out.getvalue()


def returned_type(value: object) -> str:
    """The type name a message shows for a returned value: ``Tensor``, ``tuple``..."""
    return "Tensor" if isinstance(value, torch.Tensor) else type(value).__name__


class spy_forward_hook:  # used like a function: spy_forward_hook(hook)
    """Wrap a learner's forward hook, recording what each call returned and printed.

    Attributes
    ----------
    calls : list of (module, output, returned, printed)
    """

    def __init__(self, hook: Callable[..., Any]) -> None:
        self.hook = hook
        self.calls: list[tuple[nn.Module, Any, Any, str]] = []

    def __call__(self, module: nn.Module, args: tuple[Any, ...], output: Any) -> Any:
        returned, printed = printed_by(self.hook, module, args, output)
        self.calls.append((module, output, returned, printed))
        return returned


_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.(\d+))?(?:[eE][-+]?\d+)?")


def numbers_in(text: str) -> list[float]:
    """The numbers written in ``text``, in order (``16``, ``16.0`` and ``1.6e1`` are all 16)."""
    return [float(m.group(0)) for m in _NUMBER.finditer(text)]


def integers_in(text: str) -> list[int]:
    """The whole numbers written in ``text`` (not the digits of ``0.85`` or of ``conv1``)."""
    return [int(m.group(0)) for m in _NUMBER.finditer(text) if re.fullmatch(r"-?\d+", m.group(0))]


def close_to_a_printed_number(value: float, text: str) -> bool:
    """Whether ``text`` shows ``value`` at the precision it was printed with.

    ``0.1234`` printed as ``0.123`` (three decimals) or ``tensor(0.1234)``
    counts; the tolerance is half a unit of the last printed decimal.
    """
    for found in _NUMBER.finditer(text):
        number = float(found.group(0))
        decimals = len(found.group(1) or "")
        exponent = re.search(r"[eE]([-+]?\d+)", found.group(0))
        unit = 10.0 ** (-decimals + (int(exponent.group(1)) if exponent else 0))
        if abs(number - value) <= unit / 2 + 1e-6 * abs(value):
            return True
    return False
