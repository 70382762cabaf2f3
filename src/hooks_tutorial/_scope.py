"""Hooks that act only on the passes their owner runs: the library's one hook rule.

Module hooks are registered on the module, so they fire for every forward
pass through it, from any thread. A :class:`Scope` makes them private: a hook
wrapped with :meth:`Scope.wrap` does its work only while the scope is entered
in the *current context* (thread, or asyncio task), and returns ``None``
(changes nothing) for every other pass. Every hook the library registers
follows one rule:

* it is registered at the start of a call (or of a ``with`` block) and
  removed in ``finally`` when that call (block) ends, whatever ends it;
* while it exists it acts only on the passes run inside that call (block),
  in the thread (context) that made it; a forward pass that another thread
  runs through the same model at the same time is neither recorded nor
  changed by it. (What a call does to the model itself, such as the eval
  mode of a CAM call, is shared by every thread.)

Tensor hooks registered on the outputs of such a pass belong to that pass's
graph, so they need no scope. The scope is a :class:`contextvars.ContextVar`:
a new thread starts with an empty context, and ``contextvars.copy_context()``
carries it into a worker on purpose.
"""

from __future__ import annotations

import contextvars
import functools
import weakref
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, ParamSpec, TypeVar

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["Scope", "inert"]

P = ParamSpec("P")
R = TypeVar("R")

_ACTIVE: contextvars.ContextVar[frozenset[Scope]] = contextvars.ContextVar(
    "hooks_tutorial_active_scopes", default=frozenset()
)
#: The scope of every gated hook made by :meth:`Scope.wrap` (for :func:`inert`).
_GATED: weakref.WeakKeyDictionary[Callable[..., object], Scope] = weakref.WeakKeyDictionary()


def inert(hook: Callable[..., object]) -> bool:
    """Whether ``hook`` does nothing here: it is gated by a scope not entered in this context."""
    scope = _GATED.get(hook)
    return scope is not None and not scope.active


class Scope:
    """A token whose wrapped hooks act only while it is entered in the current context.

    Entering nests with other scopes (a CAM call inside a
    ``capture_activations`` block is seen by both). A scope belongs to one
    call: only the context that made it enters it.

    Examples
    --------
    >>> import torch
    >>> from torch import nn
    >>> layer = nn.ReLU()
    >>> seen = []
    >>> scope = Scope()
    >>> handle = layer.register_forward_hook(scope.wrap(lambda m, a, out: seen.append(1)))
    >>> _ = layer(torch.ones(1))  # outside the scope: the hook does nothing
    >>> with scope:
    ...     _ = layer(torch.ones(1))
    >>> handle.remove()
    >>> seen
    [1]
    """

    __slots__ = ("_tokens",)

    def __init__(self) -> None:
        self._tokens: list[contextvars.Token[frozenset[Scope]]] = []

    @property
    def active(self) -> bool:
        """Whether the scope is entered in the current context."""
        return self in _ACTIVE.get()

    def wrap(self, fn: Callable[P, R]) -> Callable[P, R | None]:
        """Return ``fn`` gated by the scope: outside it, the wrapper returns ``None``."""

        @functools.wraps(fn)
        def gated(*args: P.args, **kwargs: P.kwargs) -> R | None:
            if self in _ACTIVE.get():
                return fn(*args, **kwargs)
            return None

        _GATED[gated] = self
        return gated

    def __enter__(self) -> Self:
        self._tokens.append(_ACTIVE.set(_ACTIVE.get() | {self}))
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        _ACTIVE.reset(self._tokens.pop())

    def __repr__(self) -> str:
        return f"Scope(active={self.active})"
