"""Unit tests for ``docs/tools/i18n.py`` (the zh_CN catalog tool the docs build runs)."""

from __future__ import annotations

import importlib.util
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest
from babel.messages.catalog import Catalog, Message
from babel.messages.pofile import read_po, write_po

ROOT = Path(__file__).parents[1]
GLOSSARY = ROOT / "docs" / "locales" / "zh_CN" / "glossary.tsv"


def _load_tool() -> ModuleType:
    # docs/tools is not a package; import the script by path
    spec = importlib.util.spec_from_file_location("i18n_tool", ROOT / "docs" / "tools" / "i18n.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


i18n = _load_tool()
RST = "../../auto_examples/x/plot_x.rst"
MD = "../../course_notes.md"


# --- markup ---------------------------------------------------------------------


def test_markup_collects_literals_roles_and_link_targets() -> None:
    text = (
        "Use ``count_hooks`` and :obj:`hooks_tutorial.fit`, see :doc:`the page </a/b>` "
        "and `PyTorch <https://pytorch.org>`_, then ``count_hooks`` again."
    )
    assert i18n.markup(text) == Counter(
        {
            "``count_hooks``": 2,
            ":obj:`hooks_tutorial.fit`": 1,
            ":doc:`/a/b`": 1,  # the title may be translated, the target may not
            "link(https://pytorch.org)": 1,
        }
    )


def test_markup_of_myst_text() -> None:
    text = "See {doc}`notes <course_notes>`, `model(x)` and [the docs](https://pytorch.org)."
    assert i18n.markup(text, myst=True) == Counter(
        {"{doc}`course_notes`": 1, "`model(x)`": 1, "link(https://pytorch.org)": 1}
    )


def test_a_stray_backslash_inside_a_literal_is_reported() -> None:
    msgid = 'Run with ``baseline="zeros"``.'
    msgstr = '使用\\ ``baseline=\\"zeros\\"``\\ 运行。'
    problem = i18n.markup_problem(msgid, msgstr)
    assert problem is not None
    assert 'missing ``baseline="zeros"``' in problem
    assert 'unexpected ``baseline=\\"zeros\\"``' in problem


def test_escaped_spaces_around_literals_are_fine() -> None:
    msgid = "Count them with ``count_hooks`` and :obj:`hooks_tutorial.HookGroup`."
    msgstr = "用\\ ``count_hooks``\\ 和 :obj:`hooks_tutorial.HookGroup`\\ 计数。"
    assert i18n.markup_problem(msgid, msgstr) is None


def test_translated_role_title_is_fine_but_a_changed_target_is_not() -> None:
    msgid = "See :doc:`the handles page </auto_examples/02/plot_08>`."
    assert i18n.markup_problem(msgid, "见 :doc:`句柄页面 </auto_examples/02/plot_08>`。") is None
    problem = i18n.markup_problem(msgid, "见 :doc:`句柄页面 </auto_examples/02/plot_09>`。")
    assert problem is not None
    assert "missing :doc:`/auto_examples/02/plot_08`" in problem


def test_a_dropped_or_added_literal_is_reported() -> None:
    assert "missing ``x``" in (i18n.markup_problem("a ``x`` b ``x``", "甲 ``x`` 乙 x") or "")
    assert "unexpected ``lambda``" in (i18n.markup_problem("Lambda hooks", "``lambda`` 钩子") or "")


def test_translated_code_is_reported() -> None:
    problem = i18n.markup_problem("``lambda parameters: expression``", "``lambda 参数: 表达式``")
    assert problem is not None
    assert "missing ``lambda parameters: expression``" in problem


# --- glossary -------------------------------------------------------------------


@pytest.fixture(scope="module")
def terms() -> list[object]:
    return i18n.read_glossary(GLOSSARY)


def _problems(msgid: str, msgstr: str, terms: list[object], location: str = RST) -> list[str]:
    message = Message(msgid, msgstr, locations=[(location, 1)])
    return list(i18n.message_problems(message, terms))


def test_project_glossary_has_the_agreed_terms(terms: list[object]) -> None:
    english = {term.english.pattern for term in terms}
    assert {"Summary", r"et al\.", r"pre-hooks?\b", r"\bcallbacks?\b"} <= english
    assert any("saved" in pattern for pattern in english)


@pytest.mark.parametrize(
    ("msgid", "msgstr", "expected"),
    [
        ("Summary", "小结", None),
        ("Summary", "总结", "'总结' is not used"),
        ("Summarise the results.", "总结结果。", None),  # only the heading is fixed
        ("Adebayo et al. (2018) propose", "Adebayo 等（2018）提出", None),
        ("Adebayo et al. (2018) propose", "Adebayo et al.（2018）提出", "'et al.' is not used"),
        ("Use an optimizer step pre-hook.", "使用优化器的步进预钩子。", None),
        ("Use an optimizer step pre-hook.", "使用优化器的步进前置钩子。", "'前置钩子' is not used"),
        ("Saved-tensor hooks: memory", "已保存张量钩子：内存", None),
        ("Saved-tensor hooks: memory", "保存张量钩子：内存", "'保存张量钩子' is not used"),
        ("A callback is a function.", "回调函数是一个函数。", None),
        ("Callback objects keep state.", "回调对象保存状态。", None),
        ("A callback is a function.", "回调是一个函数。", "'回调' is not used"),
        ("A callback is a function.", "钩子是一个函数。", "lacks /回调(函数|对象)/"),
        ("Call ``on_callback_end``.", "调用 ``on_callback_end``。", None),  # code is ignored
    ],
)
def test_glossary_rules(msgid: str, msgstr: str, expected: str | None, terms: list[object]) -> None:
    problems = _problems(msgid, msgstr, terms)
    if expected is None:
        assert problems == []
    else:
        assert len(problems) == 1
        assert expected in problems[0]


def test_boilerplate_written_by_fill_is_not_checked(terms: list[object]) -> None:
    msgid = ":download:`Download Python source code: plot_x.py <plot_x.py>`"
    msgstr = i18n.boilerplate(msgid)
    assert msgstr is not None
    assert "_zh_CN/plot_x.py" in msgstr  # a different target, on purpose
    assert _problems(msgid, msgstr, terms) == []


def test_lists_of_bare_references_are_separated_by_the_chinese_comma() -> None:
    # the course-notes table lists pages; a Chinese list is separated by 、, not ", "
    assert i18n.boilerplate("{doc}`a`, {doc}`b`, {doc}`c`") == "{doc}`a`、{doc}`b`、{doc}`c`"
    assert i18n.boilerplate(":doc:`/a`, :doc:`/b`") == ":doc:`/a`\\ 、\\ :doc:`/b`"
    assert i18n.boilerplate(":doc:`/a`") == ":doc:`/a`"


def test_myst_messages_use_myst_markup(terms: list[object]) -> None:
    msgid = "`output.detach()` prevents memory leaks."
    assert _problems(msgid, "`output.detach()` 可以防止内存泄漏。", terms, MD) == []
    problems = _problems(msgid, "`output.detach ()` 可以防止内存泄漏。", terms, MD)
    assert len(problems) == 1
    assert "missing `output.detach()`" in problems[0]


@pytest.mark.parametrize(
    ("line", "error"),
    [
        ("title\tSummary\t小结\t\t", "heading|text"),
        ("heading\t\t小结\t总结\t", "heading|text"),
        ("text\tcallback\t\t\tno rule", "required or forbidden"),
    ],
)
def test_bad_glossary_rows_are_rejected(tmp_path: Path, line: str, error: str) -> None:
    path = tmp_path / "glossary.tsv"
    path.write_text(f"# comment\n{line}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=error):
        i18n.read_glossary(path)


# --- header, obsolete entries and the whole check ---------------------------------


def _read(path: Path) -> Catalog:
    with path.open("rb") as f:
        return read_po(f)


def _write_catalog(path: Path, messages: dict[str, str], *, obsolete: bool = False) -> None:
    catalog = Catalog(locale="zh_CN", project="hooks-tutorial", version="0.1.0")
    for msgid, msgstr in messages.items():
        catalog.add(msgid, msgstr, locations=[(RST, 1)])
    if obsolete:
        catalog.obsolete["Gone"] = Message("Gone", "没了", locations=[(RST, 9)])
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as f:
        write_po(f, catalog, width=0)


def _write_template(path: Path, msgids: list[str]) -> None:
    catalog = Catalog(project="hooks-tutorial", version="0.1.0")
    for msgid in msgids:
        catalog.add(msgid, locations=[(RST, 1)])
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as f:
        write_po(f, catalog, width=0)


@pytest.fixture
def site(tmp_path: Path) -> tuple[Path, Path]:
    """A gettext folder and a locale folder with one page, and the project glossary."""
    pot_dir = tmp_path / "gettext"
    locale_dir = tmp_path / "zh_CN" / "LC_MESSAGES"
    _write_template(pot_dir / "page.pot", ["Summary", "Use ``count_hooks``."])
    _write_catalog(
        locale_dir / "page.po",
        {"Summary": "小结", "Use ``count_hooks``.": "使用 ``count_hooks``。"},
    )
    (tmp_path / "zh_CN" / "glossary.tsv").write_text(GLOSSARY.read_text(encoding="utf-8"))
    return pot_dir, locale_dir


def test_fill_purges_obsolete_entries_and_fills_the_header(tmp_path: Path) -> None:
    po = tmp_path / "page.po"
    _write_catalog(po, {"Summary": "小结"}, obsolete=True)
    catalog = _read(po)
    assert catalog.obsolete
    assert i18n.header_problems(catalog)  # babel's placeholders, and the #~ entry
    assert i18n.fill(tmp_path) == 0
    catalog = _read(po)
    assert not catalog.obsolete
    assert i18n.header_problems(catalog) == []
    assert "#~" not in po.read_text(encoding="utf-8")
    assert catalog.get("Summary").string == "小结"  # messages are kept
    before = po.read_bytes()
    i18n.fill(tmp_path)
    assert po.read_bytes() == before  # a second fill changes nothing


def test_check_passes_on_a_good_catalog(
    site: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    pot_dir, locale_dir = site
    i18n.fill(locale_dir)
    assert i18n.check(pot_dir, locale_dir) == 0
    assert "consistent" in capsys.readouterr().out


def test_check_fails_on_a_stray_backslash_and_a_glossary_slip(
    site: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    pot_dir, locale_dir = site
    _write_catalog(
        locale_dir / "page.po",
        {"Summary": "总结", "Use ``count_hooks``.": 'Use ``count_hooks(\\"x\\")``.'},
    )
    i18n.fill(locale_dir)
    assert i18n.check(pot_dir, locale_dir) == 1
    out = capsys.readouterr().out
    assert "'总结' is not used" in out
    assert "missing ``count_hooks``" in out


def test_check_reports_missing_and_fuzzy_messages(
    site: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    pot_dir, locale_dir = site
    _write_template(pot_dir / "page.pot", ["Summary", "Use ``count_hooks``.", "New text."])
    i18n.fill(locale_dir)
    assert i18n.check(pot_dir, locale_dir) == 1
    assert "'New text.' is missing" in capsys.readouterr().out


# --- typography -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("msgstr", "expected"),
    [
        ("笔记说 ``input``\\ “对应 (image, label)”。", None),
        ("笔记说 ``input`` “对应 (image, label)”。", "no space before a full-width quote"),
        ("上采样到 64×64 的图像。", None),
        ("上采样到 64 x 64 的图像。", "write dimensions with ×"),
        ("8x8 的热力图", "write dimensions with ×"),
        ("输入 ``1x1x4x4`` 的张量", None),  # code is left alone
    ],
)
def test_typography(msgstr: str, expected: str | None) -> None:
    problems = i18n.typography_problems(msgstr)
    if expected is None:
        assert problems == []
    else:
        assert len(problems) == 1
        assert expected in problems[0]


@pytest.mark.parametrize(
    ("locations", "docstring"),
    [
        ([("../../src/x.py:docstring", None), ("of", None), ("hooks_tutorial.x.f", 8)], True),
        ([("../../api.rst:33:<autosummary>", 1)], True),  # a row of an API table
        ([("../../api.rst", 8)], False),
        ([("../../generated/hooks_tutorial.CAM.rst", 2)], False),
        ([("../../../examples/02_module_hooks/plot_08_handles_and_leaks.py", 2)], False),
        ([("../../index.md", 3), ("of", None), ("hooks_tutorial.x.f", 8)], False),
    ],
)
def test_docstring_messages_are_told_from_page_messages(
    locations: list[tuple[str, int | None]], docstring: bool
) -> None:
    assert i18n._docstring_only(Message("text", locations=locations)) is docstring


def test_api_page_headings_are_boilerplate() -> None:
    assert i18n.boilerplate("hooks\\_tutorial.metrics.deletion\\_auc") == (
        "hooks\\_tutorial.metrics.deletion\\_auc"
    )
    assert i18n.boilerplate("Examples using ``hooks_tutorial.CAM``") == (
        "使用 ``hooks_tutorial.CAM`` 的示例"
    )
    assert i18n.boilerplate("hooks_tutorial") is None  # prose, not a page title
    assert i18n.boilerplate("Summary") is None
