"""Claims of page 16, Grad-CAM from scratch (each test names the sentence it backs)."""

from __future__ import annotations

import re

from sitecheck import match, number, numbers, outputs, prose, run_page

PAGE = "16"


def test_the_model_explains_a_confident_prediction() -> None:
    printed = outputs(PAGE)
    true = match(r"true class: (\w+)", printed)[1]
    predicted = match(r"predicted:\s+(\w+) \(probability ([\d.]+)\)", printed)
    # "the predicted one" is the class explained; the image is classified correctly
    assert predicted[1] == true
    assert float(predicted[2]) > 0.9


def test_hook_counts() -> None:
    printed = outputs(PAGE)
    counts = [int(v) for v in re.findall(r"hooks on relu3: (\d+)", printed)]
    # one forward hook while the hook is registered, none after handle.remove()
    # ("Removing the hook") and none after the function ("removed in finally")
    assert counts == [1, 0, 0]
    assert number(r"hooks anywhere in the model: (\d+)", printed) == 0


def test_deepcopy_copies_the_hook() -> None:
    printed = outputs(PAGE)
    # "copy.deepcopy copies the module's hook dictionaries, and the handle removes
    # the hook from the original only" (issue 24: model64 used to inherit the hook)
    assert number(r"hooks on the copy's relu3: (\d+)", printed) == 1
    # "The hook is gone, so the copy has none"
    assert number(r"hooks on the float64 copy: (\d+)", printed) == 0


def test_max_pooling_gives_one_gradient_position_and_cam_over_z() -> None:
    printed = outputs(PAGE)
    # "the gradient of channel k is the linear weight w^c_k at that one position
    # and zero everywhere else"
    assert number(r"nonzero gradient, per channel: at most (\d+)", printed) == 1
    # "Averaging over the Z positions then gives alpha = w / Z"
    assert number(r"Z = (\d+)", printed) == 64
    assert "weights == fc weights / Z: True" in printed


def test_relu_drops_negative_positions() -> None:
    printed = outputs(PAGE)
    low, high = numbers(r"range: (-?[\d.]+) to (-?[\d.]+)", printed)
    zeroed, total = numbers(r"set to zero by the ReLU: (\d+) of (\d+)", printed)
    # "Negative values are positions that lower the score; Grad-CAM drops them."
    assert low < 0 < high
    assert 0 < zeroed < total


def test_scaled_heatmap_spans_zero_to_one() -> None:
    printed = outputs(PAGE)
    # "min-max scaling stretches it to [0, 1] ... every scaled map has its maximum at 1"
    assert numbers(r"heatmap: \(64, 64\), from ([\d.]+) to ([\d.]+)", printed) == [0.0, 1.0]


def test_peak_on_the_object() -> None:
    # "Is the map's maximum on the object? ... this is a check"
    assert "on the object: True" in outputs(PAGE)


def test_logit_gradient_grows_probability_gradient_vanishes() -> None:
    printed = outputs(PAGE)
    rows = re.findall(
        r"scale ([\d.]+): p_c = ([\d.]+)\s+max\|dy/dA\| = ([\d.]+)\s+max\|dp/dA\| = ([\d.e+-]+)",
        printed,
    )
    assert len(rows) == 5
    p = [float(r[1]) for r in rows]
    dy = [float(r[2]) for r in rows]
    dp = [float(r[3]) for r in rows]
    # "The logit's gradient grows with the scale, as the logit does"
    assert dy == sorted(dy)
    assert dy[-1] > 50 * dy[0]
    # "the probability's gradient shrinks towards zero as p_c approaches 1"
    assert p == sorted(p)
    assert p[-1] > 0.999
    assert dp[-1] < dp[-2] < max(dp)
    assert dp[-1] < 1e-6
    # "Scale 1 is the model as trained": p_c at scale 1 is the predicted probability
    p1 = float(match(r"scale 1\.00: p_c = ([\d.]+)", printed)[1])
    assert abs(p1 - number(r"probability ([\d.]+)\)", printed)) < 1e-3


def test_formula_matches_autograd() -> None:
    printed = outputs(PAGE)
    # "The formula above is exactly what autograd computes" ... "with p_c this close to 1"
    assert "formula matches autograd: True" in printed
    assert number(r"1 - p_c = ([\d.e-]+)", printed) < 0.01


def test_function_matches_step_by_step() -> None:
    # "The same steps for a batch"
    printed = outputs(PAGE)
    assert "same as the step-by-step heatmap: True" in printed
    assert "maps: (8, 64, 64)" in printed


def test_no_prose_claims_comparable_colours() -> None:
    # issue 12 item 2: min-max scaling discards magnitude; neither language may
    # say it makes maps comparable
    assert "comparable in colour" not in prose(PAGE, "en")
    assert "discards" in prose(PAGE, "en")


# -- the answers of the exercises (sitecheck.run_page runs the solutions) ------


def test_answer_1_the_peak_hardly_moves() -> None:
    printed = run_page(PAGE).solutions
    peaks = re.findall(
        r"(\w+): peak at row (\d+), column (\d+), on the object: (True|False)", printed
    )
    assert [p[0] for p in peaks] == ["star", "cross"]  # predicted, second most likely
    (r1, c1), (r2, c2) = [(int(p[1]), int(p[2])) for p in peaks]
    assert abs(r1 - r2) <= 2  # "hardly moves"
    assert abs(c1 - c2) <= 2
    assert all(p[3] == "True" for p in peaks)  # "both on the object"


def test_answer_2_the_probability_map_is_far_smaller() -> None:
    printed = run_page(PAGE).solutions
    logit = number(r"logit: largest value of the raw map ([\d.e+-]+)", printed)
    probability = number(r"probability: largest value of the raw map ([\d.e+-]+)", printed)
    ratio = number(r"ratio: (\d+)", printed)
    assert abs(logit / probability - ratio) <= 1e-3 * ratio  # the printed values are rounded
    assert ratio > 1000


def test_answer_3_conv3_spreads_max_pooling_routes() -> None:
    printed = run_page(PAGE).solutions
    pool2 = numbers(
        r"pool2: \(32, 8, 8\), nonzero positions per channel: (\d+) to (\d+) of (\d+)", printed
    )
    relu2 = numbers(
        r"relu2: \(32, 16, 16\), nonzero positions per channel: (\d+) to (\d+) of (\d+)", printed
    )
    # "60 of the 256 positions", "which covers 60 of its 64 positions", every channel alike
    assert pool2[0] == pool2[1] == relu2[0] == relu2[1] == 60
    assert (pool2[2], relu2[2]) == (64, 256)
    # "never more than 1 in a 2 x 2 window": the max pool routes, it does not spread
    assert number(r"one 2 x 2 window of relu2: (\d+)", printed) == 1
    assert "conv3 kernel: (3, 3)  pool2 window: 2" in printed
