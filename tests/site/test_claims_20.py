"""Claims of page 20, catching a shortcut (each test names the sentence it backs)."""

from __future__ import annotations

import re

from sitecheck import match, number, numbers, outputs, prose, run_page

PAGE = "20"
ROW = r"\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\n"
PAIR = r"\s+([\d.]+)\s+([\d.]+)"


def test_the_cue() -> None:
    printed = outputs(PAGE)
    # "adds a small square in a random corner"
    assert "cue: 6 x 6 pixels of a 64-pixel image side" in printed
    # "In the train split its colour encodes the class ...; in the test split
    # the colour is random" (agrees with the label only as often as chance, 1/5)
    assert number(r"training-like\s+cue colour agrees with the label: ([\d.]+)", printed) == 1.0
    assert abs(number(r"test\s+cue colour agrees with the label: ([\d.]+)", printed) - 0.2) < 0.08


def test_accuracy_table() -> None:
    printed = outputs(PAGE)
    shortcut = numbers(rf"shortcut model{ROW}", printed)
    clean = numbers(rf"clean model{ROW}", printed)
    chance = number(r"chance level \(guessing one of 5 classes\): ([\d.]+)", printed)
    # "On training-like images the shortcut model looks excellent"
    assert shortcut[0] > 0.95
    # "On the test images ... it falls to chance level"
    assert abs(shortcut[1] - chance) < 0.08
    # "the last column shows what it predicts instead: the class that the cue's colour stands for"
    assert shortcut[2] > 0.9
    # "The clean model does about as well on both kinds of images"
    assert abs(clean[0] - clean[1]) < 0.05
    # "and follows the cue only as often as chance would have it"
    assert abs(clean[2] - chance) < 0.08


def test_four_images() -> None:
    printed = outputs(PAGE)
    rows = {
        name: match(
            rf"{name}\s+energy on cue \[([^\]]*)\], predicts the cue: \[([^\]]*)\]", printed
        ).groups()
        for name in ("shortcut model", "clean model")
    }
    cue = {name: [float(v) for v in row[0].split()] for name, row in rows.items()}
    follows = rows["shortcut model"][1].split(", ")
    # "The shortcut model's maps put more of their energy on the corner with the
    # cue than the clean model's, on each of the four images"
    assert len(cue["shortcut model"]) == len(cue["clean model"]) == 4
    assert all(s > c for s, c in zip(cue["shortcut model"], cue["clean model"], strict=True))
    # "and its predictions name the cue's class rather than the shape"
    assert follows == ["True"] * 4


def test_energy_shares() -> None:
    printed = outputs(PAGE)
    assert number(r"mean over (\d+) test images", printed) == 300
    shortcut = numbers(rf"shortcut model{PAIR}\nclean", printed)
    clean = numbers(rf"clean model{PAIR}\narea", printed)
    area = numbers(rf"area share{PAIR}", printed)
    assert area[0] < 0.01  # "The cue covers less than one percent of the image"
    assert shortcut[0] > 5 * area[0]  # "a far larger share of their energy on it"
    assert shortcut[1] < area[1]  # "and less on the object than a flat map would"
    assert clean[1] > area[1]  # "more than a flat map's share on the object"
    assert clean[0] < shortcut[0] / 5  # "and little on the cue"


def test_no_stray_backslashes_in_chinese_literals() -> None:
    # issue 12: ``make_shapes(variant="shortcut")`` showed as variant=\"shortcut\"
    text = prose(PAGE, "zh_CN")
    assert '\\"' not in text
    assert re.search(r'make_shapes\(variant="shortcut"\)', text)


# -- the answers of the exercises (sitecheck.run_page runs the solutions) ------


def test_answer_1_the_maps_show_the_shortcut_on_training_like_images() -> None:
    printed = run_page(PAGE).solutions
    shortcut = numbers(r"shortcut model\s+cue ([\d.]+)\s+object ([\d.]+)", printed)
    clean = numbers(r"clean model\s+cue ([\d.]+)\s+object ([\d.]+)", printed)
    area = number(r"area share of the cue ([\d.]+)", printed)
    # "its maps already put 0.120 of their energy on the cue, which covers 0.009 of the
    # image, and only 0.045 on the object"
    assert shortcut[0] > 5 * area
    assert shortcut[1] < clean[1]
    assert clean[0] < 2 * area


def test_answer_2_pointing_game_with_tolerance() -> None:
    printed = run_page(PAGE).solutions
    row = r"{} maximum on {}\s*: strict ([\d.]+), within 4 px ([\d.]+), within 8 px ([\d.]+)"
    shortcut_cue = numbers(row.format(r"shortcut model\s+", "cue"), printed)
    clean_object = numbers(row.format(r"clean model\s+", "object"), printed)
    clean_cue = numbers(row.format(r"clean model\s+", "cue"), printed)
    # "falls strictly on the cue in only 0.097 ..., but within 4 pixels in 0.677 and
    # within 8 pixels in 1.000"
    assert shortcut_cue[0] < 0.2
    assert 0.5 < shortcut_cue[1] < shortcut_cue[2] == 1.0
    # "the clean model's falls on the object strictly in 0.900 and within 4 pixels in
    # 0.983, and never within 4 pixels of the cue"
    assert clean_object[0] < clean_object[1]
    assert clean_object[0] > 0.85
    assert clean_cue[1] == 0.0
    # "it lies on the cue only when the cue is in the bottom-right corner"
    bottom_right, elsewhere = numbers(
        r"strict hits: cue bottom right ([\d.]+), elsewhere ([\d.]+)", printed
    )
    assert bottom_right > 0
    assert elsewhere == 0.0


def test_answer_3_the_shortcut_model_does_not_recover() -> None:
    printed = run_page(PAGE).solutions
    shortcut = number(r"shortcut model\s+accuracy without the cue ([\d.]+)", printed)
    clean = number(r"clean model\s+accuracy without the cue ([\d.]+)", printed)
    # "the shortcut model's accuracy is 0.213, still chance level, while the clean
    # model's is 0.990"
    assert abs(shortcut - 0.2) < 0.05
    assert clean > 0.95
