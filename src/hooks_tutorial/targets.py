r"""What to explain when the answer is not one class score: targets for the CAM methods.

A CAM method differentiates one score per image. For a classifier that score
is a class logit, and ``target=3`` says which. For other models, pass one of
these callables as ``target``: each maps the model's output to a tensor of
shape ``[B]``, one score per image.

- :class:`SegmentationTarget`: a class's logits summed over a region of a
  segmentation output ``[B, K, H, W]`` (or of the ``"out"`` entry of the
  dict that torchvision's segmentation models return);
- :class:`SimilarityTarget`: the cosine similarity of an embedding ``[B, D]``
  to a reference embedding.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping

import torch.nn.functional as F
from torch import Tensor

__all__ = ["SegmentationTarget", "SimilarityTarget"]


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
