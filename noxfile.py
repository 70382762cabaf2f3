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
- ``nox -s e2e``           browse the built site in headless Chromium (after ``docs``)
- ``nox -s inventories``   refresh the intersphinx inventories in ``docs/_intersphinx``
"""

from __future__ import annotations

import hashlib
import os
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
CHROMIUM = Path("/usr/bin/chromium")
CJK_FONT = Path("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc")  # readable zh screenshots


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


def sphinx(session: nox.Session, builder: str, name: str, *options: str) -> None:
    """One Sphinx build (-W, keep going) with its own doctree folder ``name``."""
    out = BUILD / "gettext" if builder == "gettext" else BUILD / "html" / name
    doctrees = BUILD / "doctrees" / name
    session.run(*SPHINX, "-b", builder, *options, "-d", str(doctrees), str(DOCS), str(out))


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
    sphinx(session, "html", "en")
    sphinx(session, "gettext", "gettext")
    sphinx(session, "html", "zh_CN", "-D", "language=zh_CN")
    shutil.copyfile(DOCS / "_root" / "index.html", BUILD / "html" / "index.html")
    # static hosts serve /404.html for any missing path; its links are absolute
    shutil.copyfile(BUILD / "html" / "en" / "404.html", BUILD / "html" / "404.html")
    session.run("python", "docs/tools/i18n.py", "check", str(BUILD / "gettext"), str(LOCALES))
    session.run("pytest", "tests/site", "-p", "no:cacheprovider")
    session.log(f"Open {BUILD / 'html' / 'en' / 'index.html'} (中文: html/zh_CN/index.html)")


def _ensure_browser_tools(session: nox.Session) -> None:
    """Install Debian's Chromium, a CJK font and Node.js (npm) with apt-get when missing."""
    packages = [] if CHROMIUM.is_file() else ["chromium", "chromium-driver"]
    if not CJK_FONT.is_file():
        packages.append("fonts-wqy-microhei")
    if shutil.which("npm") is None:
        packages += ["nodejs", "npm"]
    if not packages:
        return
    if os.geteuid() != 0:
        if not CHROMIUM.is_file() or shutil.which("npm") is None:
            session.error(f"missing: run `sudo apt-get install -y {' '.join(packages)}`")
        session.warn("no CJK font: Chinese text in screenshots shows as boxes")
        return
    env = {"DEBIAN_FRONTEND": "noninteractive"}
    session.run("apt-get", "update", "-qq", external=True, env=env)
    session.run("apt-get", "install", "-y", "-qq", *packages, external=True, env=env)


@nox.session(default=False)
def e2e(session: nox.Session) -> None:
    """Browse the built site (``nox -s docs`` first) in headless Chromium.

    Serves docs/_build/html on 127.0.0.1 and checks every page of both
    languages (errors, links, images, downloads), the language switcher,
    search, dark mode, the 404 page and the Chinese downloads; audits every
    page in the light and the dark theme with axe-core (WCAG 2 A/AA) and
    checks language, figure alt text, keyboard use and visible focus.
    Installs Debian's Chromium (and Node.js) with apt-get when missing (as
    root), axe-core with ``npm ci`` (pinned in e2e/package-lock.json) and
    pytest-playwright, which drives that Chromium (no browser download).
    Screenshots and a summary go to e2e-artifacts/.
    """
    html = BUILD / "html"
    missing = [
        p for p in ("index.html", "en/index.html", "zh_CN/index.html") if not (html / p).is_file()
    ]
    if missing:
        session.error(
            f"no built site in {html} ({', '.join(missing)} missing): run `nox -s docs` first"
        )
    _ensure_browser_tools(session)
    session.run("npm", "ci", "--prefix", "e2e", "--no-audit", "--no-fund", external=True)
    session.install(*nox.project.dependency_groups(PYPROJECT, "e2e"))
    session.run(
        "pytest",
        "e2e",
        "-p",
        "no:cacheprovider",
        # pytest-playwright: a screenshot of each failing test's pages
        "--screenshot=only-on-failure",
        "--output=e2e-artifacts/failures",
        *session.posargs,
    )


@nox.session(default=False)
def inventories(session: nox.Session) -> None:
    """Refresh docs/_intersphinx/*.inv: downloaded when online, else generated.

    ``nox -s inventories -- --offline`` skips the network: Python's inventory
    then comes from Debian's python3.11-doc, PyTorch's from the installed torch.
    """
    install(session)
    session.run("python", "docs/tools/refresh_inventories.py", *session.posargs)


@nox.session(default=False)
def translations(session: nox.Session) -> None:
    """Regenerate the .pot files and update the zh_CN .po catalogs (sphinx-intl)."""
    install(session, "docs")
    sphinx(session, "html", "en")
    sphinx(session, "gettext", "gettext")
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
