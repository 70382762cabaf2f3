"""Light pages on a phone: what Lighthouse's mobile audit found, fixed where it starts.

Measured with ``benchmarks/bench_lighthouse.py`` (the site served with gzip,
Lighthouse 12's mobile preset); each piece says what it cost.

- :func:`defer_scripts` (``html-page-context``): Sphinx writes its scripts and
  the extensions' scripts (doctools, copybutton, sphinx-design's tabs, ...) as
  plain ``<script src>`` tags in ``<head>``: the browser stops drawing the page
  until each has downloaded and run. They all wait for the page to be parsed
  anyway, so they get ``defer``. ``documentation_options.js`` stays as it is:
  inline scripts after it set its fields. So does everything on the search page,
  whose template loads searchtools.js without ``defer``: it needs doctools.js
  to have run (and the search page is no page a reader arrives at). (The
  theme's search scripts, also in ``<head>``, are left out by
  ``_templates/layout.html`` where nothing uses them.)
- :func:`slim_icon_font` (``build-finished``): pydata-sphinx-theme ships Font
  Awesome, about 2,000 icons: three fonts (115, 110 and 19 KiB), which a page
  downloads at the highest priority while it loads, and one CSS rule per icon
  (19 KiB of the render-blocking stylesheet, gzip-compressed). The site shows
  about fifteen icons. After the build the fonts keep only the icons that a
  page or a script of the site names (``fa-magnifying-glass``, ...), and so do
  the CSS rules; an icon added to a template later is kept by the same scan,
  and so are the icons the theme's stylesheet draws by itself (download
  buttons, admonitions, the repository link: :func:`stylesheet_icons`).
  Needs fontTools (which Matplotlib brings) and Brotli (WOFF2): both are in the
  ``docs`` dependency group.
- :class:`DropValueLinks` (a post-transform, after sphinx-gallery's, which links
  the pages' code to the documentation): sphinx-gallery links each variable to
  the page of its type, so a variable named ``start`` holding a float is a link
  reading "start" to Python's ``float``, and one named ``more`` holding a tensor
  a link reading "more" to ``torch.Tensor`` (Lighthouse SEO: links without
  descriptive text; a screen reader announces the variable's name as the link).
  Variables holding plain values, of Python's built-in types (``int``,
  ``float``, ``str``, ``list``, ``dict``, ...) or tensors, keep no link: 3,800
  links on the English site that name a variable and open a page that tells the
  reader nothing the code does not. Functions, methods (``layer.register_forward_hook``),
  classes and variables of the other types (``SimpleCNN``, ``RemovableHandle``,
  ``nn.Linear``, ...) keep theirs.
- :func:`describe_api_page` (``html-page-context``, before sphinxext-opengraph):
  the page's meta description is its first paragraph (sphinxext-opengraph),
  but opengraph skips object descriptions, so an API page was described by its
  list of tutorials ("Examples using ...") or not at all (nine pages). Where a
  page's first paragraph belongs to an object's description, that paragraph
  (the docstring's summary) is the page's description.
"""

from __future__ import annotations

import logging as std_logging
import re
from html import escape
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging

logger = logging.getLogger(__name__)

# -- scripts ---------------------------------------------------------------------

KEEP_BLOCKING = {"_static/documentation_options.js"}


def defer_scripts(
    app: Any, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    """Give every script file in ``<head>`` ``defer``, but ``documentation_options.js``.

    Not on the search page: its body loads ``searchtools.js`` without ``defer``,
    which calls ``_ready`` from ``doctools.js`` at once, so doctools must run first.
    """
    del app, templatename, doctree
    scripts = context.get("script_files")
    if pagename == "search" or not isinstance(scripts, list):
        return
    deferred = []
    for script in scripts:
        attributes = getattr(script, "attributes", None)
        filename = str(getattr(script, "filename", "") or "")
        if (
            attributes is None
            or not filename
            or filename in KEEP_BLOCKING
            or {"defer", "async", "type"} & set(attributes)
        ):
            deferred.append(script)
            continue
        deferred.append(
            type(script)(filename, priority=script.priority, **attributes, defer="defer")
        )
    # in place: Sphinx restores the list's items after the page is written
    scripts[:] = deferred


# -- icon font -------------------------------------------------------------------

ICON_CSS = Path("_static/styles/pydata-sphinx-theme.css")
ICON_FONTS = Path("_static/vendor/fontawesome/webfonts")
_ICON_RULE = re.compile(r'(?<=[{}])([^{}@]*)\{--fa:"\\([0-9a-fA-F]+) ?"\}')
_ICON_NAME = re.compile(r"\bfa-[a-z0-9]+(?:-[a-z0-9]+)*\b")


def used_icon_names(outdir: Path) -> set[str]:
    """Every ``fa-*`` name that a built page or one of the site's scripts mentions."""
    names: set[str] = set()
    files = [*outdir.rglob("*.html"), *(outdir / "_static").rglob("*.js")]
    for path in files:
        names.update(_ICON_NAME.findall(path.read_text(encoding="utf-8", errors="replace")))
    return names


_PRIVATE_USE = re.compile("[\ue000-\uf8ff]")


def stylesheet_icons(css: str) -> set[int]:
    """The icons a stylesheet draws itself, with no ``fa-*`` class in the page.

    pydata-sphinx-theme writes them as characters in custom properties
    (``--pst-icon-download:"\uf019"``) that its rules put in ``content``: the
    download buttons, the admonitions' titles, the breadcrumbs' separators and
    the repository link's brand icon. They are few (sixteen); all are kept.
    """
    return {ord(c) for value in re.findall(r'--pst-icon-[\w-]+:"([^"]*)"', css) for c in value}


def prune_icon_rules(css: str, used: set[str]) -> tuple[str, set[int]]:
    """Drop the CSS rules of icons no page uses; return the CSS and the kept code points."""
    kept: set[int] = set()

    def rule(match: re.Match[str]) -> str:
        selectors = {s.strip().lstrip(".") for s in match.group(1).split(",")}
        if selectors & used:
            kept.add(int(match.group(2), 16))
            return match.group(0)
        return ""

    return _ICON_RULE.sub(rule, css), kept


def subset_font(path: Path, codepoints: set[int]) -> None:
    """Keep only ``codepoints`` in the WOFF2 font at ``path`` (rewritten in place)."""
    from fontTools import subset  # noqa: PLC0415  (Matplotlib brings fontTools)
    from fontTools.ttLib import TTFont  # noqa: PLC0415

    std_logging.getLogger("fontTools").setLevel(std_logging.WARNING)  # one line per table
    options = subset.Options()
    options.flavor = "woff2"
    options.layout_features = ["*"]
    options.notdef_outline = True
    font = TTFont(path)
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=codepoints)
    subsetter.subset(font)
    if not font["cmap"].tables:
        # a font left with no icon has an empty cmap, which browsers refuse ("OTS
        # parsing error: cmap: No subtables"): keep its first icon, so it still loads
        whole = TTFont(path)
        first = min(whole.getBestCmap())
        font = whole
        subsetter = subset.Subsetter(options)
        subsetter.populate(unicodes=codepoints | {first})
        subsetter.subset(font)
    font.flavor = "woff2"
    font.save(path)


def slim_icon_font(app: Any, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    outdir = Path(app.outdir)
    css_path, fonts = outdir / ICON_CSS, outdir / ICON_FONTS
    if not css_path.is_file() or not fonts.is_dir():
        return
    try:
        import brotli  # noqa: F401, PLC0415  (fontTools writes WOFF2 with it)
    except ImportError:
        logger.warning(
            "the icon fonts are shipped whole (225 KiB more per page): install Brotli "
            "(the docs dependency group has it)",
            type="light",
        )
        return
    css = css_path.read_text(encoding="utf-8")
    pruned, codepoints = prune_icon_rules(css, used_icon_names(outdir))
    codepoints |= stylesheet_icons(css)
    if pruned != css:
        css_path.write_text(pruned, encoding="utf-8")
    for font in sorted(fonts.glob("*.woff2")):
        subset_font(font, codepoints)


# -- descriptions ----------------------------------------------------------------


def api_summary(doctree: nodes.document) -> str | None:
    """The page's first paragraph when it belongs to an object description, else ``None``."""
    first = next(iter(doctree.findall(nodes.paragraph)), None)
    if first is None:
        return None
    parent = first.parent
    while parent is not None and not isinstance(parent, addnodes.desc):
        parent = parent.parent
    if parent is None:
        return None
    return " ".join(first.astext().split())


def describe_api_page(
    app: Any, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    del pagename, templatename
    if doctree is None or 'name="description"' in context.get("metatags", ""):
        return
    summary = api_summary(doctree)
    if not summary:
        return
    limit = app.config.ogp_description_length
    if len(summary) > limit:
        summary = summary[: limit - 3].rstrip() + "..."
    context["meta"] = {**(context.get("meta") or {}), "og:description": summary}
    context["metatags"] = (
        context.get("metatags", "") + f'\n<meta name="description" content="{escape(summary)}" />'
    )


# -- code links ------------------------------------------------------------------

# the types of plain values: a link from a variable to one of these says nothing
VALUE_TYPES = {"torch.Tensor", "torch.nn.parameter.Parameter"}


def is_value_link(reference: nodes.reference) -> bool:
    """Whether ``reference`` is sphinx-gallery's link from a variable to a plain value type."""
    classes = set(reference["classes"])
    if "sphx-glr-backref-instance" not in classes:
        return False
    builtin = "sphx-glr-backref-module-builtins" in classes
    return builtin or reference.get("reftitle") in VALUE_TYPES


class DropValueLinks(SphinxPostTransform):
    """Unwrap sphinx-gallery's links from variables holding plain values (the text stays)."""

    default_priority = 6  # right after sphinx-gallery's CodeLinksTransform (5)
    formats = ("html",)

    def run(self, **kwargs: Any) -> None:
        del kwargs
        for reference in list(self.document.findall(nodes.reference)):
            if is_value_link(reference):
                # parent.replace, not replace_self: that would give a lone child
                # the link's classes
                reference.parent.replace(reference, reference.children)


def merge_tokens(parent: nodes.Element) -> None:
    """Merge runs of sibling ``inline`` tokens of the same class into one, and write
    whitespace tokens as plain text (in place)."""
    merged: list[nodes.Node] = []
    for child in parent.children:
        if isinstance(child, nodes.reference):
            merge_tokens(child)
        if (
            isinstance(child, nodes.inline)
            and child["classes"] == ["w"]
            and not child.astext().strip()
        ):
            child = nodes.Text(child.astext())  # noqa: PLW2901
        previous = merged[-1] if merged else None
        if (
            isinstance(child, nodes.inline)
            and isinstance(previous, nodes.inline)
            and child.attributes == previous.attributes
            and all(isinstance(c, nodes.Text) for c in (*child.children, *previous.children))
        ):
            text = previous.astext() + child.astext()
            merged[-1] = nodes.inline(text, text, **previous.attributes)
        else:
            merged.append(child)
    if len(merged) != len(parent.children):
        parent.children = []
        parent.extend(merged)


class MergeCodeTokens(SphinxPostTransform):
    """One ``<span>`` per run of same-class tokens in the gallery's linked code.

    sphinx-gallery rewrites each code block that it links as one node per
    Pygments token, where Pygments' own HTML formatter writes one ``<span>``
    per run of tokens of one type (``matplotlib.pyplot`` is one ``nn`` span, not
    three; ``))`` one ``p`` span). Page 17 had 4,150 elements, most of them in
    its code, and the browser styles and lays out each: merging the runs, as
    Pygments does, and writing whitespace tokens (``w``, which show nothing) as
    plain text left 3,150 (with the links that :class:`DropValueLinks` drops).
    The page looks the same.
    """

    default_priority = 7  # after DropValueLinks, which can make new runs
    formats = ("html",)

    def run(self, **kwargs: Any) -> None:
        del kwargs
        for block in list(self.document.findall(nodes.Element)):
            if block.tagname == "code_links_block":  # sphinx-gallery's node
                merge_tokens(block)


def setup(app: Any) -> dict[str, Any]:
    app.connect("html-page-context", describe_api_page, priority=400)  # before opengraph
    app.connect("html-page-context", defer_scripts, priority=900)  # after the scripts are added
    app.add_post_transform(DropValueLinks)
    app.add_post_transform(MergeCodeTokens)
    app.connect("build-finished", slim_icon_font, priority=800)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
