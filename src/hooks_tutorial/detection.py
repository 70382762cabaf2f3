r"""A small object detector for the generated shapes, and the weights it learned.

Page 27b of the tutorial explains a detector's detections with Grad-CAM. It
needs a detector whose answers can be checked (the shapes' boxes come from
their masks, see :func:`~hooks_tutorial.make_shapes`) and that speaks the
interface of torchvision's detectors, so that what the page shows carries
over to them. This module holds one, in plain PyTorch:

* **The model** (:class:`TinyDetector`): the three conv blocks of
  :class:`~hooks_tutorial.SimpleCNN` make an 8 x 8 grid of feature vectors
  (``relu3``, the layer to explain), and a small head predicts, at every
  cell, one score per class (is there an object of that class centred near
  this cell?) and the object's box, as its distances from the cell's centre
  to the four sides. In eval mode ``model(images)`` returns what
  torchvision's detectors return: a list with one dict per image, of
  ``boxes`` ``[N, 4]`` (``x0, y0, x1, y1`` in pixels), ``labels`` ``[N]``
  and ``scores`` ``[N]``, after dropping low scores and removing duplicates
  with non-maximum suppression. This is the design of FCOS (Tian et al.,
  2019) and CenterNet (Zhou et al., 2019), on one small grid.
* **The weights** ship with the package (:func:`pretrained_detector`),
  trained by :func:`train_detector` with :data:`DEFAULT_CONFIG` on images
  with one and with two shapes; nothing is downloaded. The three conv
  blocks are those of the multi-label classifier
  (``pretrained("simple_cnn-multilabel")``), frozen; only the head learned
  to detect.
"""

from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import torch
from torch import Tensor, nn

from ._checks import positive_int
from .data import ShapesData, make_shapes
from .zoo import pretrained

__all__ = [
    "DEFAULT_CONFIG",
    "DetectorConfig",
    "TinyDetector",
    "pretrained_detector",
    "train_detector",
]


class TinyDetector(nn.Module):
    r"""A one-grid object detector: per cell, class scores and a box.

    ======  ================================================  ========================
    part    layers                                            output for a 64x64 input
    ======  ================================================  ========================
    1       ``conv1`` (5x5, stride 2), ``bn1``, ``relu1``,    ``[B, 16, 16, 16]``
            ``pool1``
    2       ``conv2``, ``bn2``, ``relu2``, ``pool2``          ``[B, 32, 8, 8]``
    3       ``conv3``, ``bn3``, ``relu3``                     ``[B, 64, 8, 8]``
    head    ``conv4`` (3x3), ``relu4``, then ``classes``      ``[B, K, 8, 8]`` and
            and ``distances`` (1x1)                           ``[B, 4, 8, 8]``
    ======  ================================================  ========================

    Cell :math:`(i, j)` of the grid covers the pixels of a ``stride`` x
    ``stride`` square (8 x 8 for 64 x 64 images) and has its centre at
    :math:`c = ((j + \tfrac12)\,s, (i + \tfrac12)\,s)`. Its score for class
    :math:`k` is :math:`\sigma(z_{kij})`, the sigmoid of ``classes``'s
    output, and its box reaches :math:`s\,e^{d}` pixels from :math:`c` to the
    left, top, right and bottom, where :math:`d` is ``distances``'s output.
    :meth:`forward` turns these into detections: every cell whose best class
    scores at least ``score_threshold`` gives one detection, that class with
    the cell's box; then non-maximum suppression
    (``torchvision.ops.nms``) keeps, of two boxes that overlap by more
    than ``nms_threshold``, the better one, whatever their classes (the
    shapes never overlap, so two overlapping boxes are one shape seen
    twice), and at most ``max_detections`` per image, the best first. The scores are not detached: a target
    built on them, such as :class:`~hooks_tutorial.BoxScoreTarget`, can be
    differentiated. The ReLUs are not in place, so hooks on any layer are
    safe.

    Parameters
    ----------
    num_classes : int, default 5
        Number of object classes (no background class: each class score is a
        yes/no question).
    score_threshold : float, default 0.3
        Detections scoring less are dropped.
    nms_threshold : float, default 0.5
        IoU above which non-maximum suppression drops the lower-scoring of
        two boxes.
    max_detections : int, default 10
        At most this many detections per image, the best first.
    seed : int or None, default None
        If given, initialise the weights from this seed without touching the
        global random state.

    Raises
    ------
    ValueError
        If a size is not a positive int or a threshold is not in ``[0, 1]``.

    Examples
    --------
    >>> model = pretrained_detector()
    >>> detections = model(torch.rand(2, 3, 64, 64))
    >>> len(detections), sorted(detections[0])
    (2, ['boxes', 'labels', 'scores'])
    >>> [t.shape for t in model.cells(torch.rand(2, 3, 64, 64))]
    [torch.Size([2, 5, 8, 8]), torch.Size([2, 4, 8, 8])]
    """

    def __init__(
        self,
        num_classes: int = 5,
        *,
        score_threshold: float = 0.3,
        nms_threshold: float = 0.5,
        max_detections: int = 10,
        seed: int | None = None,
    ) -> None:
        super().__init__()
        positive_int(num_classes, "num_classes")
        positive_int(max_detections, "max_detections")
        for name, value in (("score_threshold", score_threshold), ("nms_threshold", nms_threshold)):
            if not 0.0 <= value <= 1.0:
                msg = f"{name} must be a number in [0, 1], got {value!r}"
                raise ValueError(msg)
        self.num_classes = num_classes
        self.score_threshold = score_threshold
        self.nms_threshold = nms_threshold
        self.max_detections = max_detections
        with torch.random.fork_rng(devices=[], enabled=seed is not None):
            if seed is not None:
                torch.manual_seed(seed)
            self.conv1 = nn.Conv2d(3, 16, kernel_size=5, stride=2, padding=2, bias=False)
            self.bn1 = nn.BatchNorm2d(16)
            self.relu1 = nn.ReLU()
            self.pool1 = nn.MaxPool2d(2)
            self.conv2 = nn.Conv2d(16, 32, kernel_size=3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(32)
            self.relu2 = nn.ReLU()
            self.pool2 = nn.MaxPool2d(2)
            self.conv3 = nn.Conv2d(32, 64, kernel_size=3, padding=1, bias=False)
            self.bn3 = nn.BatchNorm2d(64)
            self.relu3 = nn.ReLU()
            self.conv4 = nn.Conv2d(64, 64, kernel_size=3, padding=1)
            self.relu4 = nn.ReLU()
            self.classes = nn.Conv2d(64, num_classes, kernel_size=1)
            self.distances = nn.Conv2d(64, 4, kernel_size=1)
            # start with every score near 0.01, as RetinaNet and FCOS do: most cells are empty
            nn.init.constant_(cast("Tensor", self.classes.bias), -math.log(99.0))

    def features(self, x: Tensor) -> Tensor:
        """Run the three conv blocks: the feature map ``relu3`` ``[B, 64, H / 8, W / 8]``."""
        x = self.pool1(self.relu1(self.bn1(self.conv1(x))))
        x = self.pool2(self.relu2(self.bn2(self.conv2(x))))
        features: Tensor = self.relu3(self.bn3(self.conv3(x)))
        return features

    def head(self, features: Tensor) -> tuple[Tensor, Tensor]:
        """Per cell, class logits ``[B, K, h, w]`` and log-distances ``[B, 4, h, w]``, from ``relu3``."""
        x = self.relu4(self.conv4(features))
        logits: Tensor = self.classes(x)
        distances: Tensor = self.distances(x)
        return logits, distances

    def cells(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Run the network: per cell, class logits ``[B, K, h, w]`` and log-distances ``[B, 4, h, w]``.

        Parameters
        ----------
        x : Tensor
            Images ``[B, 3, H, W]`` (``H`` and ``W`` multiples of 8).

        Returns
        -------
        (Tensor, Tensor)
            The class logits :math:`z` and the log-distances :math:`d` (left,
            top, right, bottom, in units of the stride) of every cell; what
            the training loss compares with the targets.
        """
        return self.head(self.features(x))

    def forward(self, x: Tensor) -> list[dict[str, Tensor]]:
        """Detect objects: one dict of ``boxes`` ``[N, 4]``, ``labels`` ``[N]``, ``scores`` ``[N]`` per image."""
        from torchvision.ops import nms  # noqa: PLC0415 - torchvision imports slowly

        logits, distances = self.cells(x)
        stride = x.shape[-1] / logits.shape[-1]
        boxes = _cell_boxes(distances.detach(), stride).clamp(0, x.shape[-1])  # [B, h * w, 4]
        scores, labels = logits.sigmoid().flatten(2).max(dim=1)  # each cell's best class
        detections = []
        for b in range(x.shape[0]):
            (cell,) = (scores[b].detach() >= self.score_threshold).nonzero(as_tuple=True)
            keep = nms(boxes[b, cell], scores[b, cell].detach(), self.nms_threshold)
            keep = cell[keep[: self.max_detections]]
            detections.append(
                {"boxes": boxes[b, keep], "labels": labels[b, keep], "scores": scores[b, keep]}
            )
        return detections


def _cell_centres(height: int, width: int, stride: float) -> Tensor:
    """The centres ``(x, y)`` of a grid's cells, row by row: ``[height * width, 2]``."""
    ys, xs = torch.meshgrid(torch.arange(height), torch.arange(width), indexing="ij")
    return (torch.stack([xs, ys], dim=-1).reshape(-1, 2) + 0.5) * stride


def _cell_boxes(distances: Tensor, stride: float) -> Tensor:
    """The box of every cell, ``(x0, y0, x1, y1)``, from log-distances ``[B, 4, h, w]``: ``[B, h * w, 4]``."""
    centres = _cell_centres(distances.shape[-2], distances.shape[-1], stride).to(distances)
    reach = distances.flatten(2).transpose(1, 2).exp() * stride  # [B, h * w, 4]: l, t, r, b
    return torch.cat([centres - reach[..., :2], centres + reach[..., 2:]], dim=-1)


def _cell_targets(data: ShapesData, grid: int) -> tuple[Tensor, Tensor, Tensor]:
    """What each cell should predict for ``data``'s objects.

    An object is assigned to the cells near its box's centre: the cell that
    holds the centre and its neighbours whose centres are less than one
    stride from it in both directions (the 2 x 2 block of cells around it), and only those inside
    the box. Those cells should say "yes" for its class and predict its box.

    Returns
    -------
    (Tensor, Tensor, Tensor)
        Class targets ``[N, K, grid, grid]`` (1.0 or 0.0), log-distance
        targets ``[N, 4, grid, grid]`` and which cells have a box to learn
        ``[N, grid, grid]`` (bool).
    """
    n, size = len(data), data.images.shape[-1]
    stride = size / grid
    centres = _cell_centres(grid, grid, stride)  # [grid * grid, 2]
    classes = torch.zeros(n, data.num_classes, grid * grid)
    distances = torch.zeros(n, 4, grid * grid)
    has_box = torch.zeros(n, grid * grid, dtype=torch.bool)
    for k in range(data.object_boxes.shape[1]):
        box = data.object_boxes[:, k].float()  # [N, 4]
        middle = (box[:, :2] + box[:, 2:]) / 2
        near = ((centres[None] - middle[:, None]).abs() < stride).all(dim=-1)  # [N, cells]
        inside = (centres[None] > box[:, None, :2]).all(-1) & (
            centres[None] < box[:, None, 2:]
        ).all(-1)
        chosen = near & inside
        rows, cells = chosen.nonzero(as_tuple=True)
        classes[rows, data.object_labels[rows, k], cells] = 1.0
        reach = torch.cat(
            [centres[cells] - box[rows, :2], box[rows, 2:] - centres[cells]], dim=-1
        )  # [n_chosen, 4]: left, top, right, bottom
        distances[rows, :, cells] = (reach / stride).log()
        has_box[rows, cells] = True
    shape = (n, -1, grid, grid)
    return classes.reshape(shape), distances.reshape(shape), has_box.reshape(n, grid, grid)


@dataclass(frozen=True)
class DetectorConfig:
    """The recipe of a :class:`TinyDetector` trained on the shapes (:func:`train_detector`).

    Attributes
    ----------
    backbone : str
        The :func:`~hooks_tutorial.pretrained` classifier whose three conv
        blocks become the detector's, frozen: only the head is trained.
    n_single, n_two : int
        Training images with one shape and with two (``variant="two"``).
    n_test : int
        Test images of each kind for the reported recall.
    epochs, batch_size : int
        Passes over the training images, and images per AdamW step.
    lr : float
        Peak learning rate of a one-cycle schedule.
    seed : int
        Seed of the data, the weights and the shuffling.
    """

    backbone: str = "simple_cnn-multilabel"
    n_single: int = 2000
    n_two: int = 2000
    n_test: int = 500
    epochs: int = 30
    batch_size: int = 64
    lr: float = 5e-3
    seed: int = 0


#: The recipe of the shipped weights (``pretrained_detector()``).
DEFAULT_CONFIG = DetectorConfig()
_NAME = "tiny_detector-shapes"
_SHIPPED = Path(__file__).parent / "weights" / f"{_NAME}.pt"
_SHIPPED_SHA256 = "e64f4346e0d6718f1e8e5416f316013d7b45c50d64b61f55ec90d716264372f0"
_HEAD = ("conv4", "classes", "distances")  # the trained layers; the rest is the backbone


def _loss(model: TinyDetector, features: Tensor, targets: tuple[Tensor, Tensor, Tensor]) -> Tensor:
    """Focal loss on the class scores plus L1 on the boxes' log-distances."""
    from torchvision.ops import sigmoid_focal_loss  # noqa: PLC0415 - torchvision imports slowly

    classes, distances, has_box = targets
    logits, predicted = model.head(features)
    positives = has_box.sum().clamp(min=1)
    class_loss = sigmoid_focal_loss(logits, classes, reduction="sum") / positives
    box_loss = (predicted - distances).abs().sum(dim=1)[has_box].sum() / positives
    loss: Tensor = class_loss + box_loss
    return loss


def _recall(model: nn.Module, data: ShapesData, iou_threshold: float = 0.5) -> float:
    """The share of ``data``'s objects that ``model`` finds: a detection of their class at IoU >= threshold."""
    from torchvision.ops import box_iou  # noqa: PLC0415 - torchvision imports slowly

    with torch.no_grad():
        detections = model(data.images)
    found = 0
    for image, truth_boxes, truth_labels in zip(
        detections, data.object_boxes.float(), data.object_labels, strict=True
    ):
        iou = box_iou(truth_boxes, image["boxes"])  # [objects, detections]
        same = truth_labels[:, None] == image["labels"][None, :]
        found += int(((iou >= iou_threshold) & same).any(dim=1).sum())
    return found / data.object_labels.numel()


def train_detector(
    config: DetectorConfig = DEFAULT_CONFIG,
) -> tuple[TinyDetector, dict[str, float]]:
    """Train a :class:`TinyDetector` on images with one and with two shapes, as ``config`` says.

    Returns
    -------
    (TinyDetector, dict)
        The model in eval mode, and ``{"recall_single", "recall_two",
        "train_seconds", "final_loss"}``: the share of test objects found
        (right class, IoU >= 0.5) on images with one shape and with two.
    """
    given: object = config  # checked at run time: a wrong type is a common slip
    if not isinstance(given, DetectorConfig):
        msg = f"config must be a DetectorConfig, got {type(given).__name__}"
        raise TypeError(msg)
    single = make_shapes(config.n_single, seed=config.seed)
    two = make_shapes(config.n_two, variant="two", seed=config.seed)
    grid = single.images.shape[-1] // 8
    targets = [
        torch.cat(pair)
        for pair in zip(_cell_targets(single, grid), _cell_targets(two, grid), strict=True)
    ]
    model = TinyDetector(single.num_classes, seed=config.seed).eval()
    # the backbone: the classifier's three conv blocks (not its fc), frozen
    classifier = pretrained(config.backbone).state_dict()
    backbone = {k: v for k, v in classifier.items() if not k.startswith("fc.")}
    model.load_state_dict(backbone, strict=False)
    for name, parameter in model.named_parameters():
        parameter.requires_grad_(name.split(".")[0] in _HEAD)
    with torch.no_grad():  # a frozen backbone: its features are computed once
        features = torch.cat([model.features(batch) for batch in (single.images, two.images)])
    head = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(head, lr=config.lr, weight_decay=1e-4)
    steps_per_epoch = math.ceil(len(features) / config.batch_size)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=config.lr, total_steps=steps_per_epoch * config.epochs, pct_start=0.3
    )
    generator = torch.Generator().manual_seed(config.seed)
    start = time.perf_counter()
    loss = torch.tensor(float("nan"))
    for _ in range(config.epochs):
        order = torch.randperm(len(features), generator=generator)
        for batch in torch.split(order, config.batch_size):
            classes, distances, has_box = (t[batch] for t in targets)
            loss = _loss(model, features[batch], (classes, distances, has_box))
            optimizer.zero_grad()
            torch.autograd.backward(loss)  # what loss.backward() calls (typed)
            optimizer.step()
            scheduler.step()
    seconds = time.perf_counter() - start
    for parameter in model.parameters():
        parameter.requires_grad_(True)  # as a model you build: Grad-CAM needs no more
    model.eval()
    test_single = make_shapes(config.n_test, split="test", seed=config.seed)
    test_two = make_shapes(config.n_test, variant="two", split="test", seed=config.seed)
    return model, {
        "recall_single": _recall(model, test_single),
        "recall_two": _recall(model, test_two),
        "train_seconds": seconds,
        "final_loss": loss.item(),
    }


def pretrained_detector(*, config: DetectorConfig | None = None) -> TinyDetector:
    """The :class:`TinyDetector` trained on the shapes, from the weights in the package.

    The weights (:data:`DEFAULT_CONFIG`) are loaded with
    ``torch.load(..., weights_only=True)`` after a SHA-256 check: the same
    model on every machine, in milliseconds. With ``config``, a model is
    trained with that recipe instead (minutes on a CPU; nothing is
    cached).

    Raises
    ------
    RuntimeError
        If the shipped weights are missing or damaged (reinstall the package).

    Examples
    --------
    >>> model = pretrained_detector()
    >>> model.relu3
    ReLU()
    """
    if config is not None and config != DEFAULT_CONFIG:
        model, _ = train_detector(config)
        return model
    digest = hashlib.sha256(_SHIPPED.read_bytes()).hexdigest() if _SHIPPED.is_file() else None
    if digest != _SHIPPED_SHA256:
        problem = "is missing" if digest is None else "is damaged (wrong SHA-256)"
        msg = (
            f"the weights file {_SHIPPED} {problem}; reinstall hooks-tutorial "
            "(pip install --force-reinstall hooks-tutorial)"
        )
        raise RuntimeError(msg)
    payload = torch.load(_SHIPPED, map_location="cpu", weights_only=True)
    model = TinyDetector()
    model.load_state_dict(payload["state_dict"])
    return model.eval()
