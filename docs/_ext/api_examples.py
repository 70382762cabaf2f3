"""``.. tutorials-using:: name``: the tutorial pages that use an API object, as a list of links.

sphinx-gallery's ``minigallery`` shows them as thumbnails: on the API pages that
put up to 32 thumbnails (1.2 MiB) into pages that readers open for one
signature, and each thumbnail carries a ``tooltip`` attribute that HTML does
not have. sphinx-gallery has no list form, so this directive reads the same
backreferences (``backreferences_all.json``, written by sphinx-gallery before the
pages are read) and writes a heading and one ``:doc:`` link per page, in the
gallery's order. The thumbnails stay on the gallery's index pages.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective


def tutorial_pages(backreferences: dict[str, Any], name: str, src_dir: Path) -> list[str]:
    """The docnames of the gallery pages that use ``name``, sorted by file name."""
    pages = set()
    for entry in backreferences.get(name, []):
        filename, target_dir = entry[0], entry[2]
        folder = Path(target_dir).resolve().relative_to(src_dir.resolve()).as_posix()
        pages.add(f"/{folder}/{Path(filename).stem}")
    return sorted(pages, key=lambda page: page.rsplit("/", 1)[-1])


class TutorialsUsing(SphinxDirective):
    required_arguments = 1
    option_spec = {"heading-level": directives.unchanged}  # noqa: RUF012 (docutils' API)

    def run(self) -> list[Any]:
        conf = self.config.sphinx_gallery_conf
        src_dir = Path(conf["src_dir"])
        path = src_dir / conf["backreferences_dir"] / "backreferences_all.json"
        backreferences = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        name = self.arguments[0]
        pages = tutorial_pages(backreferences, name, src_dir)
        if not pages:
            return []
        heading = f"Examples using ``{name}``"
        lines = [heading, self.options.get("heading-level", "^") * len(heading), ""]
        lines += [f"- :doc:`{page}`" for page in pages]
        # inserted into the page's own input, so that the heading is a section title
        self.state_machine.insert_input(lines, self.get_source_info()[0])
        return []


def setup(app: Any) -> dict[str, Any]:
    app.add_directive("tutorials-using", TutorialsUsing)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
