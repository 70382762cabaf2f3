"""Helpers for the checks on the built site (``nox -s docs`` runs them).

``nox -s docs`` runs them after building the site; without a built site they
fail at once, naming that command (``nox -s tests`` does not collect them).

Claims: each tutorial page's prose is checked against what the page printed in
``test_claims_<page>.py`` (one file per page; ``plot_05`` -> ``test_claims_05.py``).
A claim test reads the printed output with :func:`outputs`, parses numbers with
:func:`number` / :func:`numbers`, and asserts what the sentence says; where the
sentence quotes a number, :func:`prose` checks that both languages quote it.

Solutions: :func:`run_page` runs a page's script and then the code of its
"Solutions" dropdown (which the build shows but does not run) in the same
namespace, and records what the solutions printed and the hooks before and
after them (``test_answers.py``, ``test_solutions_leave_no_hooks.py``).
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import linecache
import re
import textwrap
import types
import warnings
from dataclasses import dataclass, field
from html import unescape
from pathlib import Path
from typing import Any

import torch
from torch import nn

import hooks_tutorial as ht

HTML = Path(__file__).parents[2] / "docs" / "_build" / "html"
EXAMPLES = Path(__file__).parents[2] / "examples"
LANGUAGES = ("en", "zh_CN")


def built() -> bool:
    return (HTML / "en" / "index.html").is_file() and (HTML / "zh_CN" / "index.html").is_file()


def page_path(page: str) -> str:
    """``"15"`` or ``"plot_15_train_cnn"`` -> ``"auto_examples/04_grad_cam/plot_15_train_cnn"``."""
    stem = page if page.startswith("plot_") else None
    for script in sorted(EXAMPLES.glob("*/plot_*.py")):
        if script.stem == stem or script.stem.startswith(f"plot_{page}_"):
            return f"auto_examples/{script.parent.name}/{script.stem}"
    if (HTML / "en" / f"{page}.html").is_file():
        return page
    msg = f"no tutorial page {page!r}"
    raise LookupError(msg)


def html(page: str, language: str = "en") -> str:
    return (HTML / language / f"{page_path(page)}.html").read_text(encoding="utf-8")


def outputs(page: str, language: str = "en") -> str:
    """The text printed by the page's code (sphinx-gallery output blocks), in order."""
    blocks = re.findall(
        r'<div class="sphx-glr-script-out[^"]*">(.*?)</pre>', html(page, language), flags=re.DOTALL
    )
    return "\n".join(unescape(re.sub(r"<[^>]+>", "", b)) for b in blocks)


def prose(page: str, language: str = "en") -> str:
    """The page's text without its code and output blocks (whitespace collapsed)."""
    raw = html(page, language)
    raw = raw.split('<article class="bd-article">', 1)[-1].split("</article>", 1)[0]
    raw = re.sub(r'<div class="highlight[^"]*">.*?</pre></div>', " ", raw, flags=re.DOTALL)
    raw = re.sub(r"<(script|style)\b.*?</\1>", " ", raw, flags=re.DOTALL)
    text = unescape(re.sub(r"<[^>]+>", " ", raw))
    return re.sub(r"\s+", " ", text)


def search_index(language: str = "en") -> dict[str, Any]:
    """The site's search index (``searchindex.js``) of one language, as a dict."""
    text = (HTML / language / "searchindex.js").read_text(encoding="utf-8")
    return json.loads(text[text.index("(") + 1 : text.rindex(")")])


def match(pattern: str, text: str) -> re.Match[str]:
    found = re.search(pattern, text)
    assert found is not None, f"no output matches {pattern!r}"
    return found


def number(pattern: str, text: str) -> float:
    """The first group of ``pattern`` in ``text`` as a float (fails if absent)."""
    return float(match(pattern, text)[1])


def numbers(pattern: str, text: str) -> list[float]:
    """All groups of the first match of ``pattern`` as floats."""
    return [float(v) for v in match(pattern, text).groups()]


def quoted_in_both_languages(page: str, *values: str) -> None:
    """Each value (as printed) appears in the prose of both the English and Chinese page."""
    for language in LANGUAGES:
        text = prose(page, language)
        for value in values:
            assert value in text, f"{value!r} not quoted in the {language} prose of {page}"


# what hooks_found returns: object key -> (where it was found, the object, hooks by kind)
HookSnapshot = dict[int | str, tuple[str, Any, dict[str, int]]]


@dataclass(frozen=True)
class PageRun:
    namespace: dict[str, Any]  # the page's globals after the solutions ran
    solutions: str  # what the solutions printed
    hooks_before: HookSnapshot = field(default_factory=dict)  # after the page, before solutions
    hooks_after: HookSnapshot = field(default_factory=dict)  # right after the solutions


def _module_hooks(module: nn.Module) -> dict[str, int]:
    """The module's own hooks by kind (``count_hooks``'s kinds), pruning hooks apart.

    ``torch.nn.utils.prune`` keeps its mask up to date with a forward pre-hook
    that stays on the module on purpose (page 28), so it is counted as its own
    kind, ``pruning``, not as a forward pre-hook.
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

    Modules are counted with ``ht.count_hooks`` (its kinds: forward, forward
    pre-, backward, backward pre- and parameter hooks; state-dict hooks, which
    page 31 leaves on purpose, are not among them). The walk follows the
    namespace's values, the items of dicts, lists, tuples and sets, and the
    attributes of plain objects (a CAM's model), three levels deep; a module's
    submodules are all visited. Only objects with at least one hook are listed.
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
                    found[id(module)] = (f"{label}.{name}" if name else label, module, hooks)
        elif isinstance(value, torch.optim.Optimizer):
            hooks = {
                "step_pre": len(getattr(value, "_optimizer_step_pre_hooks", {})),
                "step_post": len(getattr(value, "_optimizer_step_post_hooks", {})),
            }
            if any(hooks.values()):
                found[id(value)] = (label, value, {k: n for k, n in hooks.items() if n})
        elif depth < 3:
            if isinstance(value, dict):
                items = [(f"{label}[{k!r}]", v) for k, v in value.items()]
            elif isinstance(value, (list, tuple, set, frozenset)):
                items = [(f"{label}[{i}]", v) for i, v in enumerate(value)]
            elif hasattr(value, "__dict__"):  # a CAM object keeps its model in an attribute
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
        found["global"] = ("global hooks", None, {k: n for k, n in global_hooks.items() if n})
    return found


def solutions_code(source: str) -> str:
    """The code block of the page's ``.. dropdown:: Solutions`` (comment lines)."""
    block = source.split(".. dropdown:: Solutions", 1)[1].split(".. code-block:: python", 1)[1]
    lines: list[str] = []
    indent = None  # the code's indentation; a less indented comment line is prose again
    for line in block.splitlines()[1:]:
        if not line.startswith("#"):
            break
        text = line[1:]
        if text.strip():
            depth = len(text) - len(text.lstrip())
            if indent is None:
                indent = depth
            elif depth < indent:
                break  # the explanation that follows the code block
        lines.append(text)
    return textwrap.dedent("\n".join(lines))


@functools.cache
def run_page(page: str) -> PageRun:
    """Run the page's script, then its solutions in the same namespace."""
    import matplotlib as mpl  # noqa: PLC0415  (only the tests that run a page need it)

    mpl.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    (script,) = EXAMPLES.glob(f"*/plot_{page}_*.py")
    source = script.read_text(encoding="utf-8")
    namespace: dict[str, Any] = {"__name__": "__main__", "__file__": str(script)}
    printed = io.StringIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # plt.show() under Agg, torch's own warnings
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(source, str(script), "exec"), namespace)  # noqa: S102 (our own page)
        hooks_before = hooks_found(namespace)
        with contextlib.redirect_stdout(printed):
            code, label = solutions_code(source), f"{script.name} solutions"
            # code that reads its own source back (nnsight's trace, page 37) finds it here
            lines = code.splitlines(keepends=True)
            linecache.cache[label] = (len(code), None, lines, label)
            solutions = compile(code, label, "exec")
            exec(solutions, namespace)  # noqa: S102 (our own page's solutions)
        hooks_after = hooks_found(namespace)
    plt.close("all")
    return PageRun(namespace, printed.getvalue(), hooks_before, hooks_after)
