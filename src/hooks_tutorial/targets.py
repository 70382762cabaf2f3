r"""What to explain when the answer is not one class score: targets for the CAM methods.

A CAM method differentiates one score per image. For a classifier that score
is a class logit, and ``target=3`` says which. For other models, pass one of
these callables as ``target``: each maps the model's output to a tensor of
shape ``[B]``, one score per image.

- :class:`SegmentationTarget`: a class's logits summed over a region of a
  segmentation output ``[B, K, H, W]`` (or of the ``"out"`` entry of the
  dict that torchvision's segmentation models return);
- :class:`SimilarityTarget`: the cosine similarity of an embedding ``[B, D]``
  to a reference embedding;
- :class:`BoxScoreTarget`: the scores of a detector's detections that match
  given boxes, for torchvision-style detectors (a list with one dict of
  ``boxes``, ``labels`` and ``scores`` per image).
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = ["BoxScoreTarget", "SegmentationTarget", "SimilarityTarget"]


def _class_index(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        msg = f"{what} must be a class index (a non-negative int), got {value!r}"
        raise TypeError(msg)
    if int(value) < 0:
        msg = f"{what} must be a non-negative class index, got {value}"
        raise ValueError(msg)
    return int(value)


def _tensor(value: object, what: str, expected: str) -> Tensor:
    if not isinstance(value, Tensor):
        msg = f"{what} must be a torch.Tensor {expected}, got {type(value).__name__}"
        raise TypeError(msg)
    return value


class SegmentationTarget:
    r"""A class's logits summed over a region: :math:`\sum_{(i, j) \in R} y^c_{ij}`.

    For a segmentation model, whose output holds one logit per class and
    pixel, this is the score to explain for a region: by default the region
    :math:`R` is, for each image, the set of pixels whose highest logit is
    that of class :math:`c` (taken from the output, without gradient). Pass
    ``mask`` to explain another region instead, for example a ground-truth
    mask. Whether the map depends on the region depends on the method and
    the layer: where the model is linear after the target layer, Grad-CAM's
    channel weights only scale with the region's size, so its map is the same
    for every region, while HiResCAM's map follows the region (tutorial
    page 27).

    A model may return a dict instead of a tensor: torchvision's
    segmentation models (``fcn_resnet50``, ``deeplabv3_resnet50``, ...)
    return ``{"out": logits, "aux": logits}``, where ``"aux"`` (present
    when built with ``aux_loss=True``) holds the logits of an auxiliary
    head used in training. The target then reads the logits under ``key``,
    ``"out"`` by default.

    Parameters
    ----------
    category : int
        The class index :math:`c`.
    mask : Tensor, optional
        The region, ``[H, W]`` (the same for every image) or ``[B, H, W]``,
        boolean or 0/1 (other values weight the pixels). ``None`` (default):
        the pixels predicted as ``category``.
    key : str, default "out"
        For a model that returns a dict (a :class:`~collections.abc.Mapping`),
        the key of the logits ``[B, classes, H, W]`` to explain; ignored when
        the output is a tensor.

    Raises
    ------
    TypeError
        If ``category`` is not an int or ``mask`` is not a tensor; when
        called, if the output (or its entry ``key``) is not a tensor.
    ValueError
        If ``category`` is negative or ``mask`` is not 2-D or 3-D; when
        called, if the output is a dict without ``key`` (the message lists
        its keys), is not ``[B, classes, H, W]``, has no class
        ``category``, or does not match the mask's shape.

    Notes
    -----
    An image whose region is empty (no pixel predicted as :math:`c`) gets the
    score 0, whose gradient is zero: its map is all zeros.

    Examples
    --------
    >>> import torch
    >>> logits = torch.zeros(1, 2, 2, 2)
    >>> logits[0, 1] = torch.tensor([[3.0, -1.0], [2.0, -2.0]])
    >>> SegmentationTarget(1)(logits)  # pixels where class 1 wins: 3 + 2
    tensor([5.])
    >>> SegmentationTarget(1, mask=torch.tensor([[True, True], [False, False]]))(logits)
    tensor([2.])
    >>> SegmentationTarget(1)({"out": logits, "aux": torch.zeros(1, 2, 2, 2)})
    tensor([5.])
    """

    def __init__(self, category: int, mask: Tensor | None = None, *, key: str = "out") -> None:
        self.category = _class_index(category, "category")
        self.key = key
        if mask is not None:
            mask = _tensor(mask, "mask", "[H, W] or [B, H, W]")
            if mask.dim() not in (2, 3):
                msg = (
                    f"mask must be [H, W] or [B, H, W], got shape {tuple(mask.shape)}; for "
                    "one mask per image stack them into [B, H, W]"
                )
                raise ValueError(msg)
        self.mask = mask

    def __call__(self, output: Tensor | Mapping[str, Tensor]) -> Tensor:
        """Return the sum of class ``category``'s logits over the region, per image ``[B]``."""
        if isinstance(output, Mapping):
            if self.key not in output:
                keys = [repr(k) for k in output]
                msg = (
                    f"the model returned a dict without the key {self.key!r} (its keys: "
                    f"{', '.join(keys) or 'none'}); name the entry that holds the logits "
                    f"[B, classes, H, W], for example SegmentationTarget({self.category}, "
                    f"key={keys[0] if keys else '...'}), or pass a callable target that "
                    "computes the score from the dict itself (target=lambda out: ...)"
                )
                raise ValueError(msg)
            output = _tensor(
                output[self.key], f"the model output[{self.key!r}]", "[B, classes, H, W]"
            )
        output = _tensor(
            output, "the model output", "[B, classes, H, W] (or a dict holding it under key=)"
        )
        if output.dim() != 4:
            msg = (
                f"SegmentationTarget needs a segmentation output [B, classes, H, W], got "
                f"shape {tuple(output.shape)}; for a classifier output [B, classes] pass "
                "the class index itself (target=3)"
            )
            raise ValueError(msg)
        batch, classes, height, width = output.shape
        if self.category >= classes:
            msg = (
                f"SegmentationTarget({self.category}) on an output with {classes} classes; "
                f"pick a class index below {classes}"
            )
            raise ValueError(msg)
        if self.mask is None:
            region = (output.detach().argmax(dim=1) == self.category).to(output.dtype)
        else:
            if tuple(self.mask.shape[-2:]) != (height, width) or (
                self.mask.dim() == 3 and self.mask.shape[0] != batch
            ):
                msg = (
                    f"the mask of shape {tuple(self.mask.shape)} does not fit the output "
                    f"[B, classes, H, W] = {list(output.shape)}; pass [H, W] = "
                    f"[{height}, {width}] or [B, H, W] = [{batch}, {height}, {width}]"
                )
                raise ValueError(msg)
            region = self.mask.to(device=output.device, dtype=output.dtype).expand(
                batch, height, width
            )
        return (output[:, self.category] * region).sum(dim=(1, 2))

    def __repr__(self) -> str:
        where = "predicted pixels" if self.mask is None else f"mask {tuple(self.mask.shape)}"
        key = "" if self.key == "out" else f", key={self.key!r}"
        return f"SegmentationTarget({self.category}, {where}{key})"


class SimilarityTarget:
    r"""Cosine similarity to a reference embedding: :math:`\cos(e, r) = \frac{e \cdot r}{\|e\| \|r\|}`.

    For an embedding model (output ``[B, D]``) this explains why an image is
    similar to a reference: the map shows where the features that raise the
    similarity are.

    Parameters
    ----------
    reference : Tensor
        The reference embedding :math:`r`, ``[D]`` (the same for every image)
        or ``[B, D]`` (one per image). It is detached: no gradient flows into
        the reference.

    Raises
    ------
    TypeError
        If ``reference`` is not a tensor; when called, if the output is not a tensor.
    ValueError
        If ``reference`` is not 1-D or 2-D, or has zero norm; when called, if
        the output is not ``[B, D]`` or its shape does not match the reference.

    Examples
    --------
    >>> import torch
    >>> target = SimilarityTarget(torch.tensor([1.0, 0.0]))
    >>> target(torch.tensor([[2.0, 0.0], [1.0, 1.0], [0.0, 3.0]]))
    tensor([1.0000, 0.7071, 0.0000])
    """

    def __init__(self, reference: Tensor) -> None:
        reference = _tensor(reference, "reference", "[D] or [B, D]")
        if reference.dim() not in (1, 2):
            msg = (
                f"reference must be an embedding [D] or one per image [B, D], got shape "
                f"{tuple(reference.shape)}"
            )
            raise ValueError(msg)
        if bool((reference.detach().norm(dim=-1) == 0).any()):
            msg = "reference has zero norm: the cosine similarity to it is undefined"
            raise ValueError(msg)
        self.reference = reference.detach()

    def __call__(self, output: Tensor) -> Tensor:
        """Return the cosine similarity of each embedding to the reference, ``[B]``."""
        output = _tensor(output, "the model output", "[B, D]")
        reference = self.reference
        if output.dim() != 2:
            msg = (
                f"SimilarityTarget needs embeddings [B, D], got shape {tuple(output.shape)}; "
                "flatten the model's output or pick the embedding layer's output"
            )
            raise ValueError(msg)
        if reference.shape[-1] != output.shape[1] or (
            reference.dim() == 2 and reference.shape[0] != output.shape[0]
        ):
            msg = (
                f"the reference of shape {tuple(reference.shape)} does not fit embeddings of "
                f"shape {tuple(output.shape)}; pass [D] = [{output.shape[1]}] or [B, D] = "
                f"{list(output.shape)}"
            )
            raise ValueError(msg)
        reference = reference.to(device=output.device, dtype=output.dtype).expand_as(output)
        return F.cosine_similarity(output, reference, dim=1)

    def __repr__(self) -> str:
        return f"SimilarityTarget(reference {tuple(self.reference.shape)})"


def _box_iou(first: Tensor, second: Tensor) -> Tensor:
    """Intersection over union of every box of ``first`` ``[M, 4]`` with every box of ``second``.

    Boxes are ``(x0, y0, x1, y1)``; the result is ``[M, N]``.
    """
    x0 = torch.maximum(first[:, None, 0], second[None, :, 0])
    y0 = torch.maximum(first[:, None, 1], second[None, :, 1])
    x1 = torch.minimum(first[:, None, 2], second[None, :, 2])
    y1 = torch.minimum(first[:, None, 3], second[None, :, 3])
    overlap = (x1 - x0).clamp(min=0) * (y1 - y0).clamp(min=0)
    area_first = (first[:, 2] - first[:, 0]) * (first[:, 3] - first[:, 1])
    area_second = (second[:, 2] - second[:, 0]) * (second[:, 3] - second[:, 1])
    return overlap / (area_first[:, None] + area_second[None, :] - overlap)


_DETECTION_KEYS = {"boxes": "[N, 4]", "labels": "[N]", "scores": "[N]"}
_DETECTOR_OUTPUT = (
    "a torchvision-style detector output: a list with one dict per image holding "
    "'boxes' [N, 4], 'labels' [N] and 'scores' [N]"
)


def _detections(output: object) -> list[tuple[Tensor, Tensor, Tensor]]:
    """Check a detector's output and return ``(boxes, labels, scores)`` per image."""
    if not isinstance(output, (list, tuple)):
        hint = (
            "; for a classifier output [B, classes] pass the class index itself (target=3)"
            if isinstance(output, Tensor)
            else ""
        )
        msg = f"BoxScoreTarget needs {_DETECTOR_OUTPUT}; got a {type(output).__name__}{hint}"
        raise TypeError(msg)
    per_image = []
    for i, detections in enumerate(output):
        if not isinstance(detections, Mapping) or not all(k in detections for k in _DETECTION_KEYS):
            got = (
                f"keys {sorted(map(str, detections))}"
                if isinstance(detections, Mapping)
                else f"a {type(detections).__name__}"
            )
            msg = f"BoxScoreTarget needs {_DETECTOR_OUTPUT}; image {i} has {got}"
            raise TypeError(msg)
        boxes, labels, scores = (
            _tensor(detections[k], f"output[{i}][{k!r}]", shape)
            for k, shape in _DETECTION_KEYS.items()
        )
        n = scores.shape[0] if scores.dim() == 1 else -1
        if tuple(boxes.shape) != (n, 4) or tuple(labels.shape) != (n,):
            msg = (
                f"image {i}'s detections do not fit together: boxes {tuple(boxes.shape)}, "
                f"labels {tuple(labels.shape)}, scores {tuple(scores.shape)}; a detector "
                "returns boxes [N, 4], labels [N] and scores [N] for its N detections"
            )
            raise ValueError(msg)
        per_image.append((boxes, labels, scores))
    return per_image


class BoxScoreTarget:
    r"""The scores of the detections that match given boxes: :math:`\sum_j s_{m(j)}`.

    For an object detector, the number to explain is the score of a
    detection: how sure the model is that there is an object of class
    :math:`l_j` in box :math:`b_j`. The detector's output is a list with one
    dict per image, as torchvision's detectors return it in eval mode:
    ``boxes`` ``[N, 4]`` (``x0, y0, x1, y1`` in pixels), ``labels`` ``[N]`` and
    ``scores`` ``[N]``. For each given box :math:`b_j`, the matching
    detection :math:`m(j)` is the one of the same label whose box overlaps
    :math:`b_j` most, provided that the overlap (intersection over union,
    IoU) reaches ``iou_threshold``; the target is the sum of the matched
    detections' scores :math:`s_{m(j)}`, one number per image. The matching
    itself is a choice, not a function to differentiate: gradients flow
    through the scores only.

    The usual way to use it: run the detector, pick one of its detections,
    and explain it with its own box and label (it matches itself, IoU 1).

    Parameters
    ----------
    labels : int, sequence of int, or Tensor
        The class :math:`l_j` of each box: ``[M]`` (an int for one box), or
        ``[B, M]`` with boxes per image.
    boxes : Tensor or sequence of float
        The boxes :math:`b_j` as ``(x0, y0, x1, y1)`` in the coordinates of
        the detector's output: ``[M, 4]`` (or one box ``[4]``), looked for in
        every image of the batch, or ``[B, M, 4]``, ``M`` boxes for each of
        the ``B`` images (for example each image's true boxes).
    iou_threshold : float, default 0.5
        The smallest IoU at which a detection matches a box, in ``(0, 1]``.
    missing : {"raise", "zero"}, default "raise"
        What happens when a box matches no detection of an image. A missing
        detection has no score, and a score of 0 has a zero gradient: its
        map would be all zeros (or, with other boxes, the map of those
        alone) and nothing would say so. So by default the call raises a
        ``ValueError`` that names the box and its best IoU. ``"zero"``: the
        box adds 0 to the image's score; ScoreCAM and the perturbation
        metrics need this, since on their changed copies of an image a
        detection may vanish, and a vanished detection rightly scores 0.

    Raises
    ------
    TypeError
        If a label is not an int, or ``boxes`` is not numbers; when called,
        if the output is not a list of dicts with ``boxes``, ``labels`` and
        ``scores`` tensors.
    ValueError
        If ``boxes`` is not ``[4]``, ``[M, 4]`` or ``[B, M, 4]``, a box has
        ``x1 <= x0`` or ``y1 <= y0``, a label is negative, the labels' shape
        is not the boxes' without the last dimension, ``iou_threshold`` is
        not in ``(0, 1]`` or ``missing`` is unknown; when called, if an
        image's boxes, labels and scores do not fit together, boxes per image
        do not fit the number of images, or (``missing="raise"``) a box
        matches no detection.

    Examples
    --------
    >>> import torch
    >>> detections = [{
    ...     "boxes": torch.tensor([[10.0, 10.0, 30.0, 30.0], [40.0, 5.0, 60.0, 25.0]]),
    ...     "labels": torch.tensor([1, 3]),
    ...     "scores": torch.tensor([0.9, 0.6]),
    ... }]
    >>> BoxScoreTarget(1, [11.0, 10.0, 30.0, 31.0])(detections)  # IoU 0.9 with detection 0
    tensor([0.9000])
    >>> BoxScoreTarget([1, 3], [[10, 10, 30, 30], [40, 5, 60, 25]])(detections)
    tensor([1.5000])
    >>> BoxScoreTarget(2, [10, 10, 30, 30], missing="zero")(detections)  # no detection of class 2
    tensor([0.])
    """

    def __init__(
        self,
        labels: int | Sequence[int] | Tensor,
        boxes: Tensor | Sequence[float] | Sequence[Sequence[float]],
        iou_threshold: float = 0.5,
        *,
        missing: Literal["raise", "zero"] = "raise",
    ) -> None:
        try:
            box_tensor = torch.as_tensor(boxes, dtype=torch.float32).detach()
        except (TypeError, ValueError, RuntimeError) as error:
            msg = f"boxes must be numbers [M, 4] (x0, y0, x1, y1), got {type(boxes).__name__}"
            raise TypeError(msg) from error
        if box_tensor.dim() == 1:
            box_tensor = box_tensor[None]
        if box_tensor.dim() not in (2, 3) or box_tensor.shape[-1] != 4:
            msg = (
                f"boxes must be [M, 4] (x0, y0, x1, y1), one box [4], or M boxes per image "
                f"[B, M, 4], got shape {tuple(torch.as_tensor(boxes).shape)}"
            )
            raise ValueError(msg)
        x0, y0, x1, y1 = box_tensor.unbind(-1)
        if not bool(((x1 > x0) & (y1 > y0)).all()):
            msg = (
                f"every box needs x1 > x0 and y1 > y0 (corners x0, y0, x1, y1), got "
                f"{box_tensor.tolist()}; for boxes as (x, y, width, height) add x and y "
                "to the width and height"
            )
            raise ValueError(msg)
        label_tensor = self._labels(labels)
        if label_tensor.dim() == 0:
            label_tensor = label_tensor[None]
        if tuple(label_tensor.shape) != tuple(box_tensor.shape[:-1]):
            msg = (
                f"got labels of shape {tuple(label_tensor.shape)} for boxes of shape "
                f"{tuple(box_tensor.shape)}; pass one label per box"
            )
            raise ValueError(msg)
        threshold: object = iou_threshold
        if (
            isinstance(threshold, bool)
            or not isinstance(threshold, numbers.Real)
            or not 0 < float(threshold) <= 1
        ):
            msg = f"iou_threshold must be a number in (0, 1], got {threshold!r}"
            raise ValueError(msg)
        if missing not in ("raise", "zero"):
            msg = f"missing must be 'raise' or 'zero', got {missing!r}"
            raise ValueError(msg)
        self.labels: Tensor = label_tensor
        self.boxes: Tensor = box_tensor
        self.iou_threshold: float = float(threshold)
        self.missing: Literal["raise", "zero"] = missing

    @staticmethod
    def _labels(labels: object) -> Tensor:
        """The labels as a tensor of class indices (int64), or an error that says what to pass."""
        if isinstance(labels, (bool, str, bytes)):
            msg = f"each label must be a class index (a non-negative int), got {labels!r}"
            raise TypeError(msg)
        try:
            tensor = torch.as_tensor(labels)
        except (TypeError, ValueError, RuntimeError) as error:
            msg = f"labels must be class indices (ints), got {type(labels).__name__}"
            raise TypeError(msg) from error
        if tensor.is_floating_point() or tensor.is_complex() or tensor.dtype == torch.bool:
            msg = f"each label must be a class index (a non-negative int), got {labels!r}"
            raise TypeError(msg)
        if bool((tensor < 0).any()):
            msg = f"labels must be non-negative class indices, got {tensor.tolist()}"
            raise ValueError(msg)
        return tensor.detach().to(torch.long)

    def __call__(self, output: object) -> Tensor:
        """Return the sum of the matched detections' scores, per image ``[B]``."""
        per_image = _detections(output)
        if self.boxes.dim() == 3 and self.boxes.shape[0] != len(per_image):
            msg = (
                f"boxes of shape {tuple(self.boxes.shape)} give boxes for "
                f"{self.boxes.shape[0]} images, but the output holds {len(per_image)}; pass "
                "[B, M, 4] for a batch of B images, or [M, 4] to look for the same boxes in "
                "every image (ScoreCAM and the metrics score copies of one image at a time)"
            )
            raise ValueError(msg)
        totals = []
        for i, (boxes, labels, scores) in enumerate(per_image):
            wanted, wanted_labels = (
                (self.boxes[i], self.labels[i])
                if self.boxes.dim() == 3
                else (self.boxes, self.labels)
            )
            iou = _box_iou(wanted.to(boxes.device), boxes.detach().to(torch.float32))  # [M, N]
            same_label = wanted_labels.to(labels.device)[:, None] == labels[None, :]
            iou = torch.where(same_label, iou, torch.full_like(iou, -1.0))
            if iou.shape[1] == 0:  # no detection at all
                best_iou = torch.full((iou.shape[0],), -1.0, device=iou.device)
                best = torch.zeros(iou.shape[0], dtype=torch.long, device=iou.device)
            else:
                best_iou, best = iou.max(dim=1)
            matched = best_iou >= self.iou_threshold
            if self.missing == "raise" and not bool(matched.all()):
                j = int((~matched).nonzero()[0, 0])
                self._unmatched(i, j, wanted[j], int(wanted_labels[j]), float(best_iou[j]))
            totals.append(scores[best[matched]].sum())
        return torch.stack(totals)

    def _unmatched(self, image: int, j: int, box: Tensor, label: int, best_iou: float) -> None:
        corners = [round(v, 1) for v in box.tolist()]
        found = (
            f"there is no detection of label {label}"
            if best_iou < 0
            else f"the best IoU with a detection of label {label} is {best_iou:.2f}, below "
            f"iou_threshold={self.iou_threshold}"
        )
        msg = (
            f"box {j} {corners} (label {label}) matches no detection of image {image}: {found}. "
            "Its score would be 0, and a zero score gives an all-zero map. Explain a box the "
            f"detector found (one of model(x)[{image}]['boxes'] with its label), lower "
            "iou_threshold, or pass missing='zero' (ScoreCAM and the perturbation metrics need "
            "it: on their changed copies of an image a detection may vanish)"
        )
        raise ValueError(msg)

    def __repr__(self) -> str:
        return (
            f"BoxScoreTarget(labels={self.labels.tolist()}, boxes={self.boxes.tolist()}, "
            f"iou_threshold={self.iou_threshold}, missing={self.missing!r})"
        )
