#!/usr/bin/env -S uv run --script
# /// script
# dependencies = ["nox>=2025.2.9"]
# ///
"""Developer tasks. Needs only Python and nox: ``pip install nox``.

- ``nox -s tests``         run the test suite
- ``nox -s docs``          build the English, then the Chinese site
- ``nox -s lint``          ruff, mypy, sphinx-lint, repo-review, config schemas
- ``nox -s translations``  refresh the zh_CN catalogs after changing English text
- ``nox -s bench``         run the speed and memory benchmarks
- ``nox -s e2e``           browse the built site in headless Chromium
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import nox

nox.needs_version = ">=2025.2.9"
nox.options.default_venv_backend = "virtualenv"  # pip sees this machine's local torch build
nox.options.reuse_venv = "yes"

ROOT = Path(__file__).parent
PYPROJECT = nox.project.load_toml(ROOT / "pyproject.toml")
DOCS = ROOT / "docs"
BUILD = DOCS / "_build"
LOCALES = DOCS / "locales" / "zh_CN" / "LC_MESSAGES"
SPHINX = ["sphinx-build", "-W", "--keep-going", "-q"]


def install(session: nox.Session, *groups: str, editable: bool = True) -> None:
    """Install the package and dependency groups, skipped when nothing changed."""
    args = ["-e", "."] if editable else ["."]
    for group in groups:
        args += nox.project.dependency_groups(PYPROJECT, group)
    venv = Path(session.virtualenv.location)
    stamp = venv / ".hooks-tutorial-installed"
    digest = hashlib.sha256(
        (ROOT / "pyproject.toml").read_bytes() + " ".join(args).encode()
    ).hexdigest()
    if stamp.is_file() and stamp.read_text() == digest:
        session.log("dependencies unchanged; skipping install")
        return
    session.install(*args)
    stamp.write_text(digest)


@nox.session(default=True)
def tests(session: nox.Session) -> None:
    """Run the unit and property tests (and the site checks when a build exists)."""
    install(session, "test")
    session.run("pytest", *session.posargs)


@nox.session(default=True)
def docs(session: nox.Session) -> None:
    """Build the site: English first (runs the examples), then zh_CN (reuses them).

    Fails on any Sphinx warning, on an example that raises, and on a zh_CN
    catalog entry that is missing, untranslated or fuzzy.
    """
    install(session, "docs", "test")
    session.env["PYTHONHASHSEED"] = "0"
    session.run(
        *SPHINX,
        "-b",
        "html",
        "-d",
        str(BUILD / "doctrees" / "en"),
        str(DOCS),
        str(BUILD / "html" / "en"),
    )
    session.run(
        *SPHINX,
        "-b",
        "gettext",
        "-d",
        str(BUILD / "doctrees" / "gettext"),
        str(DOCS),
        str(BUILD / "gettext"),
    )
    session.run(
        *SPHINX,
        "-b",
        "html",
        "-D",
        "language=zh_CN",
        "-d",
        str(BUILD / "doctrees" / "zh_CN"),
        str(DOCS),
        str(BUILD / "html" / "zh_CN"),
    )
    shutil.copyfile(DOCS / "_root" / "index.html", BUILD / "html" / "index.html")
    session.run("python", "docs/tools/i18n.py", "check", str(BUILD / "gettext"), str(LOCALES))
    session.run("pytest", "tests/test_site.py", "-p", "no:cacheprovider")
    session.log(f"Open {BUILD / 'html' / 'en' / 'index.html'} (中文: html/zh_CN/index.html)")


@nox.session(default=False)
def translations(session: nox.Session) -> None:
    """Regenerate the .pot files and update the zh_CN .po catalogs (sphinx-intl)."""
    install(session, "docs")
    session.run(
        *SPHINX,
        "-b",
        "html",
        "-d",
        str(BUILD / "doctrees" / "en"),
        str(DOCS),
        str(BUILD / "html" / "en"),
    )
    session.run(
        *SPHINX,
        "-b",
        "gettext",
        "-d",
        str(BUILD / "doctrees" / "gettext"),
        str(DOCS),
        str(BUILD / "gettext"),
    )
    session.run(
        "sphinx-intl",
        "update",
        "-p",
        str(BUILD / "gettext"),
        "-l",
        "zh_CN",
        "-d",
        str(DOCS / "locales"),
        "-w",
        "0",
    )
    session.run("python", "docs/tools/i18n.py", "fill", str(LOCALES))
    session.run(
        "python",
        "docs/tools/i18n.py",
        "check",
        str(BUILD / "gettext"),
        str(LOCALES),
        success_codes=[0, 1],
    )


@nox.session(default=True)
def lint(session: nox.Session) -> None:
    """Static checks: ruff, mypy (strict on the package), sphinx-lint, repo-review, schemas."""
    install(session, "lint")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("mypy")
    session.run(
        "sphinx-lint",
        "docs",
        "examples",
        "--ignore",
        "docs/_build",
        "--ignore",
        "docs/auto_examples",
        "--ignore",
        "docs/locales",
    )
    session.run("repo-review", ".")
    session.run("check-jsonschema", "--builtin-schema", "vendor.readthedocs", ".readthedocs.yaml")
    session.run(
        "check-jsonschema",
        "--builtin-schema",
        "vendor.github-workflows",
        ".github/workflows/docs.yml",
    )


@nox.session(default=False)
def bench(session: nox.Session) -> None:
    """Measure speed and memory (reports numbers; asserts nothing)."""
    install(session, "test")
    scripts = session.posargs or sorted(str(p) for p in (ROOT / "benchmarks").glob("bench_*.py"))
    for script in scripts:
        session.run("python", script)


if __name__ == "__main__":
    nox.main()
