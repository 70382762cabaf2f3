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
