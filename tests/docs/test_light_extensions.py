"""Unit tests of docs/_ext/mathml.py and docs/_ext/light.py (light pages), run by ``nox -s docs``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from docutils import nodes
from docutils.utils import new_document
from docutils.utils.math import MathError
from sphinx import addnodes
from sphinx.builders.html._assets import _JavaScript

sys.path.insert(0, str(Path(__file__).parents[2] / "docs" / "_ext"))

import light
import mathml

# -- math -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tex", "expected"),
    [
        (r"\operatorname{ReLU}\Big(\sum_k A^k\Big)", r"\operatorname{ReLU}\Bigl(\sum_k A^k\Bigr)"),
        (r"\big( x \big)", r"\bigl( x \bigr)"),
        (r"\Bigg[ x \Bigg]", r"\Biggl[ x \Biggr]"),
        (r"\bigl( x \bigr)", r"\bigl( x \bigr)"),  # already sided: left alone
        (r"i = 0, \dots, S", r"i = 0, \dotso, S"),
        (r"\dotsc \ldots", r"\dotsc \ldots"),
    ],
)
def test_normalize_rewrites_what_docutils_does_not_know(tex: str, expected: str) -> None:
    assert mathml.normalize(tex) == expected


def test_to_mathml_is_compact_mathml() -> None:
    inline = mathml.to_mathml(r"g^k = \partial y^c / \partial A^k", block=False)
    assert inline.startswith("<math><msup><mi>g</mi><mi>k</mi></msup><mo>=</mo>")
    assert inline.endswith("</math>")
    assert "\n" not in inline
    assert "xmlns" not in inline  # HTML needs none
    block = mathml.to_mathml(r"L = \operatorname{ReLU}\Big(\sum_k \alpha_k A^k\Big)", block=True)
    assert block.startswith('<math display="block">')
    # \Big( is a delimiter of a fixed size, in a row that \Big) closes
    assert '<mrow><mo maxsize="1.623em" minsize="1.623em" symmetric="true">(</mo>' in block
    assert "∑" in block


def test_to_mathml_raises_on_an_unknown_command() -> None:
    with pytest.raises(MathError, match="nosuchcommand"):
        mathml.to_mathml(r"\nosuchcommand{x}", block=False)


# -- scripts ----------------------------------------------------------------------


def test_defer_scripts_defers_files_but_documentation_options_and_inline_code() -> None:
    scripts = [
        _JavaScript("_static/documentation_options.js", priority=200),
        _JavaScript("_static/doctools.js", priority=200),
        _JavaScript("_static/design-tabs.js", priority=500, **{"data-x": "y"}),
        _JavaScript("_static/already.js", priority=500, **{"async": "async"}),
        _JavaScript("_static/module.js", priority=500, type="module"),
        _JavaScript("", priority=500, body="DOCUMENTATION_OPTIONS.pagename = 'x';"),
    ]
    context = {"script_files": scripts}
    light.defer_scripts(None, "page", "page.html", context, None)
    assert context["script_files"] is scripts  # changed in place
    by_name = {str(s.filename): s.attributes for s in scripts}
    assert by_name["_static/documentation_options.js"] == {}
    assert by_name["_static/doctools.js"] == {"defer": "defer"}
    assert by_name["_static/design-tabs.js"] == {"data-x": "y", "defer": "defer"}
    assert by_name["_static/already.js"] == {"async": "async"}
    assert by_name["_static/module.js"] == {"type": "module"}
    assert by_name[""] == {"body": "DOCUMENTATION_OPTIONS.pagename = 'x';"}


def test_the_search_page_keeps_its_scripts_blocking() -> None:
    """search.html's body runs searchtools.js at once; it needs doctools.js's ``_ready``."""
    scripts = [_JavaScript("_static/doctools.js", priority=200)]
    context = {"script_files": scripts}
    light.defer_scripts(None, "search", "search.html", context, None)
    assert scripts[0].attributes == {}


# -- icon font --------------------------------------------------------------------

CSS = (
    ".a{color:red}"
    '.fa-magnifying-glass,.fa-search{--fa:"\\f002"}'
    '.fa-language{--fa:"\\f1ab"}'
    '.fa-0{--fa:"\\30 "}'
    '.fa-github{--fa:"\\f09b"}'
    ".b{color:blue}"
)


def test_prune_icon_rules_keeps_the_used_icons_and_other_rules() -> None:
    css, kept = light.prune_icon_rules(CSS, {"fa-search", "fa-solid", "fa-0"})
    assert (
        css
        == '.a{color:red}.fa-magnifying-glass,.fa-search{--fa:"\\f002"}.fa-0{--fa:"\\30 "}.b{color:blue}'
    )
    assert kept == {0xF002, 0x30}


def test_used_icon_names_reads_pages_and_scripts(tmp_path: Path) -> None:
    (tmp_path / "_static" / "scripts").mkdir(parents=True)
    (tmp_path / "page.html").write_text('<i class="fa-solid fa-magnifying-glass"></i>')
    (tmp_path / "_static" / "scripts" / "x.js").write_text('e.classList.add("fa-xmark")')
    assert light.used_icon_names(tmp_path) == {"fa-solid", "fa-magnifying-glass", "fa-xmark"}


def test_subset_font_keeps_only_the_code_points(tmp_path: Path) -> None:
    fontTools = pytest.importorskip("fontTools")
    pytest.importorskip("brotli")
    from fontTools.ttLib import TTFont  # noqa: PLC0415

    del fontTools
    source = Path(__import__("pydata_sphinx_theme").__file__).parent
    woff2 = next(source.rglob("fa-solid-900.woff2"))
    copy = tmp_path / woff2.name
    copy.write_bytes(woff2.read_bytes())
    light.subset_font(copy, {0xF002, 0xF1AB})
    font = TTFont(copy)
    assert font.flavor == "woff2"
    assert set(font.getBestCmap()) == {0xF002, 0xF1AB}
    assert copy.stat().st_size < woff2.stat().st_size / 20


def test_stylesheet_icons_reads_the_themes_own_icons() -> None:
    css = ':root{--pst-icon-download:"\uf019";--pst-icon-note:var(--pst-icon-info)}'
    css += '.x{--pst-icon-github:"\uf09b"}.fa-search{--fa:"\\f002"}'
    assert light.stylesheet_icons(css) == {0xF019, 0xF09B}


def test_stylesheet_icons_of_the_installed_theme() -> None:
    """The theme draws the download buttons' and notes' icons from its stylesheet."""
    source = Path(__import__("pydata_sphinx_theme").__file__).parent
    css = next(source.rglob("pydata-sphinx-theme.css")).read_text(encoding="utf-8")
    assert {0xF019, 0xF05A, 0xF09B} <= light.stylesheet_icons(css)  # download, note, GitHub


def test_subset_font_never_leaves_a_font_without_icons(tmp_path: Path) -> None:
    """A font with none of the icons keeps one: an empty cmap fails to load in browsers."""
    pytest.importorskip("brotli")
    from fontTools.ttLib import TTFont  # noqa: PLC0415

    source = Path(__import__("pydata_sphinx_theme").__file__).parent
    woff2 = next(source.rglob("fa-brands-400.woff2"))
    copy = tmp_path / woff2.name
    copy.write_bytes(woff2.read_bytes())
    light.subset_font(copy, {0xF002})  # a solid icon: not in the brands font
    assert len(TTFont(copy).getBestCmap()) == 1


# -- code links and tokens -----------------------------------------------------------


def _token(text: str, cls: str) -> nodes.inline:
    return nodes.inline(text, text, classes=[cls])


def _document() -> nodes.document:
    from docutils.frontend import get_default_settings  # noqa: PLC0415
    from docutils.parsers.rst import Parser  # noqa: PLC0415

    return new_document("test", get_default_settings(Parser))


def test_drop_value_links_keeps_the_text_and_other_links() -> None:
    document = _document()
    block = nodes.literal_block()
    builtin = nodes.reference(
        "",
        "",
        _token("start", "n"),
        refuri="https://docs.python.org/3/library/functions.html#float",
        classes=[
            "sphx-glr-backref-module-builtins",
            "sphx-glr-backref-type-py-class",
            "sphx-glr-backref-instance",
        ],
    )
    function = nodes.reference(
        "",
        "",
        _token("print", "nb"),
        refuri="https://docs.python.org/3/library/functions.html#print",
        classes=["sphx-glr-backref-module-builtins", "sphx-glr-backref-type-py-function"],
    )
    tensor = nodes.reference(
        "",
        "",
        _token("more", "n"),
        refuri="https://docs.pytorch.org/docs/stable/tensors.html#torch.Tensor",
        reftitle="torch.Tensor",
        classes=["sphx-glr-backref-module-torch", "sphx-glr-backref-instance"],
    )
    handle = nodes.reference(
        "",
        "",
        _token("handle", "n"),
        refuri="https://docs.pytorch.org/docs/stable/hooks.html",
        reftitle="torch.utils.hooks.RemovableHandle",
        classes=["sphx-glr-backref-module-torch-utils-hooks", "sphx-glr-backref-instance"],
    )
    block += [builtin, _token(" = ", "o"), function, tensor, handle]
    document += block
    light.DropValueLinks(document).run()
    assert [type(c).__name__ for c in block.children] == [
        "inline",
        "inline",
        "reference",
        "inline",
        "reference",
    ]
    assert block.children[0]["classes"] == ["n"]  # not the link's classes
    assert block.children[4]["reftitle"] == "torch.utils.hooks.RemovableHandle"
    assert block.astext() == "start = printmorehandle"


def test_merge_tokens_merges_runs_of_one_class_and_unwraps_whitespace() -> None:
    block = nodes.Element()
    link = nodes.reference("", "", _token("torch", "n"), _token(".", "o"), _token("nn", "n"))
    block += [
        _token("matplotlib", "nn"),
        _token(".", "nn"),
        _token("pyplot", "nn"),
        _token(" ", "w"),
        _token(")", "p"),
        _token(")", "p"),
        link,
        _token("(", "p"),
        nodes.Text("\n"),
        _token(")", "p"),
    ]
    light.merge_tokens(block)
    assert [
        (c.astext(), c.get("classes") if isinstance(c, nodes.Element) else None)
        for c in block.children
    ] == [
        ("matplotlib.pyplot", ["nn"]),
        (" ", None),  # whitespace: plain text
        ("))", ["p"]),
        ("torch.nn", []),
        ("(", ["p"]),
        ("\n", None),
        (")", ["p"]),
    ]
    assert len(link.children) == 3  # different classes: not merged
    assert all(child.parent is block for child in block.children)


# -- descriptions -------------------------------------------------------------------


def _api_page(summary: str | None) -> nodes.document:
    document = _document()
    section = nodes.section()
    section += nodes.title("", "hooks_tutorial.GradCAM")
    desc = addnodes.desc()
    desc += addnodes.desc_signature("", "class hooks_tutorial.GradCAM(model, layer)")
    content = addnodes.desc_content()
    if summary is not None:
        content += nodes.paragraph("", summary)
        content += nodes.paragraph("", "Details.")
    desc += content
    section += desc
    section += nodes.paragraph("", "Examples using it")
    document += section
    return document


def test_api_summary_is_the_docstring_summary() -> None:
    summary = "Grad-CAM: channels weighted by their\nspatially averaged gradient."
    assert light.api_summary(_api_page(summary)) == (
        "Grad-CAM: channels weighted by their spatially averaged gradient."
    )
    assert light.api_summary(_api_page(None)) is None  # first paragraph outside the object


def test_describe_api_page_sets_the_meta_description_once() -> None:
    class App:
        class config:
            ogp_description_length = 30

    context = {"metatags": '<meta name="viewport" content="x" />', "meta": None}
    light.describe_api_page(App, "generated/x", "page.html", context, _api_page("A <b> & c " * 5))
    assert context["meta"] == {"og:description": "A <b> & c A <b> & c A <b> &..."}
    assert context["metatags"].endswith(
        '<meta name="description" content="A &lt;b&gt; &amp; c A &lt;b&gt; &amp; c A &lt;b&gt; &amp;..." />'
    )
    before = dict(context)
    light.describe_api_page(App, "generated/x", "page.html", context, _api_page("Other."))
    assert context == before  # a page that has a description keeps it
