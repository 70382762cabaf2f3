"""Page 23 (a pretrained model on real photos): the prose against the outputs.

The page has two states. Without the ImageNet weights in the torch hub cache
(these machines, CI) it prints that they are missing and no prediction; the
hosted builds fetch the weights first and show real predictions. Each check
below holds in the state the site was built in.

The solutions need pretrained weights too. They are run here twice, after the
page: with an empty torch hub cache (each says that it needs the weights) and
with stand-in weights (random ResNet-50 and ResNet-18 weights saved under the
expected file names in a temporary cache, as in ``tests/test_page_23.py``),
where they must print what the answers state and leave no hook.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import torchvision
from sitecheck import LANGUAGES, PageRun, html, match, numbers, outputs, prose, run_page
from test_answers import claimed_numbers, exercises_and_answers
from test_answers import printed as printed_in

PAGE = "23"
WEIGHTS = torchvision.models.ResNet50_Weights.IMAGENET1K_V2
WEIGHTS18 = torchvision.models.ResNet18_Weights.IMAGENET1K_V1
STATUS = rf"{re.escape(Path(WEIGHTS.url).name)} in the torch hub cache: (True|False)\n"


@pytest.fixture(scope="module")
def printed() -> str:
    return outputs(PAGE)


def offline(printed: str) -> bool:
    return match(STATUS, printed)[1] == "False"


@pytest.fixture(scope="module")
def without_weights(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PageRun]:
    """The page and its solutions, run with an empty torch hub cache."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TORCH_HOME", str(tmp_path_factory.mktemp("empty_hub")))
        yield run_page.__wrapped__(PAGE)  # not cached: the stand-in run below is


@pytest.fixture(scope="module")
def with_stand_ins(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PageRun]:
    """The page and its solutions, run with random weights under the real file names."""
    home = tmp_path_factory.mktemp("stand_in_hub")
    checkpoints = home / "hub" / "checkpoints"
    checkpoints.mkdir(parents=True)
    torch.manual_seed(0)
    torch.save(torchvision.models.resnet50().state_dict(), checkpoints / Path(WEIGHTS.url).name)
    torch.save(torchvision.models.resnet18().state_dict(), checkpoints / Path(WEIGHTS18.url).name)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TORCH_HOME", str(home))
        yield run_page(PAGE)
    assert {p.name for p in checkpoints.iterdir()} == {
        Path(WEIGHTS.url).name,
        Path(WEIGHTS18.url).name,
    }  # nothing was downloaded


def test_the_page_is_in_exactly_one_of_its_two_states(printed: str) -> None:
    # "When they are not, it says so, shows its code and skips the cells
    # that need them, so no output made with random weights is ever shown"
    for language in LANGUAGES:
        text = outputs(PAGE, language)
        if offline(printed):
            # "Without them, it prints nothing." / "it draws nothing"
            assert "top-5" not in text
            assert "hooks left" not in text
            figures = re.findall(
                r'<img src="[^"]*sphx_glr_plot_23_\w+?_(\d+)\.webp"', html(PAGE, language)
            )
            assert figures == ["001", "002"]  # the photos and the normalization only
        else:
            # "this cell prints the five most probable classes of each photo, then the
            # number of hooks left on the model (0)"
            assert len(re.findall(r"top-5: .+ [\d.]+", text)) == 15  # five per photo
            match(r"hooks left: 0", text)


def test_the_page_says_how_to_get_the_weights_and_scikit_image() -> None:
    # "this command downloads it once (about 100 MB) to that place"
    command = "torchvision.models.ResNet50_Weights.IMAGENET1K_V2.get_state_dict()"
    for language in LANGUAGES:
        assert command in html(PAGE, language)
        # "The library does not install scikit-image: run pip install scikit-image"
        assert "pip install scikit-image" in prose(PAGE, language)
    # the downloaded script says it too, after the library's install lines
    script = Path(__file__).parents[2] / "examples" / "05_real_models"
    (page,) = script.glob("plot_23_*.py")
    assert "pip install scikit-image" in page.read_text(encoding="utf-8").splitlines()[2]


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


def test_without_weights_each_solution_says_what_it_needs(without_weights: PageRun) -> None:
    # "Each solution needs pretrained weights; without them it says so and skips that
    # part." Solution 2's preprocessing and class names need no weights file.
    solutions = without_weights.solutions
    for line in (
        "1. needs the ResNet-50 weights",
        "2. needs the ResNet-18 weights",
        "3. needs the ResNet-50 weights",
    ):
        assert line in solutions
    assert "class names: 1000, the same as ResNet-50's? True" in solutions
    # "(about 45 MB, fetched the same way)"
    assert 40 < WEIGHTS18.meta["_file_size"] < 50
    assert not without_weights.hooks_after


def test_with_stand_in_weights_the_solutions_leave_no_hook(with_stand_ins: PageRun) -> None:
    assert "needs the" not in with_stand_ins.solutions
    assert not with_stand_ins.hooks_before
    assert not with_stand_ins.hooks_after


def test_with_stand_in_weights_the_solutions_print_what_the_answers_state(
    with_stand_ins: PageRun,
) -> None:
    solutions = with_stand_ins.solutions
    categories = WEIGHTS.meta["categories"]
    # 1. "The solution prints where each map peaks, in pixels of the input"
    peaks = re.findall(r"^(.+): peak at row (\d+), column (\d+)$", solutions, flags=re.MULTILINE)
    assert len(peaks) == 2
    assert all(name in categories and int(r) < 224 and int(c) < 224 for name, r, c in peaks)
    # 2. "ResNet-18's weights resize the short side to 256 before the 224 x 224 crop
    #    (ResNet-50's V2 weights: 232), with the same mean and standard deviation. The
    #    1000 class names are the same list (True)" ... "gives ResNet-18's top-5 and
    #    maps, and leaves no hook"
    flat = re.sub(r"\s+", " ", solutions)  # the transforms' repr spans several lines
    resnet50 = match(r"ResNet-50: ImageClassification\((.*?)\)", flat)[1]
    resnet18 = match(r"ResNet-18: ImageClassification\((.*?)\)", flat)[1]
    assert "resize_size=[232]" in resnet50
    assert "resize_size=[256]" in resnet18
    for same in ("crop_size=[224]", "mean=[0.485, 0.456, 0.406]", "std=[0.229, 0.224, 0.225]"):
        assert same in resnet50
        assert same in resnet18
    match(r"class names: 1000, the same as ResNet-50's\? True", solutions)
    assert len(re.findall(r"top-5: .+ [\d.]+", solutions)) == 5
    match(r"hooks left: 0", solutions)
    # 3. "The combined map is the mean of the two single maps, rescaled to [0, 1] (True)"
    match(r"combined == rescaled mean of the two\? True", solutions)
    # every number the answers state is printed by the solutions
    _, answers = exercises_and_answers(PAGE, "en")
    missing = [
        (i, number)
        for i, answer in enumerate(answers, 1)
        for number in claimed_numbers(answer.text)
        if not printed_in(number, solutions)
    ]
    assert not missing, f"numbers the answers state but the solutions do not print: {missing}"
