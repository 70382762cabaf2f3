"""Under each tutorial's title: how long it takes to read, and how long its code ran.

"About 6 min to read; the code ran in 3.2 s when this site was built." Both
numbers come from the build, in the page's language:

- Reading time: the page's prose, as it is shown in that language (the
  doctree as written, translated and with its links' titles), without code,
  outputs, formulas and the download buttons, read at the mean silent-reading rates of Brysbaert's
  meta-analysis (J. Memory and Language 109, 2019): 238 words a minute for
  English non-fiction, 255 characters a minute for Chinese. A page in Chinese
  counts its Han characters at the Chinese rate and its Latin words (names
  such as ``register_hook``) at the English one. Rounded up to whole minutes.
- Running time: the wall time of the run that made the page's outputs,
  from the record that ``provenance.py`` writes around sphinx-gallery's run of
  the page (the same number as the provenance line at the page's end). A page
  that has no record (not run in this build) shows the reading time alone.

The pages that get the line are those whose name matches the
``reading_time_pages`` setting (a regular expression, in conf.py). The line
carries the class ``no-search``, so the search index leaves it out.

No package does this: sphinx-gallery can write an example's run time into its
page, but as text of the page, which changes on every build and with it the
Chinese catalogs (see provenance.py); reading time it does not know.
"""

from __future__ import annotations

import math
import re
from typing import Any

import provenance
from docutils import nodes

WORDS_PER_MINUTE = 238  # English non-fiction, silent reading (Brysbaert 2019)
CHARACTERS_PER_MINUTE = 255  # Chinese, silent reading (Brysbaert 2019)
LATIN_WORD = re.compile(r"[A-Za-z0-9]+(?:['’_.\-][A-Za-z0-9]+)*")
HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")

LINES = {
    "en": (
        "About {minutes} min to read.",
        "About {minutes} min to read; the code ran in {time} when this site was built.",
    ),
    "zh_CN": (
        "阅读约需 {minutes} 分钟。",
        "阅读约需 {minutes} 分钟；构建本站时，代码运行用时{time}。",
    ),
}
# what is not read as prose: code and its output, formulas, markup for the machine
SKIPPED_NODES = (
    nodes.literal_block,
    nodes.raw,
    nodes.comment,
    nodes.system_message,
    nodes.math,
    nodes.math_block,
    nodes.image,
    nodes.substitution_definition,
)
# sphinx-gallery's code once it links the names in it (its post-transform turns each
# code block it links into one of these, a node per token)
SKIPPED_TAGNAMES = {"code_links_block"}
# sphinx-gallery's note "Go to the end to download ...", its download buttons and its
# signature; whatever another extension marks as not to be searched (the fast path's
# banners, this line)
SKIPPED_CLASSES = {
    "sphx-glr-download-link-note",
    "sphx-glr-footer",
    "sphx-glr-signature",
    "no-search",
}


def prose(doctree: nodes.Node) -> str:
    """The text of ``doctree`` that a reader reads as prose, one space between pieces."""
    parts: list[str] = []

    def visit(node: nodes.Node) -> None:
        if isinstance(node, SKIPPED_NODES) or node.tagname in SKIPPED_TAGNAMES:
            return
        if isinstance(node, nodes.Element) and SKIPPED_CLASSES & set(node["classes"]):
            return
        if isinstance(node, nodes.Text):
            parts.append(node.astext())
            return
        for child in node.children:
            visit(child)

    visit(doctree)
    return " ".join(parts)


def count(text: str) -> tuple[int, int]:
    """(Latin words, Han characters) in ``text``."""
    return len(LATIN_WORD.findall(text)), len(HAN.findall(text))


def minutes(text: str) -> int:
    """Whole minutes to read ``text`` at the two rates, rounded up; at least 1."""
    words, characters = count(text)
    return max(1, math.ceil(words / WORDS_PER_MINUTE + characters / CHARACTERS_PER_MINUTE))


def line(minutes_: int, seconds: float | None, language: str) -> str:
    """The sentence under the title, in ``language`` (English if not translated)."""
    language = language if language in LINES else "en"
    reading, running = LINES[language]
    if seconds is None:
        return reading.format(minutes=minutes_)
    return running.format(minutes=minutes_, time=provenance.duration(seconds, language))


def add_times(app: Any, doctree: nodes.document, docname: str) -> None:
    """``doctree-resolved``: the line, right under the page's title.

    Counted once the links are resolved, so a link to another page counts that
    page's title, as the reader sees it.
    """
    if app.builder.format != "html" or not re.fullmatch(app.config.reading_time_pages, docname):
        return
    section = next(iter(doctree.findall(nodes.section)), None)
    if section is None or not isinstance(section[0], nodes.title):
        return
    record = provenance.read(app.srcdir, docname)
    seconds = None if record is None else float(record["seconds"])
    text = line(minutes(prose(doctree)), seconds, app.config.language or "en")
    section.insert(1, nodes.paragraph("", text, classes=["page-times", "no-search"]))


def setup(app: Any) -> dict[str, Any]:
    app.add_config_value("reading_time_pages", r"auto_examples/.+/plot_\w+", "html", types=[str])
    app.connect("doctree-resolved", add_times)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
