"""The package's public surface: every exported name resolves, lazily."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
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


def test_public_submodules_load_on_first_use() -> None:
    assert callable(ht.metrics.pointing_game)


def test_unknown_name_raises_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        _ = ht.nope


def test_import_loads_neither_torch_nor_matplotlib() -> None:
    code = "import sys, hooks_tutorial; print('torch' in sys.modules, 'matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False False"


def test_the_stub_lists_every_public_name_of_the_package() -> None:
    # __init__.pyi is the one list: lazy_loader reads it at run time, mypy statically
    stub = (Path(ht.__file__).parent / "__init__.pyi").read_text(encoding="utf-8")
    for name in ht.__all__:
        assert f"{name} as {name}" in stub or name == "__version__", name


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
    from hooks_tutorial import metrics  # noqa: PLC0415

    public = {
        f"hooks_tutorial.{n}"
        for n in ht.__all__
        if n != "__version__" and not inspect.ismodule(getattr(ht, n))
    } | {f"hooks_tutorial.metrics.{n}" for n in metrics.__all__}
    documented = _api_reference_names()
    # The CAM base classes are documented from hooks_tutorial.cam, where they are public.
    from_cam = {n for n in documented if n.startswith("hooks_tutorial.cam.")}
    assert from_cam == {"hooks_tutorial.cam.BaseCAM", "hooks_tutorial.cam.HooksPerCall"}
    assert all(n.rsplit(".", 1)[1] in ht.cam.__all__ for n in from_cam)
    documented -= from_cam
    assert sorted(public - documented) == [], "add these to docs/api.rst's tables"
    assert sorted(documented - public) == [], "not public: remove from docs/api.rst"


def test_readme_python_example_runs_and_prints_what_it_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    (code,) = re.findall(r"```python\n(.*?)```", readme, re.DOTALL)
    # a tiny recipe instead of the full one keeps this test fast; the API is the same
    import dataclasses  # noqa: PLC0415

    from hooks_tutorial import zoo  # noqa: PLC0415

    tiny = dataclasses.replace(zoo.pretrained_config("simple_cnn-shapes"), n_train=32, epochs=1)
    monkeypatch.setitem(zoo._CONFIGS, "simple_cnn-shapes", tiny)
    monkeypatch.setenv(zoo.CACHE_ENV, str(tmp_path))
    exec(compile(code, "README.md", "exec"), {})  # noqa: S102 - our own README
    printed = capsys.readouterr().out.splitlines()
    promised = [
        line.split("# ")[1].split(":")[0] for line in code.splitlines() if line.startswith("print(")
    ]
    assert printed == promised
