"""Math rendered at build time as MathML: no MathJax, no script, nothing to download.

Sphinx's HTML math renderers are MathJax (a 263 KiB script, gzip-compressed, plus its
fonts, which typesets every formula in the reader's browser: on a phone, Lighthouse
measured 0.7 s of script on page 18) and imgmath (needs LaTeX on the build
machine). Browsers render MathML Core themselves (Chromium since 109, Firefox,
Safari), so this renderer converts each formula once, when the page is built,
with Docutils' own LaTeX-to-MathML converter (Docutils comes with Sphinx: no
Node.js, no LaTeX).

Two spellings that the converter does not know are rewritten first:
``\\big(``, ``\\Big(``, ... (a delimiter of a fixed size) become the paired
``\\bigl(`` ... ``\\bigr)`` that it knows, and ``\\dots`` becomes ``\\dotso``.
A formula that still does not convert is a build warning (``-W``: an error)
naming the formula, and the page shows its TeX source.

A displayed formula wider than the column scrolls sideways (``custom.css``);
pages with displayed math load ``_static/math-scroll.js`` (under 1 KiB), which makes
such a formula reachable with the keyboard.
"""

from __future__ import annotations

import re
from typing import Any

from docutils import nodes
from docutils.utils.math import MathError, latex2mathml
from sphinx.locale import _
from sphinx.util import logging
from sphinx.util.math import get_node_equation_number

logger = logging.getLogger(__name__)

_SIZED = re.compile(r"\\(big|Big|bigg|Bigg)(?![a-zA-Z])\s*(\\[{}]|\\[a-z]+|[()\[\]])")
_OPENING = {"(", "[", "\\{", "\\langle", "\\lfloor", "\\lceil"}
_BETWEEN_TAGS = re.compile(r">\s+<")


def normalize(tex: str) -> str:
    r"""Rewrite ``\big(`` and friends as ``\bigl(``/``\bigr)``, and ``\dots`` as ``\dotso``."""

    def sided(match: re.Match[str]) -> str:
        size, delimiter = match.groups()
        side = "l" if delimiter in _OPENING else "r"
        return f"\\{size}{side}{delimiter}"

    tex = _SIZED.sub(sided, tex)
    return re.sub(r"\\dots(?![a-zA-Z])", r"\\dotso", tex)


def to_mathml(tex: str, *, block: bool) -> str:
    """``tex`` as one ``<math>`` element (compact: no whitespace between tags).

    Raises :class:`docutils.utils.math.MathError` when the converter does not
    know a command.
    """
    mathml = latex2mathml.tex2mathml(normalize(tex.strip()), as_block=block)
    mathml = mathml.replace(' xmlns="http://www.w3.org/1998/Math/MathML"', "", 1)
    return _BETWEEN_TAGS.sub("><", mathml).strip()


def _convert(self: Any, node: nodes.Element, tex: str, *, block: bool) -> str:
    try:
        return to_mathml(tex, block=block)
    except MathError as error:
        logger.warning(
            "cannot render this formula as MathML (%s): %s",
            error,
            tex,
            location=node,
            type="mathml",
        )
        return f"<code>{self.encode(tex)}</code>"


def visit_math(self: Any, node: nodes.math) -> None:
    self.body.append(self.starttag(node, "span", "", CLASS="math notranslate"))
    self.body.append(_convert(self, node, node.astext(), block=False) + "</span>")
    raise nodes.SkipNode


def visit_displaymath(self: Any, node: nodes.math_block) -> None:
    self.body.append(self.starttag(node, "div", CLASS="math notranslate"))
    if node["number"]:
        number = get_node_equation_number(self, node)
        self.body.append(f'<span class="eqno">({number})')
        self.add_permalink_ref(node, _("Link to this equation"))
        self.body.append("</span>")
    # like sphinx.ext.mathjax: a blank line separates equations
    for part in (p for p in node.astext().split("\n\n") if p.strip()):
        self.body.append(_convert(self, node, part, block=True))
    self.body.append("</div>\n")
    raise nodes.SkipNode


def add_scroll_script(
    app: Any, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    del pagename, templatename, context
    if doctree is not None and next(iter(doctree.findall(nodes.math_block)), None) is not None:
        app.add_js_file("math-scroll.js", defer="defer")


def setup(app: Any) -> dict[str, Any]:
    app.add_html_math_renderer("mathml", (visit_math, None), (visit_displaymath, None))
    app.connect("html-page-context", add_scroll_script)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
