"""Known identities of the CAM family and agreement with float64 references.

The references below are written directly from the papers' formulas, with
the gradient taken by ``torch.autograd.grad`` on a float64 copy of the model
split at the target layer (no hooks), so they share no code with the library.
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from hooks_tutorial.cam import (
    CAM,
    EigenCAM,
    GradCAM,
    GradCAMPlusPlus,
    GuidedBackprop,
    HiResCAM,
    LayerCAM,
    ScoreCAM,
    XGradCAM,
)

# Normalised maps of the float32 implementation against the float64
# reference: values in [0, 1] built from O(10)-term sums of float32 products,
# so rounding errors are ~10 * 6e-8 ~ 1e-6 of the map's range; 1e-5 leaves a
# margin of 10 (the bound asked for by the design).
NORMALISED_ATOL = 1e-5


def gap_fc_model() -> nn.Sequential:
    """features (ends in ReLU, so activations >= 0) -> GAP -> fc."""
    torch.manual_seed(0)
    return nn.Sequential(
        OrderedDict(
            features=nn.Sequential(
                nn.Conv2d(3, 8, 3, padding=1),
                nn.ReLU(),
                nn.Conv2d(8, 16, 3, stride=2, padding=1),
                nn.ReLU(),
            ),
            pool=nn.AdaptiveAvgPool2d(1),
            flatten=nn.Flatten(),
            fc=nn.Linear(16, 6),
        )
    ).eval()


def deep_head_model() -> nn.Sequential:
    """body -> a head with a convolution, so the gradient varies over space."""
    torch.manual_seed(1)
    return nn.Sequential(
        OrderedDict(
            body=nn.Sequential(
                nn.Conv2d(3, 8, 3, padding=1),
                nn.ReLU(inplace=True),
                nn.Conv2d(8, 16, 3, stride=2, padding=1),
            ),
            head=nn.Sequential(
                nn.ReLU(inplace=True),
                nn.Conv2d(16, 8, 3, padding=1),
                nn.ReLU(inplace=True),
                nn.Flatten(),
                nn.Linear(8 * 8 * 8, 6),
            ),
        )
    ).eval()


@pytest.fixture
def x() -> torch.Tensor:
    return torch.randn(3, 3, 16, 16, generator=torch.Generator().manual_seed(2))


TARGETS = [0, 3, 5]


# -- identities on GAP -> FC ---------------------------------------------------
@pytest.mark.parametrize("relu", [True, False])
def test_gradcam_equals_cam_over_z(x: torch.Tensor, relu: bool) -> None:
    model = gap_fc_model()
    grad_cam = GradCAM(model, "features", relu=relu)(x, TARGETS, raw=True)
    cam = CAM(model, "features", "fc", relu=relu)(x, TARGETS, raw=True)
    z = cam.shape[-2] * cam.shape[-1]  # 8 x 8
    # dy/dA = w / Z exactly (AdaptiveAvgPool2d's backward); the spatial mean of
    # Z equal values and the two 16-term channel sums round differently in
    # float32, a relative error of a few 1e-7: rtol 1e-5, and atol for the
    # values that cancel to ~0, relative to the map's scale.
    scale = float(cam.abs().max())
    torch.testing.assert_close(grad_cam, cam / z, rtol=1e-5, atol=1e-6 * scale / z)


def test_hirescam_equals_gradcam_before_relu(x: torch.Tensor) -> None:
    model = gap_fc_model()
    hires = HiResCAM(model, "features", relu=False)(x, TARGETS, raw=True)
    grad_cam = GradCAM(model, "features", relu=False)(x, TARGETS, raw=True)
    assert bool((grad_cam < 0).any())  # the identity is tested on signed values
    scale = float(grad_cam.abs().max())
    # Same reasoning as above: the gradient is the same constant at every position.
    torch.testing.assert_close(hires, grad_cam, rtol=1e-5, atol=1e-6 * scale)
    torch.testing.assert_close(
        HiResCAM(model, "features")(x, TARGETS),
        GradCAM(model, "features")(x, TARGETS),
        rtol=0,
        atol=1e-5,
    )


def test_xgradcam_equals_gradcam(x: torch.Tensor) -> None:
    model = gap_fc_model()
    xgrad = XGradCAM(model, "features")(x, TARGETS)
    grad_cam = GradCAM(model, "features")(x, TARGETS)
    # Normalised maps in [0, 1]; sum(A g) / sum(A) and mean(g) of a constant g
    # differ by rounding only (~1e-7).
    torch.testing.assert_close(xgrad, grad_cam, rtol=0, atol=1e-5)


# -- float64 references --------------------------------------------------------
def split_reference(
    model: nn.Sequential, x: torch.Tensor, targets: list[int], split: int
) -> tuple[torch.Tensor, torch.Tensor, nn.Sequential]:
    """A and dy/dA at the output of ``model[:split]``, in float64, without hooks."""
    m64 = copy.deepcopy(model).double()
    x64 = x.double()
    a = m64[:split](x64).detach().requires_grad_(True)
    y = m64[split:](a.clone())  # clone: in-place ReLUs in the head must not touch `a`
    score = y[torch.arange(len(targets)), torch.tensor(targets)].sum()
    (g,) = torch.autograd.grad(score, a)
    return a.detach(), g, m64


def finish(maps: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    """Upsample bilinearly and min-max normalise each map (float64)."""
    up = F.interpolate(maps[:, None], size=size, mode="bilinear", align_corners=False)[:, 0]
    lo = up.amin(dim=(1, 2), keepdim=True)
    hi = up.amax(dim=(1, 2), keepdim=True)
    return (up - lo) / (hi - lo)


def ref_gradcam(a: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    alpha = g.mean(dim=(2, 3))
    return torch.relu((alpha[:, :, None, None] * a).sum(1))


def ref_gradcam_pp(a: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    # The paper's form, with the powers of g (not the library's simplified one).
    g2, g3 = g**2, g**3
    denominator = 2 * g2 + a.sum(dim=(2, 3), keepdim=True) * g3
    alpha = torch.where(g != 0, g2 / torch.where(g != 0, denominator, 1.0), 0.0)
    weights = (alpha * torch.relu(g)).sum(dim=(2, 3))
    return torch.relu((weights[:, :, None, None] * a).sum(1))


def ref_xgradcam(a: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    # A dead channel (all zeros) gives 0 / 0; its activations are zero, so any
    # weight gives the same map: take 0.
    weights = torch.nan_to_num((a * g).sum(dim=(2, 3)) / a.sum(dim=(2, 3)), nan=0.0)
    return torch.relu((weights[:, :, None, None] * a).sum(1))


def ref_layercam(a: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    return torch.relu((torch.relu(g) * a).sum(1))


def ref_hirescam(a: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    return torch.relu((g * a).sum(1))


GRADIENT_REFERENCES: list[tuple[type, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]]] = [
    (GradCAM, ref_gradcam),
    (GradCAMPlusPlus, ref_gradcam_pp),
    (XGradCAM, ref_xgradcam),
    (LayerCAM, ref_layercam),
    (HiResCAM, ref_hirescam),
]


@pytest.mark.parametrize(("method", "reference"), GRADIENT_REFERENCES)
@pytest.mark.parametrize(
    ("make_model", "layer", "split"),
    [
        (gap_fc_model, "features", 1),
        (deep_head_model, "body", 1),
    ],
)
def test_gradient_methods_match_float64_reference(
    method: type,
    reference: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    make_model: Callable[[], nn.Sequential],
    layer: str,
    split: int,
    x: torch.Tensor,
) -> None:
    model = make_model()
    a, g, _ = split_reference(model, x, TARGETS, split)
    expected = finish(reference(a, g), (16, 16))
    got = method(model, layer)(x, TARGETS)
    assert float((got.double() - expected).abs().max()) <= NORMALISED_ATOL
    raw = method(model, layer)(x, TARGETS, raw=True)
    raw_expected = reference(a, g)
    scale = float(raw_expected.abs().max())
    assert float((raw.double() - raw_expected).abs().max()) <= NORMALISED_ATOL * scale


def test_cam_matches_float64_reference(x: torch.Tensor) -> None:
    model = gap_fc_model()
    m64 = copy.deepcopy(model).double()
    a = m64.features(x.double())
    w = m64.fc.weight[TARGETS]
    expected = finish(torch.relu((w[:, :, None, None] * a).sum(1)), (16, 16)).detach()
    got = CAM(model, "features", "fc")(x, TARGETS)
    assert float((got.double() - expected).abs().max()) <= NORMALISED_ATOL


def test_scorecam_matches_float64_reference(x: torch.Tensor) -> None:
    model = deep_head_model()
    m64 = copy.deepcopy(model).double()
    x64 = x.double()
    with torch.no_grad():
        a = m64.body(x64)
        maps = []
        for i, c in enumerate(TARGETS):
            weights = []
            for k in range(a.shape[1]):
                up = F.interpolate(a[i : i + 1, k : k + 1], size=(16, 16), mode="bilinear")
                if float(up.max() - up.min()) == 0.0:
                    weights.append(0.0)
                    continue
                mask = (up - up.min()) / (up.max() - up.min())
                weights.append(float(m64(x64[i : i + 1] * mask).softmax(1)[0, c]))
            w = torch.tensor(weights, dtype=torch.float64)
            maps.append(torch.relu((w[:, None, None] * a[i]).sum(0)))
        expected = finish(torch.stack(maps), (16, 16))
    got = ScoreCAM(model, "body", batch_size=10)(x, TARGETS)
    assert float((got.double() - expected).abs().max()) <= NORMALISED_ATOL


def test_scorecam_top_k_matches_reference_on_chosen_channels(x: torch.Tensor) -> None:
    model = deep_head_model()
    cam = ScoreCAM(model, "body", top_k=4)
    got = cam(x, TARGETS, raw=True)
    with torch.no_grad():
        a = model.body(x)
    # The top-4 channels by mean activation (all non-constant here).
    means = a.mean(dim=(2, 3))
    chosen = means >= means.topk(4, dim=1).values[:, -1:]
    assert chosen.sum(1).tolist() == [4, 4, 4]
    # The budgeted map is the exact formula restricted to the chosen channels.
    with torch.no_grad():
        weights = torch.zeros(3, a.shape[1])
        for i, c in enumerate(TARGETS):
            for k in chosen[i].nonzero()[:, 0].tolist():
                up = F.interpolate(a[i : i + 1, k : k + 1], size=(16, 16), mode="bilinear")
                mask = (up - up.min()) / (up.max() - up.min())
                weights[i, k] = model(x[i : i + 1] * mask).softmax(1)[0, c]
    expected = torch.relu((weights[:, :, None, None] * a).sum(1))
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)


def test_eigencam_matches_float64_reference(x: torch.Tensor) -> None:
    model = deep_head_model()
    with torch.no_grad():
        a = copy.deepcopy(model).double().body(x.double())
    b, k, h, w = a.shape
    maps = []
    for i in range(b):
        data = a[i].reshape(k, h * w).T  # positions x channels
        centred = data - data.mean(0)
        # First principal axis from the covariance's eigenvectors (not an SVD).
        _, vectors = torch.linalg.eigh(centred.T @ centred)
        projection = centred @ vectors[:, -1]
        mean_map = data.mean(1) - data.mean()
        if float(projection @ mean_map) < 0:
            projection = -projection
        maps.append(torch.relu(projection).reshape(h, w))
    expected = finish(torch.stack(maps), (16, 16))
    got = EigenCAM(model, "body")(x)
    assert float((got.double() - expected).abs().max()) <= NORMALISED_ATOL


class GuidedReLU(torch.autograd.Function):
    """ReLU whose backward passes only positive gradients where the input was positive."""

    @staticmethod
    def forward(ctx: torch.autograd.function.FunctionCtx, t: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(t)
        return t.clamp(min=0)

    @staticmethod
    def backward(ctx: torch.autograd.function.FunctionCtx, grad: torch.Tensor) -> torch.Tensor:
        (t,) = ctx.saved_tensors  # type: ignore[attr-defined]
        return grad.clamp(min=0) * (t > 0)


class GuidedReLUModule(nn.Module):
    def forward(self, t: torch.Tensor) -> torch.Tensor:
        return GuidedReLU.apply(t)  # type: ignore[no-any-return]


def test_guided_backprop_matches_float64_reference(x: torch.Tensor) -> None:
    model = deep_head_model()  # its ReLUs are in-place
    m64 = copy.deepcopy(model).double()
    for parent in m64.modules():
        for name, child in parent.named_children():
            if isinstance(child, nn.ReLU):
                setattr(parent, name, GuidedReLUModule())
    x64 = x.double().requires_grad_(True)
    score = m64(x64)[torch.arange(3), torch.tensor(TARGETS)].sum()
    (expected,) = torch.autograd.grad(score, x64)
    got = GuidedBackprop(model)(x, TARGETS)
    scale = float(expected.abs().max())
    assert float((got.double() - expected).abs().max()) <= NORMALISED_ATOL * scale
    assert all(m.inplace for m in model.modules() if isinstance(m, nn.ReLU))
