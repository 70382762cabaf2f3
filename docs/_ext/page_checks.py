"""Checks that the tutorial pages run on themselves, in hidden cells, during the build.

The job: a page ends with ``assert_no_hooks_left(globals())`` inside a
sphinx-gallery ignore block (``# sphinx_gallery_start_ignore`` ...
``# sphinx_gallery_end_ignore``), so the build fails when the page, its
solutions included, leaves a hook on any model or optimizer it made (never
negotiable 7). The ignore block is removed from the page, the notebooks and
the ``.py`` downloads (``solutions.py``), so readers never see this import;
``conf.py`` puts this folder on ``sys.path`` for the build.
No package does this: ``hooks_tutorial.count_hooks`` counts one model's hooks;
this walks everything a page's namespace reaches.

The exercises' checks are checked the same way: beside each solution, a
hidden ``assert_check(exercise, solution, wrong, problem)`` runs
``hooks_tutorial.exercises``'s check on the page's solution (it must pass) and
on a wrong answer (it must fail with the message named ``problem``), in both
languages; ``assert_exercises_checked(globals())`` at the end of the page fails
when one of the page's checked exercises was not run that way. So neither the
checks nor the solutions can drift apart unnoticed.
"""

from __future__ import annotations

import inspect
import re
import types
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch
from torch import nn

import hooks_tutorial as ht

# what hooks_found returns: object key -> (where it was found, hooks by kind)
HookSnapshot = dict[int | str, tuple[str, dict[str, int]]]


def _module_hooks(module: nn.Module) -> dict[str, int]:
    """The module's own hooks by kind (``count_hooks``'s kinds), pruning hooks apart.

    ``torch.nn.utils.prune`` keeps its mask up to date with a forward pre-hook
    that stays on the module on purpose (page 28), so it is its own kind,
    ``pruning``, not a forward pre-hook.
    """
    from torch.nn.utils import prune  # noqa: PLC0415

    counts = ht.count_hooks(module).get("")
    found = dict(counts._asdict()) if counts is not None else {}
    pruning = sum(
        isinstance(h, prune.BasePruningMethod) for h in module._forward_pre_hooks.values()
    )
    if pruning:
        found["forward_pre"] -= pruning
        found["pruning"] = pruning
    return {kind: n for kind, n in found.items() if n}


def hooks_found(namespace: dict[str, Any]) -> HookSnapshot:
    """The hooks on every module and optimizer a page's namespace reaches, and global ones.

    The walk follows the namespace's values, the items of dicts, lists, tuples
    and sets, and the attributes of plain objects (a CAM's model), three levels
    deep; a module's submodules are all visited. State-dict hooks, which page 31
    leaves on purpose, are not among ``count_hooks``'s kinds.
    """
    found: HookSnapshot = {}
    seen: set[int] = set()

    def visit(label: str, value: Any, depth: int) -> None:
        if id(value) in seen or isinstance(value, (type, types.ModuleType, torch.Tensor)):
            return
        seen.add(id(value))
        if isinstance(value, nn.Module):
            for name, module in value.named_modules():
                hooks = _module_hooks(module)
                if hooks and id(module) not in found:
                    found[id(module)] = (f"{label}.{name}" if name else label, hooks)
        elif isinstance(value, torch.optim.Optimizer):
            hooks = {
                "step_pre": len(getattr(value, "_optimizer_step_pre_hooks", {})),
                "step_post": len(getattr(value, "_optimizer_step_post_hooks", {})),
            }
            if any(hooks.values()):
                found[id(value)] = (label, {k: n for k, n in hooks.items() if n})
        elif depth < 3:
            if isinstance(value, dict):
                items = [(f"{label}[{k!r}]", v) for k, v in value.items()]
            elif isinstance(value, (list, tuple, set, frozenset)):
                items = [(f"{label}[{i}]", v) for i, v in enumerate(value)]
            elif hasattr(value, "__dict__"):
                items = [(f"{label}.{k}", v) for k, v in vars(value).items()]
            else:
                items = []
            for item_label, item in items:
                visit(item_label, item, depth + 1)

    for name, value in namespace.items():
        if not name.startswith("__"):
            visit(name, value, 0)
    from torch.nn.modules import module as module_globals  # noqa: PLC0415
    from torch.optim import optimizer as optimizer_globals  # noqa: PLC0415

    global_hooks = {
        "forward": len(module_globals._global_forward_hooks),
        "forward_pre": len(module_globals._global_forward_pre_hooks),
        "backward": len(module_globals._global_backward_hooks),
        "backward_pre": len(module_globals._global_backward_pre_hooks),
        "step_pre": len(optimizer_globals._global_optimizer_pre_hooks),
        "step_post": len(optimizer_globals._global_optimizer_post_hooks),
    }
    if any(global_hooks.values()):
        found["global"] = ("global hooks", {k: n for k, n in global_hooks.items() if n})
    return found


def assert_no_hooks_left(namespace: dict[str, Any], *, kept: Iterable[str] = ()) -> None:
    """Fail when a module or optimizer the page reaches still holds a hook.

    ``kept`` names the hooks a page leaves on purpose, as ``"<where>: <kind>"``
    (``"pruned.conv: pruning"``); pruning masks are always allowed.
    """
    allowed = set(kept)
    left = [
        f"{where}: {kind} ({n})"
        for where, hooks in hooks_found(namespace).values()
        for kind, n in hooks.items()
        if kind != "pruning" and f"{where}: {kind}" not in allowed
    ]
    assert not left, f"the page left hooks behind: {left}"


# -- the exercises' checks -----------------------------------------------------------

_checked: set[str] = set()  # exercises whose check assert_check ran, this build


def assert_check(exercise: str, solution: object, wrong: object, problem: str) -> None:
    """The check of ``exercise`` passes ``solution`` and fails ``wrong`` with ``problem``.

    In both languages: each run of a check writes its message in one, and a
    message missing in either would raise here.
    """
    for language in ("en", "zh_CN"):
        right = ht.exercises.run_check(exercise, solution, language=language)
        assert right.passed, f"the page's solution fails its own check: {right.message}"
        found = ht.exercises.run_check(exercise, wrong, language=language)
        assert (found.passed, found.problem) == (False, problem), (
            f"the wrong answer should fail with {problem!r}: {found.message}"
        )
    _checked.add(exercise)


def assert_exercises_checked() -> None:
    """Every checked exercise of the calling page went through :func:`assert_check`.

    The page is the file of the code that calls this (sphinx-gallery runs a
    page's code compiled with its file name).
    """
    caller = inspect.currentframe()
    filename = caller.f_back.f_code.co_filename if caller and caller.f_back else ""
    page = re.match(r"plot_(\d+[a-z]?)_", Path(filename).name)
    assert page is not None, f"not called from a page: {filename}"
    ours = {
        name
        for name, kind in ht.exercises.exercise_kinds().items()
        if kind == "code" and name.startswith(f"{page[1]}.")
    }
    missing = sorted(ours - _checked)
    assert not missing, f"no assert_check(...) ran for exercise(s) {missing} on this page"
