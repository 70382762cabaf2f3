"""Notebooks that read well in Jupyter: reST prose converted to Markdown by pandoc.

sphinx-gallery's own converter (``pypandoc: False``) leaves Sphinx roles and
directives as raw reST in the notebooks (``:doc:``, ``.. dropdown::``,
``.. math::``). With ``pypandoc`` set it hands each text block to pandoc; this
extension turns that on for the build's language, with ``notebook_md.lua``, a
filter for what pandoc does not know (Sphinx roles become links to the hosted
pages, dropdowns become ``<details>``). It runs for the English and, through
``localized_downloads``, the Chinese notebooks. No package does this: pandoc
reads reST but not Sphinx's roles, and sphinx-gallery only calls pandoc.

pandoc comes with the ``pypandoc_binary`` wheel (docs dependency group).
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import json
import os
import re
import zipfile
from collections.abc import Iterable
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


ADORNMENT = re.compile(r"""^([=\-`:.'"~^_*+#<>])\1{2,}\s*$""")
HEADING = re.compile(r"^(#{1,6}) (?=\S)")


def title_levels(script: str) -> list[int]:
    """The level of each reST title in a gallery script, in order (1 = the page title).

    Levels follow the order in which adornment styles first appear, as in
    reST. pandoc sees one text block at a time, so in the notebooks every
    block's first title style would become level 1 without this.
    """
    lines = [
        "" if re.match(r"^(#{20,}|# ?%%)", line) else re.sub(r"^# ?", "", line)
        for line in script.splitlines()  # block separators are not adornments
    ]
    styles: list[tuple[str, bool]] = []
    levels = []
    i = 0
    while i < len(lines) - 1:
        text, under = lines[i].strip(), lines[i + 1].strip()
        # an underline is at least as long as its title ('"""' closing a docstring is not)
        if (
            text
            and not ADORNMENT.match(text)
            and ADORNMENT.match(under)
            and len(under) >= len(text)
        ):
            above = lines[i - 1].strip() if i > 0 else ""
            over = bool(ADORNMENT.match(above)) and above[0] == under[0]
            style = (under[0], over)
            if style not in styles:
                styles.append(style)
            levels.append(styles.index(style) + 1)
            i += 2
            continue
        i += 1
    return levels


def fix_heading_levels(notebook: dict[str, Any], script: str) -> bool:
    """Give the Markdown headings of ``notebook`` the levels of the script's titles.

    Returns False (and changes nothing) when the headings do not correspond.
    """
    levels = title_levels(script)
    places = []
    for cell in notebook["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        fenced = False
        for number, line in enumerate(source.split("\n")):
            if line.startswith("```"):
                fenced = not fenced
            elif not fenced and HEADING.match(line):
                places.append((cell, number))
    if len(places) != len(levels):
        return False
    for (cell, number), level in zip(places, levels, strict=True):
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        rows = source.split("\n")
        rows[number] = HEADING.sub("#" * level + " ", rows[number], count=1)
        text = "\n".join(rows)
        cell["source"] = (
            text.splitlines(keepends=True) if isinstance(cell["source"], list) else text
        )
    return True


def fix_gallery_notebooks(app: Sphinx) -> None:
    """Correct the heading levels of the notebooks sphinx-gallery wrote, and in its zips."""
    gallery_conf = app.config.sphinx_gallery_conf
    if not gallery_conf.get("pypandoc"):
        return
    for gallery in gallery_conf["gallery_dirs"]:
        root = Path(app.srcdir) / gallery
        fixed = {}
        for path in sorted(root.glob("*/*.ipynb")):
            script = path.with_suffix(".py")
            if not script.is_file():
                continue
            notebook = json.loads(path.read_text(encoding="utf-8"))
            before = json.dumps(notebook)
            if not fix_heading_levels(notebook, script.read_text(encoding="utf-8")):
                logger.warning("notebooks: headings of %s do not match its script's titles", path)
                continue
            if json.dumps(notebook) != before:
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
    gallery_conf["pypandoc"] = {"extra_args": pandoc_args(path)}
    _cache_pandoc()


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


def pandoc_cache() -> Path:
    """Where converted blocks are kept: ``pandoc/`` in the cache folder (README).

    The cache folder is ``$HOOKS_TUTORIAL_CACHE`` if set and not empty, else
    ``$XDG_CACHE_HOME/hooks_tutorial``, else ``~/.cache/hooks_tutorial``.
    """
    folder = os.environ.get("HOOKS_TUTORIAL_CACHE")
    if not folder:
        xdg = os.environ.get("XDG_CACHE_HOME")
        folder = str(Path(xdg or Path.home() / ".cache") / "hooks_tutorial")
    return Path(folder).expanduser() / "pandoc"


def _with_contents(arg: str) -> str:
    """A pandoc option that names one of our files, with the file's contents instead."""
    for option in ("--lua-filter=", "--metadata=links_file:"):
        if arg.startswith(option):
            return option + Path(arg.removeprefix(option)).read_text(encoding="utf-8")
    return arg


def _cache_pandoc() -> None:
    """Make ``pypandoc.convert_text`` (which sphinx-gallery calls) reuse earlier conversions.

    Each text block is one pandoc process, about 800 per site build. The
    result depends only on the inputs, so it is kept in a file named by a hash
    of all of them: the block, the options, the contents of the filter and of
    the links file, and pandoc's version. A changed page or filter misses the
    cache and is converted again; nothing is ever served stale.
    """
    import pypandoc  # noqa: PLC0415 - a docs dependency, not the unit tests'

    convert = pypandoc.convert_text
    if getattr(convert, "cached", False):
        return

    def convert_text(
        source: str, to: str, format: str, extra_args: Iterable[str] = (), **kwargs: Any
    ) -> str:
        args = list(extra_args)
        parts = [source, to, format, repr(sorted(kwargs.items())), pypandoc.get_pandoc_version()]
        parts += [_with_contents(arg) for arg in args]
        key = hashlib.sha256("\0".join(parts).encode()).hexdigest()
        path = pandoc_cache() / key[:2] / f"{key}.md"
        if path.is_file():
            return path.read_text(encoding="utf-8")
        text: str = convert(source, to, format, extra_args=args, **kwargs)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        partial.write_text(text, encoding="utf-8")
        partial.replace(path)  # atomic: another build never reads half a file
        return text

    convert_text.cached = True  # type: ignore[attr-defined]
    pypandoc.convert_text = convert_text


def setup(app: Sphinx) -> dict[str, Any]:
    # after bilingual.configure_site (priority 100) set html_baseurl per language
    app.connect("config-inited", configure_notebooks, priority=200)
    # after sphinx-gallery wrote the notebooks (builder-inited, priority 500),
    # before localized_downloads (900) makes the Chinese ones
    app.connect("builder-inited", fix_gallery_notebooks, priority=800)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
