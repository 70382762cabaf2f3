"""Run every downloadable script and notebook of the built site, as a reader would.

``nox -s downloads`` runs this in an environment where the only install of the
project is the built wheel (no clone on ``sys.path``): each ``.py`` runs with
``python`` and each ``.ipynb`` with a Jupyter kernel (nbclient), in both
languages, from an empty folder outside the repository. It also fails on a
notebook Markdown cell that still holds reST (a directive or a Sphinx role),
which Jupyter would show raw.

Usage: ``python tests/downloads/run_downloads.py docs/_build/html [--jobs 2] [-k plot_01]``
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
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


def run_one(path: Path, helpers: list[Path]) -> tuple[Path, float, str]:
    """Run one download in a fresh folder; '' on success, else what went wrong."""
    with tempfile.TemporaryDirectory(prefix="hooks-tutorial-download-") as tmp:
        for helper in helpers:
            shutil.copyfile(helper, Path(tmp) / helper.name)
        local = Path(tmp) / path.name
        shutil.copyfile(path, local)
        env = os.environ | {"MPLBACKEND": "Agg", "PYTHONPATH": ""}
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
    args = parser.parse_args()
    files = downloads(args.html, args.k)
    if not files:
        print(f"no downloads under {args.html}: run `nox -s docs` first")
        return 1
    import hooks_tutorial  # noqa: PLC0415 - the installed wheel, not the clone

    print(
        f"hooks_tutorial {hooks_tutorial.__version__} from {Path(hooks_tutorial.__file__).parent}"
    )
    failures = []
    for notebook in (f for f in files if f.suffix == ".ipynb"):
        for problem in rest_in_markdown(notebook):
            failures.append(f"{notebook}: reST left in a Markdown cell: {problem!r}")
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        helpers = companions(args.html)
        for path, seconds, error in pool.map(lambda f: run_one(f, helpers), files):
            rel = path.relative_to(args.html)
            print(f"{'ok  ' if not error else 'FAIL'} {seconds:6.1f} s  {rel}", flush=True)
            if error:
                failures.append(f"{rel} failed:\n{error}")
    for failure in failures:
        print(f"\n{failure}")
    print(f"\n{len(files)} downloads, {len(failures)} problems")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
