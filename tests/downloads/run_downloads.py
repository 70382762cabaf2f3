"""Check every downloadable script and notebook of the built site; run each page's code once.

``nox -s downloads`` runs this in an environment where the only install of the
project is the built wheel (no clone on ``sys.path``).

Statically, on every download of both languages:

- no notebook Markdown cell holds reST (a directive or a Sphinx role), which
  Jupyter would show raw;
- each page's Chinese script and notebook hold the same code as the English
  ones, and the English notebook the same code as the English script (the
  syntax trees without docstrings, which are prose like the comments);
- the helper modules a page links (``_ddp_worker.py``) are the same in both
  languages, and every zip holds the same files as the page's own downloads.

Then each page's English notebook runs once, with a Jupyter kernel (nbclient),
from an empty folder outside the repository, as a reader runs it: that runs the
code every other download of the page holds, and proves the notebook works.
``--all`` runs every script (``python``) and notebook of both languages instead.

Usage: ``python tests/downloads/run_downloads.py docs/_build/html [--jobs 2] [-k plot_01] [--all]``
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REST = re.compile(r"^\s*\.\. [\w:-]+::|(?<![\w`]):[\w:]+:`", flags=re.MULTILINE)
TIMEOUT = 600  # seconds for one download; a hang fails instead of blocking CI


def downloads(html: Path, pattern: str) -> list[Path]:
    found = []
    for language in ("en", "zh_CN"):
        root = html / language / "_downloads"
        found += [
            p
            for p in sorted(root.rglob("*"))
            if p.suffix in {".py", ".ipynb"} and pattern in p.name and not p.name.startswith("_")
        ]
    return found


def companions(html: Path) -> list[Path]:
    """Modules a page links for download and imports (``_ddp_worker.py``): a reader
    keeps them next to the script, so every run gets them."""
    return sorted(p for p in html.glob("*/_downloads/**/_*.py") if p.is_file())


def rest_in_markdown(notebook: Path) -> list[str]:
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    problems = []
    for cell in cells:
        if cell["cell_type"] != "markdown":
            continue
        text = "".join(cell["source"])
        problems += [m.group(0).strip() for m in REST.finditer(text)]
    return problems


def script_code(source: str | bytes) -> str:
    """Code without its prose: the syntax tree (no comments) without docstrings.

    The module docstring is the page's introduction; the zh_CN downloads translate the
    comments and the functions' and classes' docstrings (docs/_ext/code_comments.py).
    """
    tree = ast.parse(source)
    for node in [tree, *ast.walk(tree)]:
        if not isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        first = node.body[0] if node.body else None
        value = first.value if isinstance(first, ast.Expr) else None
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            node.body = node.body[1:] or [ast.Pass()]
    return ast.dump(tree)


def code_cells(notebook: bytes) -> list[str]:
    return ["".join(c["source"]) for c in json.loads(notebook)["cells"] if c["cell_type"] == "code"]


def uncommented(cells: list[str]) -> list[str]:
    """Each cell's code without its prose (``script_code``): the zh_CN pages translate it."""
    return [script_code(cell) for cell in cells]


def same_code(files: list[Path], html: Path) -> list[str]:
    """Every page's downloads hold the English notebook's code; problems, if any."""
    by_name = {(f.relative_to(html).parts[0], f.name): f for f in files}
    problems = []
    for (language, name), english in sorted(by_name.items()):
        if language != "en" or english.suffix != ".ipynb":
            continue
        cells = code_cells(english.read_bytes())
        stem = name.removesuffix(".ipynb")
        script = by_name.get(("en", f"{stem}.py"))
        if script is None:
            problems.append(f"{name}: no English script next to the notebook")
        elif script_code(script.read_bytes()) != script_code("\n".join(cells)):
            problems.append(f"{script.name}: the English script's code differs from its notebook's")
        zh_notebook, zh_script = by_name.get(("zh_CN", name)), by_name.get(("zh_CN", f"{stem}.py"))
        if zh_notebook is None or zh_script is None:
            problems.append(f"{stem}: a Chinese download is missing")
            continue
        if uncommented(code_cells(zh_notebook.read_bytes())) != uncommented(cells):
            problems.append(f"zh_CN {name}: its code cells differ from the English notebook's")
        if script and script_code(zh_script.read_bytes()) != script_code(script.read_bytes()):
            problems.append(f"zh_CN {stem}.py: its code differs from the English script's")
    return problems


def _content(name: str, data: bytes) -> object:
    """What a download holds: a script's bytes, a notebook's cells (not its JSON layout)."""
    if not name.endswith(".ipynb"):
        return data
    return [(c["cell_type"], "".join(c["source"])) for c in json.loads(data)["cells"]]


def same_helpers_and_zips(html: Path) -> list[str]:
    """Helpers are the same in both languages; each zip member holds what that download does."""
    problems = []
    helpers: dict[str, set[bytes]] = {}
    for helper in companions(html):
        helpers.setdefault(helper.name, set()).add(helper.read_bytes())
    problems += [
        f"{name} differs between the languages" for name, v in helpers.items() if len(v) > 1
    ]
    for language in ("en", "zh_CN"):
        root = html / language / "_downloads"
        own = {
            p.name: _content(p.name, p.read_bytes())
            for p in root.rglob("*")
            if p.suffix in {".py", ".ipynb"}
        }
        for archive in sorted(root.rglob("*.zip")):
            with zipfile.ZipFile(archive) as z:
                for member in z.namelist():
                    name = Path(member).name
                    if name not in own:
                        problems.append(
                            f"{language} {archive.name}: {member} is no page's download"
                        )
                    elif _content(name, z.read(member)) != own[name]:
                        problems.append(f"{language} {archive.name}: {member} differs from {name}")
    return problems


def run_one(path: Path, helpers: list[Path], threads: int) -> tuple[Path, float, str]:
    """Run one download in a fresh folder; '' on success, else what went wrong.

    ``threads`` is torch's thread count for it (``OMP_NUM_THREADS``): the runs
    share the machine's cores. Two runs of two threads each on two cores
    contend: pages 34 and 36 took 20 s each that way, against 5-7 s with one
    thread each.
    """
    with tempfile.TemporaryDirectory(prefix="hooks-tutorial-download-") as tmp:
        for helper in helpers:
            shutil.copyfile(helper, Path(tmp) / helper.name)
        local = Path(tmp) / path.name
        shutil.copyfile(path, local)
        env = os.environ | {"MPLBACKEND": "Agg", "PYTHONPATH": "", "OMP_NUM_THREADS": str(threads)}
        if path.suffix == ".py":
            command = [sys.executable, local.name]
        else:
            code = (
                "import sys, nbformat\n"
                "from nbclient import NotebookClient\n"
                "nb = nbformat.read(sys.argv[1], as_version=4)\n"
                f"NotebookClient(nb, timeout={TIMEOUT}, kernel_name='python3',"
                " resources={'metadata': {'path': '.'}}).execute()\n"
            )
            command = [sys.executable, "-c", code, local.name]
        start = time.perf_counter()
        try:
            done = subprocess.run(
                command,
                check=False,
                cwd=tmp,
                env=env,
                capture_output=True,
                text=True,
                timeout=TIMEOUT + 30,
            )
        except subprocess.TimeoutExpired:
            return path, time.perf_counter() - start, f"timed out after {TIMEOUT} s"
        seconds = time.perf_counter() - start
        if done.returncode != 0:
            return path, seconds, (done.stdout + done.stderr)[-3000:]
        return path, seconds, ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("html", type=Path, help="the built site (docs/_build/html)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("-k", default="", help="only files whose name contains this")
    parser.add_argument(
        "--all", action="store_true", help="run every script and notebook of both languages"
    )
    args = parser.parse_args()
    files = downloads(args.html, args.k)
    if not files:
        print(f"no downloads under {args.html}: run `nox -s docs` first")
        return 1
    english_notebooks = [
        f for f in files if f.suffix == ".ipynb" and f.relative_to(args.html).parts[0] == "en"
    ]
    to_run = files if args.all else english_notebooks
    import hooks_tutorial  # noqa: PLC0415 - the installed wheel, not the clone

    print(
        f"hooks_tutorial {hooks_tutorial.__version__} from {Path(hooks_tutorial.__file__).parent}"
    )
    failures = []
    for notebook in (f for f in files if f.suffix == ".ipynb"):
        for problem in rest_in_markdown(notebook):
            failures.append(f"{notebook}: reST left in a Markdown cell: {problem!r}")
    failures += same_code(files, args.html)
    failures += same_helpers_and_zips(args.html)
    print(
        f"checked {len(files)} downloads: no reST in the notebooks' Markdown, the same code "
        f"in every download of a page, the same files in the zips ({len(failures)} problems)"
    )
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        helpers = companions(args.html)
        threads = max(1, (os.cpu_count() or 1) // args.jobs)
        for path, seconds, error in pool.map(lambda f: run_one(f, helpers, threads), to_run):
            rel = path.relative_to(args.html)
            print(f"{'ok  ' if not error else 'FAIL'} {seconds:6.1f} s  {rel}", flush=True)
            if error:
                failures.append(f"{rel} failed:\n{error}")
    for failure in failures:
        print(f"\n{failure}")
    print(f"\n{len(files)} downloads checked, {len(to_run)} run, {len(failures)} problems")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
