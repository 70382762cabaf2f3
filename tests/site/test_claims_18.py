"""Claims of page 18, the CAM family (each test names the sentence it backs)."""

from __future__ import annotations

import re

from sitecheck import match, number, numbers, outputs, prose, run_page

PAGE = "18"
METHODS = (
    "Grad-CAM",
    "Grad-CAM++",
    "XGrad-CAM",
    "Layer-CAM",
    "HiResCAM",
    "Score-CAM",
    "Eigen-CAM",
)
F = r"(-?[\d.]+)"


def _table() -> dict[str, list[float]]:
    printed = outputs(PAGE)
    rows = {}
    for name in METHODS:
        rows[name] = numbers(rf"\n{re.escape(name)}\s+{F}\s+{F}\s+{F}\s+{F}\s+{F}\s+{F}\n", printed)
    return rows


def _random() -> list[float]:
    return numbers(
        rf"random map: pointing {F}, deletion {F}, insertion {F}, avg drop {F}, increase {F}",
        outputs(PAGE),
    )


def test_seven_methods_same_images_no_hooks_left() -> None:
    printed = outputs(PAGE)
    # "This page runs seven of them on the same images and the same layer"
    for name in METHODS:
        assert re.search(rf"{re.escape(name)}: \w+\(target_layer='relu3'[^)]*\)", printed)
    # "A fixed subset of the test set: the first 48 images"
    assert "images: (48, 3, 64, 64)" in printed
    assert "maps per method: (48, 64, 64)" in printed
    # "Each method is then timed on the first 4 images only"; "the time column
    # is the median ... on the 4 timed images, divided by 4"
    assert "timed on: (4, 3, 64, 64)" in printed
    assert number(r"hooks left on the model: (\d+)", printed) == 0


def test_grad_cam_equals_cam_over_z() -> None:
    printed = outputs(PAGE)
    # "so it equals the original CAM ... divided by Z"
    assert number(r"Z = (\d+)", printed) == 64
    assert number(r"max \|CAM / Z - Grad-CAM\| = ([\d.e+-]+)", printed) < 1e-6


def test_per_position_methods_are_sparse() -> None:
    printed = outputs(PAGE)
    above = {
        name: number(rf"{re.escape(name)}:\s+{F} of 64 positions above zero", printed)
        for name in ("Grad-CAM", "XGrad-CAM", "Grad-CAM++", "HiResCAM", "Layer-CAM")
    }
    # "HiResCAM and Layer-CAM ... are nonzero at fewer positions than Grad-CAM's"
    assert above["HiResCAM"] < above["Grad-CAM"]
    assert above["Layer-CAM"] < above["Grad-CAM"]


def test_sign_conventions() -> None:
    printed = outputs(PAGE)
    # "HiResCAM's signed map ... adds up ... exactly the logit minus fc's bias"
    assert "signed HiResCAM, sum over positions == logit - bias: True" in printed
    # "its negative positions lower the score": the signed map has some
    assert number(r"share of negative positions: ([\d.]+)", printed) > 0
    # "the signed Eigen-CAM projection is oriented to correlate positively with
    # the channel mean, on every image"
    agree, total = numbers(r"channel mean on (\d+) of (\d+) images", printed)
    assert agree == total == 48


def test_correlations_with_grad_cam() -> None:
    printed = outputs(PAGE)
    for name in ("Grad-CAM++", "XGrad-CAM", "Layer-CAM", "HiResCAM", "Score-CAM", "Eigen-CAM"):
        value = number(rf"{re.escape(name)}: mean correlation with Grad-CAM {F}", printed)
        assert -1 <= value <= 1


def test_table_ranges() -> None:
    printed = outputs(PAGE)
    # "48 test images; ... blur baseline, 16 steps"
    assert "48 test images; deletion and insertion: blur baseline, 16 steps" in printed
    for values in _table().values():
        pointing, deletion, insertion, drop, increase, ms = values
        assert 0 <= pointing <= 1
        assert 0 <= deletion <= 1
        assert 0 <= insertion <= 1
        # average drop and increase in confidence are percentages
        assert 0 <= drop <= 100
        assert 0 <= increase <= 100
        assert ms > 0


def test_no_claim_depends_on_timing_order() -> None:
    # issue 12 item 5: the timing column is noise; the prose ranks no method by it
    for language in ("en", "zh_CN"):
        text = prose(PAGE, language)
        assert "slowest" not in text
        assert "最慢" not in text
    assert "median" in prose(PAGE, "en")


def test_comparison_with_the_random_map() -> None:
    printed = outputs(PAGE)
    table = _table()
    pointing, deletion, insertion, drop, _increase = _random()
    # "The last three lines list the methods that do better than it": each list
    # matches the table
    listed = {
        key: re.findall(r"'([^']+)'", match(rf"{key}[^\[]*(\[.*\])", printed)[1])
        for key in ("deletion below", "insertion above", "avg drop below")
    }
    assert listed["deletion below"] == [n for n, v in table.items() if v[1] < deletion]
    assert listed["insertion above"] == [n for n, v in table.items() if v[2] > insertion]
    assert listed["avg drop below"] == [n for n, v in table.items() if v[3] < drop]
    assert 0 <= pointing <= 1


def test_black_pixels_favour_the_random_map() -> None:
    printed = outputs(PAGE)
    grad_cam = number(rf"Grad-CAM: deletion AUC with black pixels {F}", printed)
    random_map = number(rf"random map: deletion AUC with black pixels {F}", printed)
    # "With black pixels the random map's deletion AUC is *lower* than Grad-CAM's"
    assert random_map < grad_cam


def test_two_score_cams() -> None:
    printed = outputs(PAGE)
    probability = number(r"\n\s*probability: pointing ([\d.]+)", printed)
    channel_softmax = number(r"\n\s*channel_softmax: pointing ([\d.]+)", printed)
    mean, lowest = numbers(r"two maps: mean ([\d.]+), lowest ([\d.]+)", printed)
    # "the probability weights point at the object more often"
    assert probability > channel_softmax
    # "the two maps agree on average but not on every image"
    assert mean > 0.8
    assert lowest < 0.8


def test_after_average_pooling_three_methods_coincide() -> None:
    # Exercise 1: "check that Grad-CAM, XGrad-CAM and HiResCAM give the same raw signed maps"
    # Summary: "after average pooling, Grad-CAM, XGrad-CAM and HiResCAM coincide"
    run = run_page(PAGE)
    scale = run.namespace["signed"]["Grad-CAM"].abs().max().item()
    assert scale > 0  # the maps are not all zero, so "the same" says something
    for name in ("XGrad-CAM", "HiResCAM"):
        difference = number(rf"(?m)^{name} ([\d.e-]+)$", run.solutions)
        assert difference <= 1e-5 * scale, name  # float rounding only
