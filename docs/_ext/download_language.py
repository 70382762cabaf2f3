"""Record each download's language where the exercise checks can read it.

The job: ``hooks_tutorial.exercises.check`` speaks the language of the
download it runs in, but a page's English and Chinese downloads hold the same
code byte for byte (``localized_downloads.py``), so the code cannot say which
language it is. This extension writes the language beside the code, in each
``.py`` and ``.ipynb`` that a build offers (alone and in the zips), after the
other extensions have written them:

- a script gets a comment line before its docstring,
  ``# hooks_tutorial.exercises language: zh_CN`` (with a note in the
  download's language); the check reads its caller's file;
- a notebook gets ``"hooks_tutorial_language": "zh_CN"`` in its metadata;
  the check finds the notebook through ``JPY_SESSION_NAME`` (Jupyter) or
  ``__vsc_ipynb_file__`` (VS Code).

Helper modules (``_ddp_worker.py``) are left alone. Rewriting an already
marked file changes nothing. Why no package does this: sphinx-gallery writes
one set of downloads, and no tool marks a notebook's human language.
"""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx

KEY = "hooks_tutorial_language"  # hooks_tutorial.exercises._language.NOTEBOOK_KEY
MARKER = re.compile(r"^#\s*hooks_tutorial\.exercises language:.*\n", re.MULTILINE)
NOTES = {
    "en": "(the exercise checks' messages; zh_CN for Chinese)",
    "zh_CN": "（练习检查的提示语言；改为 en 即为英文）",
}


def marked_script(text: str, language: str) -> str:
    """``text`` with one marker line, before the docstring (after the leading comments)."""
    text = MARKER.sub("", text)
    lines = text.split("\n")
    at = 0
    while at < len(lines) and lines[at].startswith("#"):
        at += 1
    note = NOTES.get(language, "")
    lines.insert(at, f"# hooks_tutorial.exercises language: {language}  {note}".rstrip())
    return "\n".join(lines)


def marked_notebook(data: bytes, language: str) -> bytes:
    """The notebook with ``language`` in its metadata, written as sphinx-gallery writes it."""
    notebook = json.loads(data)
    if notebook.get("metadata", {}).get(KEY) == language:
        return data
    notebook.setdefault("metadata", {})[KEY] = language
    return (json.dumps(notebook, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def _marked(name: str, data: bytes, language: str) -> bytes:
    if Path(name).name.startswith("_"):  # a helper module: the same in every language
        return data
    if name.endswith(".py"):
        return marked_script(data.decode("utf-8"), language).encode("utf-8")
    if name.endswith(".ipynb"):
        return marked_notebook(data, language)
    return data


def mark_downloads(app: Sphinx, exception: Exception | None) -> None:
    """Mark every script and notebook under ``_downloads``, alone and in the zips."""
    if exception is not None or app.builder.format != "html":
        return
    language = app.config.language or "en"
    for path in sorted((Path(app.outdir) / "_downloads").rglob("*")):
        if path.suffix in {".py", ".ipynb"}:
            data = path.read_bytes()
            new = _marked(path.name, data, language)
            if new != data:
                path.write_bytes(new)
        elif path.suffix == ".zip":
            with zipfile.ZipFile(path) as archive:
                members = [(info, archive.read(info)) for info in archive.infolist()]
            new_members = [(info, _marked(info.filename, data, language)) for info, data in members]
            if new_members != members:
                with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
                    for info, data in new_members:
                        archive.writestr(info, data)


def setup(app: Sphinx) -> dict[str, Any]:
    # after solutions.py removed the hidden checks from the same files (priority 900)
    app.connect("build-finished", mark_downloads, priority=950)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
