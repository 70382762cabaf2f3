"""Keep every page's index entries in the search index after an incremental build.

The search puts the page that teaches a term first through the page's
``.. index::`` entries, which Sphinx writes to ``searchindex.js`` as
``indexentries``. An incremental build (the second ``nox -s docs`` after an
edit) starts from the previous ``searchindex.js`` and adds the pages it writes
again, but it does not read the previous file's ``indexentries`` back
(sphinx-doc/sphinx#12599, open in Sphinx 9.0): after editing page 40 alone, the
English index held that page's 14 entries instead of 327, and searches such as
``register_forward_hook`` no longer found the page that teaches it first.

The entries of every page are also kept by the ``index`` domain of the build
environment, which an incremental build keeps. Before the search index is
written, :func:`restore_index_entries` gives each page that the indexer has no
entries for the entries the domain holds, turned into search terms the way
Sphinx's ``IndexBuilder.feed`` turns those of a page it writes.
"""

from __future__ import annotations

from typing import Any

from sphinx.application import Sphinx
from sphinx.util.index_entries import split_index_msg


def search_entries(entries: list[tuple[str, str, str, str, str | None]]) -> list[Any]:
    """The search index's ``(term, anchor, main)`` rows for one page's index entries."""
    rows: set[tuple[str, str, str]] = set()
    for entry_type, value, target_id, main, _category in entries:
        try:
            terms = split_index_msg(entry_type, value)
        except ValueError:
            continue
        if entry_type in {"see", "seealso"}:
            rows.add((terms[0], target_id or "", main))
        rows |= {(term, target_id or "", main) for term in terms}
    return sorted(rows)


def restore_index_entries(app: Sphinx) -> list[Any]:
    """Give the indexer the entries of the pages this build did not write again.

    Connected to ``html-collect-pages``, which the HTML builder emits before it
    writes ``searchindex.js``; adds no page.
    """
    indexed = getattr(getattr(app.builder, "indexer", None), "_index_entries", None)
    if not isinstance(indexed, dict):  # no search index, or a Sphinx that stores it otherwise
        return []
    domain_entries = app.env.get_domain("index").data.get("entries", {})
    for docname in sorted(app.env.all_docs):
        if docname not in indexed:
            indexed[docname] = search_entries(domain_entries.get(docname, []))
    return []


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("html-collect-pages", restore_index_entries)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
