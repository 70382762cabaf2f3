"""Claims of page 18, the CAM family side by side (each test names the sentence it backs).

The measures (pointing game, deletion, insertion, average drop) are on page 18b,
test_claims_18b.py.
"""

from __future__ import annotations

import re

from sitecheck import number, numbers, outputs, prose, run_page

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


def test_seven_methods_same_images_no_hooks_left() -> None:
    printed = outputs(PAGE)
    # "This page runs seven of them on the same images and the same layer"
    for name in METHODS:
        assert re.search(rf"{re.escape(name)}: \w+\(target_layer='relu3'[^)]*\)", printed)
    # "A fixed subset of the test set: the first 48 images"
    assert "images: (48, 3, 64, 64)" in printed
    assert "maps per method: (48, 64, 64)" in printed
    counts = re.findall(r"hooks left on the model: (\d+)", printed)
    assert counts
    assert set(counts) == {"0"}


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
    # "Grad-CAM++ is above zero everywhere"
    assert above["Grad-CAM++"] == 64.0


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


def test_what_each_method_costs() -> None:
    printed = outputs(PAGE)
    seen = {
        name: number(rf"{re.escape(name)}:\s+(\d+) images through the model", printed)
        for name in METHODS
    }
    # "The gradient methods run one forward pass ...; Eigen-CAM runs one forward pass"
    for name in METHODS:
        if name != "Score-CAM":
            assert seen[name] == 4, name
    # "Score-CAM runs one more forward pass per channel and image, 64 masked copies
    # of each image for relu3's 64 channels"
    assert seen["Score-CAM"] == 4 + 4 * 64
    # "Each method is then timed on the same 4 images ... the median, divided by 4"
    assert "timed on: (4, 3, 64, 64)" in printed
    for name in METHODS:
        assert number(rf"{re.escape(name)}:\s+([\d.]+) ms per image \(median\)", printed) > 0


def test_no_claim_depends_on_timing_order() -> None:
    # issue 12 item 5: the timing is noise; the prose ranks no method by it
    for language in ("en", "zh_CN"):
        text = prose(PAGE, language)
        assert "slowest" not in text
        assert "fastest" not in text
        assert "最慢" not in text
        assert "最快" not in text
    assert "median" in prose(PAGE, "en")


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
    assert number(r"largest \|Grad-CAM\| value: ([\d.e+-]+)", run.solutions) > 0
    for name in ("XGrad-CAM", "HiResCAM"):
        difference = number(rf"(?m)^{name} ([\d.e+-]+)$", run.solutions)
        assert difference <= 1e-5 * scale, name  # float rounding only


def test_the_answers_on_top_k_and_grad_cam_plus_plus() -> None:
    solutions = run_page(PAGE).solutions
    # answer 2: "one forward pass on them, then 16 masked copies of each"
    assert number(r"images through the model, top_k=16: (\d+)", solutions) == 4 + 4 * 16
    # "The maps stay close but not equal ... and here they point a little worse"
    assert 0.5 < number(r"Pearson with the full Score-CAM: mean ([\d.]+)", solutions) < 0.99
    top_k, full = numbers(r"pointing: top_k=16 ([\d.]+), full ([\d.]+)", solutions)
    assert top_k < full
    # answer 3: "each channel's gradient is nonzero at 1 position at most"
    assert number(r"nonzero gradients per channel, at most: (\d+)", solutions) == 1
    # "The formula ... matches the library" (relative to the map's values)
    largest = number(r"largest map value: ([\d.e+-]+)", solutions)
    assert number(r"max \|formula - library\|: ([\d.e+-]+)", solutions) < 1e-5 * largest
