"""Page 23 (a pretrained model on real photos): the prose against the outputs.

The page has two states. Without the ImageNet weights in the torch hub cache
(these machines, CI) it prints a note and no prediction; the hosted builds
fetch the weights first and show real predictions. Each check below holds in
the state the site was built in.
"""

from __future__ import annotations

import re

import pytest
import torchvision
from sitecheck import LANGUAGES, match, numbers, outputs, prose

PAGE = "23"
WEIGHTS = torchvision.models.ResNet50_Weights.IMAGENET1K_V2
NOTE_EN = "The pretrained weights are not on this machine, so this page shows its code"


@pytest.fixture(scope="module")
def printed() -> str:
    return outputs(PAGE)


def offline(printed: str) -> bool:
    return NOTE_EN in printed


def test_the_page_is_in_exactly_one_of_its_two_states(printed: str) -> None:
    # "When they are not, it prints a note, shows its code and skips the cells
    # that need them, so no output made with random weights is ever shown"
    for language in LANGUAGES:
        text = outputs(PAGE, language)
        if offline(printed):
            assert NOTE_EN in text  # the note is printed on both language pages
            assert "get_state_dict()" in text  # "a note that says how to get it"
            assert "top-5" not in text
            assert "pretrained weights found" not in text
            assert "hooks left" not in text
        else:
            match(r"pretrained weights found: resnet50-\w+\.pth", text)
            assert NOTE_EN not in text
            assert len(re.findall(r"top-5: .+ [\d.]+", text)) == 15  # five per photo
            match(r"hooks left: 0", text)


def test_the_prose_states_the_weights_policy_in_both_languages() -> None:
    # the note in the page's docstring: "The page never downloads them itself."
    assert "The page never downloads them itself." in prose(PAGE, "en")
    assert "本页从不自行下载权重。" in prose(PAGE, "zh_CN")
    # "the pretrained weights (about 100 MB)"
    assert 90 < WEIGHTS.meta["_file_size"] < 110


def test_photos_are_uint8_color_arrays(printed: str) -> None:
    # "skimage.data returns each one as a uint8 array of shape [H, W, 3]"
    found = re.findall(r"(cat|coffee|astronaut): (\w+), shape \((\d+), (\d+), (\d+)\)", printed)
    assert [f[0] for f in found] == ["cat", "coffee", "astronaut"]
    assert all(f[1] == "uint8" and f[4] == "3" for f in found)


def test_the_transforms_resize_crop_and_normalize(printed: str) -> None:
    # "It resizes the short side, crops the centre, scales to [0, 1] and
    # normalizes each channel with the ImageNet mean and standard deviation."
    match(r"crop_size=\[224\]", printed)
    match(r"resize_size=\[232\]", printed)
    match(r"mean=\[0\.485, 0\.456, 0\.406\]", printed)
    match(r"std=\[0\.229, 0\.224, 0\.225\]", printed)
    # "The normalized input is not a picture any more" (values outside [0, 1])
    low, high = numbers(r"values from (-?[\d.]+) to (-?[\d.]+)", printed)
    assert low < 0
    assert high > 1


def test_layer_sizes(printed: str) -> None:
    # "layer4's maps are coarse (7 x 7) ... (layer3: 14 x 14, layer2: 28 x 28)"
    for layer, size in (("layer2", 28), ("layer3", 14), ("layer4", 7)):
        match(rf"{layer}: \d+ channels, {size} x {size}", printed)
        for language in LANGUAGES:
            assert f"{size} x {size}" in prose(PAGE, language) or (
                f"{size}×{size}" in prose(PAGE, language)
            )
