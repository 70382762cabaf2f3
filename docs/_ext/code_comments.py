"""The comments and docstrings inside the pages' code, translated through the pages' catalogs.

A comment or a function's docstring in a gallery page's code cell is prose the
reader sees: on a zh_CN page and in its downloads it is Chinese. Each comment
(or each run of full-line comments at one column, joined into one sentence)
and each docstring of a function or class is a message of the page's catalog,
like a paragraph; the code around it never changes.

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

Which docstrings are messages: those of the functions and classes in a code
block (the module docstring is the page's title and introduction, translated
as prose), with a word of two or more ASCII letters, outside hidden blocks,
unless the block reads ``__doc__``: a docstring that the code prints or
compares is data, and the output shown under it (printed by the English build)
must match it. A translated docstring keeps its quotes; it stays on one line
when that fits in ``WIDTH`` columns (or in the English line's width), and is
wrapped into a multi-line docstring when it does not.

A translated run of full-line comments is wrapped to ``WIDTH`` columns (a CJK
character counts two); a translated end-of-line comment stays on its line, and
the build warns when that line becomes wider than ``WIDTH`` and than the English.

Why no package does this: Sphinx translates code blocks only as whole blocks
(``gettext_additional_targets = ["literal-block"]``), which would put code into
the catalogs and let a translation change it; sphinx-gallery has no i18n.
"""

from __future__ import annotations

import ast
import inspect
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


@dataclass(frozen=True)
class Docstring:
    """One message: the docstring of a function or class."""

    text: str  # the msgid: its paragraphs (inspect.cleandoc), each on one line
    start: tuple[int, int]  # 0-based line and column where the string literal starts
    end: tuple[int, int]  # ... and where it ends (the column after its closing quote)


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


def _docstring_tokens(code: str) -> list[tokenize.TokenInfo]:
    """The string tokens of ``code`` that are docstrings of a function or class."""
    try:
        tree = ast.parse(code)
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError, ValueError):
        return []  # not Python, or a fragment: nothing to translate
    starts = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                starts.add((first.lineno, first.col_offset))  # indentation: ASCII, bytes = chars
    return [t for t in tokens if t.type == tokenize.STRING and t.start in starts]


def _paragraphs(text: str) -> str:
    """A docstring's text as a message: paragraphs apart, each one's lines joined."""
    paragraphs = re.split(r"\n\s*\n", inspect.cleandoc(text))
    return "\n\n".join(" ".join(p.split()) for p in paragraphs)


def docstrings(code: str) -> list[Docstring]:
    """The docstrings of ``code``'s functions and classes that are messages, in order.

    Empty when ``code`` reads ``__doc__``: its docstrings are data (see the module's
    docstring). Those in hidden blocks and those without an ASCII word are not messages.
    """
    if re.search(r"\b__doc__\b", code):
        return []
    hidden: set[int] = set()  # 1-based lines inside hidden blocks
    start = None
    for token in _comment_tokens(code):
        if "sphinx_gallery_start_ignore" in token.string:
            start = token.start[0]
        elif "sphinx_gallery_end_ignore" in token.string and start is not None:
            hidden.update(range(start, token.start[0] + 1))
            start = None
    found = []
    for token in _docstring_tokens(code):
        if token.start[0] in hidden or (start is not None and token.start[0] > start):
            continue
        text = _paragraphs(ast.literal_eval(token.string))
        if WORD.search(text):
            found.append(
                Docstring(
                    text, (token.start[0] - 1, token.start[1]), (token.end[0] - 1, token.end[1])
                )
            )
    return found


def messages(code: str) -> list[str]:
    """Every message of ``code``: its comments, then its docstrings."""
    return [c.text for c in comments(code)] + [d.text for d in docstrings(code)]


_PIECE = re.compile(r"[\x21-\x7e]+|\s+|.", re.DOTALL)  # ASCII runs stay whole


NO_LINE_START = "。，、；：？！）》」』"  # Chinese punctuation that never starts a line


def wrap(text: str, width: int) -> list[str]:
    """Wrap ``text`` at ``width`` columns, breaking between CJK characters or at spaces.

    A line never starts with closing punctuation: the character before it moves down too.
    """
    lines: list[str] = []
    line = ""
    for found in _PIECE.findall(text):
        piece = " " if found.isspace() else found
        if line and display_width(line + piece.rstrip()) > width:
            carry = ""
            if piece in NO_LINE_START and len(line) > 1 and HAN.match(line[-1]):
                carry, line = line[-1], line[:-1]
            lines.append(line.rstrip())
            line = "" if piece == " " else carry + piece
            continue
        line += piece
    if line.strip():
        lines.append(line.rstrip())
    return lines or [""]


@dataclass
class Translated:
    code: str
    missing: list[str]  # msgids (comments, docstrings) without a translation
    too_wide: list[str]  # lines wider than WIDTH (and than their English)


def translate_code(code: str, lookup: Callable[[str], str | None]) -> Translated:
    """``code`` with its comments and docstrings translated; the other tokens are unchanged."""
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
    for doc in docstrings(code):
        new = lookup(doc.text)
        if not new or new == doc.text:
            missing.append(doc.text)
            continue
        (first, column), (last, end) = doc.start, doc.end
        literal = lines[first][column:] if first != last else lines[first][column:end]
        opener = re.match(r"[A-Za-z]*(\"\"\"|\'\'\'|\"|\')", literal)
        assert opener is not None, literal
        prefix, quote = lines[first][:column] + opener.group(0)[: -len(opener[1])], opener[1]
        if quote in {'"', "'"}:
            quote = '"""'
        replace[first] = _docstring_lines(prefix, quote, new, lines[last][end:], lines[first])
        if display_width(replace[first][0]) > max(WIDTH, display_width(lines[first])):
            too_wide.append(replace[first][0])
        dropped.update(range(first + 1, last + 1))
    out: list[str] = []
    for row, line in enumerate(lines):
        if row in dropped:
            continue
        out.extend(replace.get(row, [line]))
    return Translated("\n".join(out), missing, too_wide)


def _docstring_lines(prefix: str, quote: str, text: str, suffix: str, english: str) -> list[str]:
    """A translated docstring's lines: one when it fits, else wrapped (PEP 257's layout).

    ``prefix`` is the indentation and any string prefix (``r``), ``suffix`` what followed
    the closing quote on its line, ``english`` the English docstring's first line.
    """
    one = prefix + quote + text + quote + suffix
    if "\n" not in text and display_width(one) <= max(WIDTH, display_width(english)):
        return [one]
    indent = re.match(r"\s*", prefix)[0]  # type: ignore[index]
    width = max(WIDTH - display_width(indent), 20)
    body: list[str] = []
    for paragraph in text.split("\n\n"):
        if body:
            body.append("")
        body += wrap(paragraph, width - (len(quote) if not body else 0))
    return (
        [prefix + quote + body[0]]
        + [indent + line if line else "" for line in body[1:]]
        + [indent + quote + suffix]
    )


def code_tokens(code: str) -> list[tuple[int, str]]:
    """The tokens of ``code`` without comments and line layout, to compare two versions.

    A docstring of a function or class is prose: it counts as one token, ``"<docstring>"``.
    """
    skip = {tokenize.COMMENT, tokenize.NL}
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return [(-1, code)]  # not Python: compare the text itself
    prose = {t.start for t in _docstring_tokens(code)}
    return [
        (t.type, "<docstring>" if t.start in prose else t.string)
        for t in tokens
        if t.type not in skip
    ]


# -- Sphinx -------------------------------------------------------------------------


class commented_code(nodes.literal_block, addnodes.translatable):  # a node: docutils' naming
    """A Python code block whose comments and docstrings are messages of the page's catalog."""

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
    """In a listed page, a Python block with comments or docstrings becomes ``commented_code``."""

    default_priority = 5  # before Sphinx's PreserveTranslatableMessages (10) and Locale (20)

    def apply(self, **kwargs: Any) -> None:
        del kwargs
        if not _listed(self.env, self.document["source"]):
            return
        for node in list(self.document.findall(nodes.literal_block)):
            if isinstance(node, commented_code) or not _python(node):
                continue
            found = messages(node.astext())
            if not found:
                continue
            new = commented_code(node.rawsource, "", *node.children, **node.attributes)
            new["comments"] = found
            new.source, new.line = node.source, node.line
            node.replace_self(new)


class ApplyCodeComments(SphinxTransform):
    """After ``Locale``: write the translated comments and docstrings into the code's text."""

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
                    "code comment or docstring without a translation: %r; run "
                    "`nox -s translations` "
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
