"""Claims of page 17, Grad-CAM with the library (each test names the sentence it backs)."""

from __future__ import annotations

import re

from sitecheck import match, number, numbers, outputs

PAGE = "17"
NUMBER = r"([\d.]+)"


def test_library_matches_the_from_scratch_maps() -> None:
    printed = outputs(PAGE)
    # "This page first checks that the two give the same numbers"
    assert number(r"max abs difference to the from-scratch maps: ([\d.e+-]+)", printed) < 1e-5
    # "returns one map per image, upsampled to the input and scaled to [0, 1]"
    assert "maps: (8, 64, 64) values in [0.0, 1.0]" in printed
    # "it also guarantees that no hook survives the with block"
    assert number(r"hooks left on the model: (\d+)", printed) == 0
    # "raw=True returns the map before upsampling ... at the feature map's resolution"
    assert "raw maps: (8, 8, 8)" in printed


def test_pointing_game_on_the_batch() -> None:
    printed = outputs(PAGE)
    hits = match(r"peak on the object: \[(.*)\]", printed)[1].split(", ")
    assert len(hits) == 8
    assert set(hits) <= {"True", "False"}


def test_a_class_with_low_probability_can_have_positive_evidence() -> None:
    printed = outputs(PAGE)
    rows = re.findall(rf"(\w+): p = {NUMBER}, raw map maximum {NUMBER}", printed)
    assert len(rows) == 5
    # "a class with a low probability can still have positive evidence somewhere"
    assert any(float(p) < 0.05 and float(peak) > 0 for _, p, peak in rows)
    # "the figure hides how strong each map is": the raw maxima differ
    peaks = [float(peak) for _, _, peak in rows]
    assert max(peaks) > 1.5 * min(peaks)


def test_two_objects_two_explanations() -> None:
    printed = outputs(PAGE)
    first = number(rf"first object when explaining its class:\s+{NUMBER}", printed)
    second = number(rf"second object when explaining its class:\s+{NUMBER}", printed)
    wrong = number(rf"second object when explaining the first:\s+{NUMBER}", printed)
    # "explaining the first object's class should light up the first object,
    # and the second class the second object"
    assert first > 0.5
    assert second > 0.5
    assert wrong < first / 3


def test_multi_label_model() -> None:
    printed = outputs(PAGE)
    # "on single-object images and on images with two objects"
    assert "multi_label=True" in printed
    assert numbers(r"with one object: (\d+), with two objects: (\d+)", printed)[1] > 0
    chapter = numbers(rf"chapter's model: strict {NUMBER}, within 4 px {NUMBER}", printed)
    multi = numbers(rf"multi-label model: strict {NUMBER}, within 4 px {NUMBER}", printed)
    # "the multi-label model ... does better than the softmax classifier"
    assert multi[0] > chapter[0]
    assert multi[1] > chapter[1]
    # the protocol's tolerance counts at least the strict hits
    assert chapter[1] >= chapter[0]
    assert multi[1] >= multi[0]
    # "both shapes of an image can score close to 1 at the same time"
    for shape in match(r"shapes in the image: (\w+) and (\w+)", printed).groups():
        sigmoid = number(
            rf"{shape}: chapter's model \(softmax\) [\d.]+, multi-label model \(sigmoid\) {NUMBER}",
            printed,
        )
        assert sigmoid > 0.9


def test_map_cells_are_8_px_apart() -> None:
    # "The 8x8 map puts its peaks near cell centres, 8 pixels apart" (64 / 8)
    printed = outputs(PAGE)
    assert "relu3: raw map (8, 8)" in printed
    assert "maps: (8, 64, 64)" in printed


def test_layers() -> None:
    printed = outputs(PAGE)
    # "Earlier layers have a finer grid"
    assert "relu1: raw map (32, 32)" in printed
    assert "relu2: raw map (16, 16)" in printed
    assert "relu3: raw map (8, 8)" in printed
    # "Four images are an anecdote. The pointing game ... on all the test images"
    assert number(r"pointing game on (\d+) test images", printed) == 1000
    scores = {
        name: number(rf"\n{name}: {NUMBER}\n", "\n" + printed + "\n")
        for name in ("relu1", "relu2", "relu3")
    }
    # "on this model the last block's maps find the object most often"
    assert scores["relu3"] > scores["relu2"]
    assert scores["relu3"] > scores["relu1"]


def test_right_and_wrong_predictions() -> None:
    printed = outputs(PAGE)
    mistakes, total = numbers(r"misclassified: (\d+) of (\d+) test images", printed)
    assert total == 1000
    rows = re.findall(r"image\s+\d+: true .*, (wrong|right)", printed)
    # "For each misclassified image (up to four) ... If there are fewer than four
    # mistakes, the least confident correct predictions fill the remaining rows."
    assert len(rows) == 4
    assert rows.count("wrong") == min(4, int(mistakes))
