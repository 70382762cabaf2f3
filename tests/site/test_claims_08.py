"""Claims of page 8 (handles and leaks), checked against what the page printed."""

from __future__ import annotations

import re

from sitecheck import match, number, outputs, run_page

PAGE = "08"


def test_leaky_helper_piles_up_hooks() -> None:
    # "Every call adds one hook, and every hook runs on every later forward pass
    # (call 5 ran five hooks)"
    printed = outputs(PAGE)
    rows = re.findall(r"call (\d): hooks on model\.conv = (\d+), hooks that ran = (\d+)", printed)
    assert [tuple(int(v) for v in row) for row in rows] == [(n, n, n) for n in range(1, 6)]
    # "including ordinary ones that have nothing to do with ``get_activation``"
    assert number(r"hooks that ran during a plain model\(x\): (\d+)", printed) == 5


def test_remove_is_idempotent() -> None:
    # "Its ``remove()`` takes the hook off; a second ``remove()`` does nothing."
    printed = outputs(PAGE)
    assert "hooks after register: 1" in printed
    assert "hooks after remove(): 0" in printed
    assert "hooks after a second remove(): 0" in printed
    # "The fixed helper removes its hook in a ``finally`` block"
    assert "hooks after 5 calls: 0" in printed


def test_handles_as_context_managers() -> None:
    # "the hook is removed when the block ends, whichever way it ends"
    printed = outputs(PAGE)
    assert "inside the with block: 1 hook" in printed
    assert "after the with block: 0 hooks" in printed
    after_error = printed.split("RuntimeError: ", 1)[1]
    assert match(r"hooks left: (\d+)", after_error)[1] == "0"


def test_hook_group() -> None:
    # "owns every handle, and removes them all when its ``with`` block ends"
    printed = outputs(PAGE)
    assert printed.count("['forward', 'backward']") == 2
    assert "handles in the group: 2" in printed
    assert "handles after the block: 0" in printed


def test_count_hooks_finds_the_leak() -> None:
    # "On the leaky model from the top of the page" (the five hooks on conv);
    # "On the clean model, the report is empty"
    printed = outputs(PAGE)
    row = match(r"\nconv\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)", printed).groups()
    assert row == ("5", "0", "0", "0", "0", "5")
    assert "no hooks\nTrue" in printed


def test_capture_activations() -> None:
    # "it stores the latest detached output of each, and removes its hooks"
    printed = outputs(PAGE)
    assert "relu output equals conv output clamped at 0: True" in printed
    # "an error that lists the close names, and no hook is left behind"
    assert "did you mean 'relu'?" in match(r"ValueError: (.*)", printed)[1]
    assert re.findall(r"hooks left: (\d+)", printed) == ["0", "0", "0"]


def test_remove_all_hooks_rescues_the_leaky_model() -> None:
    # "returns how many hooks it removed: the five of the leak"
    printed = outputs(PAGE)
    assert number(r"removed: (\d+)", printed) == 5
    assert printed.split("removed: 5", 1)[1].lstrip().startswith("no hooks")


def test_undetached_outputs_keep_inputs_alive() -> None:
    # "whether the inputs still exist": stored outputs keep them, detached ones do not
    printed = outputs(PAGE)
    assert "stored output:           [True, True, True]" in printed
    assert "stored output.detach():  [False, False, False]" in printed


def test_solutions_state_their_answers() -> None:
    lines = run_page(PAGE).solutions.splitlines()
    # 1. "No hook is left after 5 calls (``True``)"; 2. "The error reaches the ``except``
    # clause (``caught: something went wrong``) and no hook is left (``True``)";
    # 3. "It prints ``[False, False, False]``: the inputs are freed."
    assert lines == [
        "no hook left after 5 calls: True",
        "caught: something went wrong",
        "no hook left after the error: True",
        "[False, False, False]",
    ]
