"""Claims of page 21, guided backpropagation (each test names the sentence it backs)."""

from __future__ import annotations

import re

from sitecheck import match, number, outputs, prose, run_page

PAGE = "21"


def test_the_four_images() -> None:
    printed = outputs(PAGE)
    true = match(r"true:\s+(\[.*\])", printed)[1]
    predicted = match(r"predicted:\s+(\[.*\])", printed)[1]
    # "four images of the test split", explained for "the predicted classes"
    assert len(true.split(",")) == 4
    assert true == predicted


def test_input_gradient_has_full_resolution() -> None:
    # "The score's gradient ... has the input's full resolution"
    assert "input gradient: (4, 3, 64, 64)" in outputs(PAGE)


def test_relus_are_not_in_place() -> None:
    # "SimpleCNN uses ordinary ReLUs."
    assert "3 ReLU modules, in place: [False, False, False]" in outputs(PAGE)


def test_guided_gradients_are_not_all_positive_at_the_input() -> None:
    # "The last line prints False: ... the convolution ... mixes signs again."
    assert "guided gradients are >= 0 at the input? False" in outputs(PAGE)
    assert "The last line prints False" in prose(PAGE)


def test_guided_gradcam_shapes() -> None:
    printed = outputs(PAGE)
    # "one value per cell of its grid" and the product keeps the input's resolution
    assert "Grad-CAM grid at relu3: (8, 8)" in printed
    assert "Grad-CAM maps: (4, 64, 64)  Guided Grad-CAM: (4, 3, 64, 64)" in printed


def test_in_place_relu_raises_in_forward() -> None:
    printed = outputs(PAGE)
    # "autograd refuses during the forward pass" (the call was inplace_model(images))
    assert "RuntimeError: Output 0 of BackwardHookFunction is a view" in printed
    assert number(r"hooks left on the copy: (\d+)", printed) == 0


def test_library_matches_the_hooks() -> None:
    printed = outputs(PAGE)
    # "We compare both with the page's results, including the library on the
    # in-place copy": same numbers, in-place or not ("works whether the ReLU
    # runs in place or not")
    largest = number(r"largest guided gradient:\s+([\d.e+-]+)", printed)
    assert largest > 0
    for name in ("GuidedBackprop", "in-place copy", "GuidedGradCAM"):
        assert number(rf"max \|difference\|, {name}:\s+([\d.e+-]+)", printed) < 1e-6 * largest


def test_every_hook_is_gone() -> None:
    printed = outputs(PAGE)
    # "Every hook is gone, on both models"
    counts = re.findall(r"hooks left on the (?:model|copy):\s+(\d+)", printed)
    assert counts
    assert set(counts) == {"0"}


def test_guided_maps_follow_the_outline() -> None:
    printed = outputs(PAGE)

    def row(label: str) -> list[float]:
        return [
            float(v)
            for v in match(rf"\n{label}\s+[^:\n]*:\s+([\d. ]+)\n", "\n" + printed + "\n")[1].split()
        ]

    plain, guided, area = row("gradient"), row("guided backprop"), row("band area")
    assert len(plain) == len(guided) == len(area) == 4
    # "on every image it puts a larger share of its mass near the outline than
    # the plain gradient does"
    assert all(g > p for g, p in zip(guided, plain, strict=True))
    # "and both put more there than the band's share of the area"
    assert all(p > a for p, a in zip(plain, area, strict=True))
    assert all(g > a for g, a in zip(guided, area, strict=True))


def test_the_answers() -> None:
    run = run_page(PAGE)
    printed = outputs(PAGE)

    def shares(label: str, text: str) -> list[float]:
        row = match(rf"\n{label}\s+[^:\n]*:\s+([\d. ]+)\n", "\n" + text + "\n")[1]
        return [float(v) for v in row.split()]

    # answer 1: the deconvnet map's mass near the outline is "less than guided
    # backpropagation's and more than the plain gradient's on every image"
    deconv = shares("deconvnet", run.solutions)
    guided, plain = shares("guided backprop", printed), shares("gradient", printed)
    assert len(deconv) == 4
    assert all(p < d < g for p, d, g in zip(plain, deconv, guided, strict=True))
    # answer 2: "The guided gradients hardly change with the class ... Grad-CAM's
    # maps change much more": rank correlations between top and second class
    guided_rho = [
        float(v)
        for v in match(r"guided backprop, top vs second class:\s+([\d. -]+)\n", run.solutions)[
            1
        ].split()
    ]
    cam_rho = [
        float(v)
        for v in match(r"Grad-CAM, top vs second class:\s+([\d. -]+)\n", run.solutions)[1].split()
    ]
    assert len(guided_rho) == len(cam_rho) == 4
    assert min(guided_rho) > 0.6
    assert max(cam_rho) < min(guided_rho) - 0.3
    # answer 3: hooks inside the block, the same gradients, none after an error
    assert number(r"hooks inside the block: (\d+)", run.solutions) == 3
    assert number(r"max \|difference\| to the guided gradients: ([\d.e+-]+)", run.solutions) == 0
    assert number(r"hooks after an error in the block: (\d+)", run.solutions) == 0
