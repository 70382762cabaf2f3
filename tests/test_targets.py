"""Targets for the CAM methods: values against hand computations, bad input, CAM use."""

from __future__ import annotations

import pytest
import torch
import torchvision
from torch import nn

import hooks_tutorial as ht
from hooks_tutorial import BoxScoreTarget, SegmentationTarget, SimilarityTarget, count_hooks


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


class _CellDetector(nn.Module):
    """A tiny detector: one detection per cell of a 4 x 4 grid over an 8 x 8 image.

    Cell (i, j) detects its own 2 x 2 pixel box, with the label of its highest
    logit (of 2 classes) and the sigmoid of that logit as its score; the output
    is torchvision's: a list with one dict of boxes, labels and scores per image.
    """

    def __init__(self, min_score: float = 0.0) -> None:
        super().__init__()
        self.min_score = min_score  # detections scoring less are dropped, as detectors do
        torch.manual_seed(0)
        self.conv = nn.Conv2d(3, 4, 3, stride=2, padding=1)
        self.relu = nn.ReLU()
        self.head = nn.Conv2d(4, 2, 3, padding=1)
        ys, xs = torch.meshgrid(torch.arange(4.0), torch.arange(4.0), indexing="ij")
        corners = torch.stack([xs, ys], dim=-1).reshape(-1, 2) * 2
        self.cell_boxes = torch.cat([corners, corners + 2], dim=1)  # [16, 4]

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.relu(self.conv(x))).flatten(2)  # [B, 2, 16]

    def forward(self, x: torch.Tensor) -> list[dict[str, torch.Tensor]]:
        best, labels = self.logits(x).max(dim=1)  # [B, 16]
        scores = best.sigmoid()
        kept = [scores[b] >= self.min_score for b in range(x.shape[0])]
        return [
            {"boxes": self.cell_boxes[k], "labels": labels[b, k], "scores": scores[b, k]}
            for b, k in enumerate(kept)
        ]


def _detections() -> list[dict[str, torch.Tensor]]:
    """Two images' detections, by hand."""
    return [
        {
            "boxes": torch.tensor(
                [[10.0, 10.0, 30.0, 30.0], [12.0, 10.0, 30.0, 30.0], [40.0, 5.0, 60.0, 25.0]]
            ),
            "labels": torch.tensor([1, 2, 3]),
            "scores": torch.tensor([0.5, 0.9, 0.7]),
        },
        {
            "boxes": torch.tensor([[11.0, 10.0, 30.0, 30.0], [10.0, 10.0, 20.0, 30.0]]),
            "labels": torch.tensor([1, 1]),
            "scores": torch.tensor([0.8, 0.4]),
        },
    ]


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


# from "aux", image 0 predicts no pixel of class 2: the target selects nothing, its map is
# zero (the library warns), and both ways of naming the entry must agree on that too
@pytest.mark.filterwarnings("ignore::hooks_tutorial.ZeroMapWarning")
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


def test_box_score_target_sums_the_best_matching_detections() -> None:
    detections = _detections()
    # image 0: detection 0 (label 1, IoU 1) matches; detection 1 overlaps as much but has
    # label 2. image 1: detection 0 (IoU 380 / 400 = 0.95) beats detection 1 (IoU 0.5).
    target = BoxScoreTarget(1, [10, 10, 30, 30])
    torch.testing.assert_close(target(detections), torch.tensor([0.5, 0.8]))
    # two boxes: their scores add up
    both = BoxScoreTarget([1, 3], [[10, 10, 30, 30], [40, 5, 60, 25]])
    torch.testing.assert_close(both(detections[:1]), torch.tensor([1.2]))
    # the best IoU wins, not the best score: image 1's detection 1 is the box itself
    torch.testing.assert_close(
        BoxScoreTarget(1, [10, 10, 20, 30])(detections[1:]), torch.tensor([0.4])
    )


def test_box_score_target_matches_from_the_threshold_on() -> None:
    output = [
        {
            "boxes": torch.tensor([[0.0, 0.0, 10.0, 10.0]]),
            "labels": torch.tensor([0]),
            "scores": torch.tensor([0.7]),
        }
    ]
    box = [0, 0, 10, 20]  # IoU 100 / 200 = 0.5 with the detection
    assert BoxScoreTarget(0, box, iou_threshold=0.5)(output).item() == pytest.approx(0.7)
    with pytest.raises(ValueError, match=r"the best IoU with a detection of label 0 is 0\.50"):
        BoxScoreTarget(0, box, iou_threshold=0.51)(output)


def test_box_score_target_with_boxes_per_image() -> None:
    detections = _detections()
    # image 0: its detection 2 (label 3); image 1: its detection 1 (label 1)
    boxes = torch.tensor([[[40.0, 5.0, 60.0, 25.0]], [[10.0, 10.0, 20.0, 30.0]]])
    target = BoxScoreTarget(torch.tensor([[3], [1]]), boxes)
    torch.testing.assert_close(target(detections), torch.tensor([0.7, 0.4]))
    # the same as one target per image
    for i in range(2):
        alone = BoxScoreTarget(int(target.labels[i, 0]), boxes[i])(detections[i : i + 1])
        torch.testing.assert_close(alone, target(detections)[i : i + 1])
    with pytest.raises(ValueError, match=r"boxes for 2 images, but the output holds 1"):
        target(detections[:1])


def test_box_score_target_differentiates_the_scores_only() -> None:
    boxes = torch.tensor([[0.0, 0.0, 4.0, 4.0], [2.0, 2.0, 6.0, 6.0]], requires_grad=True)
    scores = torch.tensor([0.3, 0.6], requires_grad=True)
    output = [{"boxes": boxes, "labels": torch.tensor([0, 0]), "scores": scores}]
    BoxScoreTarget(0, [2, 2, 6, 6])(output).sum().backward()
    assert scores.grad is not None
    assert scores.grad.tolist() == [0.0, 1.0]
    assert boxes.grad is None  # the matching is a choice, not differentiated


def test_an_unmatched_box_raises_unless_missing_is_zero() -> None:
    detections = _detections()
    wrong_label = BoxScoreTarget(2, [40, 5, 60, 25])
    with pytest.raises(
        ValueError,
        match=r"box 0 \[40.0, 5.0, 60.0, 25.0\] \(label 2\) matches no detection of image 0: "
        r"the best IoU with a detection of label 2 is 0.00, below iou_threshold=0.5\. Its "
        r"score would be 0, and a zero score gives an all-zero map\. .* missing='zero'",
    ):
        wrong_label(detections)
    with pytest.raises(ValueError, match="image 1: there is no detection of label 3"):
        BoxScoreTarget(3, [40, 5, 60, 25])(detections)  # image 0 matches, image 1 does not
    # one box found and one not: no silent half-explanation
    with pytest.raises(ValueError, match="box 1 "):
        BoxScoreTarget([1, 1], [[10, 10, 30, 30], [40, 40, 50, 50]])(detections)
    empty = [
        {
            "boxes": torch.zeros(0, 4),
            "labels": torch.zeros(0, dtype=torch.long),
            "scores": torch.zeros(0, requires_grad=True),
        }
    ]
    with pytest.raises(ValueError, match="no detection of label 0"):
        BoxScoreTarget(0, [0, 0, 4, 4])(empty)
    zero = BoxScoreTarget(2, [40, 5, 60, 25], missing="zero")
    torch.testing.assert_close(zero(detections), torch.tensor([0.0, 0.0]))
    score = BoxScoreTarget(0, [0, 0, 4, 4], missing="zero")(empty)
    assert score.tolist() == [0.0]
    assert score.requires_grad  # still on the graph: its gradient is zero, not an error


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


def test_box_score_target_in_gradcam_matches_a_hand_computation(image: torch.Tensor) -> None:
    model = _CellDetector().eval()
    with torch.no_grad():
        first = model(image[:1])[0]
    # explain the detection of cell 5 of the first image, with its own box and label
    label, box = int(first["labels"][5]), first["boxes"][5]
    raw = ht.GradCAM(model, "relu")(image[:1], target=BoxScoreTarget(label, box), raw=True)
    activation = model.relu(model.conv(image[:1])).detach().requires_grad_(True)
    logits = model.head(activation).flatten(2)
    (grad,) = torch.autograd.grad(logits[0, label, 5].sigmoid(), activation)
    expected = torch.relu((grad.mean(dim=(2, 3), keepdim=True) * activation).sum(dim=1))
    torch.testing.assert_close(raw, expected.detach())
    assert count_hooks(model) == {}


def test_box_score_target_with_scorecam_needs_missing_zero(image: torch.Tensor) -> None:
    with torch.no_grad():
        first = _CellDetector()(image[:1])[0]
    top = int(first["scores"].argmax())
    label, box, score = int(first["labels"][top]), first["boxes"][top], float(first["scores"][top])
    # a detector that keeps only the image's best detection: on some of ScoreCAM's masked
    # copies of the image it scores less, and vanishes
    model = _CellDetector(min_score=score - 1e-4).eval()
    with pytest.raises(ValueError, match="matches no detection of image 0"):
        ht.ScoreCAM(model, "relu")(image[:1], target=BoxScoreTarget(label, box))
    assert count_hooks(model) == {}
    target = BoxScoreTarget(label, box, missing="zero")
    maps = ht.ScoreCAM(model, "relu")(image[:1], target=target)
    assert maps.shape == (1, 8, 8)
    assert float(maps.max()) == 1.0  # some copies kept the detection: a real map
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


def test_box_score_target_bad_input() -> None:
    with pytest.raises(TypeError, match=r"boxes must be numbers \[M, 4\]"):
        BoxScoreTarget(0, "box")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"boxes must be \[M, 4\] .* got shape \(2, 3\)"):
        BoxScoreTarget([0, 1], torch.ones(2, 3))
    with pytest.raises(ValueError, match=r"x1 > x0 and y1 > y0 .* \(x, y, width, height\)"):
        BoxScoreTarget(0, [10, 10, 5, 20])
    with pytest.raises(ValueError, match=r"labels of shape \(2,\) for boxes of shape \(1, 4\)"):
        BoxScoreTarget([0, 1], [0, 0, 4, 4])
    with pytest.raises(ValueError, match=r"labels of shape \(2,\) for boxes of shape \(2, 1, 4\)"):
        BoxScoreTarget([0, 1], torch.tensor([[[0, 0, 4, 4]], [[0, 0, 4, 4]]]))
    with pytest.raises(ValueError, match="non-negative class indices, got -1"):
        BoxScoreTarget(-1, [0, 0, 4, 4])
    with pytest.raises(TypeError, match="each label must be a class index"):
        BoxScoreTarget(True, [0, 0, 4, 4])
    with pytest.raises(TypeError, match="each label must be a class index"):
        BoxScoreTarget(0.5, [0, 0, 4, 4])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"iou_threshold must be a number in \(0, 1\], got 0"):
        BoxScoreTarget(0, [0, 0, 4, 4], iou_threshold=0)
    with pytest.raises(ValueError, match="missing must be 'raise' or 'zero'"):
        BoxScoreTarget(0, [0, 0, 4, 4], missing="skip")  # type: ignore[arg-type]
    target = BoxScoreTarget(0, [0, 0, 4, 4])
    with pytest.raises(TypeError, match=r"'scores' \[N\]; got a Tensor; for a classifier"):
        target(torch.zeros(2, 5))
    with pytest.raises(TypeError, match=r"image 0 has keys \['boxes', 'scores'\]"):
        target([{"boxes": torch.zeros(0, 4), "scores": torch.zeros(0)}])
    with pytest.raises(TypeError, match="image 1 has a Tensor"):
        target([_detections()[0], torch.zeros(3)])
    with pytest.raises(ValueError, match=r"boxes \(2, 4\), labels \(3,\), scores \(2,\)"):
        target([{"boxes": torch.zeros(2, 4), "labels": torch.zeros(3), "scores": torch.zeros(2)}])


class _OneDictDetector(_CellDetector):
    """Returns the first image's dict, not a list of them."""

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:  # type: ignore[override]
        return super().forward(x)[0]


def test_a_box_score_error_in_gradcam_leaves_no_hook(image: torch.Tensor) -> None:
    model = _OneDictDetector()
    with pytest.raises(TypeError, match=r"needs a torchvision-style detector output.* got a dict"):
        ht.GradCAM(model, "relu")(image, target=BoxScoreTarget(0, [0, 0, 2, 2]))
    assert count_hooks(model) == {}
    tiny = ht.TinyConvNet()
    with pytest.raises(TypeError, match="for a classifier output"):
        ht.GradCAM(tiny, "conv")(torch.ones(1, 1, 4, 4), target=BoxScoreTarget(0, [0, 0, 2, 2]))
    assert count_hooks(tiny) == {}


def test_reprs() -> None:
    assert repr(SegmentationTarget(1)) == "SegmentationTarget(1, predicted pixels)"
    assert repr(SegmentationTarget(1, mask=torch.ones(4, 4))) == (
        "SegmentationTarget(1, mask (4, 4))"
    )
    assert repr(SimilarityTarget(torch.ones(3))) == "SimilarityTarget(reference (3,))"
    assert repr(BoxScoreTarget(2, [0, 0, 4, 4])) == (
        "BoxScoreTarget(labels=[2], boxes=[[0.0, 0.0, 4.0, 4.0]], iou_threshold=0.5, "
        "missing='raise')"
    )


def test_public_names() -> None:
    assert ht.SegmentationTarget is SegmentationTarget
    assert ht.targets.SimilarityTarget is SimilarityTarget
    assert ht.BoxScoreTarget is BoxScoreTarget
