"""Saliency metrics: perturbation curves, pointing games, confidence, randomisation."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from hooks_tutorial import count_hooks
from hooks_tutorial.cam import GradCAM
from hooks_tutorial.metrics import (
    average_drop,
    deletion_auc,
    energy_pointing_game,
    increase_in_confidence,
    insertion_auc,
    model_randomization,
    pearson,
    perturbation_curve,
    pointing_game,
    spearman,
    ssim,
)


class QuadrantNet(nn.Module):
    """Class 0's logit grows with the top-left 4 x 4 quadrant; class 1's is 0."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        evidence = 10 * x[:, :, :4, :4].mean(dim=(1, 2, 3)) - 5
        return torch.stack([evidence, torch.zeros_like(evidence)], dim=1)


def quadrant_map(good: bool) -> torch.Tensor:
    m = torch.zeros(8, 8)
    m[:4, :4] = 1.0
    m += torch.linspace(0, 0.5, 64).reshape(8, 8)  # a strict order among pixels
    return (m if good else -m)[None]


def small_cnn() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.BatchNorm2d(8),
        nn.ReLU(),
        nn.Conv2d(8, 8, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(8, 4),
    )


# -- deletion / insertion ------------------------------------------------------
def test_good_map_beats_bad_map() -> None:
    model, x = QuadrantNet(), torch.ones(1, 3, 8, 8)
    good, bad = quadrant_map(True), quadrant_map(False)
    assert float(deletion_auc(model, x, good, 0, steps=16)) < float(
        deletion_auc(model, x, bad, 0, steps=16)
    )
    kwargs = {"steps": 16, "baseline": "zeros"}
    assert float(insertion_auc(model, x, good, 0, **kwargs)) > float(  # type: ignore[arg-type]
        insertion_auc(model, x, bad, 0, **kwargs)  # type: ignore[arg-type]
    )


def reference_curve(
    model: nn.Module, x: torch.Tensor, saliency: torch.Tensor, c: int, steps: int, mode: str
) -> torch.Tensor:
    """One perturbed image at a time, written from the definition."""
    h, w = x.shape[-2:]
    order = torch.argsort(-saliency.flatten(), stable=True)
    scores = []
    for i in range(steps + 1):
        n = round(i * h * w / steps)
        chosen = torch.zeros(h * w, dtype=torch.bool)
        chosen[order[:n]] = True
        chosen = chosen.view(1, 1, h, w)
        base = torch.zeros_like(x)
        image = torch.where(chosen, base, x) if mode == "deletion" else torch.where(chosen, x, base)
        scores.append(float(model(image).softmax(1)[0, c]))
    return torch.tensor(scores)


@pytest.mark.parametrize("mode", ["deletion", "insertion"])
def test_curve_matches_reference(mode: str) -> None:
    model = small_cnn().eval()
    x = torch.rand(2, 3, 8, 8, generator=torch.Generator().manual_seed(0))
    saliency = torch.rand(2, 8, 8, generator=torch.Generator().manual_seed(1))
    curve = perturbation_curve(
        model,
        x,
        saliency,
        [1, 3],
        mode=mode,  # type: ignore[arg-type]
        steps=5,
        baseline="zeros",
        batch_size=4,
    )
    assert curve.fractions.tolist() == pytest.approx([0.0, 13 / 64, 26 / 64, 38 / 64, 51 / 64, 1.0])
    with torch.no_grad():
        for i, c in enumerate([1, 3]):
            expected = reference_curve(model, x[i : i + 1], saliency[i], c, 5, mode)
            torch.testing.assert_close(curve.scores[i], expected, rtol=1e-5, atol=1e-6)
            f = curve.fractions
            auc = sum((f[k + 1] - f[k]) * (expected[k] + expected[k + 1]) / 2 for k in range(5))
            assert float(curve.auc[i]) == pytest.approx(float(auc), abs=1e-6)


def test_curve_end_points_and_batch_size() -> None:
    model = small_cnn()
    x = torch.rand(3, 3, 8, 8)
    saliency = torch.rand(3, 4, 4)  # resized to 8 x 8
    a = perturbation_curve(model, x, saliency, steps=4, batch_size=1)
    b = perturbation_curve(model, x, saliency, steps=4, batch_size=100)
    torch.testing.assert_close(a.scores, b.scores, rtol=1e-5, atol=1e-6)
    with torch.no_grad():
        probs = model.eval()(x).softmax(1)
        top = probs.argmax(1)
        blank = model(torch.zeros_like(x)).softmax(1).gather(1, top[:, None])[:, 0]
    torch.testing.assert_close(a.scores[:, 0], probs.max(1).values, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(a.scores[:, -1], blank, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("baseline", ["zeros", "mean", "blur", "tensor"])
def test_baselines(baseline: str) -> None:
    model = QuadrantNet()
    x = torch.full((1, 3, 16, 16), 0.8)
    value: object = torch.full((3, 1, 1), 0.8) if baseline == "tensor" else baseline
    curve = perturbation_curve(model, x, torch.rand(1, 16, 16), 0, steps=4, baseline=value)  # type: ignore[arg-type]
    if baseline == "zeros":
        assert float(curve.scores[0, -1]) < float(curve.scores[0, 0])
    else:  # the baseline of a constant image equals the image: a flat curve
        torch.testing.assert_close(
            curve.scores[0], curve.scores[0, :1].expand(5), rtol=1e-5, atol=1e-6
        )


def test_perturbation_errors() -> None:
    model, x = QuadrantNet(), torch.rand(1, 3, 8, 8)
    with pytest.raises(ValueError, match="unknown baseline 'noise'"):
        deletion_auc(model, x, torch.rand(1, 8, 8), baseline="noise")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="does not broadcast"):
        deletion_auc(model, x, torch.rand(1, 8, 8), baseline=torch.zeros(2, 3, 8, 8))
    with pytest.raises(ValueError, match=r"expected saliency maps \[B, H, W\] with B = 1"):
        deletion_auc(model, x, torch.rand(2, 8, 8))
    with pytest.raises(ValueError, match="mode must be"):
        perturbation_curve(model, x, torch.rand(1, 8, 8), mode="both")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="steps must be a positive int"):
        deletion_auc(model, x, torch.rand(1, 8, 8), steps=0)
    with pytest.raises(ValueError, match=r"x\.unsqueeze\(0\)"):
        deletion_auc(model, x[0], torch.rand(1, 8, 8))


def test_maps_with_nan_or_infinity_say_how_to_fix() -> None:
    model, x = small_cnn(), torch.rand(2, 3, 8, 8)
    maps = torch.rand(2, 8, 8)
    maps[1, 2, 3] = float("nan")
    fix = (
        "maps contain NaN or infinity; check the model's input and weights for NaN or "
        "infinity (torch.isfinite(x).all()), or clean the maps with torch.nan_to_num(maps)"
    )
    with pytest.raises(ValueError, match="NaN or infinity") as info:
        deletion_auc(model, x, maps, steps=2)
    assert str(info.value) == f"the saliency {fix}"
    maps[1, 2, 3] = float("inf")
    with pytest.raises(ValueError, match="NaN or infinity") as info:
        average_drop(model, x, maps)
    assert str(info.value) == f"the explanation {fix}"


def test_perturbation_leaves_model_as_it_was() -> None:
    model = small_cnn().train()
    state = copy.deepcopy(model.state_dict())
    insertion_auc(model, torch.rand(2, 3, 8, 8), torch.rand(2, 8, 8), steps=3)
    assert model.training
    for key, value in model.state_dict().items():
        assert torch.equal(value, state[key]), key


# -- pointing games ----------------------------------------------------------------
def test_pointing_game_masks_boxes_tolerance() -> None:
    maps = torch.zeros(3, 10, 10)
    maps[0, 2, 2] = 1.0  # inside the box
    maps[1, 2, 6] = 1.0  # 2 pixels right of the box (x1 = 5 is exclusive)
    boxes = torch.tensor([[0, 0, 5, 5]] * 3)  # the last map is constant: a miss
    assert pointing_game(maps, boxes=boxes).tolist() == [True, False, False]
    assert pointing_game(maps, boxes=boxes, tolerance=2).tolist() == [True, True, False]
    assert pointing_game(maps, boxes=boxes, tolerance=1.5).tolist() == [True, False, False]
    masks = torch.zeros(3, 10, 10, dtype=torch.bool)
    masks[:, :5, :5] = True
    assert pointing_game(maps, masks).tolist() == [True, False, False]
    several = [
        torch.tensor([[0, 0, 1, 1], [1, 1, 3, 3]]),  # the second box holds (x=2, y=2)
        torch.tensor([[6, 2, 7, 3]]),  # exactly the peak pixel (x=6, y=2)
        torch.zeros(0, 4),  # no object at all
    ]
    assert pointing_game(maps, boxes=several).tolist() == [True, True, False]


def test_energy_pointing_game() -> None:
    maps = torch.zeros(2, 4, 4)
    maps[0, 0, 0], maps[0, 3, 3] = 3.0, 1.0
    out = energy_pointing_game(maps, boxes=torch.tensor([[0, 0, 2, 2], [0, 0, 2, 2]]))
    assert out.tolist() == [0.75, 0.0]  # the all-zero map gives 0, not NaN
    with pytest.raises(ValueError, match="non-negative"):
        energy_pointing_game(-maps - 1, boxes=torch.tensor([[0, 0, 2, 2]] * 2))


def test_pointing_game_errors() -> None:
    maps = torch.rand(2, 4, 4)
    with pytest.raises(ValueError, match="either masks"):
        pointing_game(maps)
    with pytest.raises(ValueError, match="either masks"):
        pointing_game(maps, torch.ones(2, 4, 4), boxes=torch.zeros(2, 4))
    with pytest.raises(ValueError, match=r"masks have shape \(1, 4, 4\)"):
        pointing_game(maps, torch.ones(1, 4, 4))
    with pytest.raises(ValueError, match="got boxes for 3 images, expected 2"):
        pointing_game(maps, boxes=torch.zeros(3, 4))


# -- confidence ----------------------------------------------------------------
def test_average_drop_and_increase_in_confidence_by_hand() -> None:
    model = small_cnn().eval()
    x = torch.rand(4, 3, 8, 8, generator=torch.Generator().manual_seed(3))
    maps = torch.rand(4, 8, 8, generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        y = model(x).softmax(1)[torch.arange(4), torch.arange(4)]
        o = model(x * maps[:, None]).softmax(1)[torch.arange(4), torch.arange(4)]
    expected_drop = float(100 * ((y - o).clamp(min=0) / y).mean())
    expected_increase = float(100 * (o > y).float().mean())
    drop = average_drop(model, x, maps, [0, 1, 2, 3], batch_size=3)
    assert drop == pytest.approx(expected_drop, rel=1e-5)
    assert increase_in_confidence(model, x, maps, [0, 1, 2, 3], batch_size=3) == pytest.approx(
        expected_increase
    )


def test_confidence_full_map_and_errors() -> None:
    model, x = small_cnn(), torch.rand(2, 3, 8, 8)
    assert average_drop(model, x, torch.ones(2, 8, 8)) == 0.0
    assert increase_in_confidence(model, x, torch.ones(2, 8, 8)) == 0.0
    for metric in (average_drop, increase_in_confidence):
        with pytest.raises(ValueError, match=r"maps must be in \[0, 1\]"):
            metric(model, x, torch.full((2, 8, 8), 2.0))
        with pytest.raises(ValueError, match="positive scores"):
            metric(model, x, torch.ones(2, 8, 8), lambda out: -out.exp()[:, 0])


# -- similarity ------------------------------------------------------------------
def test_pearson_and_spearman_known_values() -> None:
    a = torch.tensor([[1.0, 2.0, 3.0, 4.0, 5.0]])
    assert pearson(a, 3 * a - 1).item() == pytest.approx(1.0)
    assert pearson(a, -a).item() == pytest.approx(-1.0)
    assert spearman(a, a.exp()).item() == pytest.approx(1.0)  # monotone, not linear
    assert pearson(a, a.exp()).item() < 0.95
    assert spearman(a, -(a**3)).item() == pytest.approx(-1.0)
    assert spearman(a, torch.ones_like(a)).item() == 0.0  # undefined: 0
    # Ties get average ranks: [1, 2, 2, 3] -> ranks [0, 1.5, 1.5, 3];
    # Pearson of those ranks with [0, 1, 2, 3] = 4.5 / sqrt(4.5 * 5).
    tied = spearman(torch.tensor([[1.0, 2.0, 2.0, 3.0]]), torch.tensor([[1.0, 2.0, 3.0, 4.0]]))
    assert tied.item() == pytest.approx(4.5 / (4.5 * 5) ** 0.5)


def test_ssim() -> None:
    gen = torch.Generator().manual_seed(0)
    a = torch.rand(2, 16, 16, generator=gen)
    b = torch.rand(2, 16, 16, generator=gen)
    torch.testing.assert_close(ssim(a, a), torch.ones(2))
    s = ssim(a, b)
    assert bool((s < 0.5).all())
    torch.testing.assert_close(s, ssim(b, a))
    assert ssim(a[:, :5, :5], a[:, :5, :5]).tolist() == pytest.approx([1.0, 1.0])
    with pytest.raises(ValueError, match="same shape"):
        ssim(a, b[:1])


# -- model randomisation ----------------------------------------------------------
def test_model_randomization_cascade() -> None:
    model = small_cnn().train()
    state = copy.deepcopy(model.state_dict())
    rng_state = torch.random.get_rng_state()
    x = torch.rand(2, 3, 8, 8, generator=torch.Generator().manual_seed(5))
    steps = model_randomization(model, lambda m: GradCAM(m, "4"), x, seed=1)
    # Execution order reversed: fc (7), then the convolutions and BatchNorm.
    assert [s.layer for s in steps] == ["(original)", "7", "3", "1", "0"]
    assert steps[0].spearman.tolist() == [1.0, 1.0]
    # Step 0 is the user's model explained for its own top-1 classes.
    torch.testing.assert_close(steps[0].maps, GradCAM(model, "4")(x), rtol=0, atol=0)
    last = steps[-1]
    assert bool((last.pearson < 0.99).all())  # the maps of a random model differ
    # The user's model, the RNG and the hooks are as they were.
    assert model.training
    for key, value in model.state_dict().items():
        assert torch.equal(value, state[key]), key
    assert torch.equal(torch.random.get_rng_state(), rng_state)
    assert count_hooks(model) == {}


def test_model_randomization_explicit_layers_and_determinism() -> None:
    model = small_cnn()
    x = torch.rand(1, 3, 8, 8)
    first = model_randomization(model, lambda m: GradCAM(m, "4"), x, 2, layers=["7"], seed=3)
    again = model_randomization(model, lambda m: GradCAM(m, "4"), x, 2, layers=["7"], seed=3)
    assert [s.layer for s in first] == ["(original)", "7"]
    torch.testing.assert_close(first[1].maps, again[1].maps, rtol=0, atol=0)
    with pytest.raises(ValueError, match="no submodule named 'fc'"):
        model_randomization(model, lambda m: GradCAM(m, "4"), x, layers=["fc"])


def test_model_randomization_descends_into_a_wrapper() -> None:
    class Wrapper(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = small_cnn()

        def forward(self, t: torch.Tensor) -> torch.Tensor:
            return self.net(t)

    steps = model_randomization(Wrapper(), lambda m: GradCAM(m, "net.4"), torch.rand(1, 3, 8, 8))
    assert [s.layer for s in steps] == ["(original)", "net.7", "net.3", "net.1", "net.0"]
