"""Claims of page 19, can we trust a heatmap (each test names the sentence it backs)."""

from __future__ import annotations

import re

from sitecheck import number, numbers, outputs, prose, run_page

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


# -- the answers of the exercises (sitecheck.run_page runs the solutions) ------


def test_exercise_1_black_pixels() -> None:
    printed = run_page(PAGE).solutions
    auc = {
        name: number(rf"{name}\s+deletion AUC, black pixels: {F}", printed)
        for name in ("Grad-CAM", "random", "centre")
    }
    # "the centre map gets the lowest deletion AUC, then the random map, and Grad-CAM the highest"
    assert auc["centre"] < auc["random"] < auc["Grad-CAM"]
    _, circle = numbers(
        r"central disk in black: still the explained class on (\d+) of 12 images, "
        r"called a circle on (\d+)",
        printed,
    )
    # "the model calls 9 of the 12 images a circle"
    assert circle > 6
    # "The object painted black keeps its outline, and the model still sees the
    # explained class on 10 of 12 images"
    assert number(r"object in black: still the explained class on (\d+) of 12", printed) > 6


def test_exercise_2_the_mask_as_a_map() -> None:
    printed = run_page(PAGE).solutions
    rows = {
        name: numbers(rf"(?m)^{name}\s+deletion AUC {F}, insertion AUC {F}$", printed)
        for name in ("Grad-CAM", "random", "centre", "mask")
    }
    # "The mask gets the highest insertion AUC of the four maps"
    assert max(rows, key=lambda name: rows[name][1]) == "mask"
    # "but a worse deletion AUC than Grad-CAM, and even than the centre map"
    assert rows["mask"][0] > rows["centre"][0] > rows["Grad-CAM"][0]
    # "the model still sees the explained class on 9 of 12 images"
    assert number(r"object blurred: still the explained class on (\d+) of 12", printed) > 6
    # "Deleting the object first and then following Grad-CAM's order gives 0.471,
    # close to Grad-CAM's own AUC"
    object_first = number(rf"then Grad-CAM's order: deletion AUC {F}", printed)
    assert abs(object_first - rows["Grad-CAM"][0]) < 0.02
    assert object_first < rows["mask"][0] - 0.05


def test_exercise_3_the_plain_gradient_passes() -> None:
    printed = run_page(PAGE).solutions
    after_fc = {
        name: numbers(rf"{re.escape(name)}\s+after fc: Spearman (-?[\d.]+), SSIM {F}", printed)
        for name in ("Grad-CAM", "guided backprop", "gradient, absolute", "gradient, signed")
    }
    guided, absolute, signed = (
        after_fc["guided backprop"],
        after_fc["gradient, absolute"],
        after_fc["gradient, signed"],
    )
    # the rows agree with the page's own tables
    assert after_fc["Grad-CAM"] == _steps(0)["fc"]
    assert guided == _steps(1)["fc"]
    # "By the rank correlation of absolute values the plain gradient looks like
    # guided backpropagation"
    assert abs(absolute[0] - guided[0]) < 0.05
    # "Its SSIM, though, falls to 0.37 while guided backpropagation keeps 0.67"
    assert absolute[1] < guided[1] - 0.2
    # "the signed gradient's rank correlation falls to -0.03 at once, like Grad-CAM's"
    assert abs(signed[0]) < 0.1
    assert after_fc["Grad-CAM"][0] < 0.4
