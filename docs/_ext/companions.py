"""Helper scripts in the zips of the gallery pages that need them.

A page may import a helper that lives next to it (page 30 imports ``_launch.py``,
which starts ``_ddp_worker.py`` in every process). sphinx-gallery neither runs
such files as pages (``ignore_pattern``) nor puts them in any zip, so a reader
who downloaded a page's zip, or the "download all" zips, could not run it. No
sphinx-gallery option adds files to its zips; this extension does, after
sphinx-gallery has written them: every ``_name.py`` in a page's folder that the
page names (``_launch``, ``_ddp_worker.py``) goes into the page's zip, and into
the two "download all" zips next to the page. Helpers are code, so the
translated zips (``localized_downloads``) carry them unchanged.
"""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx

HELPER = re.compile(r"^_\w+\.py$")


def companions(script: Path) -> list[Path]:
    """The helper scripts in ``script``'s folder that ``script`` names, by name."""
    text = script.read_text(encoding="utf-8")
    return [
        helper
        for helper in sorted(script.parent.glob("_*.py"))
        if HELPER.match(helper.name) and re.search(rf"\b{re.escape(helper.stem)}\b", text)
    ]


def add_to_zip(archive: Path, files: dict[str, bytes], next_to: str) -> bool:
    """Add ``files`` (member name -> bytes) to ``archive``; False if already there.

    The new members take the date of the member ``next_to`` (the page's script),
    so that the zip does not change from one build to the next.
    """
    with zipfile.ZipFile(archive) as old:
        infos = old.infolist()
        if all(name in old.namelist() and old.read(name) == data for name, data in files.items()):
            return False
        members = [(info, old.read(info)) for info in infos if info.filename not in files]
    date = next((i.date_time for i, _ in members if i.filename == next_to), (1980, 1, 1, 0, 0, 0))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as new:
        for info, data in members:
            new.writestr(info, data)
        for name, data in files.items():
            new.writestr(zipfile.ZipInfo(name, date_time=date), data)
    archive.write_bytes(buffer.getvalue())
    return True


def add_companions(app: Sphinx) -> None:
    conf = getattr(app.config, "sphinx_gallery_conf", None)
    if not conf:
        return
    srcdir = Path(app.srcdir)
    for examples, gallery in zip(conf["examples_dirs"], conf["gallery_dirs"], strict=True):
        examples_dir, gallery_dir = (srcdir / examples).resolve(), srcdir / gallery
        for script in sorted(examples_dir.rglob("plot_*.py")):
            helpers = companions(script)
            if not helpers:
                continue
            folder = script.parent.relative_to(examples_dir).as_posix()
            page_zip = gallery_dir / folder / f"{script.stem}.zip"
            if page_zip.is_file():
                files = {h.name: h.read_bytes() for h in helpers}
                add_to_zip(page_zip, files, script.name)
            for kind, suffix in (("python", ".py"), ("jupyter", ".ipynb")):
                all_zip = gallery_dir / f"{gallery_dir.name}_{kind}.zip"
                if all_zip.is_file():
                    files = {f"{folder}/{h.name}": h.read_bytes() for h in helpers}
                    add_to_zip(all_zip, files, f"{folder}/{script.stem}{suffix}")


def setup(app: Sphinx) -> dict[str, Any]:
    # after sphinx-gallery wrote the zips (builder-inited, priority 500) and
    # before localized_downloads translates them (priority 900)
    app.connect("builder-inited", add_companions, priority=800)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
