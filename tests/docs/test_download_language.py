"""docs/_ext/download_language.py: every download says its language, where the checks read it."""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path
from types import SimpleNamespace

EXT = Path(__file__).parents[2] / "docs" / "_ext"
sys.path.insert(0, str(EXT))

from download_language import mark_downloads, marked_notebook, marked_script

from hooks_tutorial.exercises._language import _from_notebook, _from_script

SCRIPT = '# Needs the hooks_tutorial library\n# (or the development version)\n"""Title\n=====\n"""\n\nx = 1\n'


def test_a_script_gets_one_line_before_its_docstring(tmp_path: Path) -> None:
    marked = marked_script(SCRIPT, "zh_CN")
    lines = marked.splitlines()
    assert lines[2].startswith("# hooks_tutorial.exercises language: zh_CN")
    assert lines[3] == '"""Title'
    assert marked_script(marked, "zh_CN") == marked  # marking twice changes nothing
    assert marked_script(marked, "en").count("hooks_tutorial.exercises language") == 1
    path = tmp_path / "plot_01_x.py"
    path.write_text(marked, encoding="utf-8")
    assert _from_script(str(path)) == "zh_CN"  # what the check reads


def test_a_notebook_gets_a_metadata_key(tmp_path: Path) -> None:
    data = json.dumps({"cells": [], "metadata": {"kernelspec": {}}}).encode()
    marked = marked_notebook(data, "en")
    assert json.loads(marked)["metadata"]["hooks_tutorial_language"] == "en"
    assert marked_notebook(marked, "en") == marked
    path = tmp_path / "plot_01_x.ipynb"
    path.write_bytes(marked)
    assert _from_notebook(str(path)) == "en"


def test_downloads_and_zips_are_marked_and_helpers_left_alone(tmp_path: Path) -> None:
    downloads = tmp_path / "_downloads" / "abc"
    downloads.mkdir(parents=True)
    notebook = json.dumps({"cells": [], "metadata": {}})
    (downloads / "plot_x.py").write_text(SCRIPT, encoding="utf-8")
    (downloads / "plot_x.ipynb").write_text(notebook, encoding="utf-8")
    (downloads / "_helper.py").write_text("x = 1\n", encoding="utf-8")
    with zipfile.ZipFile(downloads / "plot_x.zip", "w") as archive:
        archive.writestr("plot_x.py", SCRIPT)
        archive.writestr("plot_x.ipynb", notebook)
        archive.writestr("_helper.py", "x = 1\n")
    app = SimpleNamespace(
        outdir=str(tmp_path),
        builder=SimpleNamespace(format="html"),
        config=SimpleNamespace(language="zh_CN"),
    )
    mark_downloads(app, None)  # type: ignore[arg-type]
    script = (downloads / "plot_x.py").read_bytes()
    assert b"hooks_tutorial.exercises language: zh_CN" in script
    assert (downloads / "_helper.py").read_text(encoding="utf-8") == "x = 1\n"
    with zipfile.ZipFile(downloads / "plot_x.zip") as archive:
        assert archive.read("plot_x.py") == script
        assert archive.read("plot_x.ipynb") == (downloads / "plot_x.ipynb").read_bytes()
        assert archive.read("_helper.py") == b"x = 1\n"
