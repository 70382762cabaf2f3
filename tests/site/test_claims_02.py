"""Claims of page 2 (callbacks vs decorators), checked against what the page printed."""

from __future__ import annotations

import ast
import re

from sitecheck import match, outputs, quoted_in_both_languages, run_page

PAGE = "02"


def test_sorted_calls_key_on_every_item() -> None:
    # "here the words come out shortest first"
    words = ast.literal_eval(match(r"(\['hook'.*\])", outputs(PAGE))[1])
    assert [len(w) for w in words] == sorted(len(w) for w in words)
    assert sorted(words) == sorted(["hook", "callback", "decorator", "lambda"])


def test_both_spellings_produce_the_same_thing() -> None:
    # "both spellings below produce the same thing"
    assert "True True" in outputs(PAGE).splitlines()


def test_every_call_is_logged() -> None:
    # "here every call is logged, and the body of ``add`` stays untouched"
    printed = outputs(PAGE)
    assert "calling add(3, 5)" in printed
    assert "add returned 8" in printed


def test_decorator_runs_at_definition_time() -> None:
    # "the decorator's line comes first, then the call's"
    printed = outputs(PAGE)
    decorating = printed.index("decorating greet (this runs at definition time)")
    assert decorating < printed.index("definition done; now calling:") < printed.index("hello, Ada")


def test_callback_runs_only_for_values_that_pass() -> None:
    # "the callback only runs for values that pass a check"
    lines = [line for line in outputs(PAGE).splitlines() if line]
    start = lines.index("hello, Ada") + 1
    assert lines[start : start + 3] == ["3", "4", "5"]


def test_wrapper_skips_negative_input() -> None:
    # "it may skip the original function entirely. This one refuses negative arguments."
    printed = outputs(PAGE)
    assert "4.0\nskipping square_root(-4): negative input\nNone" in printed


def test_wraps_keeps_name_and_docstring() -> None:
    # "the decorated function loses its name and docstring ... ``functools.wraps``
    # copies them over and keeps a reference to the original in ``__wrapped__``"
    printed = outputs(PAGE)
    assert "wrapper | None" in printed
    assert "divide | Divide a by b." in printed
    assert "\n0.25\n" in printed


def test_cache_runs_the_body_once_per_distinct_argument() -> None:
    # "five calls with two distinct arguments run it twice"
    printed = outputs(PAGE)
    assert "[4, 9, 4, 4, 9]" in printed
    assert "body ran 2 times" in printed


def test_registry_and_emit() -> None:
    # "stores the function under that event name"; the loop "does not know which callbacks exist"
    printed = outputs(PAGE)
    assert "{'epoch_end': ['print_loss', 'warn_if_high']}" in printed
    assert "epoch 3: loss 0.70" in printed
    assert "epoch 3: loss is still above" not in printed


def test_register_forward_hook_returns_a_removable_handle() -> None:
    # "it returns a ``torch.utils.hooks.RemovableHandle``"; the hook is counted,
    # then removed; "the hook runs once inside the block, and no hook is left after it"
    printed = outputs(PAGE)
    assert "torch.utils.hooks.RemovableHandle" in printed
    counts = [int(n) for n in re.findall(r"hooks on the layer: (\d+)", printed)]
    assert counts == [1, 0, 0]
    assert printed.count("Linear -> output shape") == 2


def test_solutions_state_their_answers() -> None:
    lines = run_page(PAGE).solutions.splitlines()
    # "After three calls, ``double.calls`` is 3, and the decorated function is
    # still called ``double``"
    assert lines[0] == "double 3"
    # "the ``emit`` call prints only ``epoch 4: loss 1.50``: that loss is above the
    # threshold, but ``warn_if_high`` is no longer in the registry"
    assert lines[1] == "epoch 4: loss 1.50"
    # "``note_epoch`` runs for epoch 5 and not for epoch 6, after ``handle.remove()``;
    # ... the registry holds ``['print_loss']`` again"
    assert lines[2:] == [
        "epoch 5: loss 0.50",
        "  note_epoch saw epoch 5",
        "epoch 6: loss 0.40",
        "['print_loss']",
    ]
    quoted_in_both_languages(PAGE, "epoch 4: loss 1.50", "['print_loss']")
