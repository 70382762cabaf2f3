"""Both Score-CAMs against float64 references written from their definitions, and the peers.

``weights="probability"`` is the authors' Score-CAM (class softmax of each
masked input); ``weights="channel_softmax"`` is pytorch-grad-cam's and
torchcam's (softmax over channels of the masked inputs' class logits). The
reference below loops over images and channels one at a time in float64 and
shares no code with the library. Its ``masks`` option reproduces each
library's masks, so the peers are checked against the same reference.
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from typing import Literal

import pytest
import pytorch_grad_cam
import torch
import torch.nn.functional as F
import torchcam.methods
from pytorch_grad_cam.utils.model_targets import ClassifierOutputTarget
from torch import nn

from hooks_tutorial import count_hooks
from hooks_tutorial.cam import ScoreCAM

Masks = Literal["ours", "pytorch-grad-cam", "torchcam"]
TARGETS = [0, 3, 5]
SIZE = (16, 16)


def make_model(dead: int = 0) -> nn.Sequential:
    """body (ends in ReLU; the last ``dead`` channels are always 0) -> head with a conv."""
    torch.manual_seed(1)
    model = nn.Sequential(
        OrderedDict(
            body=nn.Sequential(
                nn.Conv2d(3, 8, 3, padding=1),
                nn.ReLU(inplace=True),
                nn.Conv2d(8, 16, 3, stride=2, padding=1),
                nn.ReLU(),
            ),
            head=nn.Sequential(
                nn.Conv2d(16, 8, 3, padding=1),
                nn.ReLU(inplace=True),
                nn.Flatten(),
                nn.Linear(8 * 8 * 8, 6),
            ),
        )
    ).eval()
    if dead:
        with torch.no_grad():
            conv = model.body[2]
            conv.weight[-dead:] = 0.0
            conv.bias[-dead:] = -1.0  # constant 0 after the ReLU: an empty mask
    return model


def mask_of(a: torch.Tensor, masks: Masks) -> torch.Tensor:
    """The mask of one channel ``a`` ``[1, 1, h, w]``, as each library makes it, in float64."""
    if masks == "ours":  # upsample, then min-max; a constant map gives zeros
        up = F.interpolate(a, size=SIZE, mode="bilinear", align_corners=False)
        span = up.max() - up.min()
        return (up - up.min()) / span if float(span) > 0 else torch.zeros_like(up)
    if masks == "pytorch-grad-cam":  # align_corners=True upsampling, then min-max + 1e-8
        up = F.interpolate(a, size=SIZE, mode="bilinear", align_corners=True)
        return (up - up.min()) / (up.max() - up.min() + 1e-8)
    # torchcam: min-max + 1e-8 at the feature resolution, then upsample
    normed = (a - a.min()) / (a.max() - a.min() + 1e-8)
    return F.interpolate(normed, size=SIZE, mode="bilinear", align_corners=False)


def reference_weights(
    model: nn.Module, x: torch.Tensor, weights: str, masks: Masks = "ours", top: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Channel weights ``[B, K]`` and activations ``[B, K, h, w]`` in float64, one pass each."""
    m64 = copy.deepcopy(model).double()
    x64 = x.double()
    with torch.no_grad():
        acts = m64.body(x64)
        w = torch.zeros(acts.shape[:2], dtype=torch.float64)
        for i, c in enumerate(TARGETS):
            channels = range(acts.shape[1])
            if top:
                channels = acts[i].mean(dim=(1, 2)).topk(top).indices.tolist()
            scores = {}
            for k in channels:
                a = acts[i : i + 1, k : k + 1]
                if weights == "probability" and float(a.max() - a.min()) == 0.0:
                    scores[k] = 0.0  # the authors skip constant channels
                    continue
                out = m64(x64[i : i + 1] * mask_of(a, masks))
                if weights == "probability":
                    scores[k] = float(out.softmax(1)[0, c])
                else:
                    scores[k] = float(out[0, c])
            if weights == "probability":
                for k, s in scores.items():
                    w[i, k] = s
            else:
                logits = torch.tensor(list(scores.values()), dtype=torch.float64)
                for k, p in zip(scores, logits.softmax(0), strict=True):
                    w[i, k] = p
    return w, acts


def reference_map(
    model: nn.Module, x: torch.Tensor, weights: str, masks: Masks = "ours", top: int = 0
) -> torch.Tensor:
    """The raw map ``ReLU(sum_k w_k A^k)`` ``[B, h, w]`` in float64."""
    w, acts = reference_weights(model, x, weights, masks, top)
    return torch.relu(torch.einsum("bk,bkhw->bhw", w, acts))


def normalised(raw: torch.Tensor) -> torch.Tensor:
    up = F.interpolate(raw[:, None], size=SIZE, mode="bilinear", align_corners=False)[:, 0]
    lo = up.amin(dim=(1, 2), keepdim=True)
    return (up - lo) / (up.amax(dim=(1, 2), keepdim=True) - lo)


@pytest.fixture
def x() -> torch.Tensor:
    return torch.randn(3, 3, *SIZE, generator=torch.Generator().manual_seed(2))


# Float32 against float64: the weights are softmax outputs of float32 forward
# passes (relative error ~1e-7) and the map is a 16-term sum, so 1e-6 of the
# map's range holds with a margin.
TOL = 1e-6


@pytest.mark.slow
@pytest.mark.parametrize("weights", ["probability", "channel_softmax"])
@pytest.mark.parametrize("dead", [0, 5])
def test_matches_float64_reference(weights: str, dead: int, x: torch.Tensor) -> None:
    model = make_model(dead)
    expected = reference_map(model, x, weights)
    cam = ScoreCAM(model, "body", batch_size=7, weights=weights)  # type: ignore[arg-type]
    raw = cam(x, TARGETS, raw=True)
    scale = float(expected.abs().max())
    assert float((raw.double() - expected).abs().max()) <= TOL * scale
    maps = cam(x, TARGETS)
    assert float((maps.double() - normalised(expected)).abs().max()) <= TOL


def test_the_two_weightings_differ(x: torch.Tensor) -> None:
    model = make_model()
    with torch.no_grad():
        model.head[3].weight *= 50  # confident logits, as a trained model has
    probability = ScoreCAM(model, "body")(x, TARGETS)
    channel_softmax = ScoreCAM(model, "body", weights="channel_softmax")(x, TARGETS)
    # The same masks and forward passes, yet clearly different maps.
    assert float((probability - channel_softmax).abs().max()) > 0.1


def test_constant_channels_weighted_as_each_definition_says(x: torch.Tensor) -> None:
    model = make_model(dead=5)
    w_prob, acts = reference_weights(model, x, "probability")
    w_soft, _ = reference_weights(model, x, "channel_softmax")
    flat = acts.flatten(2)
    constant = flat.amax(2) == flat.amin(2)
    assert constant[:, -5:].all()
    assert (w_prob[constant] == 0).all()  # authors: skipped
    assert (w_soft[constant] > 0).all()  # peers: in the softmax, with the all-zero input's logit
    # ...and all constant channels of one image share that weight.
    for i in range(3):
        assert torch.allclose(w_soft[i, -5:], w_soft[i, -1].expand(5), rtol=0, atol=0)


@pytest.mark.parametrize("weights", ["probability", "channel_softmax"])
def test_top_k_is_the_formula_on_the_budget(weights: str, x: torch.Tensor) -> None:
    model = make_model()
    expected = reference_map(model, x, weights, top=4)
    raw = ScoreCAM(model, "body", top_k=4, weights=weights)(x, TARGETS, raw=True)  # type: ignore[arg-type]
    assert float((raw.double() - expected).abs().max()) <= TOL * float(expected.abs().max())


def test_callable_target_replaces_the_logit_or_the_probability(x: torch.Tensor) -> None:
    model = make_model()
    soft = ScoreCAM(model, "body", weights="channel_softmax")
    # A callable returning the logit column gives the class-index map exactly.
    torch.testing.assert_close(soft(x, lambda out: out[:, 3]), soft(x, 3), rtol=0, atol=1e-7)
    prob = ScoreCAM(model, "body")
    # With weights="probability", a callable's own value replaces the probability.
    probs = prob(x, lambda out: out.softmax(1)[:, 3])
    torch.testing.assert_close(probs, prob(x, 3), rtol=0, atol=1e-6)
    assert float((prob(x, lambda out: out[:, 3]) - prob(x, 3)).abs().max()) > 1e-3


def test_bad_weights_name() -> None:
    with pytest.raises(ValueError, match=r"weights must be 'probability' .* got 'softmax'"):
        ScoreCAM(make_model(), "body", weights="softmax")  # type: ignore[arg-type]


def test_repr_names_the_weighting() -> None:
    cam = ScoreCAM(make_model(), "body", weights="channel_softmax")
    assert repr(cam) == "ScoreCAM(target_layer='body', weights='channel_softmax')"


# -- the peers, checked against the same reference with their own masks -----------
def test_pytorch_grad_cam_is_the_channel_softmax(x: torch.Tensor) -> None:
    model = make_model()
    expected, acts = reference_weights(model, x, "channel_softmax", masks="pytorch-grad-cam")
    with pytorch_grad_cam.ScoreCAM(model=model, target_layers=[model.body]) as cam:
        cam.batch_size = 64
        targets = [ClassifierOutputTarget(c) for c in TARGETS]
        got = cam.get_cam_weights(x, model.body, targets, acts.float().numpy(), None)
    assert count_hooks(model) == {}
    torch.testing.assert_close(torch.from_numpy(got).double(), expected, rtol=1e-5, atol=1e-7)


def test_torchcam_is_the_channel_softmax(x: torch.Tensor) -> None:
    model = make_model()
    raw = reference_map(model, x, "channel_softmax", masks="torchcam")
    flat = raw.flatten(1)
    lo = flat.min(1).values[:, None, None]
    hi = flat.max(1).values[:, None, None]
    expected = (raw - lo) / (hi - lo + 1e-8)  # torchcam's own normalisation
    with torchcam.methods.ScoreCAM(
        model, "body", batch_size=64, input_shape=(3, *SIZE)
    ) as extractor:
        with torch.no_grad():
            scores = model(x)
        got = extractor(class_idx=TARGETS, scores=scores)[0]
    torch.testing.assert_close(got.double(), expected, rtol=1e-5, atol=1e-6)
