"""Claims of page 1 (callbacks), checked against what the page printed."""

from __future__ import annotations

import contextlib
import io

from sitecheck import match, outputs, quoted_in_both_languages, run_page

PAGE = "01"


def test_calling_the_callback_too_early_fails() -> None:
    # "Writing ``handle_result()`` calls it at once, before ``calculate`` even
    # starts, and fails, since it needs an argument"
    printed = outputs(PAGE)
    assert "TypeError: handle_result() missing 1 required positional argument" in printed
    assert printed.index("The result is: 8") < printed.index("TypeError")


def test_a_function_is_an_object() -> None:
    # "it has a type and a name, it is callable"
    lines = outputs(PAGE).splitlines()
    assert "<class 'function'>" in lines
    assert "handle_result" in lines
    assert lines[lines.index("handle_result") + 1] == "True"


def test_three_callers_without_a_change() -> None:
    # "a list collects the results, and a warning is printed only for a sum
    # larger than 10"
    printed = outputs(PAGE)
    assert "[8, 30]" in printed
    warnings = [line for line in printed.splitlines() if line.startswith("Warning:")]
    assert warnings == ["Warning: 15 is larger than 10"]


def test_listeners_run_in_registration_order() -> None:
    # "calls each of them, in the order they were registered"
    printed = outputs(PAGE)
    assert printed.index("saving because 'Save'") < printed.index("writing a log entry")


def test_nothing_runs_until_run_all() -> None:
    # "nothing runs until ``run_all`` is called"
    printed = outputs(PAGE)
    assert "nothing has run yet; pending callbacks: 2" in printed
    assert printed.index("nothing has run yet") < printed.index("finished 'download'")
    assert printed.index("finished 'download'") < printed.index("now unpacking")


def test_the_hook_runs_once_and_is_gone() -> None:
    # "The first call printed a line, the second printed nothing. ... here none is left."
    printed = outputs(PAGE)
    assert printed.count("Linear produced an output of shape (4, 2)") == 1
    assert match(r"hooks left on the layer: (\d+)", printed)[1] == "0"


def test_solution_values() -> None:
    # "``calculate(3, 5, double_and_print)`` prints ``16``, and the new
    # ``calculate(3, 5)`` returns ``8``." (the solutions' own functions)
    ns = run_page(PAGE).namespace
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert ns["calculate"](3, 5, ns["double_and_print"]) is None
    assert printed.getvalue() == "16\n"
    assert ns["calculate"](3, 5) == 8
    quoted_in_both_languages(PAGE, "16", "calculate(3, 5)")
