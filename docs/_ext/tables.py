"""Tables on a phone: each body cell is named by its column's header (``data-label``).

Below 576 px, ``_static/custom.css`` lays each table row out as a card, its cells
one under the other (issue 33, item 2: the course notes' three-column tables were
549 and 618 px wide in a 358 px column, with a column two characters wide and a
row 1,047 px tall). A card's cells need their column's name, which only the
header row holds; CSS can show an attribute (``content: attr(data-label)``), so
after the build each body cell of a table with a header row gets its header's
text. No package does this: Sphinx's HTML writer writes no attributes of one's
own on table cells, and the theme only wraps tables in a scrolling container.
A table with merged cells (``colspan``, ``rowspan``) is left alone: its columns
cannot be counted from a row's cells; so is a table whose cells carry their own
label (the cheat sheet's ``p.cs-label``, written by ``cheatsheet.py``), which a
second label would repeat.
"""

from __future__ import annotations

import re
from html import escape, unescape
from pathlib import Path
from typing import Any

_TABLE = re.compile(r"<table\b.*?</table>", re.DOTALL)
_HEAD = re.compile(r"<thead>(.*?)</thead>", re.DOTALL)
_HEADER_CELL = re.compile(r"<th\b[^>]*>(.*?)</th>", re.DOTALL)
_BODY = re.compile(r"<tbody>.*?</tbody>", re.DOTALL)
_ROW = re.compile(r"<tr\b.*?</tr>", re.DOTALL)
_CELL_TAG = re.compile(r"<t[dh]\b(?![^>]*\bdata-label=)")
_TAG = re.compile(r"<[^>]*>")
_SPACE = re.compile(r"\s+")
_OWN_LABEL = 'class="cs-label"'  # cells that name their column themselves (the cheat sheet)


def _text(html: str) -> str:
    return _SPACE.sub(" ", unescape(_TAG.sub(" ", html))).strip()


def label_table(table: str) -> str:
    """One table's HTML with ``data-label`` on each body cell (unchanged without a header)."""
    head = _HEAD.search(table)
    if head is None or "colspan" in table or "rowspan" in table or _OWN_LABEL in table:
        return table
    rows = _ROW.findall(head.group(1))
    if len(rows) != 1:
        return table
    labels = [escape(_text(cell), quote=True) for cell in _HEADER_CELL.findall(rows[0])]

    def label_row(row: re.Match[str]) -> str:
        column = iter(labels)
        return _CELL_TAG.sub(
            lambda cell: f'{cell.group()} data-label="{next(column, "")}"', row.group()
        ).replace(' data-label=""', "")

    return _BODY.sub(lambda body: _ROW.sub(label_row, body.group()), table)


def label_tables(html: str) -> str:
    """Every table of a page, labelled by :func:`label_table`."""
    return _TABLE.sub(lambda table: label_table(table.group()), html)


def label_all_tables(app: Any, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    for page in Path(app.outdir).rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        if "<thead>" not in text:
            continue
        fixed = label_tables(text)
        if fixed != text:
            page.write_text(fixed, encoding="utf-8")


def setup(app: Any) -> dict[str, Any]:
    app.connect("build-finished", label_all_tables)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
