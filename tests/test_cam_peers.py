"""Our maps against pytorch-grad-cam's: equal, or different exactly where the docstrings say.

The docstrings' notes (GradCAM, GradCAMPlusPlus, ScoreCAM, EigenCAM) state
which maps equal pytorch-grad-cam's to float32 rounding and where they
differ. Each stated difference is shown here twice: the maps differ, and
they agree once the difference is removed (the same upsampling, the
epsilon, the sign). The target layer is smaller than the input (a stride-2
convolution), so the final resize and the masks' upsampling are exercised.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import pytorch_grad_cam
import torch
from pytorch_grad_cam.utils.model_targets import ClassifierOutputTarget
from pytorch_grad_cam.utils.svd_on_activations import get_2d_projection
from torch import nn

import hooks_tutorial as ht

TARGETS = [0, 3, 1]
# float32 maps in [0, 1] from the same formula computed in another order
# (NumPy against torch): differences are a few float32 ulps (1e-7 here).
TOL = 1e-6
# EigenCAM's map is a singular vector, from NumPy's SVD there and torch's here: the two
# differ by float32 rounding over the gap between the first two singular values, 1.5e-6
# with torch's generic kernels (ATEN_CPU_CAPABILITY=default). A flipped sign differs by 0.1+.
SVD_TOL = 1e-5


def make_model(fc_scale: float = 1.0) -> nn.Sequential:
    """Conv -> ReLU -> stride-2 conv -> ReLU (the target, 8 x 8 for a 16 x 16 input) -> GAP -> fc."""
    torch.manual_seed(1)
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(8, 8, 3, stride=2, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(8, 5),
    ).eval()
    with torch.no_grad():
        model[6].weight *= fc_scale
    return model


@pytest.fixture
def x() -> torch.Tensor:
    return torch.randn(3, 3, 16, 16, generator=torch.Generator().manual_seed(2))


def theirs(method: Any, model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """pytorch-grad-cam's normalised maps ``[B, H, W]`` for TARGETS at ``model[3]``."""
    with method(model=model, target_layers=[model[3]]) as cam:
        maps = cam(input_tensor=x, targets=[ClassifierOutputTarget(c) for c in TARGETS])
    assert ht.count_hooks(model) == {}
    return torch.from_numpy(maps)


def gap(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).abs().max())


@pytest.mark.parametrize("name", ["GradCAM", "HiResCAM", "XGradCAM", "LayerCAM"])
def test_the_same_maps_as_pytorch_grad_cam(name: str, x: torch.Tensor) -> None:
    model = make_model()
    ours = getattr(ht, name)(model, "3")(x, TARGETS)
    assert gap(ours, theirs(getattr(pytorch_grad_cam, name), model, x)) < TOL


def test_gradcam_plusplus_differs_by_the_epsilon(x: torch.Tensor) -> None:
    # Small gradients (|g| about 1e-3 to 1e-2 here): pytorch-grad-cam's 1e-6 changes the map.
    model = make_model()
    ours = ht.GradCAMPlusPlus(model, "3")(x, TARGETS)
    assert gap(ours, theirs(pytorch_grad_cam.GradCAMPlusPlus, model, x)) > 0.05
    # ... and it is the only difference: our formula with the epsilon gives their weights.
    with ht.capture_activations(model, "3") as acts, ht.capture_gradients(model, "3") as grads:
        model(x).gather(1, torch.tensor(TARGETS)[:, None]).sum().backward()
    a, g = acts["3"].double(), grads["3"].double()
    assert float(g.abs().max()) < 1e-2
    sums = a.sum(dim=(2, 3), keepdim=True)
    with_eps = (g.clamp(min=0) * g**2 / (g**2 * (2 + g * sums) + 1e-6)).sum(dim=(2, 3))
    their_weights = pytorch_grad_cam.GradCAMPlusPlus(model, [model[3]]).get_cam_weights(
        x, model[3], None, a.numpy(), g.numpy()
    )
    torch.testing.assert_close(torch.from_numpy(their_weights), with_eps, rtol=1e-9, atol=0)
    # Large gradients (fc weights x 1000): the epsilon is negligible and the maps agree.
    model = make_model(fc_scale=1000.0)
    ours = ht.GradCAMPlusPlus(model, "3")(x, TARGETS)
    assert gap(ours, theirs(pytorch_grad_cam.GradCAMPlusPlus, model, x)) < TOL


def test_scorecam_differs_by_the_masks_upsampling(
    x: torch.Tensor, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = make_model()
    ours = ht.ScoreCAM(model, "3", weights="channel_softmax")(x, TARGETS)
    # pytorch-grad-cam upsamples the masks with align_corners=True: the maps differ a little ...
    assert gap(ours, theirs(pytorch_grad_cam.ScoreCAM, model, x)) > 1e-4
    # ... and agree once its masks are upsampled as ours (align_corners=False).
    monkeypatch.setattr(
        torch.nn,
        "UpsamplingBilinear2d",
        lambda size: nn.Upsample(size=size, mode="bilinear", align_corners=False),
    )
    assert gap(ours, theirs(pytorch_grad_cam.ScoreCAM, model, x)) < TOL


def test_eigencam_differs_by_the_sign_only() -> None:
    activations = torch.randn(40, 8, 6, 6, generator=torch.Generator().manual_seed(0)).relu()
    a = activations.double()
    ours = ht.EigenCAM.projection(a)
    their_projection = torch.from_numpy(get_2d_projection(a.numpy()).astype(np.float64))
    signs = torch.sign((ours * their_projection).flatten(1).sum(dim=1))
    # The same projection up to one sign per image (theirs is rounded to float32) ...
    scale = float(ours.abs().max())
    assert gap(ours, signs[:, None, None] * their_projection) < TOL * scale
    # ... ours correlates positively with the channel-mean activation, theirs not always.
    mean = a.mean(dim=1)
    mean = mean - mean.mean(dim=(1, 2), keepdim=True)
    assert bool(((ours * mean).flatten(1).sum(dim=1) > 0).all())
    assert bool((signs < 0).any())  # the SVD's sign is arbitrary: some of 40 images flip


def test_eigencam_maps_equal_up_to_the_sign(x: torch.Tensor) -> None:
    model = make_model()
    ours = ht.EigenCAM(model, "3")(x)
    signed = ht.EigenCAM(model, "3", relu=False)(x, raw=True)
    with ht.capture_activations(model, "3") as acts:
        model(x)
    their_projection = torch.from_numpy(get_2d_projection(acts["3"].numpy()))
    flips = (signed * their_projection).flatten(1).sum(dim=1) < 0
    maps = theirs(pytorch_grad_cam.EigenCAM, model, x)
    # equal where pytorch-grad-cam's SVD kept our sign, different where it flipped it
    assert gap(ours[~flips], maps[~flips]) < SVD_TOL
    assert all(gap(ours[i], maps[i]) > 0.1 for i in flips.nonzero()[:, 0].tolist())
