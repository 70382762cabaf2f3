#!/usr/bin/env -S uv run --script
# /// script
# dependencies = ["nox>=2025.2.9"]
# ///
"""Developer tasks. Needs only Python and nox: ``pip install nox``.

- ``nox -s tests``         run the unit tests and the docstrings' examples (peers as oracles)
- ``nox -s docs``          build the English, then the Chinese site, and check it (tests/site)
- ``nox -s lint``          ruff, mypy, sphinx-lint, repo-review, config schemas
- ``nox -s translations``  refresh the zh_CN catalogs after changing English text
- ``nox -s bench``         run the speed and memory benchmarks
- ``nox -s e2e``           audit the built site in headless Chromium (after ``docs``)
- ``nox -s build``         build the sdist and wheel into dist/ and check them
- ``nox -s downloads``     check every download; run each page's notebook with the built wheel
- ``nox -s oldest``        the unit tests and every page's notebook on the oldest torch allowed
- ``nox -s inventories``   refresh the intersphinx inventories in ``docs/_intersphinx``
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tarfile
import zipfile
from pathlib import Path

import nox
from packaging.requirements import Requirement  # nox's own dependency

nox.needs_version = ">=2025.2.9"
nox.options.default_venv_backend = "virtualenv"  # pip sees this machine's local torch build
nox.options.reuse_venv = "yes"

ROOT = Path(__file__).parent
PYPROJECT = nox.project.load_toml(ROOT / "pyproject.toml")
DOCS = ROOT / "docs"
BUILD = DOCS / "_build"
LOCALES = DOCS / "locales" / "zh_CN" / "LC_MESSAGES"
# -n: every cross-reference resolves. -j auto (parallel reading and writing) only for
# gettext: in a parallel HTML build Sphinx 9.0 writes no index entries into the search
# index, and the pages' index entries are what ranks them first in search
SPHINX = ["sphinx-build", "-n", "-W", "--keep-going", "-q"]
CHROMIUM = Path("/usr/bin/chromium")
CJK_FONT = Path("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc")  # readable zh screenshots


# torch and torchvision, as the project requires them (shared_torch installs them once)
TORCH = [
    d
    for d in PYPROJECT["project"]["dependencies"]
    if Requirement(d).name in {"torch", "torchvision"}
]


def _oldest(requirement: str) -> str:
    """``torch==2.9.1`` for ``torch>=2.9.1``: the oldest release the project supports."""
    parsed = Requirement(requirement)
    (floor,) = parsed.specifier  # one clause, a floor: what `nox -s oldest` can pin
    assert floor.operator == ">=", requirement
    return f"{parsed.name}=={floor.version}"


# the oldest torch and torchvision that pyproject.toml allows (nox -s oldest tests them)
OLDEST_TORCH = [_oldest(d) for d in TORCH]
# Where shared_torch keeps its installs of torch: outside the clone, since CI clones afresh
TORCH_LAYERS = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / (
    "hooks-tutorial-torch"
)


def shared_torch(session: nox.Session, pins: list[str] = TORCH, name: str = "torch") -> None:
    """Make torch and torchvision importable from one install that the sessions share.

    From the package index torch comes with about 4 GB of CUDA libraries:
    installing it into each session's virtualenv took a minute or more per
    session (5.5 GB of disk each) and was most of a session's set-up. It is
    installed once per machine, with ``pip install --target`` into
    ``TORCH_LAYERS/<name>-py<version>-<hash of pins>`` (again when ``pins``
    change; the folders of older pins are then removed), and a ``.pth`` file
    in the session's site-packages appends that folder to ``sys.path``, after
    the session's own packages. pip then sees torch as installed (and checks
    its version against the requirements); everything else a session needs
    still goes into its own virtualenv. ``pins`` are the requirements to
    install: the project's own (``TORCH``), or ``OLDEST_TORCH``.

    Outside the clone, because CI runs in a fresh clone: unpacking torch took
    72 s there, and downloading it (``OLDEST_TORCH`` comes from the package
    index) about 3 minutes more, every run. pip's own cache cannot spare the
    download: it keeps only responses that allow caching, and here the index's
    do not (it stayed empty after torch's 4 GB). Delete the folder to install
    torch afresh (a newer release that ``TORCH`` allows, say).
    """
    # Asked of the session's own Python directly, not through session.run, which
    # returns None (runs nothing) under --install-only and --no-install.
    python = str(Path(session.bin) / "python")
    code = "import sys, sysconfig; print('%d.%d' % sys.version_info[:2]); print(sysconfig.get_path('purelib'))"
    version, site = subprocess.run(
        [python, "-c", code],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split("\n")[:2]
    digest = hashlib.sha256(" ".join(pins).encode()).hexdigest()[:12]
    prefix = f"{name}-py{version.strip()}-"
    layer = TORCH_LAYERS / f"{prefix}{digest}"
    if layer.is_dir():
        session.log(f"torch: the shared install in {layer}")
    else:
        partial = TORCH_LAYERS / f"{prefix}{digest}.partial"  # renamed once complete
        shutil.rmtree(partial, ignore_errors=True)
        session.run_install("python", "-m", "pip", "install", "--target", str(partial), *pins)
        partial.rename(layer)
        for old in TORCH_LAYERS.glob(f"{prefix}*"):
            if old != layer:
                shutil.rmtree(old, ignore_errors=True)
    (Path(site.strip()) / "_hooks_tutorial_torch.pth").write_text(f"{layer}\n")


def install(
    session: nox.Session, *groups: str, editable: bool = True, project: bool = True
) -> None:
    """Install the package (unless ``project=False``) and dependency groups, skipped when
    nothing changed.

    nox's own options do not do this: ``reuse_venv`` keeps the environment, but
    ``session.install`` still runs pip every time (8-11 s here, most of it building
    the editable wheel; measured on a busy machine), and ``--no-install`` (``-R``)
    skips pip on reuse without noticing a changed ``pyproject.toml``. The stamp
    re-installs exactly when ``pyproject.toml`` or the requested groups change.
    """
    if project:
        shared_torch(session)
    args = (["-e", "."] if editable else ["."]) if project else []
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


def sphinx(session: nox.Session, builder: str, name: str, *options: str) -> bool:
    """One Sphinx build (-W, keep going) with its own doctree folder ``name``.

    False when it did not run: nox's ``--install-only`` runs no command.
    """
    out = BUILD / "gettext" if builder == "gettext" else BUILD / "html" / name
    doctrees = BUILD / "doctrees" / name
    # -a: write every page, not only the changed ones (the environment, and so the
    # gallery's runs, are reused): an incremental build's search index loses the other
    # pages' index entries (sphinx-doc/sphinx#12599) and its sitemap lists only the pages
    # it wrote (tests/docs/test_search_entries.py)
    # -j auto where no page runs (gettext; zh_CN reuses the English outputs): two cores
    # read and write the zh_CN pages in about 43 s instead of 69 s. The English build's
    # pages run before Sphinx reads any (sphinx-gallery, a page per core: "parallel" in
    # docs/conf.py); -j auto for its reading and writing gained 5 s of 140 s, within noise
    parallel = ["-a", "-j", "auto"] if builder == "gettext" or name == "zh_CN" else ["-a"]
    ran = session.run(
        *SPHINX, *parallel, "-b", builder, *options, "-d", str(doctrees), str(DOCS), str(out)
    )
    return ran is not None


@nox.session(default=True)
def tests(session: nox.Session) -> None:
    """Run the unit and property tests and the docstrings' examples.

    captum, pytorch-grad-cam and torchcam (the ``peers`` group) are installed:
    tests compare the CAM methods with them. The checks of the built site
    (tests/site) and of the docs tooling (tests/docs) run in ``nox -s docs``.
    """
    install(session, "test", "peers")
    # a worker per core; an idle worker takes tests queued for the other (worksteal), and
    # tests/conftest.py starts the slow ones first, so both cores finish together
    session.run("pytest", "-n", "auto", "--dist", "worksteal", *session.posargs)


@nox.session(default=True)
def docs(session: nox.Session) -> None:
    """Build the site: English first (runs each page once), then zh_CN (reuses the outputs).

    Fails on any Sphinx warning or unresolved cross-reference, on a page whose
    own checks fail (hidden blocks beside the sentences they back; an exercise
    answer stating a number its solution did not print; a hook left behind),
    and on a zh_CN catalog entry that is missing, untranslated, fuzzy or quoting
    other numbers than the English. Then checks the built site without running
    any page again: every page's HTML and downloads (tests/site), and the docs
    tooling (tests/docs).
    """
    # page 17's hidden checks compare with pytorch-grad-cam (the peers group)
    install(session, "docs", "test", "peers")
    session.env["PYTHONHASHSEED"] = "0"
    if not sphinx(session, "html", "en"):
        return  # --install-only: nothing was built, so there is nothing to copy or check
    sphinx(session, "gettext", "gettext")
    sphinx(session, "html", "zh_CN", "-D", "language=zh_CN")
    shutil.copyfile(DOCS / "_root" / "index.html", BUILD / "html" / "index.html")
    # static hosts serve /404.html for any missing path; its links are absolute
    shutil.copyfile(BUILD / "html" / "en" / "404.html", BUILD / "html" / "404.html")
    session.run("python", "docs/tools/i18n.py", "check", str(BUILD / "gettext"), str(LOCALES))
    # a worker per core: they read the built site and write only to their own tmp_path
    session.run(
        "pytest",
        "tests/site",
        "tests/docs",
        "-p",
        "no:cacheprovider",
        "-n",
        "auto",
        "--dist",
        "worksteal",
    )
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

    Serves docs/_build/html on 127.0.0.1. axe-core (WCAG 2 A/AA) audits every
    tutorial page and one page of each other kind (home, API summary, hook
    cheat sheet, API class and function, module source and its index, gallery
    index, general index, search, 404), in both languages and in the light and
    the dark theme, and those loads must show no console error, failed request
    or request to another host; then the root page, the language switcher,
    search, dark mode, the 404 page, the Chinese downloads, the cheat sheet on
    a phone and printed on A4, the feedback link, keyboard use and visible
    focus, and figures, tables and code on a 390 x 844 phone and a 1366 x 768
    laptop (e2e/test_phone.py). (Language, alt text, links, images and downloads of every
    page are checked without a browser by ``nox -s docs``.) Installs Debian's
    Chromium (and Node.js) with apt-get when missing (as root), axe-core with
    ``npm ci`` (pinned in e2e/package-lock.json) and pytest-playwright, which
    drives that Chromium (no browser download); no torch. Screenshots and a
    summary go to e2e-artifacts/.
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
    install(session, "e2e", project=False)
    session.run(
        "pytest",
        "e2e",
        "-p",
        "no:cacheprovider",
        # pytest-playwright: a screenshot of each failing test's pages
        "--screenshot=only-on-failure",
        "--output=e2e-artifacts/failures",
        # pytest-xdist: a worker per core, each with its own server and Chromium (a page's
        # audit is mostly single-threaded JavaScript: two at once take about half the time)
        "-n",
        "auto",
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
    """Regenerate the .pot files and update the zh_CN .po catalogs (sphinx-intl).

    Starts from a clean build: the .pot files of an incremental one can miss
    entries (an API page's mini-gallery, from examples that were not run
    again), and ``sphinx-intl update`` would then mark their translations
    obsolete.
    """
    # page 17's hidden checks compare with pytorch-grad-cam (the peers group)
    install(session, "docs", "peers")
    session.env["PYTHONHASHSEED"] = "0"
    if session.run("python", "-c", "", silent=True) is None:
        return  # --install-only: nox runs no command, so nothing is cleaned or built
    for made in (BUILD, DOCS / "auto_examples", DOCS / "gen_modules", DOCS / "generated"):
        shutil.rmtree(made, ignore_errors=True)
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
        "docs/generated",
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
        ".github/workflows/release.yml",
    )


DIST = ROOT / "dist"


def _check_wheel(session: nox.Session, wheel: Path, sdist: Path) -> None:
    """The wheel holds exactly the package; the sdist holds what builds it."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    package = sorted(n for n in names if not n.startswith(wheel.name.split("-")[0] + "-"))
    expected = sorted(
        p.relative_to(ROOT / "src").as_posix()
        for p in (ROOT / "src" / "hooks_tutorial").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    )
    if package != expected:
        extra, missing = set(package) - set(expected), set(expected) - set(package)
        session.error(f"wheel contents differ from src/: extra {extra or '{}'}, missing {missing}")
    with tarfile.open(sdist) as archive:
        members = {m.name.split("/", 1)[-1] for m in archive.getmembers()}
    for needed in ("pyproject.toml", "README.md", "LICENSE", "src/hooks_tutorial/__init__.py"):
        if needed not in members:
            session.error(f"the sdist lacks {needed}")
    size = wheel.stat().st_size
    session.log(f"{wheel.name}: {len(package)} package files, {size / 1024:.0f} KiB")


@nox.session(default=False)
def build(session: nox.Session) -> None:
    """Build the sdist and wheel into dist/ and check them (twine, contents)."""
    session.install("build>=1.2", "twine>=6")
    shutil.rmtree(DIST, ignore_errors=True)
    session.run("python", "-m", "build", "--outdir", str(DIST), str(ROOT))
    session.run("twine", "check", "--strict", *(str(p) for p in sorted(DIST.iterdir())))
    (wheel,) = DIST.glob("*.whl")
    (sdist,) = DIST.glob("*.tar.gz")
    _check_wheel(session, wheel, sdist)


def _install_wheel(session: nox.Session) -> None:
    """Install the wheel in dist/, what its pages need, and a Jupyter kernel to run them.

    Needs torch in the session already (``shared_torch``).
    """
    wheels = sorted(DIST.glob("*.whl"))
    if not wheels or not (BUILD / "html" / "zh_CN" / "index.html").is_file():
        session.error("run `nox -s docs build` first (a built site and a wheel in dist/)")
    # the wheel, plus what the README tells readers to add: page 23's photos, page 37's nnsight
    session.install(str(wheels[-1]), "scikit-image>=0.22", "nnsight>=0.8.1,<0.9")
    # the version number stays 0.1.0 while the code changes: without this, a reused
    # environment keeps the wheel of an earlier `nox -s build` and runs the pages on it
    session.install("--force-reinstall", "--no-deps", str(wheels[-1]))
    session.install("nbclient>=0.10", "ipykernel>=6", "nbformat>=5")  # to run the notebooks
    session.run("python", "-m", "ipykernel", "install", "--sys-prefix", "--name", "python3")


def _run_downloads(session: nox.Session, *options: str) -> None:
    """Run tests/downloads/run_downloads.py on the built site, outside the clone."""
    session.chdir(session.create_tmp())  # not the clone: `import hooks_tutorial` is the wheel
    session.run(
        "python",
        str(ROOT / "tests" / "downloads" / "run_downloads.py"),
        str(BUILD / "html"),
        *options,
    )


@nox.session(default=False)
def downloads(session: nox.Session) -> None:
    """Check every download of both languages; run each page's code once, from the wheel.

    After ``nox -s docs`` and ``nox -s build``: the environment's only install
    of the project is the wheel in dist/ (plus scikit-image, which page 23
    needs, and a Jupyter kernel to run the notebooks). Each page's English
    notebook runs in an empty folder outside the clone; every other download
    is checked against it statically (the same code; see
    tests/downloads/run_downloads.py, whose ``--all`` runs every download),
    and no notebook's Markdown holds reST.
    """
    shared_torch(session)
    _install_wheel(session)
    _run_downloads(session, *session.posargs)


@nox.session(default=False)
def oldest(session: nox.Session) -> None:
    """Run the unit tests and every page's notebook on the oldest torch pyproject.toml allows.

    After ``nox -s docs build``, like ``downloads``, in an environment like
    its own but with torch and torchvision pinned to the floors of their
    requirements (``OLDEST_TORCH``, installed once per machine by
    ``shared_torch``), and the test and peers groups: first the unit tests
    and the docstrings' examples, on the clone's source (the wheel holds the
    same files: ``nox -s build`` checks it), then each page's English
    notebook, from the wheel, outside the clone. The notebooks hold no hidden
    checks: ``nox -s docs`` checks the pages' prose, on the newest torch (the
    pages that name torch 2.9 were checked on it by hand: run them with this
    session's Python).
    """
    shared_torch(session, OLDEST_TORCH, "torch-oldest")
    _install_wheel(session)
    session.install(*nox.project.dependency_groups(PYPROJECT, "test", "peers"))
    session.run("python", "-c", "import torch; print('torch', torch.__version__)")
    session.run(
        "pytest",
        "-n",
        "auto",
        "--dist",
        "worksteal",
        "-p",
        "no:cacheprovider",
        env={"PYTHONPATH": str(ROOT / "src")},
    )
    _run_downloads(session, *session.posargs)


@nox.session(default=False)
def bench(session: nox.Session) -> None:
    """Measure speed and memory (reports numbers; asserts nothing)."""
    install(session, "test", "peers")
    scripts = session.posargs or sorted(str(p) for p in (ROOT / "benchmarks").glob("bench_*.py"))
    for script in scripts:
        session.run("python", script)


if __name__ == "__main__":
    nox.main()
