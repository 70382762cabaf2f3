"""Claims of page 18b, measuring CAM maps (each test names the sentence it backs)."""

from __future__ import annotations

import re

from sitecheck import match, number, numbers, outputs, run_page

PAGE = "18b"
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
    return {
        name: numbers(rf"\n{re.escape(name)}\s+{F}\s+{F}\s+{F}\s+{F}\s+{F}\n", printed)
        for name in (*METHODS, "random map")
    }


def test_same_maps_as_page_18_no_hooks_left() -> None:
    printed = outputs(PAGE)
    # "The same model, methods and 48 test images as on the previous page"
    assert "images: (48, 3, 64, 64)" in printed
    assert "maps per method: (48, 64, 64)" in printed
    assert number(r"hooks left on the model: (\d+)", printed) == 0
    # the pointing game of page 18's two Score-CAMs is the same map's
    page_18 = number(r"\n\s*probability: pointing ([\d.]+)", outputs("18"))
    assert number(rf"Score-CAM: pointing {F}", printed) == page_18


def test_pointing_game() -> None:
    printed = outputs(PAGE)
    pointing = {
        name: number(rf"\n\s*{re.escape(name)}: pointing {F}\n", "\n" + printed + "\n")
        for name in (*METHODS, "random map")
    }
    area = number(rf"object area, share of the image: {F}", printed)
    # "The random map's peak lands on the object about as often as the object's
    # share of the image"
    assert abs(pointing["random map"] - area) < 0.05
    # "Every method does far better."
    assert all(pointing[name] > 5 * pointing["random map"] for name in METHODS)
    # "The best score, though, goes to Eigen-CAM, which ignores the class"
    assert pointing["Eigen-CAM"] == max(pointing.values())


def test_deletion_by_hand_equals_the_library() -> None:
    printed = outputs(PAGE)
    # "its probabilities are the ones in the titles"
    for name in ("Grad-CAM", "random map"):
        value = number(
            rf"{re.escape(name)}: max \|by hand - perturbation_curve\| = ([\d.e+-]+)", printed
        )
        assert value < 1e-5, name


def test_blurred_images_keep_some_probability() -> None:
    # "the probability does not have to reach zero: a blurred shape can still
    # look like its class"
    value = number(rf"on the blurred images: mean {F}", outputs(PAGE))
    assert value > 0.2


def test_table_ranges() -> None:
    printed = outputs(PAGE)
    # "48 test images; ... blur baseline, 16 steps"
    assert "48 test images; deletion and insertion: blur baseline, 16 steps" in printed
    for values in _table().values():
        pointing, deletion, insertion, drop, increase = values
        assert 0 <= pointing <= 1
        assert 0 <= deletion <= 1
        assert 0 <= insertion <= 1
        # average drop and increase in confidence are percentages
        assert 0 <= drop <= 100
        assert 0 <= increase <= 100


def test_comparison_with_the_random_map() -> None:
    printed = outputs(PAGE)
    table = _table()
    reference = table.pop("random map")
    # "below the table, the methods that do better than it": each list matches the table
    listed = {
        key: re.findall(r"'([^']+)'", match(rf"{key}[^\[]*(\[.*\])", printed)[1])
        for key in ("deletion below", "insertion above", "avg drop below")
    }
    assert listed["deletion below"] == [n for n, v in table.items() if v[1] < reference[1]]
    assert listed["insertion above"] == [n for n, v in table.items() if v[2] > reference[2]]
    assert listed["avg drop below"] == [n for n, v in table.items() if v[3] < reference[3]]
    # Summary: "every method beats the random map here with the blur baseline"
    assert listed["deletion below"] == list(METHODS)
    assert listed["insertion above"] == list(METHODS)


def test_score_cam_has_the_lowest_average_drop() -> None:
    # "it has by far the lowest average drop in the table"
    drops = {name: values[3] for name, values in _table().items()}
    score_cam = drops.pop("Score-CAM")
    assert score_cam < 0.6 * min(drops.values())


def test_increase_in_confidence_separates_little() -> None:
    increase = {name: values[4] for name, values in _table().items()}
    # "on 48 images one image is 2.1 %"
    assert f"{100 / 48:.1f}" == "2.1"
    # "no map raises the probability on more than a few (at most Score-CAM's 6.2 %)"
    assert increase["Score-CAM"] == 6.2 == max(increase.values())
    assert increase["Score-CAM"] <= 100 * 3 / 48 + 0.05
    # "the random map ties with Grad-CAM at 2.1 %, above the 0.0 of Layer-CAM,
    # HiResCAM and Eigen-CAM"
    assert increase["random map"] == increase["Grad-CAM"] == 2.1
    assert [increase[n] for n in ("Layer-CAM", "HiResCAM", "Eigen-CAM")] == [0.0] * 3


def test_black_pixels_favour_the_random_map() -> None:
    printed = outputs(PAGE)
    grad_cam = number(rf"Grad-CAM: deletion AUC with black pixels {F}", printed)
    random_map = number(rf"random map: deletion AUC with black pixels {F}", printed)
    # "With black pixels the random map's deletion AUC is *lower* than Grad-CAM's"
    assert random_map < grad_cam


def test_the_answers() -> None:
    solutions = run_page(PAGE).solutions
    # answer 1: Grad-CAM finds each object; "Eigen-CAM gives the same map whatever
    # the target, so its single peak can sit on one object only"
    rows = {
        name: numbers(
            rf"{name}: first object {F}, second object {F}, max \|first map - second map\| {F}",
            solutions,
        )
        for name in ("Grad-CAM", "Eigen-CAM")
    }
    assert min(rows["Grad-CAM"][:2]) > 0.7
    assert rows["Eigen-CAM"][2] == 0
    assert rows["Eigen-CAM"][0] + rows["Eigen-CAM"][1] <= 1
    # answer 2: "Layer-CAM and HiResCAM put the largest share of their mass on the
    # object ..., Score-CAM the smallest; every method is far above the random
    # map's ..., which is about the object's share of the image"
    energy = {
        name: number(rf"{re.escape(name)}: energy on the object {F}", solutions)
        for name in (*METHODS, "random map")
    }
    reference = energy.pop("random map")
    assert energy["Layer-CAM"] == energy["HiResCAM"] == max(energy.values())
    assert energy["Score-CAM"] == min(energy.values())
    assert min(energy.values()) > 2 * reference
    assert abs(reference - number(rf"object area, share of the image: {F}", solutions)) < 0.02
    # answer 3: 64 steps change the AUCs "hardly at all"
    for mode in ("deletion", "insertion"):
        coarse, fine = numbers(rf"Grad-CAM {mode}: 16 steps {F}, 64 steps {F}", solutions)
        assert abs(coarse - fine) < 0.01


def test_one_image_curves_go_up_and_down() -> None:
    # "One image's curves go up and down": the first image's 16-step curves
    # (drawn on the page) are not monotonic
    from hooks_tutorial.metrics import perturbation_curve  # noqa: PLC0415

    namespace = run_page(PAGE).namespace
    for mode in ("deletion", "insertion"):
        curve = perturbation_curve(
            namespace["model"],
            namespace["image"],
            namespace["maps"]["Grad-CAM"][:1],
            mode=mode,
            steps=16,
            baseline="blur",
        )
        steps = curve.scores[0, 1:] - curve.scores[0, :-1]
        assert (steps > 0).any(), mode
        assert (steps < 0).any(), mode
