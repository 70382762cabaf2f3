"""Each tutorial page shows its number before its title: "15. Train a CNN's last layer ...".

The pages cite each other by number ("page 18 checks this", "第 18 页"), and the
number is the one in the page's file name (``plot_18_cam_family.py``, and
``plot_18b_measuring_cams.py`` is page 18b). Without this extension no title,
sidebar entry or link showed it.

The number goes into the page's title itself, after the title is translated,
as ``<span class="page-number">15. </span>`` (like Sphinx's own section
numbers): so every place that shows the title shows the number too, in both
languages, with nothing to keep in step: the heading, the browser tab, the
sidebar, the theme's previous/next links, every ``:doc:`` link to the page (the
prerequisites, the course notes' tables) and the search results. The English
titles in the sources and the catalogs stay as they are: the gettext builder
gets no numbers, so no message changes.

No package does this: Sphinx numbers sections by their place in the table of
contents (``:numbered:``), which would give page 18b the number 19 and renumber
the pages whenever one is added; the numbers here are the ones the prose cites.
"""

from __future__ import annotations

import re
from typing import Any

from docutils import nodes
from sphinx.transforms import SphinxTransform

PAGE = re.compile(r"^auto_examples/[^/]+/plot_0*(\d+[a-z]?)_[^/]*$")


def page_number(docname: str) -> str | None:
    """``"auto_examples/04_grad_cam/plot_18b_measuring_cams"`` -> ``"18b"``; else None."""
    match = PAGE.match(docname)
    return match.group(1) if match else None


class NumberTitle(SphinxTransform):
    """Put the page's number before the page's title (its first section's title)."""

    # after the translation (sphinx.transforms.i18n.Locale, 20), before the domains and
    # the title collector record the title (SphinxDomains 850, doctree-read 880)
    default_priority = 840

    def apply(self, **kwargs: Any) -> None:
        del kwargs
        if self.app.builder.format != "html":  # gettext: the messages stay as written
            return
        number = page_number(self.env.docname)
        section = next(iter(self.document.findall(nodes.section)), None)
        if number is None or section is None or not isinstance(section[0], nodes.title):
            return
        title = section[0]
        first = title[0] if title.children else None
        if isinstance(first, nodes.inline) and "page-number" in first["classes"]:
            return  # already numbered
        title.insert(0, nodes.inline("", f"{number}. ", classes=["page-number"]))


def setup(app: Any) -> dict[str, Any]:
    app.add_transform(NumberTitle)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
