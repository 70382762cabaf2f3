"""Translated downloads of the gallery examples (.py, .ipynb, .zip).

sphinx-gallery writes each example's script, notebook and zip into
``auto_examples/<chapter>/``; their prose is English. In a translated build
(``-D language=zh_CN``) this module writes copies whose prose comes from the
same catalogs that translate the page, into ``auto_examples/<chapter>/_zh_CN/``
under the same file names, plus translated "download all" zips in
``auto_examples/_zh_CN/``. ``docs/tools/i18n.py fill`` points the translated
download links there.

Only prose changes: the module docstring and the ``# %%`` comment blocks, one
paragraph, title or list item at a time; the comments inside the code of the
pages listed in ``code_comment_pages`` (``docs/_ext/code_comments.py``, the same
messages as the page's code blocks); and the two install lines above the
docstring. Code tokens are copied byte for byte, and the build fails if a
translated script's code blocks, comments set aside, differ from the original's.
A paragraph or a listed page's comment without a translation stays English, and
the build warns, naming the download and the text (an error under ``-W``): a
Chinese reader would otherwise meet English prose without anyone noticing.

Why no package does this: sphinx-gallery writes its downloads once, from the
English source, and Sphinx's gettext translation applies to doctrees, not to
the files behind ``:download:`` links.

In the ``.py`` the translated paragraphs are wrapped at 79 columns (CJK
characters count two); in the notebook each paragraph is one line, because
Markdown turns a line break between two Chinese characters into a space.
"""

from __future__ import annotations

import ast
import io
import json
import re
import tempfile
import unicodedata
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from babel.messages.pofile import read_po
from code_comments import code_tokens, translate_code
from notebooks import STAMP, prose_notebook, stamp
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging
from sphinx_gallery.notebook import jupyter_notebook, save_notebook
from sphinx_gallery.py_source_parser import (
    Block,
    remove_config_comments,
    remove_ignore_blocks,
    split_code_and_text_blocks,
)

logger = logging.getLogger(__name__)
Rule = tuple[re.Pattern[str], Callable[[re.Match[str]], str]]

WIDTH = 79
# the same pattern sphinx-gallery uses to find text blocks after the docstring
TEXT_BLOCK = re.compile(
    r"(?P<header_line>^#{20,}.*|^# ?%%.*)\s(?P<text_content>(?:^#.*\s?)*)",
    flags=re.MULTILINE,
)
ADORNMENT = re.compile(r"""^([=\-`:.'"~^_*+#<>])\1+\s*$""")
BULLET = re.compile(r"^(?P<marker>[-*+\u2022]|\d+[.)]|#\.|\(\d+\))(?: +|$)")
DIRECTIVE = re.compile(r"^\.\.\s+(?P<name>[\w:.+-]+)::(?:\s+(?P<arg>.*))?$")
# directives whose argument is prose and whose content is reST to translate
PROSE_DIRECTIVES = {
    "admonition",
    "attention",
    "caution",
    "danger",
    "dropdown",
    "error",
    "hint",
    "important",
    "list-table",  # its cells are list items: "* - text" and "  - text"
    "note",
    "rubric",
    "seealso",
    "tab-item",
    "tip",
    "topic",
    "warning",
}


# -- text helpers -------------------------------------------------------------


def _wide(char: str) -> bool:
    return unicodedata.east_asian_width(char) in ("W", "F")


def display_width(text: str) -> int:
    """Columns ``text`` takes in a terminal (and in docutils' title checks)."""
    return sum(2 if _wide(c) else 1 for c in text)


OPENING = set("（「『《〈“‘【〔")
CLOSING = set("，。、；：！？）」』》〉”’】〕…·")
INLINE = re.compile(
    r"``.+?``"  # inline literal
    r"|:[\w:.+-]+:`[^`]+`"  # role
    r"|`[^`]+`_{0,2}"  # interpreted text, link
    r"|\*\*[^*]+\*\*|\*[^*\s][^*]*\*"  # strong, emphasis
    r"|\\ "  # escaped space: glue, never a break point
    r"|\s+"
    r"|[^\s`*\\]"  # any other single character
    r"|[`*\\]"
)


def _atoms(text: str) -> list[str]:
    return INLINE.findall(text)


def _can_break(left: str, right: str) -> bool:
    """May a line break go between two adjacent atoms with no space between them?"""
    if left == "\\ " or right == "\\ ":
        return False
    a, b = left[-1], right[0]
    if not (_wide(a) or _wide(b)):
        return False
    if b in CLOSING or a in OPENING:
        return False
    # a continuation line must not start like a list item or a comment
    return not re.match(r"[-*+#.]|\d+[.)]", right)


def wrap(text: str, width: int) -> list[str]:
    """Wrap reST prose at ``width`` columns without splitting inline markup."""
    units: list[tuple[str, str]] = []  # (separator before, text)
    pending = ""
    for atom in _atoms(text):
        if atom.isspace():
            pending = " " if units else ""
            continue
        if not units:
            units.append(("", atom))
        elif pending:
            units.append((" ", atom))
        elif _can_break(units[-1][1], atom):
            units.append(("", atom))
        else:
            units[-1] = (units[-1][0], units[-1][1] + atom)
        pending = ""
    lines: list[str] = []
    line = ""
    for sep, unit in units:
        if not line:
            line = unit
        elif display_width(line + sep + unit) <= width:
            line += sep + unit
        else:
            lines.append(line)
            line = unit
    if line:
        lines.append(line)
    return lines or [""]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


# -- translating a block of reST ----------------------------------------------


@dataclass
class Stats:
    translated: int = 0
    missing: list[str] = field(default_factory=list)
    comments_missing: list[str] = field(default_factory=list)  # code comments

    def add(self, other: Stats) -> None:
        self.translated += other.translated
        self.missing += other.missing
        self.comments_missing += other.comments_missing


def translate_rst(
    text: str, lookup: Callable[[str], str | None], width: int | None, stats: Stats
) -> str:
    """Translate the paragraphs, titles and list items of a reST text.

    ``width`` is the wrapping width for translated paragraphs (None: one line
    per paragraph). Untranslated parts and non-prose (code, directives'
    options, comments, literal blocks) are copied unchanged.
    """
    lines = text.split("\n")
    out: list[str] = []
    verbatim_above: int | None = None  # copy lines indented deeper than this
    i = 0
    n = len(lines)
    while i < n:
        line = lines[i]
        stripped = line.strip()
        if verbatim_above is not None:
            if not stripped or _indent(line) > verbatim_above:
                out.append(line)
                i += 1
                continue
            verbatim_above = None
        if not stripped:
            out.append(line)
            i += 1
            continue
        ind = _indent(line)
        pad = " " * ind
        directive = DIRECTIVE.match(stripped)
        if directive:
            name, arg = directive["name"], (directive["arg"] or "").strip()
            if name in PROSE_DIRECTIVES:
                new_arg = lookup(arg) if arg else None
                if new_arg:
                    stats.translated += 1
                elif arg:
                    stats.missing.append(arg)
                out.append(f"{pad}.. {name}::" + (f" {new_arg or arg}" if arg else ""))
                i += 1
                while i < n and lines[i].strip().startswith(":") and _indent(lines[i]) > ind:
                    out.append(lines[i])  # directive options
                    i += 1
                continue
            out.append(line)  # code, math, images...: keep the whole block
            verbatim_above = ind
            i += 1
            continue
        if stripped.startswith(".."):  # comment, target, substitution
            out.append(line)
            verbatim_above = ind
            i += 1
            continue
        # a title: text over an adornment line (or between two)
        if (
            i + 1 < n
            and ADORNMENT.match(lines[i + 1].strip())
            and not ADORNMENT.match(stripped)
            and _indent(lines[i + 1]) == ind
        ):
            new = lookup(stripped)
            char = lines[i + 1].strip()[0]
            if new:
                stats.translated += 1
                out += [pad + new, pad + char * max(display_width(new), 3)]
            else:
                stats.missing.append(stripped)
                out += [line, lines[i + 1]]
            i += 2
            continue
        if (
            ADORNMENT.match(stripped)
            and i + 2 < n
            and ADORNMENT.match(lines[i + 2].strip())
            and lines[i + 1].strip()
        ):
            title = lines[i + 1].strip()
            new = lookup(title)
            char = stripped[0]
            if new:
                stats.translated += 1
                bar = pad + char * (display_width(new) + 2)
                out += [bar, pad + " " + new, bar]
            else:
                stats.missing.append(title)
                out += lines[i : i + 3]
            i += 3
            continue
        # a paragraph, or a list item with its continuation lines
        bullet = BULLET.match(stripped)
        if bullet:
            end = bullet.end()
            while (nested := BULLET.match(stripped[end:])) and nested.end() > 0:
                end += nested.end()  # a list-table row: "* - first cell"
            first = stripped[end:]
            marker = stripped[:end]
            marker = marker if marker.endswith(" ") else marker + " "
            body_indent = ind + len(marker)
        else:
            first, marker, body_indent = stripped, "", ind
        j = i + 1
        body = [first]
        # continuation lines sit at the item's text indent (or the paragraph's)
        while j < n and lines[j].strip() and _indent(lines[j]) == body_indent:
            if DIRECTIVE.match(lines[j].strip()):
                break
            body.append(lines[j].strip())
            j += 1
        msgid = " ".join(part for part in body if part)
        new = lookup(msgid)
        if new is None:
            stats.missing.append(msgid)
            out += lines[i:j]
        else:
            stats.translated += 1
            prefix = pad + marker
            rest = " " * body_indent
            wrapped = [new] if width is None else wrap(new, max(width - len(prefix), 20))
            out.append(prefix + wrapped[0])
            out += [rest + w for w in wrapped[1:]]
        if msgid.endswith("::"):
            verbatim_above = ind  # a literal block follows
        i = j
    return "\n".join(out)


# -- translating a whole example script -----------------------------------------


@dataclass
class Localized:
    wrapped: str  # the .py to download
    unwrapped: str  # the same with one line per paragraph, for the notebook
    stats: Stats


def _docstring_span(source: str) -> tuple[int, int] | None:
    """0-based line span [start, end) of the module docstring statement."""
    tree = ast.parse(source)
    if not tree.body:
        return None
    first = tree.body[0]
    if not (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        return None
    assert first.end_lineno is not None
    return first.lineno - 1, first.end_lineno


# the install lines above each example's docstring (the same on every page)
HEADER_LINES: list[Rule] = [
    (
        re.compile(r"# Needs the hooks_tutorial library: (?P<cmd>pip install .+)"),
        lambda m: f"# 需要 hooks_tutorial 库：{m['cmd']}",
    ),
    (
        re.compile(r"# \(or the development version: (?P<cmd>pip install .+)\)"),
        lambda m: f"# （或者安装开发版：{m['cmd']}）",
    ),
]


# the notebooks' first cell (sphinx-gallery's ``first_notebook_cell``, docs/conf.py)
HEADER_LINES += [
    (
        re.compile(r"# This notebook needs the hooks_tutorial library\.?"),
        lambda _: "# 本笔记本需要 hooks_tutorial 库。",
    ),
    (
        re.compile(r"# If it is not installed, remove one leading '#' and run this cell once:"),
        lambda _: "# 如果还没有安装，删掉下面一行开头的一个 '#'，再运行一次本单元格：",
    ),
]


def _header_line(line: str) -> str:
    for pattern, translate in HEADER_LINES:
        match = pattern.fullmatch(line)
        if match:
            return translate(match)
    return line


def localize_script(
    source: str, lookup: Callable[[str], str | None], *, comments: bool = False
) -> Localized:
    """Translate the prose of a sphinx-gallery script (docstring and text blocks).

    ``comments``: translate the comments inside the code too (a page listed in
    ``code_comment_pages``); the missing ones go to ``stats.comments_missing``.
    """
    results = {}
    stats = Stats()
    for width in (WIDTH, None):
        local = Stats()
        results[width] = _localize(source, lookup, width, local, comments=comments)
        if width is None:
            stats = local
    return Localized(results[WIDTH], results[None], stats)


def _localize(
    source: str,
    lookup: Callable[[str], str | None],
    width: int | None,
    stats: Stats,
    *,
    comments: bool = False,
) -> str:
    lines = source.split("\n")
    out: list[str] = []
    span = _docstring_span(source)
    start_rest = 0
    if span is not None:
        start, end = span
        out += [_header_line(line) for line in lines[:start]]
        doc = "\n".join(lines[start:end])
        opening = re.match(r"(?P<prefix>[rRuUbB]{0,2})(?P<q>\"\"\"|''')", doc)
        if opening is None:
            out += lines[start:end]
        else:
            quote = opening["q"]
            close = doc.rindex(quote)
            body = doc[opening.end() : close]
            new = translate_rst(body, lookup, width, stats)
            prefix = opening["prefix"]
            if "\\" in new and "r" not in prefix.lower():
                if "\\" in body:
                    new = new.replace("\\ ", "\\\\ ")
                else:
                    prefix = "r" + prefix
            out += (prefix + quote + new + doc[close:]).split("\n")
        start_rest = end
    rest = "\n".join(lines[start_rest:])
    pieces: list[str] = []
    pos = 0

    def code(piece: str) -> str:
        if not comments:
            return piece
        translated = translate_code(piece, lookup)
        stats.comments_missing += translated.missing
        return translated.code

    for match in TEXT_BLOCK.finditer(rest):
        block_start, block_end = match.span("text_content")
        pieces.append(code(rest[pos:block_start]))
        pieces.append(_translate_comment_block(match["text_content"], lookup, width, stats))
        pos = block_end
    pieces.append(code(rest[pos:]))
    if span is not None:
        return "\n".join(out) + "\n" + "".join(pieces)
    return "".join(pieces)


def _translate_comment_block(
    block: str, lookup: Callable[[str], str | None], width: int | None, stats: Stats
) -> str:
    if not block.strip():  # "# %%" followed by code: no text block
        return block
    trailing = block[len(block.rstrip("\n")) :]
    raw = block.rstrip("\n").split("\n")
    texts = [line[1:] for line in raw]  # drop the "#"
    content = [t for t in texts if t.strip()]
    common = min((_indent(t) for t in content), default=1)
    dedented = "\n".join(t[common:] for t in texts)
    inner = None if width is None else width - 1 - common
    new = translate_rst(dedented, lookup, inner, stats)
    lead = "#" + " " * common
    rebuilt = "\n".join(lead + t if t.strip() else "#" for t in new.split("\n"))
    return rebuilt + trailing


# -- code must not change -----------------------------------------------------------


def code_blocks(path: Path) -> list[list[tuple[int, str]]]:
    """The code blocks of a gallery script, as sphinx-gallery splits it, as tokens
    without comments (``code_comments.code_tokens``): a translation may change
    the comments and nothing else."""
    _, blocks = split_code_and_text_blocks(str(path))
    return [code_tokens(content) for label, content, _ in blocks if label == "code"]


# -- writing the files --------------------------------------------------------------


def _write_if_changed(path: Path, data: bytes) -> None:
    if path.is_file() and path.read_bytes() == data:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _zip_bytes(
    members: list[tuple[str, bytes]], dates: dict[str, tuple[int, ...]] | None = None
) -> bytes:
    """A zip whose members carry ``dates`` (name -> date_time), like the English zips.

    A member without a date gets 1980-01-01 (the zip epoch).
    """
    dates = dates or {}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members:
            stamp = dates.get(name, (1980, 1, 1, 0, 0, 0))
            info = zipfile.ZipInfo(name, date_time=stamp[:6])  # type: ignore[arg-type]
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return buffer.getvalue()


def _zip_dates(english: Path) -> dict[str, tuple[int, ...]]:
    """Member name -> date_time in sphinx-gallery's zip (empty if there is none)."""
    if not english.is_file():
        return {}
    with zipfile.ZipFile(english) as archive:
        return {info.filename: info.date_time for info in archive.infolist()}


def _other_members(english: Path, names: set[str]) -> list[tuple[str, bytes]]:
    """The members of a page's English zip other than ``names`` (helper scripts
    that ``companions.py`` added): code, copied unchanged."""
    if not english.is_file():
        return []
    with zipfile.ZipFile(english) as archive:
        return [(n, archive.read(n)) for n in archive.namelist() if n not in names]


def _untranslated(msgid: str) -> str | None:
    del msgid
    return None


def _catalog_lookup(po: Path) -> Callable[[str], str | None]:
    if not po.is_file():
        return _untranslated
    with po.open("rb") as f:
        catalog = read_po(f)
    table = {
        m.id: m.string
        for m in catalog
        if m.id and isinstance(m.id, str) and isinstance(m.string, str) and m.string
        if not m.fuzzy
    }
    return table.get


def _notebook(
    unwrapped: str,
    gallery_conf: dict[str, Any],
    target_dir: Path,
    pandoc_args: list[str],
    previous: Path,
) -> bytes:
    """The notebook sphinx-gallery would write for ``unwrapped``, its prose by pandoc.

    ``previous`` (the notebook an earlier build wrote) is kept when it was made
    from the same script with the same pandoc options (``notebooks.stamp``).
    """
    first = gallery_conf.get("first_notebook_cell")
    if first:  # its comments, translated like the script's install lines
        first = "\n".join(_header_line(line) for line in first.split("\n"))
    if previous.is_file():
        old = json.loads(previous.read_bytes())
        cells = old.get("cells") or [{}]
        if old.get("metadata", {}).get(STAMP) == stamp(unwrapped, pandoc_args) and (
            not first or "".join(cells[0].get("source", "")) == first
        ):
            return previous.read_bytes()
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "example.py"
        script.write_text(unwrapped, encoding="utf-8")
        _, blocks = split_code_and_text_blocks(str(script))
        cleaned = []
        for label, raw, lineno in blocks:
            content = remove_ignore_blocks(raw)
            if gallery_conf.get("remove_config_comments"):
                content = remove_config_comments(content)
            cleaned.append(Block(label, content, lineno))
        if cleaned and cleaned[-1].content.isspace():
            cleaned = cleaned[:-1]
        notebook = jupyter_notebook(
            cleaned, {**gallery_conf, "first_notebook_cell": first}, target_dir
        )
        prose_notebook(notebook, unwrapped, pandoc_args)  # as notebooks.py does for English
        out = Path(tmp) / "example.ipynb"
        save_notebook(notebook, out)
        return out.read_bytes()


def write_localized_downloads(app: Sphinx) -> None:
    language = app.config.language
    if not language or language == "en" or not hasattr(app.config, "sphinx_gallery_conf"):
        return
    gallery_conf = app.config.sphinx_gallery_conf
    srcdir = Path(app.srcdir)
    local = f"_{language}"
    catalogs = [srcdir / d / language / "LC_MESSAGES" for d in app.config.locale_dirs]
    with_comments = set(getattr(app.config, "code_comment_pages", ()))
    total = Stats()
    count = 0
    for gallery in gallery_conf["gallery_dirs"]:
        gallery_dir = srcdir / gallery
        translated: dict[str, bytes] = {}  # path in the gallery -> translated file
        for script in sorted(gallery_dir.rglob("*.py")):
            if local in script.parts or not script.with_suffix(".rst").is_file():
                continue
            docname = script.with_suffix("").relative_to(srcdir).as_posix()
            po = next(
                (c / f"{docname}.po" for c in catalogs if (c / f"{docname}.po").is_file()),
                None,
            )
            lookup = _catalog_lookup(po) if po else _untranslated
            source = script.read_text(encoding="utf-8")
            result = localize_script(source, lookup, comments=docname in with_comments)
            target = script.parent / local / script.name
            _write_if_changed(target, result.wrapped.encode("utf-8"))
            if code_blocks(target) != code_blocks(script):
                msg = f"localized download {target} changed the example's code; please report this"
                raise ExtensionError(msg)
            notebook = _notebook(
                result.unwrapped,
                gallery_conf,
                script.parent,
                app.config.notebook_pandoc_args,
                target.with_suffix(".ipynb"),
            )
            _write_if_changed(target.with_suffix(".ipynb"), notebook)
            members = [(script.name, result.wrapped.encode("utf-8"))]
            if script.with_suffix(".ipynb").is_file():
                members.append((script.with_suffix(".ipynb").name, notebook))
            members += _other_members(script.with_suffix(".zip"), {n for n, _ in members})
            dates = _zip_dates(script.with_suffix(".zip"))
            _write_if_changed(target.with_suffix(".zip"), _zip_bytes(members, dates))
            rel = script.relative_to(gallery_dir).as_posix()
            translated[rel] = members[0][1]
            translated[rel[: -len(".py")] + ".ipynb"] = notebook
            if result.stats.missing:
                # the page's own catalog lacks these paragraphs (or the script's text
                # no longer matches its msgid): the reader would get English prose
                logger.warning(
                    "localized download %s: %d paragraphs left in English, e.g. %r; "
                    "run `nox -s translations` and translate them",
                    target.relative_to(srcdir),
                    len(result.stats.missing),
                    result.stats.missing[0][:100],
                )
            if result.stats.comments_missing:
                logger.warning(
                    "localized download %s: %d code comments left in English, e.g. %r; "
                    "run `nox -s translations` and translate them",
                    target.relative_to(srcdir),
                    len(result.stats.comments_missing),
                    result.stats.comments_missing[0][:100],
                )
            total.add(result.stats)
            count += 1
        # "download all" zips: the same files as sphinx-gallery's, translated
        for kind in ("python", "jupyter"):
            english = gallery_dir / f"{gallery_dir.name}_{kind}.zip"
            if english.is_file():
                with zipfile.ZipFile(english) as archive:
                    members = [
                        (n, translated.get(n) or archive.read(n)) for n in archive.namelist()
                    ]
                zipped = _zip_bytes(members, _zip_dates(english))
                _write_if_changed(gallery_dir / local / english.name, zipped)
    logger.info(
        "localized downloads: %d examples, %d prose parts translated, %d left in English",
        count,
        total.translated,
        len(total.missing),
    )


def setup(app: Sphinx) -> dict[str, Any]:
    # after sphinx-gallery's builder-inited (priority 500) wrote auto_examples/
    app.connect("builder-inited", write_localized_downloads, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
