"""The hook cheat sheet (``docs/cheatsheet.md``): its tables, drawn from ``docs/cheatsheet.toml``.

``tests/test_cheatsheet.py`` checks every row of that file on the installed torch,
so the page and the checks share one source and the sheet cannot drift from
PyTorch unnoticed. No package turns data into a table whose cells are translated
like the page's own prose, so this directive does it:

- ``.. hooks-cheatsheet:: GROUP`` writes the table of one group of rows, then the
  group's notes. Each row's ``id`` is its anchor (``#hook-<id>``). The English
  text of the cells is parsed as the page's own Markdown, so the gettext builder
  extracts it and the zh_CN build translates it (``cheatsheet.po``).
- Each cell starts with its column's name, shown only where the table is laid out
  as one card per hook (a phone; ``custom.css``).
- The registering function links to PyTorch's documentation (intersphinx) unless
  the row says ``link = false``; the pages that teach a hook are linked by the
  short form of their title (before its colon), in the page's language.
- ``.. hooks-cheatsheet-untaught::`` lists the hooks of PyTorch that no page teaches.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the docs group installs tomli there
    import tomli as tomllib

logger = logging.getLogger(__name__)

DATA = Path(__file__).parents[1] / "cheatsheet.toml"
COLUMNS = ("hook", "fires", "returns", "remove", "pages")
GALLERY = "auto_examples"


def load(path: Path = DATA) -> dict[str, Any]:
    """The cheat sheet's rows, notes, column names and untaught hooks."""
    return tomllib.loads(path.read_text(encoding="utf-8"))


class page_link(nodes.Inline, nodes.Element):
    """A link to a tutorial page, titled once the titles are known (``short_titles``)."""


def short_title(title: str) -> str:
    """``"Forward hooks: look inside a model"`` -> ``"Forward hooks"`` (also at ``：``)."""
    return re.split(r"[:：]", title, maxsplit=1)[0].strip()


class _Directive(SphinxDirective):
    def markdown(self, text: str, classes: tuple[str, ...] = ()) -> list[nodes.Node]:
        """``text`` parsed as the page's own Markdown: translatable, with source and line."""
        holder = nodes.container()
        self.state.nested_parse(StringList([text], DATA.name), self.content_offset, holder)
        children = list(holder.children)
        for child in children:
            if isinstance(child, nodes.Element):
                child["classes"].extend(classes)
        return children

    def code(self, text: str, classes: tuple[str, ...] = ()) -> nodes.paragraph:
        return nodes.paragraph("", "", nodes.literal(text, text), classes=list(classes))


class HooksCheatsheet(_Directive):
    required_arguments = 1  # the group

    def run(self) -> list[nodes.Node]:
        self.env.note_dependency(str(DATA))
        data = load()
        group = self.arguments[0]
        rows = [row for row in data["row"] if row["group"] == group]
        if not rows:
            msg = f"no rows of group {group!r} in {DATA.name}"
            raise self.error(msg)
        names = data["columns"]
        table = nodes.table(classes=["hook-cheatsheet"])
        tgroup = nodes.tgroup(cols=len(COLUMNS))
        table += tgroup
        tgroup.extend(nodes.colspec(colwidth=1) for _ in COLUMNS)
        head = nodes.row()
        for column in COLUMNS:
            head += nodes.entry("", *self.markdown(names[column]))
        tgroup += nodes.thead("", head)
        body = nodes.tbody()
        for row in rows:
            body += self.row(row, names)
        tgroup += body
        notes = [note for note in data.get("note", []) if note["group"] == group]
        result: list[nodes.Node] = [table]
        if notes:
            items = nodes.bullet_list(classes=["hook-cheatsheet-notes"])
            for note in notes:
                items += nodes.list_item(
                    "", *self.markdown(note["text"]), ids=[f"note-{note['id']}"]
                )
            result.append(items)
        return result

    def row(self, row: dict[str, Any], names: dict[str, str]) -> nodes.row:
        tr = nodes.row(ids=[f"hook-{row['id']}"])
        cells = {
            "hook": [self.register(row), *(self.code(call, ("cs-call",)) for call in row["calls"])],
            "fires": self.markdown(row["fires"]),
            "returns": self.markdown(row["returns"]),
            "remove": self.markdown(row["remove"]),
            "pages": [
                nodes.paragraph("", "", page_link(docname=f"{GALLERY}/{page}"))
                for page in row["pages"]
            ],
        }
        for column in COLUMNS:
            label = self.markdown(names[column], ("cs-label",))
            tr += nodes.entry("", *label, *cells[column], classes=[f"cs-{column}"])
        return tr

    def register(self, row: dict[str, Any]) -> nodes.paragraph:
        """The registering call, its function linked to PyTorch's documentation."""
        text = row["register"]
        literal = nodes.literal(text, text)
        if not row.get("link", True):
            return nodes.paragraph("", "", literal, classes=["cs-register"])
        xref = addnodes.pending_xref(
            "", literal, refdomain="py", reftype="obj", reftarget=row["api"], refexplicit=True
        )
        return nodes.paragraph("", "", xref, classes=["cs-register"])


class HooksCheatsheetUntaught(_Directive):
    def run(self) -> list[nodes.Node]:
        self.env.note_dependency(str(DATA))
        items = nodes.bullet_list(classes=["hook-cheatsheet-untaught"])
        for name in load()["untaught"]["names"]:
            items += nodes.list_item("", self.code(name))
        return [items]


def short_titles(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """Replace each ``page_link`` with a link titled by the short form of its page's title."""
    for node in list(doctree.findall(page_link)):
        target = node["docname"]
        title = app.env.titles.get(target)
        if title is None:
            logger.warning("cheat sheet: no page %r", target, location=node)
            node.replace_self(nodes.Text(target))
            continue
        full = title.astext()
        try:
            uri = app.builder.get_relative_uri(docname, target)
        except Exception:  # noqa: BLE001 - builders without pages (gettext) have no URIs
            uri = ""
        link = nodes.reference("", short_title(full), internal=True, refuri=uri, reftitle=full)
        node.replace_self(link)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_node(page_link)
    app.add_directive("hooks-cheatsheet", HooksCheatsheet)
    app.add_directive("hooks-cheatsheet-untaught", HooksCheatsheetUntaught)
    app.connect("doctree-resolved", short_titles)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
