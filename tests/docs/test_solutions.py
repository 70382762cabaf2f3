"""docs/_ext/solutions.py, claimed_numbers.py and page_checks.py: solutions that check themselves."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from torch import nn

EXT = Path(__file__).parents[2] / "docs" / "_ext"
sys.path.insert(0, str(EXT))

import solutions
from claimed_numbers import claimed_numbers, printed, quoted_values
from page_checks import assert_no_hooks_left

OUTPUT = """
.. rst-class:: sphx-glr-script-out

 .. code-block:: none

    {}
"""


def solution(n: int, prose: str, output: str) -> str:
    return (
        f".. rst-class:: solution\n\n**Solution {n}.** {prose}\n\n"
        f".. code-block:: python\n\n   print()\n" + OUTPUT.format(output)
    )


def build(tmp_path: Path, body: str, name: str = "page", pattern: str = "") -> tuple[str, str]:
    """Build one page under auto_examples/ with the extension; its HTML and the warnings.

    ``pattern``, if given, plays sphinx-gallery's ``filename_pattern``: the pages it runs.
    """
    source = tmp_path / "source"
    (source / "auto_examples").mkdir(parents=True)
    gallery = (
        f"sphinx_gallery_conf = {{'filename_pattern': {pattern!r}}}\n"
        "def setup(app):\n    app.add_config_value('sphinx_gallery_conf', {}, 'html')\n"
        if pattern
        else ""
    )
    (source / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(EXT)!r})\nextensions = ['solutions']\n{gallery}",
        encoding="utf-8",
    )
    (source / "index.rst").write_text(
        f"Home\n====\n\n.. toctree::\n\n   auto_examples/{name}\n", encoding="utf-8"
    )
    (source / "auto_examples" / f"{name}.rst").write_text(
        f"Page\n====\n\nExercises\n---------\n\n{body}", encoding="utf-8"
    )
    html = tmp_path / "html"
    run = subprocess.run(
        [sys.executable, "-m", "sphinx", "-q", "-b", "html", str(source), str(html)],
        capture_output=True,
        text=True,
        check=True,
    )
    return (html / "auto_examples" / f"{name}.html").read_text(encoding="utf-8"), run.stderr


def test_each_solution_folds_with_its_code_and_output(tmp_path: Path) -> None:
    body = "1. Print 42.\n2. Print 7.\n\n" + solution(1, "It prints 42.", "42")
    body += solution(2, "It prints 7, a prime.", "7")
    html, warnings = build(tmp_path, body)
    assert warnings == ""
    assert html.count('<details class="sd-sphinx-override sd-dropdown') == 2
    first = html.split("<details", 2)[1]
    assert "<strong>Solution 1</strong></span>" in first  # the title is the summary
    assert "It prints 42." in first
    assert "print" in first
    assert "42" in first.split("sphx-glr-script-out", 1)[1]  # its output, inside
    assert "</div></details>" in first


def test_a_number_the_code_did_not_print_is_a_warning(tmp_path: Path) -> None:
    body = "1. Print a loss.\n\n" + solution(
        1, "The loss is 0.748, near 1.609.", "loss 0.742 1.609"
    )
    _, warnings = build(tmp_path, body)
    assert "solution 1: the answer states 0.748, which its code does not print" in warnings
    assert "1.609" not in warnings.split("does not print", 1)[1].split(":", 1)[0]


@pytest.mark.parametrize("ran", [True, False])
def test_pages_a_quick_build_leaves_out_state_nothing(tmp_path: Path, ran: bool) -> None:
    """$HOOKS_TUTORIAL_PAGES runs some pages; the others have no outputs to compare with."""
    body = "1. Print a loss.\n\n" + solution(1, "The loss is 0.748.", "loss 0.742")
    _, warnings = build(tmp_path, body, pattern="/page" if ran else "/plot_99_")
    assert ("the answer states 0.748" in warnings) is ran


def test_one_solution_per_exercise(tmp_path: Path) -> None:
    body = "1. One.\n2. Two.\n\n" + solution(1, "Done.", "ok")
    _, warnings = build(tmp_path, body)
    assert "2 exercises but 1 solutions" in warnings


def test_exercises_without_solutions_are_a_warning(tmp_path: Path) -> None:
    _, warnings = build(tmp_path, "1. One.\n\n.. dropdown:: Solutions\n\n   Static code.\n")
    assert "exercises without solutions" in warnings


HOW = "Run the ``ht.exercises.check(...)`` call that ends the exercise.\n\n"


def test_each_code_exercise_shows_its_check(tmp_path: Path) -> None:
    """Page 5's exercises as hooks_tutorial.exercises knows them: 1 and 3 code, 2 in words."""
    items = (
        '1. A hook. Check: ``ht.exercises.check("05.1", print_stats)``.\n'
        "2. *In words:* why?\n"
        '3. A function. Check: ``ht.exercises.check("05.3", conv_and_relu)``.\n\n'
    )
    answers = "".join(solution(n, "Done.", "ok") for n in (1, 2, 3))
    _, warnings = build(tmp_path, HOW + items + answers, name="plot_05_forward_hooks")
    assert warnings == ""


def test_a_missing_or_misplaced_check_is_a_warning(tmp_path: Path) -> None:
    items = (
        "1. A hook.\n"
        '2. *In words:* why? ``ht.exercises.check("05.2", f)``\n'
        '3. A function. Check: ``ht.exercises.check("05.1", conv_and_relu)``.\n'
        "4. One more.\n\n"
    )
    answers = "".join(solution(n, "Done.", "ok") for n in (1, 2, 3, 4))
    _, warnings = build(tmp_path, items + answers, name="plot_05_forward_hooks")
    assert 'exercise 05.1 has a check: end its item with ``ht.exercises.check("05.1"' in warnings
    assert "exercise 05.2 is answered in words, but its item shows a check" in warnings
    assert "exercise 05.3 has a check" in warnings
    assert "found ['05.1']" in warnings
    assert "exercise 05.4 has no check in hooks_tutorial.exercises" in warnings
    assert "say under 'Exercises', before the list, how to run the checks" in warnings


def test_pages_the_library_does_not_know_are_left_alone(tmp_path: Path) -> None:
    body = "1. One.\n\n" + solution(1, "Done.", "ok")
    _, warnings = build(tmp_path, body, name="plot_99_unknown")
    assert warnings == ""


def test_a_solution_needs_its_bold_title(tmp_path: Path) -> None:
    body = "1. One.\n\n.. rst-class:: solution\n\nNo title here.\n" + OUTPUT.format("ok")
    _, warnings = build(tmp_path, body)
    assert "has no bold title" in warnings


def test_numbers_that_name_a_page_a_step_or_a_release_are_not_claims() -> None:
    text = (
        "See page 17, exercise 2, step 0, section 3.1 and 第 17 页: 0.213 of 64, 2e-7, -0.5, "
        "on torch 2.9 and torchvision 0.24."
    )
    assert claimed_numbers(text) == {"0.213", "64", "2e-7", "-0.5"}
    assert printed("0.213", "acc 0.213\n")
    assert not printed("0.21", "acc 0.213")


def test_translations_keep_every_value_but_may_spell_small_counts() -> None:
    assert quoted_values("two epochs, 16 batches, ``64`` and 0.2") == {"16", "0.2"}
    assert quoted_values("两个轮次、16 个批次，``64`` 和 0.2") == {"16", "0.2"}
    assert quoted_values("5 classes at 0.25") != quoted_values("5 个类别，0.2")


def test_downloads_lose_the_hidden_checks(tmp_path: Path) -> None:
    downloads = tmp_path / "_downloads" / "abc"
    downloads.mkdir(parents=True)
    script = (
        "print(1)\n# sphinx_gallery_start_ignore\nassert True\n# sphinx_gallery_end_ignore\n"
        "print(2)\n"
    )
    (downloads / "plot_x.py").write_text(script, encoding="utf-8")
    with zipfile.ZipFile(downloads / "plot_x.zip", "w") as archive:
        archive.writestr("plot_x.py", script)
        archive.writestr("plot_x.ipynb", "{}")
    app = SimpleNamespace(outdir=str(tmp_path), builder=SimpleNamespace(format="html"))
    solutions.strip_ignore_blocks(app, None)  # type: ignore[arg-type]
    assert (downloads / "plot_x.py").read_text(encoding="utf-8") == "print(1)\nprint(2)\n"
    with zipfile.ZipFile(downloads / "plot_x.zip") as archive:
        assert archive.read("plot_x.py") == b"print(1)\nprint(2)\n"
        assert archive.read("plot_x.ipynb") == b"{}"


def test_a_hook_left_on_a_model_fails_the_page() -> None:
    model = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    assert_no_hooks_left({"model": model})
    handle = model[0].register_forward_hook(lambda *_: None)
    with pytest.raises(AssertionError, match=r"model\.0: forward"):
        assert_no_hooks_left({"model": model})
    with pytest.raises(AssertionError, match="model"):
        assert_no_hooks_left({"runs": {"cam": SimpleNamespace(model=model)}})  # reached deep
    assert_no_hooks_left({"model": model}, kept=["model.0: forward"])
    handle.remove()
    assert_no_hooks_left({"model": model})


def test_pruning_masks_and_optimizer_hooks() -> None:
    layer = nn.Linear(4, 4)
    torch.nn.utils.prune.l1_unstructured(layer, "weight", amount=0.5)
    assert_no_hooks_left({"layer": layer})  # prune's mask hook stays on purpose
    optimizer = torch.optim.SGD(layer.parameters(), lr=0.1)
    handle = optimizer.register_step_post_hook(lambda *_: None)
    with pytest.raises(AssertionError, match="step_post"):
        assert_no_hooks_left({"optimizer": optimizer})
    handle.remove()
