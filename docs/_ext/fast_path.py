"""The fast path to Grad-CAM, made from one list: the box, the count, each step's banner.

``fast_path`` in conf.py lists the path's pages in reading order, each with
what it gives the next, in English and in Chinese. Everything the site says
about the path is made from that list, in the page's language, so nothing can
disagree with it:

- the ``fast-path`` directive draws the box on the home page and on the
  tutorials' index: a title that counts the pages ("... in ten pages"), and
  the numbered steps, each the page's title, its number and what it gives;
- every page of the path gets a banner under its title and another at its
  end: "Fast path to Grad-CAM, step 7 of 10. Next on the path: 16. Grad-CAM
  from scratch with hooks" (the last step links the other tutorials instead);
- a page's prerequisites (the ``:doc:`` links of the paragraph that starts
  with **Prerequisites**, read in the English build) must come before it on
  the path, or the build warns (``-W`` fails it);
- each banner links its words "Fast path to Grad-CAM" to the box on the
  home page (label ``fast-path``).

The banners and the steps' links are made once every title is known
(``doctree-resolved``), so they show the titles as the reader sees them,
numbered by ``page_numbers.py``; they carry the class ``no-search`` (not
indexed for search, not counted as the page's prose by ``reading_time.py``).

No package does this: the theme's "previous" and "next" follow the table of
contents, chapter by chapter, and a path across chapters cannot be a second
toctree without listing each of its pages twice in the navigation.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import page_numbers
from docutils import nodes
from sphinx.util import docname_join, logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)

BOX_LABEL = "fast-path"  # the box on the home page (index.md)
OTHER_TUTORIALS = "auto_examples/index"

STRINGS = {
    "en": {
        "title": "Fast path: a working Grad-CAM in {count} pages",
        "intro": (
            "Came for Grad-CAM? Read these {count} pages in this order: each one gives the "
            "next what it needs, and the other pages can wait. Each page of the path says "
            "which step it is and links the next one."
        ),
        "page": " (page {number})",
        "path": "Fast path to Grad-CAM",
        "step": ", step {n} of {total}. ",
        "next": "Next on the path: ",
        "last": "The last step; the other pages: ",
    },
    "zh_CN": {
        "title": "快速路线：{count}页做出一个能用的 Grad-CAM",
        "intro": (
            "为 Grad-CAM 而来？按顺序读下面这{count}页；每一页都为下一页准备好它要用的东西，"
            "其余各页可以以后再读。路线上的每一页都标明它是第几步，并链接到下一步。"
        ),
        "page": "（第 {number} 页）",
        "path": "Grad-CAM 快速路线",
        "step": "：第 {n} 步，共 {total} 步。",
        "next": "路线上的下一页：",
        "last": "这是最后一步；其余各页：",
    },
}
COUNT = {
    "en": [
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
        "twenty",
    ],
    "zh_CN": [
        "两",
        "三",
        "四",
        "五",
        "六",
        "七",
        "八",
        "九",
        "十",
        "十一",
        "十二",
        "十三",
        "十四",
        "十五",
        "十六",
        "十七",
        "十八",
        "十九",
        "二十",
    ],
}
PREREQUISITES = "Prerequisites"  # the bold start of a page's prerequisites (English)


class Step(NamedTuple):
    docname: str
    gives: dict[str, str]  # language -> what the page gives the next ones


def steps(config: Any) -> list[Step]:
    """The path from conf.py's ``fast_path``: (docname, English, Chinese) per page."""
    path = [Step(docname, {"en": en, "zh_CN": zh}) for docname, en, zh in config.fast_path]
    names = [step.docname for step in path]
    if len(set(names)) != len(names):
        msg = f"fast_path lists a page twice: {names}"
        raise ValueError(msg)
    return path


def strings(language: str | None) -> dict[str, str]:
    return STRINGS.get(language or "en", STRINGS["en"])


def count_in_words(n: int, language: str | None) -> str:
    """3 -> "three" / "三"; numbers past twenty stay digits."""
    words = COUNT.get(language or "en", COUNT["en"])
    return words[n - 2] if 2 <= n <= len(words) + 1 else str(n)


def inline_text(text: str) -> list[nodes.Node]:
    """``text`` with ``double back-quoted`` spans as literals (the only markup used)."""
    pieces = text.split("``")
    if len(pieces) % 2 == 0:
        msg = f"unbalanced `` in fast_path text: {text!r}"
        raise ValueError(msg)
    return [
        nodes.literal(piece, piece) if i % 2 else nodes.Text(piece)
        for i, piece in enumerate(pieces)
        if piece
    ]


def position(path: list[Step], docname: str) -> tuple[int, Step | None] | None:
    """(1-based step of ``docname``, the next step or None) if it is on the path."""
    names = [step.docname for step in path]
    if docname not in names:
        return None
    i = names.index(docname)
    return i + 1, path[i + 1] if i + 1 < len(path) else None


# -- the box ---------------------------------------------------------------------


class fast_path_steps(nodes.General, nodes.Element):
    """Placeholder for the box's list, filled in once every page's title is known."""


class FastPathBox(SphinxDirective):
    """``.. fast-path::`` (``:::{fast-path}`` in MyST): the box listing the path."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        path = steps(self.config)
        text = strings(self.config.language)
        count = count_in_words(len(path), self.config.language)
        box = nodes.admonition("", classes=["tip", "fast-path"])
        self.set_source_info(box)
        # already in the page's language: not for the catalogs (gettext would take the
        # title, which gets its source from the box)
        box += nodes.title("", text["title"].format(count=count), translatable=False)
        box += nodes.paragraph("", text["intro"].format(count=count), translatable=False)
        box += fast_path_steps()
        return [box]


def _classes(node: nodes.Node) -> list[str]:
    return node["classes"] if isinstance(node, nodes.Element) else []


def _title(app: Any, docname: str, *, numbered: bool = True) -> list[nodes.Node]:
    """The page's title as the reader sees it, with or without its page number."""
    title = app.env.titles[docname].deepcopy()
    return [child for child in title.children if numbered or "page-number" not in _classes(child)]


def _link(app: Any, fromdoc: str, docname: str, *, numbered: bool = True) -> nodes.Node:
    if docname not in app.env.titles:  # no such page: check_pages has warned
        return nodes.Text(docname)
    uri = app.builder.get_relative_uri(fromdoc, docname)
    link = nodes.reference("", "", internal=True, refuri=uri)
    link += nodes.inline("", "", *_title(app, docname, numbered=numbered), classes=["doc"])
    return link


def fill_box(app: Any, doctree: nodes.document, docname: str) -> None:
    """The box's numbered steps: title (page n): what it gives."""
    language = app.config.language or "en"
    text = strings(language)
    for placeholder in list(doctree.findall(fast_path_steps)):
        listing = nodes.enumerated_list("", enumtype="arabic", prefix="", suffix=".")
        for step in steps(app.config):
            item = nodes.paragraph()
            item += _link(app, docname, step.docname, numbered=False)
            number = page_numbers.page_number(step.docname)
            if number is not None:
                item += nodes.Text(text["page"].format(number=number))
            item += nodes.Text(": " if language == "en" else "：")
            item += inline_text(step.gives.get(language, step.gives["en"]))
            listing += nodes.list_item("", item)
        placeholder.replace_self(listing)


# -- the banners -------------------------------------------------------------------


def banner(app: Any, docname: str, n: int, following: Step | None) -> nodes.container:
    """ "Fast path to Grad-CAM, step n of N. Next on the path: <title>", in the page's language."""
    text = strings(app.config.language)
    total = len(steps(app.config))
    box_uri = app.builder.get_relative_uri(docname, "index") + f"#{BOX_LABEL}"
    paragraph = nodes.paragraph()
    paragraph += nodes.reference("", text["path"], internal=True, refuri=box_uri)
    paragraph += nodes.Text(text["step"].format(n=n, total=total))
    if following is None:
        paragraph += nodes.Text(text["last"])
        paragraph += _link(app, docname, OTHER_TUTORIALS)
    else:
        paragraph += nodes.Text(text["next"])
        paragraph += _link(app, docname, following.docname)
    return nodes.container("", paragraph, classes=["fast-path-banner", "no-search"])


def add_banners(app: Any, doctree: nodes.document, docname: str) -> None:
    """``doctree-resolved``: a banner under the title (and its times) and one at the end."""
    if app.builder.format != "html":
        return
    found = position(steps(app.config), docname)
    section = next(iter(doctree.findall(nodes.section)), None)
    if found is None or section is None:
        return
    n, following = found
    top = 1
    while top < len(section) and "page-times" in _classes(section[top]):
        top += 1
    section.insert(top, banner(app, docname, n, following))
    # the page's last element, after the downloads: right above the theme's previous/next
    section.append(banner(app, docname, n, following))


# -- the check -----------------------------------------------------------------------


def prerequisites(doctree: nodes.document, docname: str) -> list[str]:
    """The pages that the **Prerequisites** paragraph of the page ``docname`` links."""
    found: list[str] = []
    for paragraph in doctree.findall(nodes.paragraph):
        first = paragraph.children[0] if paragraph.children else None
        if not isinstance(first, nodes.strong) or first.astext().strip() != PREREQUISITES:
            continue
        for xref in paragraph.findall(nodes.Element):
            if xref.get("reftype") == "doc":
                found.append(docname_join(docname, str(xref["reftarget"])))
    return found


def check_prerequisites(app: Any, doctree: nodes.document) -> None:
    """``doctree-read``: a page's prerequisites come before it on the path."""
    docname = app.env.docname
    path = [step.docname for step in steps(app.config)]
    if docname not in path:
        return
    earlier = path[: path.index(docname)]
    for needed in prerequisites(doctree, docname):
        if needed not in earlier:
            logger.warning(
                "fast path: %s (step %d) names %s as a prerequisite, which is not an "
                "earlier step of the path (fast_path in conf.py)",
                docname,
                path.index(docname) + 1,
                needed,
                location=docname,
                type="fast_path",
            )


def check_pages(app: Any, env: Any) -> None:
    """``env-check-consistency``: every page of the path exists."""
    del app
    for step in steps(env.config):
        if step.docname not in env.found_docs:
            logger.warning("fast path: no page %r (fast_path in conf.py)", step.docname)


def setup(app: Any) -> dict[str, Any]:
    app.add_config_value("fast_path", [], "env", types=[list])
    app.add_node(fast_path_steps)
    app.add_directive("fast-path", FastPathBox)
    app.connect("doctree-read", check_prerequisites)
    app.connect("env-check-consistency", check_pages)
    app.connect("doctree-resolved", fill_box)
    # after reading_time.py (priority 500) has put its line under the title
    app.connect("doctree-resolved", add_banners, priority=600)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
