"""docs/_ext/code_comments.py: code comments as catalog messages, translated on zh pages."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[2] / "docs" / "_ext"))
sys.path.insert(0, str(Path(__file__).parents[1] / "downloads"))
import localized_downloads as ld
from code_comments import (
    HAN,
    Comment,
    Docstring,
    code_tokens,
    comments,
    display_width,
    docstrings,
    translate_code,
    wrap,
)
from run_downloads import script_code  # tests/downloads, put on the path above

CODE = """\
import torch  # the library

# register a hook on the layer; it runs
# after every forward pass
handle = layer.register_forward_hook(hook)  # noqa: F841
x = torch.zeros(2)  # [2]
# sphinx_gallery_thumbnail_number = 2
# %%
# sphinx_gallery_start_ignore
assert x.sum() == 0  # a hidden check
# sphinx_gallery_end_ignore
s = "# not a comment"
"""

ZH = {
    "the library": "这个库",
    "Print the output's shape.": "打印输出的形状。",
    "register a hook on the layer; it runs after every forward pass": (
        "在这一层上注册一个钩子；每次前向传播之后它都会运行"
    ),
}


def test_comments_are_the_words_a_reader_sees() -> None:
    """Runs of full-line comments are one message; code-only comments, pragmas, gallery
    markers, hidden blocks and strings are not messages."""
    assert comments(CODE) == [
        Comment("the library", (0,), 14, True),
        Comment("register a hook on the layer; it runs after every forward pass", (2, 3), 0, False),
    ]


def test_translation_changes_the_comments_only() -> None:
    result = translate_code(CODE, ZH.get)
    assert result.missing == []
    assert code_tokens(result.code) == code_tokens(CODE)
    assert "import torch  # 这个库" in result.code
    assert "# 在这一层上注册一个钩子；每次前向传播之后它都会运行" in result.code
    assert "# a hidden check" in result.code  # hidden: left alone
    assert all(HAN.search(c.text) for c in comments(result.code))


def test_code_tokens_see_a_changed_token_but_not_a_changed_comment() -> None:
    assert code_tokens("x = 1  # one\n") == code_tokens("x = 1  # 一\n")
    assert code_tokens("x = 1  # one\n") != code_tokens("x = 2  # one\n")
    assert code_tokens("x = 1\n") != code_tokens("x = 1 + 0\n")


def test_missing_translations_are_reported_and_left_english() -> None:
    result = translate_code(CODE, {"the library": "这个库"}.get)
    assert result.missing == ["register a hook on the layer; it runs after every forward pass"]
    assert "# after every forward pass" in result.code


def test_a_long_translated_run_is_wrapped_within_the_width() -> None:
    words = "a very long sentence that keeps going " * 6
    code = f"    # {words.strip()}\n    x = 1\n"
    result = translate_code(code, {words.strip(): "很长的句子" * 30}.get)
    lines = result.code.splitlines()
    assert len(lines) > 2
    assert all(display_width(line) <= 88 for line in lines)
    assert all(line.startswith("    # ") for line in lines[:-1])
    assert code_tokens(result.code) == code_tokens(code)


def test_a_wrapped_line_never_starts_with_a_full_stop() -> None:
    assert wrap("一二三四。", 8) == ["一二三", "四。"]
    assert wrap("一二三四五", 8) == ["一二三四", "五"]


def test_a_translated_end_of_line_comment_that_overflows_is_reported() -> None:
    code = "value = compute(first_argument, second_argument)  # short\n"
    result = translate_code(code, {"short": "一个非常长的中文注释" * 4}.get)
    assert len(result.too_wide) == 1


DOCUMENTED = '''"""Module docstring: the page's introduction, prose of its own."""


def hook(module, inputs, output):
    """Print the output's shape."""
    print(output.shape)


class Recorder:
    """Keeps what the hooks see.

    One list per layer,
    in the order the layers ran.
    """

    def __call__(self):
        """[B, C] -> [B]"""


# sphinx_gallery_start_ignore
def checked():
    """A hidden helper."""
# sphinx_gallery_end_ignore
'''

RECORDER = "Keeps what the hooks see.\n\nOne list per layer, in the order the layers ran."
DOCUMENTED_ZH = {
    "Print the output's shape.": "打印输出的形状。",
    RECORDER: "保存钩子看到的内容。\n\n" + "每一层一个列表，按这些层运行的先后顺序排列" * 4 + "。",
}


def test_docstrings_of_functions_and_classes_are_messages() -> None:
    """Not the module's (the page's introduction), not one without a word, not a hidden
    one; a docstring's paragraphs stay apart, each one's lines joined."""
    assert docstrings(DOCUMENTED) == [
        Docstring("Print the output's shape.", (4, 4), (4, 35)),
        Docstring(RECORDER, (9, 4), (13, 7)),
    ]


def test_a_block_that_reads_a_docstring_keeps_it() -> None:
    """The code prints or compares ``__doc__``: translating it would change the output."""
    code = 'def divide(a, b):\n    """Divide a by b."""\n\nprint(divide.__doc__)\n'
    assert docstrings(code) == []
    assert translate_code(code, {"Divide a by b.": "a 除以 b。"}.get).code == code


def test_a_translated_docstring_keeps_its_quotes_and_the_code() -> None:
    result = translate_code(DOCUMENTED, DOCUMENTED_ZH.get)
    assert result.missing == []
    assert result.too_wide == []
    assert '    """打印输出的形状。"""\n' in result.code  # it fits: one line, as in English
    lines = result.code.splitlines()
    start = lines.index('    """保存钩子看到的内容。')
    assert lines[start + 1] == ""  # the paragraphs stay apart
    assert lines[start + 2].startswith("    每一层")
    assert lines[start + 4] == "    列。"  # the full stop does not start a line alone
    assert lines[start + 5] == '    """'  # the closing quotes on their own line
    assert all(display_width(line) <= 88 for line in lines)
    assert '"""A hidden helper."""' in result.code
    assert code_tokens(result.code) == code_tokens(DOCUMENTED)
    assert script_code(result.code) == script_code(DOCUMENTED)
    assert docstrings(result.code) == []  # no English words left to translate


def test_a_changed_token_beside_a_docstring_is_still_seen() -> None:
    """Docstrings are set aside, the code next to them is not, nor a dropped docstring."""
    changed = DOCUMENTED.replace("print(output.shape)", "print(output.size())")
    assert code_tokens(changed) != code_tokens(DOCUMENTED)
    assert script_code(changed) != script_code(DOCUMENTED)
    dropped = DOCUMENTED.replace('    """Print the output\'s shape."""\n', "")
    assert code_tokens(dropped) != code_tokens(DOCUMENTED)


def test_a_missing_docstring_translation_is_reported() -> None:
    result = translate_code(DOCUMENTED, {"Print the output's shape.": "打印输出的形状。"}.get)
    assert result.missing == [RECORDER]
    assert "    One list per layer," in result.code


def test_a_download_translates_listed_comments_and_keeps_the_code(tmp_path: Path) -> None:
    source = (
        "# Needs the hooks_tutorial library: pip install hooks-tutorial\n"
        '"""Title\n=====\n\nProse.\n"""\n\n'
        "x = 1  # the library\n\n# %%\n# More prose.\n\ny = 2  # the library\n"
    )
    lookup = {"Title": "标题", "Prose.": "正文。", "More prose.": "更多正文。", **ZH}.get
    listed = ld.localize_script(source, lookup, comments=True)
    assert "x = 1  # 这个库" in listed.wrapped
    assert "y = 2  # 这个库" in listed.wrapped
    assert listed.wrapped.startswith("# 需要 hooks_tutorial 库：pip install hooks-tutorial\n")
    assert listed.stats.comments_missing == []
    unlisted = ld.localize_script(source, lookup)
    assert "x = 1  # the library" in unlisted.wrapped
    english, chinese = tmp_path / "en.py", tmp_path / "zh.py"
    english.write_text(source, encoding="utf-8")
    chinese.write_text(listed.wrapped, encoding="utf-8")
    assert ld.code_blocks(chinese) == ld.code_blocks(english)
    chinese.write_text(listed.wrapped.replace("y = 2", "y = 3"), encoding="utf-8")
    assert ld.code_blocks(chinese) != ld.code_blocks(english)


# -- the Sphinx side: extraction by gettext, translation and the check in a zh build --

PAGE = """\
Page
====

Some prose.

.. code-block:: Python

   import torch  # the library

   # register a hook on the layer; it runs
   # after every forward pass
   handle = layer.register_forward_hook(hook)

.. code-block:: Python

   def hook(module, inputs, output):
       '''Print the output's shape.'''
       print(output.shape)

.. code-block:: none

   # output, not code: the library
"""


def _project(tmp_path: Path, translations: dict[str, str], *, listed: bool = True) -> Path:
    src = tmp_path / "src"
    ext = Path(__file__).parents[2] / "docs" / "_ext"
    src.mkdir()
    (src / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(ext)!r})\n"
        "extensions = ['code_comments']\n"
        "locale_dirs = ['locales/']\ngettext_compact = False\n"
        f"code_comment_pages = {['page'] if listed else []!r}\n"
        "exclude_patterns = ['locales']\n"
        "html_search_language = 'en'\n",  # jieba leaves a file open: not what is tested
        encoding="utf-8",
    )
    (src / "index.rst").write_text("Home\n====\n\n.. toctree::\n\n   page\n", encoding="utf-8")
    (src / "page.rst").write_text(PAGE, encoding="utf-8")
    messages = {"Page": "页面", "Some prose.": "一些正文。", **translations}
    po = "".join(f'msgid "{k}"\nmsgstr "{v}"\n\n' for k, v in messages.items())
    folder = src / "locales" / "zh_CN" / "LC_MESSAGES"
    folder.mkdir(parents=True)
    (folder / "page.po").write_text(
        'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n' + po,
        encoding="utf-8",
    )
    return src


def _build(src: Path, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A build in its own process: Sphinx keeps the catalogs it loaded for the process."""
    command = [sys.executable, "-m", "sphinx", "-q", "-W", "-E", *args, str(src), str(out)]
    return subprocess.run(command, capture_output=True, text=True, check=False)


def test_gettext_extracts_the_comments_of_listed_pages(tmp_path: Path) -> None:
    src = _project(tmp_path, {})
    assert _build(src, tmp_path / "pot", "-b", "gettext").returncode == 0
    pot = (tmp_path / "pot" / "page.pot").read_text(encoding="utf-8")
    assert 'msgid "the library"' in pot
    assert 'msgid "register a hook on the layer; it runs after every forward pass"' in pot
    assert 'msgid "Print the output\'s shape."' in pot
    assert "output, not code" not in pot  # not a Python block


def test_an_unlisted_page_has_no_comment_messages(tmp_path: Path) -> None:
    src = _project(tmp_path, {}, listed=False)
    assert _build(src, tmp_path / "pot", "-b", "gettext").returncode == 0
    assert "the library" not in (tmp_path / "pot" / "page.pot").read_text(encoding="utf-8")


def test_a_zh_page_shows_the_translated_comments(tmp_path: Path) -> None:
    src = _project(tmp_path, ZH)
    assert _build(src, tmp_path / "zh", "-b", "html", "-D", "language=zh_CN").returncode == 0
    html = (tmp_path / "zh" / "page.html").read_text(encoding="utf-8")
    assert "# 这个库" in html
    assert "# 在这一层上注册一个钩子；每次前向传播之后它都会运行" in html
    assert "after every forward pass" not in html
    assert "打印输出的形状。" in html
    assert "Print the output" not in html
    assert "# output, not code: the library" in html  # output blocks stay as they are
    assert _build(src, tmp_path / "en", "-b", "html").returncode == 0
    english = (tmp_path / "en" / "page.html").read_text(encoding="utf-8")
    assert "# the library" in english
    assert "这个库" not in english


def test_an_untranslated_comment_fails_the_zh_build(tmp_path: Path) -> None:
    src = _project(tmp_path, {"the library": "这个库"})
    build = _build(src, tmp_path / "zh", "-b", "html", "-D", "language=zh_CN")
    assert build.returncode != 0
    assert "code comment or docstring without a translation: 'register a hook" in build.stderr
    assert _build(src, tmp_path / "en", "-b", "html").returncode == 0  # English: nothing to do
