"""docs/_ext/code_comments.py: code comments as catalog messages, translated on zh pages."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[2] / "docs" / "_ext"))
import localized_downloads as ld
from code_comments import HAN, Comment, code_tokens, comments, display_width, translate_code

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


def test_a_translated_end_of_line_comment_that_overflows_is_reported() -> None:
    code = "value = compute(first_argument, second_argument)  # short\n"
    result = translate_code(code, {"short": "一个非常长的中文注释" * 4}.get)
    assert len(result.too_wide) == 1


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
    assert "# output, not code: the library" in html  # output blocks stay as they are
    assert _build(src, tmp_path / "en", "-b", "html").returncode == 0
    english = (tmp_path / "en" / "page.html").read_text(encoding="utf-8")
    assert "# the library" in english
    assert "这个库" not in english


def test_an_untranslated_comment_fails_the_zh_build(tmp_path: Path) -> None:
    src = _project(tmp_path, {"the library": "这个库"})
    build = _build(src, tmp_path / "zh", "-b", "html", "-D", "language=zh_CN")
    assert build.returncode != 0
    assert "code comment without a translation: 'register a hook" in build.stderr
    assert _build(src, tmp_path / "en", "-b", "html").returncode == 0  # English: nothing to do
