"""What ``sphinx-llm-friendly`` needs on this site: the gallery's nodes, offline, no button.

``sphinx_llm_friendly`` (the docs group) writes ``llms.txt`` and, for every page,
its Markdown twin (``<page>.md`` next to ``<page>.html``, announced by a
``<link rel="alternate" type="text/markdown">``) from the doctree the HTML
builder has just written: no second build, and the zh_CN build writes Chinese
twins. This module only fills its gaps:

- Markdown for the nodes its translator does not know (an unknown node is a
  warning, so an error under ``-W``), registered as its ``llm_markdown``
  translation handlers: sphinx-gallery's code cells (``code_links_block``: the
  code with links to the API pages; the twin gets the plain code in a
  ``python`` fence), its figures (``imgsgnode``: ``![alt](../../_images/...)``,
  the file the HTML page shows) and docutils' ``classifier`` (numpydoc's
  parameter types: ``**name** : type``). Raw HTML is left out (the translator
  would copy it as text).
- Two changes to a copy of the page's doctree, made just before the extension
  writes the twin from it (``prepare_twin`` wraps its writer): the gallery's
  thumbnails (raw HTML around an ``only:: html`` block that holds the link, so
  an index twin had no link at all) become list items with that link; and
  autosummary's tables (``autosummary_table`` is a docutils ``comment``, and
  the extension drops comments, so the API reference twin had no table)
  become plain tables. A copy, because other ``html-page-context`` handlers
  (OpenGraph's description) read the same doctree.
- Offline builds: at every build the extension asks each site of
  ``intersphinx_mapping`` over the network whether it serves Markdown
  (``index.md``), to link the twins to those Markdown pages. Python's and
  PyTorch's documentation do not; the answer is fixed to "no", so the twins do
  not depend on the network and link where the HTML pages link.
- Anchors kept: the extension wraps ``only:: html`` content in its own node,
  which takes over the ids of a target just before it (``.. _name:``) and
  writes no HTML for them, so "Go to the end" on every gallery page pointed
  at an id that no longer existed. The ids go back to the first element of
  that content, where Sphinx itself puts them.
- No "copy as Markdown" button: the extension adds one to every page's title
  with English-only labels (the zh_CN site is Chinese) and inline styles; the
  twin is one link away (``rel="alternate"``, ``llms.txt``).
"""

from __future__ import annotations

import posixpath
from typing import Any

import sphinx_llm_friendly
from docutils import nodes
from sphinx.application import Sphinx
from sphinx.ext.autosummary import autosummary_table
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging
from sphinx_gallery._doctree_links import code_links_block
from sphinx_gallery.directives import imgsgnode
from sphinx_llm_friendly import _intersphinx
from sphinx_llm_friendly._only import html_only

logger = logging.getLogger(__name__)

BUTTON_MARK = "scrapy-copy-as-markdown"  # the CSS class in the button's inline script
THUMBNAIL = 'class="sphx-glr-thumbcontainer"'


def visit_code_links_block(self: Any, node: nodes.Element) -> None:
    """A gallery code cell: its code in a fence (the links to the API pages dropped)."""
    language = node.get("lang", "").lower()  # sphinx-gallery writes "Python"
    code = node.astext()
    block = nodes.literal_block(code, code, language="" if language == "default" else language)
    block.walkabout(self)
    raise nodes.SkipNode


def visit_imgsgnode(self: Any, node: nodes.Element) -> None:
    """A gallery figure: the image the HTML page shows (copied to ``_images/`` by then)."""
    builder = self.builder
    target = f"{builder.imagedir}/{posixpath.basename(node['uri'])}"
    here = posixpath.dirname(builder.current_docname) or "."
    nodes.image(uri=posixpath.relpath(target, here), alt=node.get("alt", "")).walkabout(self)
    raise nodes.SkipNode


def visit_classifier(self: Any, node: nodes.Element) -> None:
    """A definition list term's type, as numpydoc's HTML shows it: ``name : type``."""
    del node
    self.add(" : ")


def visit_raw(self: Any, node: nodes.Element) -> None:
    """Raw HTML (the gallery's thumbnails) is markup, not text: only raw Markdown stays."""
    if "markdown" in node.get("format", "").split():
        self.add(node.astext())
    raise nodes.SkipNode


def prepare_twin(doctree: nodes.document) -> nodes.document:
    """A copy of the page's doctree with its thumbnails as links and its tables as tables.

    sphinx-gallery writes a thumbnail as raw HTML (``sphx-glr-thumbcontainer``)
    followed by an ``only:: html`` block with the image and the link, which the
    twin leaves out: the link becomes a list item ``[title](page)``. An
    autosummary table is wrapped in a node that the twin drops as a comment:
    the table is unwrapped.
    """
    doctree = doctree.deepcopy()
    for raw in list(doctree.findall(nodes.raw)):
        if THUMBNAIL not in raw.astext():
            continue
        block = raw.next_node(descend=False, siblings=True)
        link = next(block.findall(nodes.reference), None) if block is not None else None
        if link is not None:
            item = nodes.list_item("", nodes.paragraph("", "", link.deepcopy()))
            block.replace_self(nodes.bullet_list("", item))
    for table in list(doctree.findall(autosummary_table)):
        table.replace_self(table.children)
    return doctree


class KeepAnchors(SphinxPostTransform):
    """Give the ids of an ``html_only`` node to its first element, which the HTML writes.

    Sphinx replaces an ``only`` node by its content and so moves the ids of a
    target before it to the content's first element; sphinx-llm-friendly's
    ``html_only`` keeps them on itself, and its HTML visitor writes nothing.
    """

    default_priority = 55  # after sphinx-llm-friendly splits the only nodes (49)
    formats = ("html",)

    def run(self, **kwargs: Any) -> None:
        del kwargs
        for node in self.document.findall(html_only):
            first = next((c for c in node.children if isinstance(c, nodes.Element)), None)
            if node["ids"] and first is not None:
                first["ids"] = [*node["ids"], *first["ids"]]
                node["ids"] = []


def _pass(self: Any, node: nodes.Element) -> None:
    del self, node


def _patch(module: Any, name: str, make: Any) -> None:
    """Replace ``module.name`` (an internal of sphinx-llm-friendly) by ``make(original)``."""
    original = getattr(module, name, None)
    if getattr(original, "markdown_twins", False):  # patched by an earlier Sphinx app
        return
    if not callable(original):
        logger.warning(
            "markdown_twins: %s.%s is gone; check this version of sphinx-llm-friendly "
            "and adapt docs/_ext/markdown_twins.py",
            module.__name__,
            name,
        )
        return
    patched = make(original)
    patched.markdown_twins = True
    setattr(module, name, patched)


def _writer_with_prepare(write: Any) -> Any:
    def write_markdown(app: Sphinx, docname: str, doctree: nodes.document) -> None:
        write(app, docname, prepare_twin(doctree))

    return write_markdown


def drop_copy_button(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    del app, pagename, templatename, doctree
    scripts = context.get("script_files")
    if isinstance(scripts, list):  # in place: other handlers add this page's scripts to it
        scripts[:] = [
            js for js in scripts if js.filename or BUTTON_MARK not in js.attributes.get("body", "")
        ]


def setup(app: Sphinx) -> dict[str, Any]:
    handlers = app.registry.add_translation_handlers
    handlers(code_links_block, llm_markdown=(visit_code_links_block, None))
    handlers(imgsgnode, llm_markdown=(visit_imgsgnode, None))
    handlers(nodes.classifier, llm_markdown=(visit_classifier, _pass))
    handlers(nodes.raw, llm_markdown=(visit_raw, None))
    app.add_post_transform(KeepAnchors)
    # the twins link where the HTML pages link, without asking the network (see above)
    _patch(_intersphinx, "_supports_markdown", lambda _original: lambda _url: False)
    # the extension's html-page-context handler calls its module's write_markdown
    _patch(sphinx_llm_friendly, "write_markdown", _writer_with_prepare)
    app.connect("html-page-context", drop_copy_button, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
