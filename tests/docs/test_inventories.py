"""Unit tests of docs/tools/make_torch_inventory.py and refresh_inventories.py (``nox -s docs``).

No network: downloads are replaced by stand-ins.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "docs" / "tools"))

import make_torch_inventory as mti
import refresh_inventories as ri
from sphinx.util.inventory import InventoryFile

BASE = "https://docs.pytorch.org/docs/stable/"


def _load(data: bytes) -> dict[str, dict[str, str]]:
    """{role: {name: url}} as Sphinx's intersphinx reads an inventory."""
    inventory = InventoryFile.loads(data, uri=BASE)
    return {
        role: {name: item.uri for name, item in items.items()}
        for role, items in inventory.data.items()
    }


def test_the_inventory_is_read_back_by_sphinx() -> None:
    items = [
        ("torch.nn.Linear", "py:class", "generated/torch.nn.Linear.html#torch.nn.Linear"),
        ("torch.Tensor", "py:class", "tensors.html#torch.Tensor"),
        ("torch.nn", "py:module", "nn.html#module-torch.nn"),
    ]
    data = mti.inventory_bytes(items)
    assert data.startswith(ri.MAGIC)
    read = _load(data)
    assert read["py:class"] == {
        "torch.nn.Linear": BASE + "generated/torch.nn.Linear.html#torch.nn.Linear",
        "torch.Tensor": BASE + "tensors.html#torch.Tensor",
    }
    assert read["py:module"] == {"torch.nn": BASE + "nn.html#module-torch.nn"}


def test_entries_name_objects_the_installed_torch_has_with_their_roles() -> None:
    entries = mti.entries()
    assert len(entries) == len({name for name, _, _ in entries})  # one role per name
    roles = {name: role for name, role, _ in entries}
    assert roles["torch.nn.Linear"] == "py:class"
    assert roles["torch.nn.Module.register_forward_hook"] == "py:method"
    assert roles["torch.Tensor.register_hook"] == "py:method"
    assert roles["torch.no_grad"] == "py:class"
    for name, role, uri in entries:
        if role != "py:module":
            assert mti._resolve(name) is not None, name
            assert uri.endswith("#" + name), (name, uri)


def test_undocumented_names_are_left_out() -> None:
    names = {name for name, _, _ in mti.entries()}
    assert "torch.utils.hooks.RemovableHandle" not in names
    assert mti._resolve("torch.nn.NoSuchLayer") is None


def test_a_download_that_is_not_an_inventory_is_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(ri.urllib.request, "urlopen", lambda url, timeout: io.BytesIO(b"<html>"))
    assert ri.download("https://example.org/objects.inv") is None
    assert "is not a Sphinx inventory" in capsys.readouterr().out


def test_offline_refresh_falls_back_to_local_inventories(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def no_network(url: str, timeout: float) -> io.BytesIO:
        msg = f"--offline downloaded {url}"
        raise AssertionError(msg)

    monkeypatch.setattr(ri.urllib.request, "urlopen", no_network)
    monkeypatch.setattr(ri, "OUT", tmp_path)
    monkeypatch.setattr(ri, "offline_python", lambda: ri.MAGIC + b"\npython")
    assert ri.main(["--offline"]) == 0
    assert (tmp_path / "python.inv").read_bytes() == ri.MAGIC + b"\npython"
    torch_inv = _load((tmp_path / "torch.inv").read_bytes())
    assert BASE + "generated/torch.nn.Linear.html#torch.nn.Linear" in torch_inv["py:class"].values()


def test_refresh_fails_when_an_inventory_cannot_be_had(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(ri, "OUT", tmp_path)
    monkeypatch.setattr(ri, "offline_python", lambda: None)
    monkeypatch.setattr(ri, "offline_torch", lambda: None)
    assert ri.main(["--offline"]) == 1
    assert list(tmp_path.iterdir()) == []
