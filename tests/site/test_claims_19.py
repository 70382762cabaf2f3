"""Claims of page 19, can we trust a heatmap (each test names the sentence it backs)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from sitecheck import number, numbers, outputs, prose

PAGE = "19"
F = r"([\d.]+)"
LAYERS = ("fc", "bn3", "conv3", "bn2", "conv2", "bn1", "conv1")


def _aucs() -> dict[str, list[float]]:
    printed = outputs(PAGE)
    return {
        name: numbers(rf"\n{name}\s+{F}\s+{F}\n", printed)
        for name in ("Grad-CAM", "random", "centre")
    }


def _steps(which: int) -> dict[str, list[float]]:
    """The randomization table: 0 for Grad-CAM, 1 for guided backpropagation."""
    printed = outputs(PAGE)
    tables = printed.split("randomized down to")[1:]
    assert len(tables) == 2
    rows = {}
    for name in ("(original)", *LAYERS):
        rows[name] = numbers(rf"\n{re.escape(name)}\s+{F}\s+{F}\n", tables[which] + "\n")
    return rows


def test_images_and_grid() -> None:
    printed = outputs(PAGE)
    correct, total = numbers(r"correctly classified: (\d+) of (\d+)", printed)
    # "twelve test images"
    assert total == 12
    assert correct <= total
    # "uniform noise on the same grid as Grad-CAM"
    assert "Grad-CAM grid: (8, 8)" in printed


def test_grad_cam_beats_both_baselines_on_average() -> None:
    aucs = _aucs()
    # "On this model and these images it beats both on average"
    for baseline in ("random", "centre"):
        assert aucs["Grad-CAM"][0] < aucs[baseline][0]  # deletion: lower is better
        assert aucs["Grad-CAM"][1] > aucs[baseline][1]  # insertion: higher is better
    # "a map that knows only that already does much better than noise"
    assert aucs["centre"][0] < aucs["random"][0]
    assert aucs["centre"][1] > aucs["random"][1]


def test_wins_image_by_image() -> None:
    printed = outputs(PAGE)
    wins = {
        baseline: numbers(
            rf"beats the {baseline} map on (\d+) of 12 images \(deletion\) and (\d+) of 12",
            printed,
        )
        for baseline in ("random", "centre")
    }
    # "the random map on most images"
    assert min(wins["random"]) >= 7
    # "while the centre map stays close and wins on about half of them"
    for won in wins["centre"]:
        assert 4 <= won <= 8


def test_bn3_reset_is_not_random() -> None:
    printed = outputs(PAGE)
    # "For a BatchNorm layer it is a reset, not a draw: weight 1, bias 0 and
    # fresh running statistics (mean 0 ...)"
    assert "weight all 1: True" in printed
    assert "bias all 0: True" in printed
    assert "running mean all 0: True" in printed
    assert "running variance all 1: True" in printed


def test_grad_cam_changes_with_the_model() -> None:
    assert number(r"images in the test: (\d+)", outputs(PAGE)) == 8  # "the first eight images"
    steps = _steps(0)
    assert steps["(original)"] == [1.0, 1.0]
    # "in the table, the similarity falls right after the first step"
    assert max(steps["fc"]) < 0.5
    # "and they stay far from the original as more layers are randomized"
    for layer in LAYERS:
        assert max(steps[layer]) < 0.5


def test_guided_backprop_barely_changes_at_the_top() -> None:
    grad_cam, guided = _steps(0), _steps(1)
    # "Randomizing fc and resetting bn3 ... leaves its maps much like the original ones"
    for layer in ("fc", "bn3"):
        assert guided[layer][0] > 0.6
        assert guided[layer][0] > 2 * grad_cam[layer][0]
    # "Its similarity then declines only gradually as the convolutions are
    # randomized, and is lowest once the first block is random too."
    spearman = [guided[layer][0] for layer in LAYERS]
    ssim = [guided[layer][1] for layer in LAYERS]
    assert spearman[-1] == min(spearman)
    assert ssim[-1] == min(ssim)
    assert spearman[-1] < spearman[0] - 0.3


def test_prose_says_necessary_not_sufficient_and_reset() -> None:
    text = prose(PAGE)
    assert "necessary, not sufficient" in text
    assert "reset_parameters()" in text
    assert "RISE" in text


def test_no_stray_backslashes_in_chinese_literals() -> None:
    text = prose(PAGE, "zh_CN")
    assert '\\"' not in text
    assert 'baseline="zeros"' in text


# -- the answers of the exercises (solutions are not run by the page) ----------


@pytest.fixture(scope="module")
def setting() -> dict[str, Any]:
    torch = pytest.importorskip("torch")
    import hooks_tutorial as ht  # noqa: PLC0415 - only for these slower checks

    model = ht.pretrained("simple_cnn-shapes")
    data = ht.make_shapes(12, split="test", seed=19)
    gradcam = ht.GradCAM(model, "relu3")
    generator = torch.Generator().manual_seed(0)
    offsets = torch.arange(64.0) - 31.5
    centre = torch.exp(-(offsets[:, None] ** 2 + offsets[None, :] ** 2) / (2 * 16.0**2))
    maps = {
        "Grad-CAM": gradcam(data.images),
        "random": torch.rand(12, 8, 8, generator=generator),
        "centre": centre.expand(12, 64, 64),
    }
    return {"model": model, "data": data, "maps": maps}


def test_exercise_1_black_pixels(setting: dict[str, Any]) -> None:
    from hooks_tutorial import metrics  # noqa: PLC0415

    model, data, maps = setting["model"], setting["data"], setting["maps"]
    auc = {
        name: metrics.deletion_auc(model, data.images, m, steps=10, baseline="zeros").mean().item()
        for name, m in maps.items()
    }
    # "the centre map and the random map now get lower (better) deletion AUCs than Grad-CAM"
    assert auc["centre"] < auc["Grad-CAM"]
    assert auc["random"] < auc["Grad-CAM"]


def test_exercise_2_the_mask_as_a_map(setting: dict[str, Any]) -> None:
    from hooks_tutorial import metrics  # noqa: PLC0415

    model, data, maps = setting["model"], setting["data"], dict(setting["maps"])
    maps["mask"] = data.masks.float()
    images = data.images
    deletion = {
        n: metrics.deletion_auc(model, images, m, steps=10, baseline="blur").mean().item()
        for n, m in maps.items()
    }
    insertion = {
        n: metrics.insertion_auc(model, images, m, steps=10).mean().item() for n, m in maps.items()
    }
    # "The mask gives the highest insertion AUC of the four maps"
    assert max(insertion, key=insertion.__getitem__) == "mask"
    # "but its deletion AUC is higher (worse) than Grad-CAM's"
    assert deletion["mask"] > deletion["Grad-CAM"]


def test_exercise_3_plain_gradient_under_randomization(setting: dict[str, Any]) -> None:
    torch = pytest.importorskip("torch")
    from hooks_tutorial import metrics  # noqa: PLC0415

    model, data = setting["model"], setting["data"]

    def gradient_explainer(model_copy: Any) -> Any:
        def explain(x: Any, target: Any) -> Any:
            x = x.clone().requires_grad_(True)
            score = model_copy(x).gather(1, target[:, None]).sum()
            (grad,) = torch.autograd.grad(score, x)
            saliency = grad.abs().amax(dim=1)
            return saliency / saliency.flatten(1).amax(dim=1)[:, None, None]

        return explain

    steps = metrics.model_randomization(model, gradient_explainer, data.images[:8])
    spearman = {step.layer: step.spearman.mean().item() for step in steps}
    grad_cam = _steps(0)
    # "its maps stay similar to the original ones after fc and bn3 (Spearman
    # correlation above 0.6, where Grad-CAM falls below 0.4)"
    for layer in ("fc", "bn3"):
        assert spearman[layer] > 0.6
        assert grad_cam[layer][0] < 0.4
    # "and change only as the convolutions are randomized"
    assert spearman["conv1"] < spearman["fc"] - 0.3
