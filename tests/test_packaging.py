"""One source for the repository address and the version."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import hooks_tutorial

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_readme_uses_the_repository_address_of_pyproject() -> None:
    source = PYPROJECT["project"]["urls"]["Source"]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    addresses = set(re.findall(r"https://github\.com/[\w.-]+/[\w.-]+", readme))
    assert addresses == {source}
    assert f'pip install "git+{source}"' in readme
    assert f"pip install {PYPROJECT['project']['name']}" in readme


def test_the_version_is_the_installed_metadata() -> None:
    assert hooks_tutorial.__version__ == PYPROJECT["project"]["version"]


def test_every_example_script_says_what_to_install() -> None:
    """The downloaded .py is the example itself: its first lines name the install.

    So do the helper scripts a page downloads with it (``_ddp_worker.py``).
    """
    name, source = PYPROJECT["project"]["name"], PYPROJECT["project"]["urls"]["Source"]
    header = [
        f"# Needs the hooks_tutorial library: pip install {name}",
        f'# (or the development version: pip install "git+{source}")',
    ]
    scripts = sorted((ROOT / "examples").glob("*/plot_*.py"))
    scripts += sorted((ROOT / "examples").glob("*/_*.py"))
    assert scripts
    for script in scripts:
        assert script.read_text(encoding="utf-8").splitlines()[:2] == header, script.name
