"""Grad-CAM against captum's LayerGradCam, used as a test-only oracle."""

from __future__ import annotations

import pytest
import torch
import torchvision
from captum import attr as captum_attr
from torch import nn

from hooks_tutorial import count_hooks
from hooks_tutorial.cam import GradCAM


class InplaceNet(nn.Module):
    """The target ``conv2`` is followed by ``out += 1`` and an in-place ReLU."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.head = nn.Sequential(nn.Conv2d(16, 8, 3), nn.Flatten(), nn.Linear(8 * 14 * 14, 4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.conv2(self.relu(self.conv1(x)))
        out += 1.0
        return self.head(self.relu(out))


def gap_net() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.BatchNorm2d(8),
        nn.ReLU(),
        nn.Conv2d(8, 8, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(8, 3),
    )


def resnet18() -> nn.Module:
    return torchvision.models.resnet18(weights=None)


def mobilenet_v2() -> nn.Module:
    return torchvision.models.mobilenet_v2(weights=None)


CASES = [
    pytest.param(gap_net, "4", 32, id="gap-net"),
    pytest.param(InplaceNet, "conv2", 32, id="inplace-after-target"),
    pytest.param(resnet18, "layer4", 64, id="resnet18-layer4"),
    # bn2 is followed by "out += identity" and ReLU(inplace=True)
    pytest.param(resnet18, "layer3.1.bn2", 64, id="resnet18-layer3.1.bn2"),
    pytest.param(resnet18, "layer3.1.conv2", 64, id="resnet18-layer3.1.conv2"),
    pytest.param(mobilenet_v2, "features.14", 64, id="mobilenet_v2-features.14"),
]


def normalise(maps: torch.Tensor) -> torch.Tensor:
    """Min-max per map; an all-zero map (possible with random weights) stays zero."""
    flat = maps.flatten(1)
    lo, hi = flat.amin(1)[:, None, None], flat.amax(1)[:, None, None]
    return torch.where(hi > lo, (maps - lo) / torch.where(hi > lo, hi - lo, 1.0), 0.0)


@pytest.mark.slow
@pytest.mark.parametrize(("make_model", "layer", "size"), CASES)
@pytest.mark.parametrize("relu", [True, False])
def test_gradcam_matches_captum(make_model: type, layer: str, size: int, relu: bool) -> None:
    torch.manual_seed(0)
    model = make_model().eval()
    x = torch.randn(2, 3, size, size)
    target = [1, 2]

    module = model.get_submodule(layer)
    attribution = (
        captum_attr.LayerGradCam(model, module)
        .attribute(x, target=target, relu_attributions=relu)
        .detach()
    )
    upsampled = captum_attr.LayerAttribution.interpolate(
        attribution, (size, size), interpolate_mode="bilinear"
    )[:, 0]
    if not relu:  # the signed maps are never trivial: the comparison is meaningful
        assert bool((attribution.flatten(1).amax(1) > attribution.flatten(1).amin(1)).all())

    cam = GradCAM(model, layer, relu=relu)
    raw = cam(x, target, raw=True)
    # Same float32 formula evaluated in another order: rounding only. Raw maps
    # relative to their scale; normalised maps in [0, 1] absolutely.
    scale = float(attribution.abs().max())
    torch.testing.assert_close(raw, attribution[:, 0], rtol=1e-4, atol=1e-5 * scale)
    torch.testing.assert_close(cam(x, target), normalise(upsampled), rtol=0, atol=1e-5)
    assert count_hooks(model) == {}
