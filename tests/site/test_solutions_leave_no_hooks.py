"""The exercises' solutions leave no hook behind (never negotiable 7).

For every page (:func:`run_page` runs the page, then its solutions), the
hooks found on the modules and optimizers the page's namespace reaches right
after the solutions ran are compared with those found after the page ran and
before the solutions: a solution may remove a hook the page left, but must not
add one that stays.

What a page leaves on purpose is excluded. Hooks the page itself left are in
the count taken before the solutions. ``torch.nn.utils.prune`` keeps a forward
pre-hook on each pruned module so that the mask is applied at every call;
page 28's first two solutions prune new layers on purpose, so pruning hooks
are counted apart and not held against a solution. Page 31's solutions keep
state-dict hooks on purpose (they are what the exercises build), and
``count_hooks`` does not count that kind. Pages 23 and 30 are not run here:
page 23 needs the pretrained photo models and page 30 starts worker processes.
"""

from __future__ import annotations

import pytest
from sitecheck import EXAMPLES, run_page

# pages 23 (pretrained photo models) and 30 (DDP worker processes): their claim tests
PAGES = sorted(
    p.stem.split("_")[1] for p in EXAMPLES.glob("*/plot_*.py") if p.stem[5:7] not in {"23", "30"}
)

KEPT_ON_PURPOSE = {"pruning"}  # prune's mask hook, see the module docstring


@pytest.mark.parametrize("page", PAGES)
def test_solutions_leave_no_hooks(page: str) -> None:
    # Never negotiable 7: "no hook is ever left on a user's model" (also by the solutions)
    run = run_page(page)
    left = []
    for key, (where, _obj, after) in run.hooks_after.items():
        before = run.hooks_before.get(key, ("", None, {}))[2]
        for kind, n in after.items():
            if kind not in KEPT_ON_PURPOSE and n > before.get(kind, 0):
                left.append(f"{where}: {kind} {before.get(kind, 0)} -> {n}")
    assert not left, f"page {page}'s solutions left hooks: {left}"
