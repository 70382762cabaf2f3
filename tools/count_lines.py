"""Count the code lines of a Python source tree: no docstrings, comments or blank lines.

``python tools/count_lines.py [src/hooks_tutorial]`` prints each file's count and the
total. A line counts when it holds a token other than a comment, a newline or an
indent, and is not part of a docstring (a string statement first in a module, class
or function body, found with ``ast``).
"""

from __future__ import annotations

import ast
import io
import sys
import tokenize
from pathlib import Path

SKIP = {
    tokenize.COMMENT,
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.ENDMARKER,
    tokenize.ENCODING,
}


def docstring_lines(tree: ast.AST) -> set[int]:
    """Line numbers covered by docstrings."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                end = body[0].end_lineno or body[0].lineno
                lines.update(range(body[0].lineno, end + 1))
    return lines


def code_lines(source: str) -> int:
    """The number of lines that hold code, not docstrings, comments or blanks."""
    docs = docstring_lines(ast.parse(source))
    lines: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in SKIP:
            continue
        lines.update(range(token.start[0], token.end[0] + 1))
    return len(lines - docs)


def main(root: str = "src/hooks_tutorial") -> None:
    total = 0
    for path in sorted(Path(root).rglob("*.py*")):
        if path.suffix not in {".py", ".pyi"}:
            continue
        n = code_lines(path.read_text(encoding="utf-8"))
        total += n
        print(f"{n:6d}  {path}")
    print(f"{total:6d}  total")


if __name__ == "__main__":
    main(*sys.argv[1:])
