"""The docs build's cache folder is where README says: the pandoc results live there."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "docs" / "_ext"))

import notebooks


def test_cache_folder_resolution(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOOKS_TUTORIAL_CACHE", str(tmp_path / "a"))
    assert notebooks.pandoc_cache() == tmp_path / "a" / "pandoc"
    monkeypatch.setenv("HOOKS_TUTORIAL_CACHE", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert notebooks.pandoc_cache() == tmp_path / "xdg" / "hooks_tutorial" / "pandoc"
    monkeypatch.delenv("HOOKS_TUTORIAL_CACHE")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert notebooks.pandoc_cache() == tmp_path / "home" / ".cache" / "hooks_tutorial" / "pandoc"
