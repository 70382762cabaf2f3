"""The package's public surface: one list of names, each documented, and a README that runs."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

import hooks_tutorial as ht


@pytest.mark.parametrize("name", ht.__all__)
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(ht, name) is not None


def test_functions_are_not_shadowed_by_modules() -> None:
    # importing every submodule must not replace a function of the same name
    assert callable(ht.trace)
    assert callable(ht.pretrained)
    assert ht.trace.__name__ == "trace"


def test_dir_lists_the_public_names_and_unknown_names_fail() -> None:
    assert set(ht.__all__) <= set(dir(ht))
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        _ = ht.nope  # type: ignore[attr-defined]


def _api_reference_names() -> set[str]:
    """Full names in docs/api.rst's autosummary tables (each gets its own page)."""
    api = (Path(__file__).parents[1] / "docs" / "api.rst").read_text(encoding="utf-8")
    names, module, in_table = set(), "", False
    for line in api.splitlines():
        if line.startswith((".. currentmodule:: ", ".. module:: ")):
            module = line.split("::")[1].strip()
        elif line.startswith(".. autosummary::"):
            in_table = True
        elif in_table and line.startswith("   ") and not line.strip().startswith(":"):
            names.add(f"{module}.{line.strip()}")
        elif line and not line.startswith(" "):
            in_table = False
    return names


def test_every_public_name_is_in_the_api_reference() -> None:
    from hooks_tutorial import detection, exercises, lm, metrics  # noqa: PLC0415

    public = {
        f"hooks_tutorial.{n}"
        for n in ht.__all__
        if n != "__version__" and not inspect.ismodule(getattr(ht, n))
    } | {
        f"hooks_tutorial.{m.__name__.rsplit('.', 1)[1]}.{n}"
        for m in (metrics, lm, detection, exercises)
        for n in m.__all__
    }
    documented = _api_reference_names()
    # The CAM base classes are documented from hooks_tutorial.cam, where they are public.
    from_cam = {n for n in documented if n.startswith("hooks_tutorial.cam.")}
    assert from_cam == {"hooks_tutorial.cam.BaseCAM"}
    assert all(n.rsplit(".", 1)[1] in ht.cam.__all__ for n in from_cam)
    documented -= from_cam
    assert sorted(public - documented) == [], "add these to docs/api.rst's tables"
    assert sorted(documented - public) == [], "not public: remove from docs/api.rst"


def test_readme_python_example_runs_and_prints_what_it_says(
    capsys: pytest.CaptureFixture[str],
) -> None:
    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    (code,) = re.findall(r"```python\n(.*?)```", readme, re.DOTALL)
    exec(compile(code, "README.md", "exec"), {})  # noqa: S102 - our own README
    printed = capsys.readouterr().out.splitlines()
    promised = [
        line.split("# ")[1].split(":")[0] for line in code.splitlines() if line.startswith("print(")
    ]
    assert printed == promised
