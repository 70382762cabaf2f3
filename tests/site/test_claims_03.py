"""Claims of page 3 (lambda), checked against what the page printed."""

from __future__ import annotations

import ast
import re

from sitecheck import outputs, quoted_in_both_languages, run_page

PAGE = "03"


def _lines() -> list[str]:
    return outputs(PAGE).splitlines()


def test_syntax_examples() -> None:
    # the course notes' square(5); "several parameters, defaults, or none at all"
    lines = _lines()
    assert "25" in lines
    assert "3 11 42" in lines


def test_def_knows_its_name() -> None:
    # "the function knows its own name, which then shows up in tracebacks and reprs"
    lines = _lines()
    assert "<lambda> square_def" in lines
    assert lines[lines.index("<lambda> square_def") + 1] == "True"


def test_statement_in_a_lambda_is_a_syntax_error() -> None:
    # "statements such as ``return`` ... are a syntax error"
    assert any(line.startswith("SyntaxError - ") for line in _lines())


def test_key_functions() -> None:
    # sorted by score, highest first; max by score
    lines = _lines()
    assert "['star', 'circle', 'square']" in lines
    assert "('star', 0.98)" in lines
    # "sort its layers by their number of parameters": Linear(4, 8) 40, Linear(8, 2) 18, ReLU 0
    assert "['0', '2', '1']" in lines


def test_reporting_hook_leaves_the_output_unchanged() -> None:
    # "a forward hook that returns ``None`` leaves the output unchanged"
    printed = outputs(PAGE)
    first = printed.index("output unchanged: True")
    assert printed.index("Linear: (2, 4) -> (2, 8)") < first


def test_late_binding_reports_the_last_name() -> None:
    # "so all three report the same name" (lambda and def), then the two fixes
    lines = _lines()
    names = [re.match(r"layer (\d): ", line)[1] for line in lines if re.match(r"layer \d: ", line)]
    assert names == ["2"] * 6 + ["0", "1", "2"] * 2


def test_lambda_that_returns_replaces_the_output() -> None:
    # "every later call feeds the *first* batch's activation to the rest of the model"
    printed = outputs(PAGE)
    assert "batch 2 got batch 1's output: True" in printed
    before, after = printed.split("correct output for batch 2:", 1)
    assert (
        before.split("output for batch 2:", 1)[1].strip()
        != after.split("batch 2 got", 1)[0].strip()
    )
    # "after a backward pass, the first layer's weights received no gradient"
    assert "first layer weight.grad: None" in printed


def test_register_hook_in_a_lambda_hands_on_the_handle() -> None:
    # "a ``lambda`` that calls it hands the handle to the next layer instead of a tensor"
    printed = outputs(PAGE)
    error = next(line for line in printed.splitlines() if line.startswith("TypeError - "))
    assert "RemovableHandle" in error
    # the fix: "a ``def`` whose body stores the value and returns nothing"
    assert printed.count("output unchanged: True") == 2


def test_lambda_hooks_cannot_be_pickled() -> None:
    # "a ``lambda`` has none" (no importable name): torch.save(model) fails;
    # the state_dict saves, and so does the model once the hook is removed
    printed = outputs(PAGE)
    assert re.search(r"PicklingError - .*<lambda>", printed)
    assert "state_dict saved: True" in printed
    assert "model saved after removing the hook: True" in printed


def test_solution_values() -> None:
    # "The sorted names are ``['alexnet', 'vgg11', 'resnet18']``" (the solution's computation)
    names = ["resnet18", "vgg11", "alexnet"]
    answer = sorted(names, key=lambda n: int(re.search(r"\d*$", n)[0] or 0))
    assert answer == ["alexnet", "vgg11", "resnet18"]
    quoted_in_both_languages(PAGE, str(answer), "{'0': (2, 3), '1': (2, 3), '2': (2, 2)}")


def test_solutions_state_their_answers() -> None:
    lines = run_page(PAGE).solutions.splitlines()
    # "The sorted names are ``['alexnet', 'vgg11', 'resnet18']``."
    assert ast.literal_eval(lines[0]) == ["alexnet", "vgg11", "resnet18"]
    # "The shapes are ``{'0': (2, 3), '1': (2, 3), '2': (2, 2)}`` and the output is
    # unchanged (``True``)"
    shapes, unchanged = lines[1].rsplit(" ", 1)
    assert ast.literal_eval(shapes) == {"0": (2, 3), "1": (2, 3), "2": (2, 2)}
    assert unchanged == "True"
    # "The doubled output matches the hand-computed one (``True``)."
    assert lines[2:] == ["True"]
