"""Notebooks that read well in Jupyter: reST prose converted to Markdown by pandoc.

The job: sphinx-gallery's own converter leaves Sphinx roles and directives as
raw reST in the notebooks (``:doc:``, ``.. dropdown::``, ``.. math::``); with
its ``pypandoc`` option it runs one pandoc process per text block (about 500
per language, a minute of a build), and pandoc then sees each block alone, so
every block's first title became a level-1 heading. This module lets
sphinx-gallery write its notebooks, then converts each notebook's prose with
one pandoc call: the page's text blocks (from the script, through sphinx-gallery's
public ``split_code_and_text_blocks``) joined by a marker, converted together
with ``notebook_md.lua``, a filter for what pandoc does not know (Sphinx roles
become links to the hosted pages, dropdowns become ``<details>``), and split
again into the Markdown cells. A notebook records a hash of what it was made
from, so an unchanged page is not converted again. It runs for the English
and, through ``localized_downloads``, the Chinese notebooks. No package does
this: pandoc reads reST but not Sphinx's roles, and sphinx-gallery only calls
pandoc block by block.

pandoc comes with the ``pypandoc_binary`` wheel (docs dependency group).
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import json
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from babel.messages.pofile import read_po
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.util import logging

logger = logging.getLogger(__name__)

HERE = Path(__file__).parent
FILTER = HERE / "notebook_md.lua"
# pandoc Markdown that Jupyter renders: pipe tables, $math$, raw HTML; none of
# pandoc's own attribute and div syntax
MARKDOWN = "markdown" + "".join(
    f"-{ext}"
    for ext in (
        "grid_tables",
        "simple_tables",
        "multiline_tables",
        "fenced_divs",
        "bracketed_spans",
        "header_attributes",
        "fenced_code_attributes",
        "inline_code_attributes",
        "link_attributes",
        "raw_attribute",
        "smart",
    )
)


def _title(text: str) -> str | None:
    """The first reST/Markdown title in ``text``."""
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("# "):
            return line[2:].strip()
        if line and not line.startswith((".. ", ":", "(")):
            return line
    return None


def page_titles(srcdir: Path, examples: Path) -> dict[str, str]:
    """English titles of the example pages and the Markdown pages, by docname."""
    titles: dict[str, str] = {}
    for script in sorted(examples.glob("*/plot_*.py")):
        docstring = ast.get_docstring(ast.parse(script.read_text(encoding="utf-8"))) or ""
        title = _title(docstring)
        if title:
            titles[f"auto_examples/{script.parent.name}/{script.stem}"] = title
    for page in sorted(srcdir.glob("*.md")):
        title = _title(page.read_text(encoding="utf-8"))
        if title:
            titles[page.stem] = title
    titles.setdefault("api", "API reference")
    return titles


def api_objects() -> list[str]:
    """The names that have their own API page (docs/api.rst's autosummary tables)."""
    import hooks_tutorial  # noqa: PLC0415 - the docs build has it; the unit tests may not need it
    from hooks_tutorial import metrics  # noqa: PLC0415

    names = [
        f"hooks_tutorial.{name}"
        for name in hooks_tutorial.__all__
        if name != "__version__" and not inspect.ismodule(getattr(hooks_tutorial, name))
    ]
    return sorted(names + [f"hooks_tutorial.metrics.{name}" for name in metrics.__all__])


def translate_titles(titles: dict[str, str], catalogs: Path) -> dict[str, str]:
    """Each title through its page's catalog (the English title where none)."""
    out = {}
    for docname, title in titles.items():
        po = catalogs / f"{docname}.po"
        translated = None
        if po.is_file():
            with po.open("rb") as f:
                for message in read_po(f):
                    if message.id == title and message.string and not message.fuzzy:
                        translated = str(message.string)
                        break
        out[docname] = translated or title
    return out


CELL_BREAK = "<!-- hooks-tutorial: next cell -->"
_BREAK_REST = f"\n\n.. raw:: html\n\n   {CELL_BREAK}\n\n"


def text_blocks(script: str) -> list[str]:
    """The reST of a gallery script's text blocks (its docstring first), in order."""
    from sphinx_gallery.py_source_parser import split_code_and_text_blocks  # noqa: PLC0415

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "example.py"
        path.write_text(script, encoding="utf-8")
        _, blocks = split_code_and_text_blocks(str(path))
    return [content for label, content, _ in blocks if label == "text"]


def convert_prose(notebook: dict[str, Any], script: str, extra_args: list[str]) -> bool:
    """Give the notebook's Markdown cells the script's text blocks, converted by pandoc.

    One pandoc call for the whole page. Returns False (and changes nothing) when
    the Markdown cells do not correspond to the script's text blocks.
    """
    import pypandoc  # noqa: PLC0415 - a docs dependency, not the unit tests'

    cells = [c for c in notebook["cells"] if c["cell_type"] == "markdown"]
    blocks = text_blocks(script)
    if len(cells) != len(blocks):
        return False
    markdown = pypandoc.convert_text(
        _BREAK_REST.join(blocks), to="md", format="rst", extra_args=extra_args
    )
    parts = markdown.split(CELL_BREAK)
    if len(parts) != len(cells):
        return False
    for cell, part in zip(cells, parts, strict=True):
        cell["source"] = part.strip("\n") + "\n"
    return True


def stamp(script: str, extra_args: list[str]) -> str:
    """A hash of everything a notebook's prose is made from (script, filter, links, pandoc)."""
    import pypandoc  # noqa: PLC0415

    parts = [script, pypandoc.get_pandoc_version(), *map(_with_contents, extra_args)]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def _with_contents(arg: str) -> str:
    """A pandoc option that names one of our files, with the file's contents instead."""
    for option in ("--lua-filter=", "--metadata=links_file:"):
        if arg.startswith(option):
            return option + Path(arg.removeprefix(option)).read_text(encoding="utf-8")
    return arg


def prose_notebook(notebook: dict[str, Any], script: str, extra_args: list[str]) -> bool:
    """Convert the notebook's prose unless its stamp says it is done; True if it changed."""
    key = stamp(script, extra_args)
    metadata = notebook.setdefault("metadata", {})
    if metadata.get(STAMP) == key:
        return False
    if not convert_prose(notebook, script, extra_args):
        msg = "its Markdown cells do not match the script's text blocks"
        raise ValueError(msg)
    metadata[STAMP] = key
    return True


STAMP = "hooks_tutorial_prose"  # notebook metadata: the stamp of its converted prose


def convert_gallery_notebooks(app: Sphinx) -> None:
    """Convert the prose of the notebooks sphinx-gallery wrote, and in its zips."""
    args = app.config.notebook_pandoc_args
    for gallery in app.config.sphinx_gallery_conf["gallery_dirs"]:
        root = Path(app.srcdir) / gallery
        fixed = {}
        for path in sorted(root.glob("*/*.ipynb")):
            script = path.with_suffix(".py")
            if not script.is_file():
                continue
            notebook = json.loads(path.read_text(encoding="utf-8"))
            try:
                changed = prose_notebook(notebook, script.read_text(encoding="utf-8"), args)
            except ValueError as error:
                logger.warning("notebooks: %s: %s", path, error)
                continue
            if changed:
                path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")
            data = path.read_bytes()
            update_zip(path.with_suffix(".zip"), {path.name: data})
            fixed[path.relative_to(root).as_posix()] = data
        update_zip(root / f"{root.name}_jupyter.zip", fixed)  # "Download all examples"


def update_zip(archive: Path, members: dict[str, bytes]) -> None:
    """Make the ``members`` of ``archive`` hold these bytes (dates and compression kept).

    sphinx-gallery zips each example's notebook, and all of them for "Download
    all examples", before this module fixes the notebooks' headings; the zips
    must hold the notebooks readers download.
    """
    if not archive.is_file():
        return
    with zipfile.ZipFile(archive) as old:
        content = [(info, old.read(info)) for info in old.infolist()]
    if all(members.get(info.filename, data) == data for info, data in content):
        return
    with zipfile.ZipFile(archive, "w") as new:
        for info, data in content:
            new.writestr(info, members.get(info.filename, data))


def configure_notebooks(app: Sphinx, config: Config) -> None:
    """Point sphinx-gallery's pandoc conversion at our filter and this build's pages."""
    gallery_conf: dict[str, Any] = config.sphinx_gallery_conf
    srcdir = Path(app.srcdir)
    examples = (srcdir / gallery_conf["examples_dirs"][0]).resolve()
    titles = page_titles(srcdir, examples)
    language = config.language or "en"
    if language != "en":
        for locale_dir in config.locale_dirs:
            titles = translate_titles(titles, srcdir / locale_dir / language / "LC_MESSAGES")
    site = config.html_baseurl.rstrip("/") + "/"  # bilingual.py: root + language
    meta = {"site": site, "api": f"{site}api.html", "objects": api_objects(), "titles": titles}
    path = Path(app.doctreedir) / "notebook_links.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(meta, ensure_ascii=False, indent=1), encoding="utf-8")
    gallery_conf["pypandoc"] = False  # its own quick converter; convert_prose replaces it
    config.notebook_pandoc_args = pandoc_args(path)


def pandoc_args(links: Path) -> list[str]:
    """pandoc's options for notebook prose, with ``links`` the JSON file of link targets."""
    return [
        f"--to={MARKDOWN}",  # after sphinx-gallery's --to=md: the last one wins
        "--wrap=none",  # a line break between Chinese characters shows as a space
        f"--lua-filter={FILTER}",
        # the filter reads the file itself: --metadata-file would have pandoc parse
        # every value as Markdown, which made each call about 4 times slower
        f"--metadata=links_file:{links}",
    ]


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("notebook_pandoc_args", [], "", types=(list,))
    # after bilingual.configure_site (priority 100) set html_baseurl per language
    app.connect("config-inited", configure_notebooks, priority=200)
    # after sphinx-gallery wrote the notebooks (builder-inited, priority 500),
    # before localized_downloads (900) makes the Chinese ones
    app.connect("builder-inited", convert_gallery_notebooks, priority=800)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
