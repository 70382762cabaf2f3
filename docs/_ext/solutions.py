"""Exercises whose solutions run in the build: each folds away, and its answer is checked.

The job: a page's solutions are ordinary gallery cells, so the build runs them
once and the reader sees what they printed, right below their code, while the
page still hides them until the reader unfolds them. A solution starts with a
text cell whose first paragraph has the class ``solution`` and opens with its
title in bold; the code cells that follow, up to the next solution or the end
of the page's cells, belong to it::

    # %%
    # .. rst-class:: solution
    #
    # **Solution 2.** The run from scratch stays at chance level: ...

    stopper = ht.EarlyStopping(...)   # runs in the build; its output shows below

This extension

- wraps each solution (its answer, its code and that code's output) in a
  ``<details>`` element styled as a sphinx-design dropdown, its title as the
  summary;
- checks, in each language's build, that a page with exercises has one
  solution per exercise, that every number its answer states in prose was
  printed by that solution's own code (inline code, and numbers that name a
  page, an exercise or a step, are not claims), and that a translated answer
  states the same numbers as the English one;
- removes sphinx-gallery's ignore blocks (``# sphinx_gallery_start_ignore`` ...
  ``# sphinx_gallery_end_ignore``: the checks beside the prose) from the
  ``.py`` downloads and the zips, as sphinx-gallery already does for the page
  and the notebooks; the reader's copy holds only the code the page shows.

A failed check is a warning that names the page and the answer, so an error
under ``-W``. Why no package does this: a sphinx-design dropdown holds only
the reST indented under it, and sphinx-gallery ends a text block at every
code cell, so executed code cannot sit inside one; sphinx-gallery copies the
``.py`` file as it is.
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path
from typing import Any

from claimed_numbers import claimed_numbers, printed, without_markup
from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.writers.html5 import HTML5Translator
from sphinx_gallery.py_source_parser import remove_ignore_blocks

logger = logging.getLogger(__name__)

CLASS = "solution"
# the classes of a sphinx-design dropdown: the theme and sphinx-design's CSS style it
DETAILS = "sd-sphinx-override sd-dropdown sd-card sd-mb-3 solution"
CHEVRON = (
    '<span class="sd-summary-state-marker sd-summary-chevron-right">'
    '<svg version="1.1" width="1.5em" height="1.5em" class="sd-octicon sd-octicon-chevron-right"'
    ' viewBox="0 0 24 24" aria-hidden="true"><path d="M8.72 18.78a.75.75 0 0 1 0-1.06L14.44'
    " 12 8.72 6.28a.751.751 0 0 1 .018-1.042.751.751 0 0 1 1.042-.018l6.25 6.25a.75.75 0 0 1"
    ' 0 1.06l-6.25 6.25a.75.75 0 0 1-1.06 0Z"></path></svg></span>'
)


class solution(nodes.container):
    """One solution: its answer, code and output. Other writers render it as a container."""


class solution_title(nodes.paragraph):
    """The solution's title ("Solution 2."), the summary of its ``<details>``."""


def visit_solution(self: HTML5Translator, node: solution) -> None:
    del node
    self.body.append(f'<details class="{DETAILS}">')


def depart_solution(self: HTML5Translator, node: solution) -> None:
    del node
    self.body.append("</div></details>\n")


def visit_solution_title(self: HTML5Translator, node: solution_title) -> None:
    del node
    self.body.append(
        '<summary class="sd-summary-title sd-card-header"><span class="sd-summary-text">'
    )


def depart_solution_title(self: HTML5Translator, node: solution_title) -> None:
    del node
    self.body.append(f'</span>{CHEVRON}</summary><div class="sd-summary-content sd-card-body">')


# -- numbers --------------------------------------------------------------------


def prose_text(node: nodes.Node) -> str:
    """The node's text without inline code and math (names and formulas, not claims)."""
    parts: list[str] = []

    def visit(n: nodes.Node) -> None:
        if isinstance(n, (nodes.literal, nodes.math, nodes.literal_block)):
            return
        if isinstance(n, nodes.Text):
            parts.append(n.astext())
            return
        for child in n.children:
            visit(child)

    visit(node)
    return re.sub(r"\s+", " ", "".join(parts)).strip()


# -- the transform ----------------------------------------------------------------


def _is_solution_start(node: nodes.Node) -> bool:
    return isinstance(node, nodes.paragraph) and CLASS in node.get("classes", [])


def _ends_cells(node: nodes.Node) -> bool:
    """sphinx-gallery's footer (a label, then ``only`` blocks) follows the last cell."""
    return isinstance(node, nodes.target) or node.tagname == "only"


def _is_output(node: nodes.Element) -> bool:
    classes = {c for n in (node, node.parent) if n is not None for c in n.get("classes", [])}
    return "sphx-glr-script-out" in classes


def wrap_solutions(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """Fold each solution into a dropdown and check its answer (``doctree-resolved``)."""
    ran = page_ran(app, docname)
    starts = list(doctree.findall(_is_solution_start))
    if not starts and docname.startswith("auto_examples/"):
        for section in doctree.findall(nodes.section):
            if "exercises" in section["ids"]:
                logger.warning(
                    "%s: exercises without solutions (a text cell starting with "
                    "'.. rst-class:: solution' and '**Solution N.**' per exercise)",
                    docname,
                    location=section,
                )
    for index, start in enumerate(starts, 1):
        parent = start.parent
        at = parent.index(start)
        members: list[nodes.Node] = []
        for sibling in list(parent.children[at:]):
            if members and (_is_solution_start(sibling) or _ends_cells(sibling)):
                break
            members.append(sibling)
        title_node = start.next_node(nodes.strong)
        if title_node is None or title_node.parent is not start:
            logger.warning(
                "%s: solution %d has no bold title (**Solution %d.**) opening its paragraph",
                docname,
                index,
                index,
                location=start,
            )
            continue
        start.remove(title_node)
        last = title_node[-1] if title_node.children else None
        if isinstance(last, nodes.Text):  # "Solution 1." -> "Solution 1" as a heading
            title_node[-1] = nodes.Text(last.astext().rstrip(".:。：").rstrip())
        if start.children and isinstance(start[0], nodes.Text):
            start[0] = nodes.Text(start[0].astext().lstrip())
        box = solution(classes=[CLASS])
        box += solution_title("", "", title_node)
        for member in members:
            parent.remove(member)
            box += member
        parent.insert(at, box)
        if ran:  # a page left out of a quick build ($HOOKS_TUTORIAL_PAGES) printed nothing
            check_answer(box, docname, index)
    if starts:
        check_count(doctree, docname, len(starts))


def page_ran(app: Sphinx, docname: str) -> bool:
    """Whether sphinx-gallery ran this page: its source matches ``filename_pattern``."""
    if not docname.startswith("auto_examples/"):
        return True
    pattern = getattr(app.config, "sphinx_gallery_conf", {}).get("filename_pattern")
    if pattern is None:  # sphinx-gallery not loaded, as in the extension's tests
        return True
    source = Path(app.srcdir).parent / "examples" / (docname.removeprefix("auto_examples/") + ".py")
    return re.search(pattern, str(source)) is not None


def check_answer(box: solution, docname: str, index: int) -> None:
    """Every number the solution's prose states is printed by its own code, in both languages."""
    prose: list[nodes.Element] = []
    outputs: list[str] = []
    for member in box.children[1:]:
        if isinstance(member, (nodes.paragraph, nodes.bullet_list, nodes.enumerated_list)):
            prose.append(member)
        for block in member.findall(nodes.literal_block):
            if _is_output(block):
                outputs.append(block.astext())
    output = "\n".join(outputs)
    for element in prose:
        text = prose_text(element)
        missing = sorted(n for n in claimed_numbers(text) if not printed(n, output))
        if missing:
            logger.warning(
                "%s, solution %d: the answer states %s, which its code does not print "
                "(print the value, or state what holds on every machine): %r",
                docname,
                index,
                ", ".join(missing),
                text[:200],
                location=element,
            )
        if element.get("translated"):
            for paragraph in element.findall(nodes.paragraph):
                original = without_markup(paragraph.rawsource)
                ours = claimed_numbers(prose_text(paragraph))
                theirs = claimed_numbers(original)
                if paragraph.get("translated") and ours != theirs:
                    logger.warning(
                        "%s, solution %d: the translation states %s, the English %s: %r",
                        docname,
                        index,
                        sorted(ours),
                        sorted(theirs),
                        original[:200],
                        location=paragraph,
                    )


def check_count(doctree: nodes.document, docname: str, count: int) -> None:
    """One solution per exercise: the first enumerated list before the solutions counts them."""
    first = next(iter(doctree.findall(solution)), None)
    if first is None:  # none could be folded: warned above
        return
    exercises = None
    for node in first.parent.children[: first.parent.index(first)]:
        if isinstance(node, nodes.enumerated_list):
            exercises = node
    if exercises is None:
        logger.warning("%s: solutions without an enumerated list of exercises", docname)
        return
    if len(exercises.children) != count:
        logger.warning(
            "%s: %d exercises but %d solutions (one **Solution N.** per exercise)",
            docname,
            len(exercises.children),
            count,
            location=exercises,
        )
    check_exercise_checks(exercises, docname)


CHECK_CALL = re.compile(r"""ht\.exercises\.check\(["']([^"']+)["']""")


def check_exercise_checks(exercises: nodes.enumerated_list, docname: str) -> None:
    """Each exercise shows its check, or is answered in words, as hooks_tutorial.exercises says.

    A page whose exercises the library knows (``exercise_kinds()``, ``"05.1"``
    for page 5's first) must end each code exercise's item with its call,
    ``ht.exercises.check("05.1", ...)`` as inline code, give none to the
    exercises answered in words, and say under "Exercises", before the list,
    how the checks run (a paragraph showing ``ht.exercises.check``). Pages the
    library knows nothing of yet are left alone. Inline code is not translated,
    so the same test holds in both languages.
    """
    import hooks_tutorial  # noqa: PLC0415 - the docs build has it; the extension's tests need not

    page = re.search(r"/plot_(\d+[a-z]?)_", docname)
    if page is None:
        return
    kinds = {
        name: kind
        for name, kind in hooks_tutorial.exercises.exercise_kinds().items()
        if name.startswith(f"{page[1]}.")
    }
    if not kinds:
        return
    for number, item in enumerate(exercises.children, 1):
        name = f"{page[1]}.{number}"
        calls = [
            found[1]
            for literal in item.findall(nodes.literal)
            if (found := CHECK_CALL.match(literal.astext()))
        ]
        kind = kinds.pop(name, None)
        if kind == "code" and calls != [name]:
            logger.warning(
                '%s: exercise %s has a check: end its item with ``ht.exercises.check("%s", '
                "...)`` (found %s)",
                docname,
                name,
                name,
                calls or "none",
                location=item,
            )
        elif kind == "prose" and calls:
            logger.warning(
                "%s: exercise %s is answered in words, but its item shows a check: %s",
                docname,
                name,
                calls,
                location=item,
            )
        elif kind is None:
            logger.warning(
                "%s: exercise %s has no check in hooks_tutorial.exercises and is not "
                "registered there as answered in words (prose(...))",
                docname,
                name,
                location=item,
            )
    if kinds:
        logger.warning(
            "%s: hooks_tutorial.exercises knows exercise(s) %s, which the page does not list",
            docname,
            ", ".join(sorted(kinds)),
            location=exercises,
        )
    parent = exercises.parent
    before = parent.children[: parent.index(exercises)]
    told = any(
        literal.astext().startswith("ht.exercises.check")
        for node in before
        if isinstance(node, nodes.paragraph)
        for literal in node.findall(nodes.literal)
    )
    if not told:
        logger.warning(
            "%s: say under 'Exercises', before the list, how to run the checks "
            "(a paragraph showing ``ht.exercises.check(...)``)",
            docname,
            location=exercises,
        )


# -- downloads ----------------------------------------------------------------------


def strip_ignore_blocks(app: Sphinx, exception: Exception | None) -> None:
    """Remove the pages' ignore blocks from the ``.py`` downloads and the zips' scripts."""
    if exception is not None or app.builder.format != "html":
        return
    downloads = Path(app.outdir) / "_downloads"
    for path in sorted(downloads.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "sphinx_gallery_start_ignore" in text:
            path.write_text(remove_ignore_blocks(text), encoding="utf-8")
    for path in sorted(downloads.rglob("*.zip")):
        with zipfile.ZipFile(path) as archive:
            members = [(info, archive.read(info)) for info in archive.infolist()]
        if not any(b"sphinx_gallery_start_ignore" in data for _, data in members):
            continue
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            for info, data in members:
                is_script = info.filename.endswith(".py")
                text = remove_ignore_blocks(data.decode("utf-8")) if is_script else None
                archive.writestr(info, text.encode("utf-8") if text is not None else data)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_node(solution, html=(visit_solution, depart_solution))
    app.add_node(solution_title, html=(visit_solution_title, depart_solution_title))
    app.connect("doctree-resolved", wrap_solutions)
    app.connect("build-finished", strip_ignore_blocks, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
