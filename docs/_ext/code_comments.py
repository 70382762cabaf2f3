"""The comments inside the pages' code, translated through the pages' catalogs.

A comment in a gallery page's code cell is prose the reader sees: on a zh_CN
page and in its downloads it is Chinese. Each comment (or each run of
full-line comments at one column, joined into one sentence) is a message of
the page's catalog, like a paragraph; the code around it never changes.

- Extraction: in the pages listed in ``code_comment_pages`` (docs/conf.py),
  the transform :class:`MarkCodeComments` turns each Python code block that has
  comments into a :class:`commented_code` node, a ``literal_block`` that is also
  Sphinx's ``addnodes.translatable``: the gettext builder extracts its comments
  as messages (``nox -s translations`` puts them into the page's .po), and
  Sphinx's own ``Locale`` transform hands it their translations.
- Rendering: :class:`ApplyCodeComments` (after ``Locale``) writes the
  translations into the block's text; a listed page's comment without a
  translation is a warning (an error under ``-W``), like an untranslated
  paragraph in a download. ``doctree-resolved`` turns the node back into a
  plain ``literal_block`` for every builder but gettext, so themes and
  highlighting see what they always see.
- Downloads: ``docs/_ext/localized_downloads.py`` calls :func:`translate_code`
  on each code block of the script with the same catalog.

Which comments are messages: those with a word of two or more ASCII letters;
a comment with only code or numbers (``# [1, 1, 64, 64]``, ``# 1x4x4 -> 2x3x3``)
reads the same in both languages. Never messages: sphinx-gallery's markers and
configuration comments, lint pragmas, commented-out magics (``# %pip install``),
and comments inside hidden
``sphinx_gallery_start_ignore`` blocks (removed from pages and notebooks).

A translated run of full-line comments is wrapped to ``WIDTH`` columns (a CJK
character counts two); a translated end-of-line comment stays on its line, and
the build warns when that line becomes wider than ``WIDTH`` and than the English.

Why no package does this: Sphinx translates code blocks only as whole blocks
(``gettext_additional_targets = ["literal-block"]``), which would put code into
the catalogs and let a translation change it; sphinx-gallery has no i18n.
"""

from __future__ import annotations

import io
import re
import tokenize
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.transforms import SphinxTransform
from sphinx.util import logging

logger = logging.getLogger(__name__)

WIDTH = 88  # columns: a code line with a translated comment keeps within it (or its English)
WORD = re.compile(r"[A-Za-z]{2,}")
SKIP = re.compile(  # gallery markers, pragmas, commented-out IPython magics (# %pip ...)
    r"#\s*(%|!|sphinx_gallery_|noqa\b|type:\s|pragma\b|fmt:\s|ruff:\s|mypy:\s|pyright:\s)"
)
HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")


@dataclass(frozen=True)
class Comment:
    """One message: an end-of-line comment, or a run of full-line comments."""

    text: str  # the msgid: the words, without "#"; a run's lines joined by spaces
    rows: tuple[int, ...]  # 0-based lines of the code
    column: int  # where "#" starts
    inline: bool  # after code on its line


def display_width(text: str) -> int:
    """Columns ``text`` takes in an editor (a CJK character counts two)."""
    return sum(2 if unicodedata.east_asian_width(c) in ("W", "F") else 1 for c in text)


def _comment_tokens(code: str) -> list[tokenize.TokenInfo]:
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return []  # not Python (a shell line, a fragment): nothing to translate
    return [t for t in tokens if t.type == tokenize.COMMENT]


def comments(code: str, *, words_only: bool = True) -> list[Comment]:
    """The comments of ``code`` that are messages, in order.

    ``words_only=False``: also those without an ASCII word (a Chinese comment, or
    ``# [1, 1, 64, 64]``), to compare a translated code with its English.
    """
    found: list[Comment] = []
    hidden = False
    run: list[tokenize.TokenInfo] = []

    def close() -> None:
        if run:
            text = " ".join(t.string[1:].strip() for t in run)
            found.append(Comment(text, tuple(t.start[0] - 1 for t in run), run[0].start[1], False))
            run.clear()

    for token in _comment_tokens(code):
        body = token.string
        if "sphinx_gallery_start_ignore" in body:
            hidden = True
        if hidden or SKIP.match(body) or (words_only and not WORD.search(body)):
            close()
            if "sphinx_gallery_end_ignore" in body:
                hidden = False
            continue
        inline = bool(token.line[: token.start[1]].strip())
        if inline:
            close()
            found.append(Comment(body[1:].strip(), (token.start[0] - 1,), token.start[1], True))
            continue
        if run and (token.start[0] != run[-1].start[0] + 1 or token.start[1] != run[0].start[1]):
            close()
        run.append(token)
    close()
    return found


_PIECE = re.compile(r"[\x21-\x7e]+|\s+|.", re.DOTALL)  # ASCII runs stay whole


def wrap(text: str, width: int) -> list[str]:
    """Wrap ``text`` at ``width`` columns, breaking between CJK characters or at spaces."""
    lines: list[str] = []
    line = ""
    for found in _PIECE.findall(text):
        piece = " " if found.isspace() else found
        if line and display_width(line + piece.rstrip()) > width:
            lines.append(line.rstrip())
            line = "" if piece == " " else piece
            continue
        line += piece
    if line.strip():
        lines.append(line.rstrip())
    return lines or [""]


@dataclass
class Translated:
    code: str
    missing: list[str]  # msgids without a translation
    too_wide: list[str]  # lines wider than WIDTH (and than their English)


def translate_code(code: str, lookup: Callable[[str], str | None]) -> Translated:
    """``code`` with its comments translated; the code tokens are unchanged."""
    lines = code.split("\n")
    replace: dict[int, list[str]] = {}  # first row -> new lines; other rows of a run dropped
    dropped: set[int] = set()
    missing: list[str] = []
    too_wide: list[str] = []
    for comment in comments(code):
        new = lookup(comment.text)
        if not new or new == comment.text:
            missing.append(comment.text)
            continue
        first = comment.rows[0]
        if comment.inline:
            line = lines[first][: comment.column] + "# " + new
            if display_width(line) > max(WIDTH, display_width(lines[first])):
                too_wide.append(line)
            replace[first] = [line]
            continue
        pad = lines[first][: comment.column]
        width = max(WIDTH - display_width(pad) - 2, 20)
        replace[first] = [pad + "# " + part for part in wrap(new, width)]
        dropped.update(comment.rows[1:])
    out: list[str] = []
    for row, line in enumerate(lines):
        if row in dropped:
            continue
        out.extend(replace.get(row, [line]))
    return Translated("\n".join(out), missing, too_wide)


def code_tokens(code: str) -> list[tuple[int, str]]:
    """The tokens of ``code`` without comments and line layout, to compare two versions."""
    skip = {tokenize.COMMENT, tokenize.NL}
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return [(-1, code)]  # not Python: compare the text itself
    return [(t.type, t.string) for t in tokens if t.type not in skip]


# -- Sphinx -------------------------------------------------------------------------


class commented_code(nodes.literal_block, addnodes.translatable):  # a node: docutils' naming
    """A Python code block whose comments are messages of the page's catalog."""

    def preserve_original_messages(self) -> None:
        pass  # the messages are the comments of the untouched text, kept in "comments"

    def extract_original_messages(self) -> Sequence[str]:
        return list(self["comments"])

    def apply_translated_message(self, original_message: str, translated_message: str) -> None:
        self.setdefault("translations", {})[original_message] = translated_message


def _listed(env: Any, source: str) -> bool:
    docname = env.path2doc(source)
    return docname is not None and docname in env.config.code_comment_pages


def _python(node: nodes.literal_block) -> bool:
    return str(node.get("language", "")).lower() in {"python", "python3", "py", "default"}


class MarkCodeComments(SphinxTransform):
    """In a listed page, a Python block with comments becomes ``commented_code``."""

    default_priority = 5  # before Sphinx's PreserveTranslatableMessages (10) and Locale (20)

    def apply(self, **kwargs: Any) -> None:
        del kwargs
        if not _listed(self.env, self.document["source"]):
            return
        for node in list(self.document.findall(nodes.literal_block)):
            if isinstance(node, commented_code) or not _python(node):
                continue
            found = [c.text for c in comments(node.astext())]
            if not found:
                continue
            new = commented_code(node.rawsource, "", *node.children, **node.attributes)
            new["comments"] = found
            new.source, new.line = node.source, node.line
            node.replace_self(new)


class ApplyCodeComments(SphinxTransform):
    """After ``Locale``: write the translated comments into the code's text."""

    default_priority = 21

    def apply(self, **kwargs: Any) -> None:
        del kwargs
        if self.config.language in (None, "", "en"):
            return
        for block in self.document.findall(commented_code):
            translations = block.get("translations", {})
            result = translate_code(block.astext(), translations.get)
            for msgid in result.missing:
                logger.warning(
                    "code comment without a translation: %r; run `nox -s translations` "
                    "and translate it in the page's catalog",
                    msgid[:100],
                    location=block,
                    type="code_comments",
                )
            for line in result.too_wide:
                logger.warning(
                    "translated comment makes a line %d columns wide (> %d): %r; shorten it "
                    "or make it a comment of its own line",
                    display_width(line),
                    WIDTH,
                    line.strip()[:100],
                    location=block,
                    type="code_comments",
                )
            block.rawsource = result.code
            block.clear()
            block.append(nodes.Text(result.code))


def plain_blocks(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """Every builder but gettext gets plain literal blocks back."""
    del docname
    if app.builder.name == "gettext":
        return
    for node in list(doctree.findall(commented_code)):
        attributes = {
            k: v for k, v in node.attributes.items() if k not in {"comments", "translations"}
        }
        plain = nodes.literal_block(node.rawsource, "", *node.children, **attributes)
        plain.source, plain.line = node.source, node.line
        node.replace_self(plain)


def setup(app: Sphinx) -> dict[str, Any]:
    # docnames whose code comments are translated; later work adds pages here
    app.add_config_value("code_comment_pages", [], "env", types=[list])
    app.add_transform(MarkCodeComments)
    app.add_transform(ApplyCodeComments)
    app.connect("doctree-resolved", plain_blocks)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
