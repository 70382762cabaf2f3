"""Targets for the CAM methods: values against hand computations, bad input, CAM use."""

from __future__ import annotations

import pytest
import torch
import torchvision
from torch import nn

import hooks_tutorial as ht
from hooks_tutorial import SegmentationTarget, SimilarityTarget, count_hooks


def _segmenter() -> nn.Sequential:
    """A tiny fully convolutional net: [B, 3, 8, 8] -> logits [B, 3 classes, 8, 8]."""
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(inplace=True), nn.Conv2d(4, 3, 1)
    ).eval()


def _embedder() -> nn.Sequential:
    """A tiny embedding net: [B, 3, 8, 8] -> [B, 5]."""
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 4, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(4, 5),
    ).eval()


# -- values ------------------------------------------------------------------
def test_segmentation_target_sums_the_predicted_pixels() -> None:
    torch.manual_seed(0)
    logits = torch.randn(2, 3, 4, 5)
    got = SegmentationTarget(1)(logits)
    # by hand: loop over the pixels, add class 1's logit where class 1 wins
    expected = torch.zeros(2)
    for b in range(2):
        for i in range(4):
            for j in range(5):
                if int(logits[b, :, i, j].argmax()) == 1:
                    expected[b] += logits[b, 1, i, j]
    torch.testing.assert_close(got, expected)


def test_segmentation_target_with_a_mask() -> None:
    torch.manual_seed(0)
    logits = torch.randn(2, 3, 4, 5)
    shared = torch.zeros(4, 5, dtype=torch.bool)
    shared[1:3, 2:4] = True
    expected = logits[:, 0, 1:3, 2:4].sum(dim=(1, 2))
    torch.testing.assert_close(SegmentationTarget(0, mask=shared)(logits), expected)
    per_image = torch.stack([shared, ~shared])
    got = SegmentationTarget(0, mask=per_image)(logits)
    torch.testing.assert_close(got[0], expected[0])
    torch.testing.assert_close(got[1], logits[1, 0].sum() - expected[1])


def test_segmentation_target_empty_region_scores_zero() -> None:
    logits = torch.zeros(1, 2, 3, 3)
    logits[:, 0] = 1.0  # class 0 wins everywhere
    assert SegmentationTarget(1)(logits).item() == 0.0


def test_similarity_target_is_the_cosine() -> None:
    reference = torch.tensor([3.0, 4.0])
    embeddings = torch.tensor([[3.0, 4.0], [4.0, -3.0], [-6.0, -8.0], [1.0, 0.0]])
    # by hand: (e . r) / (|e| |r|) with |r| = 5
    expected = torch.tensor([1.0, 0.0, -1.0, 3.0 / 5.0])
    torch.testing.assert_close(SimilarityTarget(reference)(embeddings), expected)
    per_image = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    torch.testing.assert_close(
        SimilarityTarget(per_image)(embeddings), torch.tensor([0.6, 0.8, -0.8, 0.0])
    )


def test_similarity_target_detaches_the_reference() -> None:
    reference = torch.tensor([1.0, 2.0], requires_grad=True)
    target = SimilarityTarget(reference)
    embeddings = torch.tensor([[1.0, 1.0]], requires_grad=True)
    target(embeddings).sum().backward()
    assert reference.grad is None
    assert embeddings.grad is not None


class _DictSegmenter(nn.Module):
    """Returns ``{"out": logits, "aux": other logits}``, as torchvision's segmentation models."""

    def __init__(self) -> None:
        super().__init__()
        self.body = _segmenter()
        self.aux = nn.Conv2d(3, 3, 1)

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        logits = self.body(x)
        return {"out": logits, "aux": self.aux(logits)}


def test_segmentation_target_reads_the_out_entry_of_a_dict() -> None:
    torch.manual_seed(0)
    logits, aux = torch.randn(2, 3, 4, 5), torch.randn(2, 3, 4, 5)
    output = {"out": logits, "aux": aux}
    torch.testing.assert_close(SegmentationTarget(1)(output), SegmentationTarget(1)(logits))
    torch.testing.assert_close(SegmentationTarget(1, key="aux")(output), SegmentationTarget(1)(aux))
    assert (
        repr(SegmentationTarget(1, key="aux"))
        == "SegmentationTarget(1, predicted pixels, key='aux')"
    )


def test_segmentation_target_names_the_keys_and_the_fix() -> None:
    output = {"logits": torch.zeros(1, 3, 4, 4), "aux": torch.zeros(1, 3, 4, 4)}
    with pytest.raises(
        ValueError,
        match=r"without the key 'out' \(its keys: 'logits', 'aux'\); name the entry .* "
        r"SegmentationTarget\(2, key='logits'\), or pass a callable target",
    ):
        SegmentationTarget(2)(output)
    with pytest.raises(TypeError, match=r"the model output\['aux'\] must be a torch\.Tensor"):
        SegmentationTarget(2, key="aux")({"aux": [1.0]})


def test_segmentation_target_on_a_dict_output_in_gradcam(image: torch.Tensor) -> None:
    model = _DictSegmenter().eval()
    cam = ht.GradCAM(model, "body.1")
    for key in ("out", "aux"):
        by_key = cam(image, target=SegmentationTarget(2, key=key), raw=True)
        by_hand = cam(image, target=lambda out, key=key: SegmentationTarget(2)(out[key]), raw=True)
        torch.testing.assert_close(by_key, by_hand)
    assert count_hooks(model) == {}


def test_segmentation_target_on_torchvision_fcn(one_thread: None) -> None:
    torch.manual_seed(0)
    model = torchvision.models.segmentation.fcn_resnet50(
        weights=None, weights_backbone=None, num_classes=3, aux_loss=True
    ).eval()
    x = torch.randn(1, 3, 64, 64, generator=torch.Generator().manual_seed(2))
    cam = ht.GradCAM(model, "backbone.layer4")
    got = cam(x, target=SegmentationTarget(1), raw=True)
    expected = cam(x, target=lambda out: SegmentationTarget(1)(out["out"]), raw=True)
    torch.testing.assert_close(got, expected)
    assert count_hooks(model) == {}


# -- with the CAM methods ----------------------------------------------------
def test_segmentation_target_in_gradcam_matches_a_hand_computation(image: torch.Tensor) -> None:
    model = _segmenter()
    raw = ht.GradCAM(model, "1")(image, target=SegmentationTarget(2), raw=True)
    # by hand: activation A of the ReLU, gradient of the region's summed logits
    activation = model[1](model[0](image)).detach().requires_grad_(True)
    logits = model[2](activation)
    region = (logits.argmax(dim=1) == 2).float()
    (grad,) = torch.autograd.grad((logits[:, 2] * region).sum(), activation)
    expected = torch.relu((grad.mean(dim=(2, 3), keepdim=True) * activation).sum(dim=1))
    torch.testing.assert_close(raw, expected.detach())
    assert count_hooks(model) == {}


def test_similarity_target_in_gradcam_matches_a_hand_computation(image: torch.Tensor) -> None:
    model = _embedder()
    with torch.no_grad():
        reference = model(image[:1])[0]
    raw = ht.GradCAM(model, "1")(image, target=SimilarityTarget(reference), raw=True)
    activation = model[1](model[0](image)).detach().requires_grad_(True)
    embeddings = model[4](model[3](model[2](activation)))
    score = torch.nn.functional.cosine_similarity(embeddings, reference[None], dim=1)
    (grad,) = torch.autograd.grad(score.sum(), activation)
    expected = torch.relu((grad.mean(dim=(2, 3), keepdim=True) * activation).sum(dim=1))
    torch.testing.assert_close(raw, expected.detach())
    assert count_hooks(model) == {}


def test_a_target_error_leaves_no_hook(tiny_cnn: nn.Module, image: torch.Tensor) -> None:
    with pytest.raises(ValueError, match="needs a segmentation output"):
        ht.GradCAM(tiny_cnn, "2")(image, target=SegmentationTarget(0))
    assert count_hooks(tiny_cnn) == {}


# -- bad input -----------------------------------------------------------------
def test_category_must_be_a_non_negative_int() -> None:
    with pytest.raises(TypeError, match=r"must be a class index \(a non-negative int\), got 1.5"):
        SegmentationTarget(1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="got True"):
        SegmentationTarget(True)
    with pytest.raises(ValueError, match="non-negative class index, got -1"):
        SegmentationTarget(-1)


def test_segmentation_target_bad_input() -> None:
    with pytest.raises(ValueError, match=r"mask must be \[H, W\] or \[B, H, W\], got shape \(4,\)"):
        SegmentationTarget(0, mask=torch.ones(4))
    with pytest.raises(TypeError, match=r"mask must be a torch\.Tensor"):
        SegmentationTarget(0, mask=[[1, 0]])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"got shape \(2, 3\); for a classifier output"):
        SegmentationTarget(0)(torch.zeros(2, 3))
    with pytest.raises(ValueError, match="with 3 classes; pick a class index below 3"):
        SegmentationTarget(5)(torch.zeros(1, 3, 4, 4))
    with pytest.raises(ValueError, match=r"does not fit the output .* pass \[H, W\] = \[4, 4\]"):
        SegmentationTarget(0, mask=torch.ones(5, 5))(torch.zeros(1, 3, 4, 4))
    with pytest.raises(ValueError, match=r"\[B, H, W\] = \[2, 4, 4\]"):
        SegmentationTarget(0, mask=torch.ones(3, 4, 4))(torch.zeros(2, 3, 4, 4))


def test_similarity_target_bad_input() -> None:
    with pytest.raises(TypeError, match=r"reference must be a torch\.Tensor"):
        SimilarityTarget([1.0, 0.0])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"got shape \(1, 2, 3\)"):
        SimilarityTarget(torch.ones(1, 2, 3))
    with pytest.raises(ValueError, match="zero norm"):
        SimilarityTarget(torch.zeros(3))
    target = SimilarityTarget(torch.ones(3))
    with pytest.raises(ValueError, match=r"needs embeddings \[B, D\], got shape \(2, 3, 1, 1\)"):
        target(torch.ones(2, 3, 1, 1))
    with pytest.raises(ValueError, match=r"does not fit embeddings of shape \(2, 4\)"):
        target(torch.ones(2, 4))
    with pytest.raises(ValueError, match=r"pass \[D\] = \[3\] or \[B, D\] = \[3, 3\]"):
        SimilarityTarget(torch.ones(2, 3))(torch.ones(3, 3))


def test_reprs() -> None:
    assert repr(SegmentationTarget(1)) == "SegmentationTarget(1, predicted pixels)"
    assert repr(SegmentationTarget(1, mask=torch.ones(4, 4))) == (
        "SegmentationTarget(1, mask (4, 4))"
    )
    assert repr(SimilarityTarget(torch.ones(3))) == "SimilarityTarget(reference (3,))"


def test_public_names() -> None:
    assert ht.SegmentationTarget is SegmentationTarget
    assert ht.targets.SimilarityTarget is SimilarityTarget
