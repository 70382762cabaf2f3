"""What keeps a check safe, whatever the learner's code does: a hook guard and a step budget.

:class:`HookGuard` writes down every hook that exists before a check (on the
models the check makes, on the models and optimizers of the learner's
namespace, and PyTorch's global hooks), and afterwards removes the hooks that
were added and not removed, and says which. :class:`StepBudget` stops the
learner's code after a number of steps or seconds, so an endless ``while``
loop ends with a message instead of a frozen notebook. Neither uses a thread.
"""

from __future__ import annotations

import sys
import time
import types
from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import torch
from torch import nn
from torch.nn.modules import module as module_globals
from torch.optim import optimizer as optimizer_globals

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["HookGuard", "Leftover", "OutOfSteps", "StepBudget", "watch"]

# the folders whose code is not the learner's: PyTorch, this library, Python itself
_NOT_LEARNER = tuple(
    str(Path(p).resolve())
    for p in (
        Path(torch.__file__).parent,
        Path(__file__).parents[1],
        Path(types.__file__).parent,  # the standard library
    )
)


def is_learner_code(filename: str) -> bool:
    """Whether code from ``filename`` is the learner's (not PyTorch's, ours or Python's)."""
    if filename.startswith("<frozen"):
        return False
    try:
        resolved = str(Path(filename).resolve())
    except (OSError, ValueError):  # "<stdin>", "<string>" and the like are the learner's
        return True
    return not resolved.startswith(_NOT_LEARNER)


# -- the hook guard ------------------------------------------------------------------

# One place where hooks live: a dictionary of hook functions by handle id, the
# dictionaries that PyTorch keeps beside it for the same ids (``with_kwargs=True``,
# ``always_call=True``), where it is ("model.conv", "the check's Linear") and which
# kind of hook it holds (a key of KIND_NAMES in __init__.py).
_Place = tuple[MutableMapping[int, Any], tuple[MutableMapping[int, Any], ...], str, str]


def _module_places(module: nn.Module, where: str) -> Iterator[_Place]:
    yield (
        module._forward_hooks,
        (module._forward_hooks_with_kwargs, module._forward_hooks_always_called),
        where,
        "forward",
    )
    yield module._forward_pre_hooks, (module._forward_pre_hooks_with_kwargs,), where, "forward_pre"
    yield module._backward_hooks, (), where, "backward"
    yield module._backward_pre_hooks, (), where, "backward_pre"
    for name, parameter in module.named_parameters(recurse=False):
        for hooks in (
            parameter._backward_hooks,
            getattr(parameter, "_post_accumulate_grad_hooks", None),
        ):
            if hooks is not None:
                yield hooks, (), f"{where}.{name}", "tensor"


def _global_places() -> Iterator[_Place]:
    yield (
        module_globals._global_forward_hooks,
        (
            module_globals._global_forward_hooks_with_kwargs,
            module_globals._global_forward_hooks_always_called,
        ),
        "",
        "global_forward",
    )
    yield module_globals._global_forward_pre_hooks, (), "", "global_forward_pre"
    yield module_globals._global_backward_hooks, (), "", "global_backward"
    yield module_globals._global_backward_pre_hooks, (), "", "global_backward_pre"
    yield optimizer_globals._global_optimizer_pre_hooks, (), "", "global_step_pre"
    yield optimizer_globals._global_optimizer_post_hooks, (), "", "global_step_post"
    # called when a module registers a parameter, buffer or submodule (page 32b)
    yield (
        module_globals._global_parameter_registration_hooks,
        (),
        "",
        "global_parameter_registration",
    )
    yield module_globals._global_buffer_registration_hooks, (), "", "global_buffer_registration"
    yield module_globals._global_module_registration_hooks, (), "", "global_module_registration"


def _optimizer_places(optimizer: torch.optim.Optimizer, where: str) -> Iterator[_Place]:
    yield optimizer._optimizer_step_pre_hooks, (), where, "step_pre"
    yield optimizer._optimizer_step_post_hooks, (), where, "step_post"


def namespace_objects(
    namespace: dict[str, Any],
) -> list[tuple[str, nn.Module | torch.optim.Optimizer]]:
    """The models and optimizers a namespace holds, as values or inside a dict, list or tuple."""
    found: list[tuple[str, nn.Module | torch.optim.Optimizer]] = []
    seen: set[int] = set()

    def add(label: str, value: object) -> None:
        if isinstance(value, (nn.Module, torch.optim.Optimizer)) and id(value) not in seen:
            seen.add(id(value))
            found.append((label, value))

    for name, value in list(namespace.items()):
        if name.startswith("_"):
            continue
        add(name, value)
        if isinstance(value, dict):
            for key, item in list(value.items())[:100]:
                add(f"{name}[{key!r}]", item)
        elif isinstance(value, (list, tuple)):
            for index, item in enumerate(value[:100]):
                add(f"{name}[{index}]", item)
    return found


@dataclass(frozen=True)
class Leftover:
    """Hooks of one kind that the learner's code left in one place (and the guard removed)."""

    where: str  # "model.conv"; "" for a global hook
    kind: str  # "forward", "global_forward_pre", "tensor", ...
    count: int


class HookGuard:
    """Remove, after a check, every hook that its run added and did not remove.

    On entry it writes down the hooks that exist in the places it watches:
    PyTorch's global hooks, and the models and optimizers of ``namespace``
    (the learner's); the check adds its own models with :func:`watch`. On
    exit it compares: each hook that was not there before is removed, and
    :attr:`leftovers` says where they were. Hooks that were there before are
    left alone.

    Parameters
    ----------
    namespace : dict
        The learner's global variables (where ``check`` was called).
    """

    def __init__(self, namespace: dict[str, Any]) -> None:
        self._objects = namespace_objects(namespace)
        self._watched: list[nn.Module] = []
        self._before: set[tuple[int, int]] = set()  # (id of a hooks dict, handle id)
        self.leftovers: list[Leftover] = []

    def _places(self) -> Iterator[_Place]:
        yield from _global_places()
        for label, thing in self._objects:
            if isinstance(thing, nn.Module):
                for name, module in thing.named_modules():
                    yield from _module_places(module, f"{label}.{name}" if name else label)
            else:
                yield from _optimizer_places(thing, label)
        for model in self._watched:
            label = f"check:{type(model).__name__}"  # a model the check made
            for name, module in model.named_modules():
                yield from _module_places(module, f"{label}.{name}" if name else label)

    def __enter__(self) -> Self:
        self._before = {(id(hooks), key) for hooks, _, _, _ in self._places() for key in hooks}
        _active.append(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        _active.remove(self)
        counts: dict[tuple[str, str], int] = {}
        seen: set[int] = set()
        for hooks, extras, where, kind in self._places():
            if id(hooks) in seen:  # a module reached twice (shared, or also in the namespace)
                continue
            seen.add(id(hooks))
            for key in [k for k in hooks if (id(hooks), k) not in self._before]:
                del hooks[key]
                for extra in extras:
                    extra.pop(key, None)
                counts[where, kind] = counts.get((where, kind), 0) + 1
        self.leftovers = [Leftover(where, kind, n) for (where, kind), n in counts.items()]


_active: list[HookGuard] = []  # the guard of the running check (a list: checks may nest)


Model = TypeVar("Model", bound=nn.Module)


def watch(model: Model) -> Model:
    """Have the running check's guard watch ``model`` (a model the check made); return it."""
    if _active:
        _active[-1]._watched.append(model)
    return model


# -- the step budget --------------------------------------------------------------


class OutOfSteps(BaseException):
    """Raised inside the learner's code when it ran too long.

    A ``BaseException``, like ``KeyboardInterrupt``: an ``except Exception`` in
    the learner's loop does not catch it.
    """


class StepBudget:
    """Stop the learner's code after ``max_steps`` steps or ``max_seconds`` seconds.

    Python calls a trace function (:func:`sys.settrace`) as code runs; this
    one asks for an event at each bytecode instruction (a *step*) of the
    learner's own code, not of PyTorch's, counts them, and raises
    :class:`OutOfSteps` from the step that goes over the budget. Steps, not
    lines: ``while True: pass`` runs one line forever, and Python reports a
    line only when it changes. A single long PyTorch call cannot be
    interrupted this way, but a loop can: each turn takes a step of the
    learner's code. The previous trace function (a debugger's, a coverage
    tool's) is put back afterwards.

    Parameters
    ----------
    max_steps : int
        Steps (bytecode instructions) of the learner's code allowed to run.
    max_seconds : float
        Seconds allowed, measured at each step of the learner's code.
    """

    def __init__(self, max_steps: int, max_seconds: float) -> None:
        self.max_steps = max_steps
        self.max_seconds = max_seconds
        self.steps = 0
        self.over: str | None = None  # "steps" or "seconds" once out of budget
        self._deadline = 0.0
        self._previous: Callable[..., Any] | None = None
        self._learner_files: dict[str, bool] = {}

    def _on_call(
        self, frame: types.FrameType, event: str, arg: object
    ) -> Callable[..., Any] | None:
        del event, arg
        filename = frame.f_code.co_filename
        mine = self._learner_files.get(filename)
        if mine is None:
            mine = self._learner_files[filename] = is_learner_code(filename)
        if not mine:
            return None
        frame.f_trace_opcodes = True
        return self._on_step

    def _on_step(
        self, frame: types.FrameType, event: str, arg: object
    ) -> Callable[..., Any] | None:
        del frame, arg
        if event == "opcode":
            self.steps += 1
            if self.steps > self.max_steps:
                self.over = "steps"
            elif self.steps % 1000 == 0 and time.monotonic() > self._deadline:
                self.over = "seconds"
            if self.over is not None:
                raise OutOfSteps(self.over)
        return self._on_step

    def __enter__(self) -> Self:
        self._deadline = time.monotonic() + self.max_seconds
        self._previous = sys.gettrace()
        sys.settrace(self._on_call)
        return self

    def __exit__(self, *exc_info: object) -> None:
        sys.settrace(self._previous)
