"""Unit tests of the docs extensions in docs/_ext (run by ``nox -s docs``).

They need the docs dependency group, which ``nox -s docs`` installs.
"""

from __future__ import annotations

import io
import re
import sys
import zipfile
from pathlib import Path

import pypandoc
import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "docs" / "_ext"))

import cheatsheet
import companions
import localized_downloads as ld
import notebooks
import provenance

TABLE = """\
.. list-table::
   :header-rows: 1

   * - Dimension
     - Callback
   * - Essence
     - An ordinary callable, handed to
       other code.
"""


def test_list_table_cells_are_translated() -> None:
    table = {
        "Dimension": "维度",
        "Callback": "回调函数",
        "Essence": "本质",
        "An ordinary callable, handed to other code.": "一个普通的可调用对象。",
    }
    stats = ld.Stats()
    out = ld.translate_rst(TABLE, table.get, None, stats)
    assert out.split("\n") == [
        ".. list-table::",
        "   :header-rows: 1",
        "",
        "   * - 维度",
        "     - 回调函数",
        "   * - 本质",
        "     - 一个普通的可调用对象。",
        "",
    ]
    assert stats.translated == 4
    assert stats.missing == []


def test_an_untranslated_cell_is_kept_as_it_was() -> None:
    stats = ld.Stats()
    assert ld.translate_rst(TABLE, {}.get, None, stats) == TABLE
    assert len(stats.missing) == 4


def test_translated_zips_carry_the_english_dates(tmp_path: Path) -> None:
    english = tmp_path / "page.zip"
    with zipfile.ZipFile(english, "w") as archive:
        archive.writestr(zipfile.ZipInfo("page.py", (2026, 11, 30, 12, 34, 56)), b"x")
    dates = ld._zip_dates(english)
    data = ld._zip_bytes([("page.py", b"y"), ("other.py", b"z")], dates)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert archive.getinfo("page.py").date_time == (2026, 11, 30, 12, 34, 56)
        assert archive.getinfo("other.py").date_time == (1980, 1, 1, 0, 0, 0)
    assert ld._zip_dates(tmp_path / "missing.zip") == {}


def test_page_titles_come_from_docstrings_and_headings(tmp_path: Path) -> None:
    chapter = tmp_path / "examples" / "01_x"
    chapter.mkdir(parents=True)
    (chapter / "plot_01_a.py").write_text(
        '"""\nCallbacks: a title\n==================\n\nText."""\n'
    )
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "notes.md").write_text("# Notes on the course\n\nText.\n")
    titles = notebooks.page_titles(tmp_path / "docs", tmp_path / "examples")
    assert titles["auto_examples/01_x/plot_01_a"] == "Callbacks: a title"
    assert titles["notes"] == "Notes on the course"


SAMPLE = """\
See :doc:`/auto_examples/01_x/plot_01_a` and :doc:`this page </api>`,
:obj:`~hooks_tutorial.GradCAM` and :func:`torch.nn.Module.register_forward_hook`,
:meth:`~hooks_tutorial.GradCAM.maps`, :obj:`hooks_tutorial.undocumented`.

.. math::

   L = \\sum_k \\alpha_k A^k

.. dropdown:: Solution

   The answer is **8**.

.. note:: Keep the handle.
"""


def test_notebook_markdown_has_no_rest_left(tmp_path: Path) -> None:
    meta = tmp_path / "meta.json"
    meta.write_text(
        '{"site": "https://example.org/en/", "api": "https://example.org/en/api.html",'
        ' "objects": ["hooks_tutorial.GradCAM"], "titles": {"auto_examples/01_x/plot_01_a": "Callbacks"}}'
    )
    markdown = pypandoc.convert_text(
        SAMPLE,
        to="md",
        format="rst",
        extra_args=notebooks.pandoc_args(meta),
    )
    assert "[Callbacks](https://example.org/en/auto_examples/01_x/plot_01_a.html)" in markdown
    assert "[this page](https://example.org/en/api.html)" in markdown
    page = "https://example.org/en/generated/hooks_tutorial.GradCAM.html"
    assert f"[`GradCAM`]({page}#hooks_tutorial.GradCAM)" in markdown
    assert f"[`maps`]({page}#hooks_tutorial.GradCAM.maps)" in markdown
    assert "[`hooks_tutorial.undocumented`](https://example.org/en/api.html)" in markdown
    assert "`torch.nn.Module.register_forward_hook`" in markdown
    assert "$$L = \\sum_k \\alpha_k A^k$$" in markdown
    assert "<details><summary>Solution</summary>" in markdown
    assert "</details>" in markdown
    assert "> **Note**" in markdown
    for rest in (":doc:", ":obj:", ".. ", "{.", ":::"):
        assert rest not in markdown, rest


SCRIPT = '''"""
Page title
==========

Intro.
"""

# %%
# First section
# -------------
#
# Text.

print(1)

# %%
# A subsection
# ^^^^^^^^^^^^
#
# More.
'''


def _notebook_links(tmp_path: Path) -> Path:
    links = tmp_path / "links.json"
    links.write_text('{"site": "https://example.org/en/", "api": "", "titles": {}, "objects": []}')
    return links


def test_one_pandoc_call_gives_every_cell_its_prose_and_heading_level(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    notebook = {
        "cells": [
            {"cell_type": "markdown", "source": "old"},
            {"cell_type": "markdown", "source": "old"},
            {"cell_type": "code", "source": "print(1)"},
            {"cell_type": "markdown", "source": "old"},
        ]
    }
    calls = []
    convert = pypandoc.convert_text

    def counted(*args: object, **kwargs: object) -> str:
        calls.append(args)
        return str(convert(*args, **kwargs))

    monkeypatch.setattr(pypandoc, "convert_text", counted)
    args = notebooks.pandoc_args(_notebook_links(tmp_path))
    assert notebooks.convert_prose(notebook, SCRIPT, args)
    assert len(calls) == 1
    sources = [c["source"] for c in notebook["cells"]]
    assert sources[0].startswith("# Page title\n")
    assert sources[1].startswith("## First section\n")  # one document: levels carry over
    assert sources[2] == "print(1)"
    assert sources[3].startswith("### A subsection\n")
    assert not any(notebooks.CELL_BREAK in s for s in sources)


def test_cells_that_do_not_match_the_script_are_left_alone(tmp_path: Path) -> None:
    notebook = {"cells": [{"cell_type": "markdown", "source": "old"}]}
    args = notebooks.pandoc_args(_notebook_links(tmp_path))
    assert not notebooks.convert_prose(notebook, SCRIPT, args)
    assert notebook["cells"][0]["source"] == "old"
    with pytest.raises(ValueError, match="do not match"):
        notebooks.prose_notebook(notebook, SCRIPT, args)


def test_a_converted_notebook_is_converted_again_only_when_an_input_changes(
    tmp_path: Path,
) -> None:
    links = _notebook_links(tmp_path)
    args = notebooks.pandoc_args(links)
    cells = [{"cell_type": "markdown", "source": "old"} for _ in range(3)]
    notebook: dict[str, object] = {"cells": cells}
    assert notebooks.prose_notebook(notebook, SCRIPT, args)
    assert not notebooks.prose_notebook(notebook, SCRIPT, args)  # the stamp matches
    links.write_text(links.read_text().replace("example.org", "example.com"))
    assert notebooks.prose_notebook(notebook, SCRIPT, args)  # other links: again


def test_the_example_zip_gets_the_fixed_notebook(tmp_path: Path) -> None:
    """The zip sphinx-gallery wrote before the headings were fixed holds the fixed notebook."""
    archive = tmp_path / "plot_x.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr(zipfile.ZipInfo("plot_x.py", (2020, 1, 2, 3, 4, 6)), "print(1)\n")
        z.writestr(zipfile.ZipInfo("plot_x.ipynb", (2020, 1, 2, 3, 4, 6)), "# Section")
    notebooks.update_zip(archive, {"plot_x.ipynb": b"## Section"})
    with zipfile.ZipFile(archive) as z:
        assert z.read("plot_x.ipynb") == b"## Section"
        assert z.read("plot_x.py") == b"print(1)\n"
        assert {i.date_time for i in z.infolist()} == {(2020, 1, 2, 3, 4, 6)}
    before = archive.stat().st_mtime_ns
    notebooks.update_zip(archive, {"plot_x.ipynb": b"## Section"})  # nothing to change
    assert archive.stat().st_mtime_ns == before


def test_a_page_companions_are_the_helpers_it_names(tmp_path: Path) -> None:
    page = tmp_path / "plot_01_page.py"
    page.write_text('from _launch import run_ranks\nrun_ranks("_worker.py")\n')
    for name in ("_launch.py", "_worker.py", "_unused.py", "_launch_old.py"):
        (tmp_path / name).write_text("x = 1\n")
    assert [p.name for p in companions.companions(page)] == ["_launch.py", "_worker.py"]


def test_helpers_join_a_zip_once_with_the_pages_date(tmp_path: Path) -> None:
    archive = tmp_path / "page.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr(zipfile.ZipInfo("page.py", (2026, 11, 30, 12, 34, 56)), b"page")
        zipped.writestr(zipfile.ZipInfo("page.ipynb", (2026, 11, 30, 12, 34, 58)), b"{}")
    assert companions.add_to_zip(archive, {"_worker.py": b"work"}, next_to="page.py")
    with zipfile.ZipFile(archive) as zipped:
        assert zipped.namelist() == ["page.py", "page.ipynb", "_worker.py"]
        assert zipped.read("page.py") == b"page"
        assert zipped.read("_worker.py") == b"work"
        assert zipped.getinfo("_worker.py").date_time == (2026, 11, 30, 12, 34, 56)
    before = archive.read_bytes()
    assert not companions.add_to_zip(archive, {"_worker.py": b"work"}, next_to="page.py")
    assert archive.read_bytes() == before
    assert companions.add_to_zip(archive, {"_worker.py": b"new"}, next_to="page.py")
    with zipfile.ZipFile(archive) as zipped:
        assert zipped.namelist() == ["page.py", "page.ipynb", "_worker.py"]
        assert zipped.read("_worker.py") == b"new"


def test_translated_page_zips_keep_the_helpers(tmp_path: Path) -> None:
    english = tmp_path / "page.zip"
    with zipfile.ZipFile(english, "w") as zipped:
        for name in ("page.py", "page.ipynb", "_worker.py"):
            zipped.writestr(name, name.encode())
    assert ld._other_members(english, {"page.py", "page.ipynb"}) == [("_worker.py", b"_worker.py")]
    assert ld._other_members(tmp_path / "missing.zip", set()) == []


@pytest.mark.parametrize(
    ("seconds", "en", "zh"),
    [(3.14, ": 3.1 s,", "用时 3.1 秒，"), (0.02, ": under 0.1 s,", "用时不到 0.1 秒，")],
)
def test_a_run_time_is_never_shown_as_zero(seconds: float, en: str, zh: str) -> None:
    data = {"python": "3.11", "torch": "2", "torchvision": "0", "seconds": seconds, "peak_mib": 1}
    assert en in provenance.line(data, "en")
    assert zh in provenance.line(data, "zh_CN")


@pytest.mark.parametrize(
    ("title", "short"),
    [
        ("Forward hooks: look inside a model while it runs", "Forward hooks"),
        ("前向钩子：在模型运行时查看其内部", "前向钩子"),
        ("Firing order and global hooks", "Firing order and global hooks"),
    ],
)
def test_the_cheat_sheet_links_pages_by_the_start_of_their_title(title: str, short: str) -> None:
    assert cheatsheet.short_title(title) == short


def test_every_group_of_the_cheat_sheet_is_on_its_page() -> None:
    """Each group of rows and notes has its table on the page, and each table has rows."""
    sheet = cheatsheet.load()
    page = (cheatsheet.DATA.parent / "cheatsheet.md").read_text(encoding="utf-8")
    shown = re.findall(r"^```\{hooks-cheatsheet\} ([\w-]+)$", page, flags=re.MULTILINE)
    assert len(shown) == len(set(shown))
    assert set(shown) == {row["group"] for row in sheet["row"]}
    assert {note["group"] for note in sheet["note"]} <= set(shown)
    assert set(sheet["columns"]) == set(cheatsheet.COLUMNS)
