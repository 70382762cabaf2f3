"""Page 23 (a pretrained model on real photos): its code runs without the real weights.

The docs build on machines without the ImageNet weights shows the page's code
but skips the cells (and the parts of the solutions) that need them, so these
tests keep those cells from rotting: they run the page, its solutions and its
hidden checks (the ``sphinx_gallery_start_ignore`` blocks, which assert both
states) with an empty torch hub cache (the offline path) and with stand-in
weights files (random ResNet-50 and ResNet-18 weights saved under the expected
file names in a temporary ``TORCH_HOME``, never published), and call the
page's ``predict_and_explain`` on a random-weight model. Nothing is
downloaded: each test checks that the cache holds only what it put there.
"""

from __future__ import annotations

import re
import runpy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib as mpl
import pytest
import torch
import torchvision

import hooks_tutorial as ht

mpl.use("Agg")
import matplotlib.pyplot as plt

ROOT = Path(__file__).parents[1]
PAGE = ROOT / "examples" / "05_real_models" / "plot_23_pretrained_photos.py"
WEIGHTS = torchvision.models.ResNet50_Weights.IMAGENET1K_V2
WEIGHTS18 = torchvision.models.ResNet18_Weights.IMAGENET1K_V1
TOP5 = re.compile(r"^  top-5: (.+?)\s+([\d.]+)$", flags=re.MULTILINE)


def run_page(
    torch_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[dict[str, Any], str, list[Any]]:
    """Run the page with ``torch_home`` as the torch cache; its globals, its output, its figures."""
    shown: list[Any] = []
    monkeypatch.setenv("TORCH_HOME", str(torch_home))
    monkeypatch.syspath_prepend(str(ROOT / "docs" / "_ext"))  # the page's last check imports it
    monkeypatch.setattr(plt, "show", lambda: shown.append(plt.gcf()))
    try:
        namespace = runpy.run_path(str(PAGE), run_name="__main__")
    finally:
        plt.close("all")
    return namespace, capsys.readouterr().out, shown


def files_under(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if p.is_file()}


@pytest.mark.slow
def test_without_weights_the_page_prints_the_note_and_no_predictions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    namespace, out, shown = run_page(tmp_path, monkeypatch, capsys)
    assert f"{Path(WEIGHTS.url).name} in the torch hub cache: False" in out
    assert "top-5" not in out
    assert "hooks left" not in out
    assert namespace["have_weights"] is False
    assert len(shown) == 2  # the photos and the normalization, nothing that needs the weights
    # the solutions: a note for each part that needs weights, and the part that does not
    assert out.count("skipped: ") == 3
    assert "class names: 1000, the same as ResNet-50's? True" in out
    assert files_under(tmp_path) == set()  # nothing was downloaded

    # the page's code path, with random weights (never shown on the site)
    predict_and_explain: Callable[..., Any] = namespace["predict_and_explain"]
    torch.manual_seed(0)
    model = torchvision.models.resnet50().eval()
    classes, maps = predict_and_explain(model, namespace["photos"]["cat"])
    lines = TOP5.findall(capsys.readouterr().out)
    assert len(lines) == 5
    probabilities = [float(p) for _, p in lines]
    assert probabilities == sorted(probabilities, reverse=True)
    assert 0 < sum(probabilities) <= 1 + 5e-3  # printed to 3 decimals
    assert [name for name, _ in lines] == [WEIGHTS.meta["categories"][k] for k in classes]
    assert maps.shape == (2, 224, 224)
    assert float(maps.min()) >= 0
    assert float(maps.max()) <= 1
    assert ht.count_hooks(model).total == 0


@pytest.mark.slow
def test_with_a_stand_in_weights_file_the_page_predicts_and_draws_maps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    checkpoints = tmp_path / "hub" / "checkpoints"
    checkpoints.mkdir(parents=True)
    stand_in = checkpoints / Path(WEIGHTS.url).name
    stand_in18 = checkpoints / Path(WEIGHTS18.url).name
    torch.manual_seed(0)
    torch.save(torchvision.models.resnet50().state_dict(), stand_in)
    torch.save(torchvision.models.resnet18().state_dict(), stand_in18)

    _, out, shown = run_page(tmp_path, monkeypatch, capsys)
    assert f"{stand_in.name} in the torch hub cache: True" in out
    for photo in ("cat", "coffee", "astronaut"):
        assert f"\n{photo}:\n" in out
    lines = TOP5.findall(out)
    assert len(lines) == 15 + 5  # five per photo, then solution 2's five for the cat
    assert all(name in WEIGHTS.meta["categories"] for name, _ in lines)
    assert out.count("hooks left: 0") == 2  # the page's model, then solution 2's ResNet-18
    assert "skipped" not in out  # every solution ran in full
    assert "combined == rescaled mean of the two? True" in out  # solution 3
    # the photos, the normalization, two class maps, three layers' maps, solution 3's maps
    assert len(shown) == 5
    assert [len(fig.axes) for fig in shown[2:]] == [3, 3, 3]
    titles = [ax.get_title() for ax in shown[3].axes]
    assert [t.split(":")[0] for t in titles] == ["layer4", "layer3", "layer2"]
    assert files_under(tmp_path) == {stand_in, stand_in18}  # nothing else was fetched
