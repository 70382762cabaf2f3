"""Pointing games: does the map point at the object?"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor


def _regions(maps: Tensor, masks: Tensor | None, boxes: Tensor | Sequence[Tensor] | None) -> Tensor:
    """Return boolean object masks ``[B, H, W]`` from masks or boxes."""
    if maps.dim() != 3:
        msg = f"expected maps [B, H, W], got shape {tuple(maps.shape)}"
        raise ValueError(msg)
    b, h, w = maps.shape
    if (masks is None) == (boxes is None):
        msg = "pass either masks [B, H, W] or boxes (x0, y0, x1, y1), not both or neither"
        raise ValueError(msg)
    if masks is not None:
        if tuple(masks.shape) != (b, h, w):
            msg = f"masks have shape {tuple(masks.shape)}, expected the maps' shape {(b, h, w)}"
            raise ValueError(msg)
        return masks.to(device=maps.device, dtype=torch.bool)
    assert boxes is not None
    per_image = list(boxes) if not isinstance(boxes, Tensor) or boxes.dim() == 3 else boxes
    if isinstance(per_image, Tensor):  # [B, 4]: one box per image
        per_image = [row[None] for row in per_image]
    if len(per_image) != b:
        msg = f"got boxes for {len(per_image)} images, expected {b}"
        raise ValueError(msg)
    region = torch.zeros(b, h, w, dtype=torch.bool, device=maps.device)
    ys = torch.arange(h, device=maps.device)[:, None]
    xs = torch.arange(w, device=maps.device)[None, :]
    for i, image_boxes in enumerate(per_image):
        t = torch.as_tensor(image_boxes, device=maps.device).reshape(-1, 4)
        for x0, y0, x1, y1 in t.tolist():
            region[i] |= (xs >= x0) & (xs < x1) & (ys >= y0) & (ys < y1)
    return region


def pointing_game(
    maps: Tensor,
    masks: Tensor | None = None,
    *,
    boxes: Tensor | Sequence[Tensor] | None = None,
    tolerance: float = 0.0,
) -> Tensor:
    """Whether each map's maximum falls on the object (a hit).

    Parameters
    ----------
    maps : torch.Tensor
        Saliency maps ``[B, H, W]``.
    masks : torch.Tensor, optional
        Object masks ``[B, H, W]`` (bool or 0/1).
    boxes : torch.Tensor or sequence of torch.Tensor, optional
        Instead of masks: boxes ``(x0, y0, x1, y1)`` in pixels of the maps,
        ``x1`` and ``y1`` exclusive; ``[B, 4]`` (one per image) or a list
        of ``[n_i, 4]`` (any number per image).
    tolerance : float, default 0.0
        A maximum within this Euclidean distance (pixels) of the object
        still counts (the original protocol uses 15 pixels at 224 x 224).

    Returns
    -------
    torch.Tensor
        Boolean ``[B]``; ``.float().mean()`` is the pointing accuracy.
        A constant map (for example all zeros) has no maximum and is a miss.
        With ties, the first maximum in row-major order counts.

    Raises
    ------
    ValueError
        If neither or both of ``masks`` and ``boxes`` are given, or shapes
        do not match.

    References
    ----------
    J. Zhang, S. A. Bargal, Z. Lin, J. Brandt, X. Shen, S. Sclaroff,
    "Top-down Neural Attention by Excitation Backprop", ECCV 2016; IJCV 2018.
    arXiv:1608.00507.

    Examples
    --------
    >>> import torch
    >>> maps = torch.zeros(2, 8, 8)
    >>> maps[0, 1, 1] = 1.0
    >>> maps[1, 6, 6] = 1.0
    >>> pointing_game(maps, boxes=torch.tensor([[0, 0, 4, 4], [0, 0, 4, 4]])).tolist()
    [True, False]
    """
    region = _regions(maps, masks, boxes)
    if tolerance > 0:
        r = math.floor(tolerance)
        offsets = torch.arange(-r, r + 1, device=maps.device, dtype=maps.dtype)
        disk = (offsets[:, None] ** 2 + offsets[None, :] ** 2 <= tolerance**2).to(maps.dtype)
        grown = F.conv2d(region[:, None].to(maps.dtype), disk[None, None], padding=r)
        region = grown[:, 0] > 0
    flat = maps.flatten(1)
    peak = flat.argmax(dim=1)
    constant = flat.amax(dim=1) == flat.amin(dim=1)
    hit = region.flatten(1).gather(1, peak[:, None]).squeeze(1)
    return hit & ~constant


def energy_pointing_game(
    maps: Tensor,
    masks: Tensor | None = None,
    *,
    boxes: Tensor | Sequence[Tensor] | None = None,
) -> Tensor:
    r"""Share of each map's mass that lies on the object.

    .. math::

        \text{proportion} = \frac{\sum_{(i,j) \in \text{object}} L_{ij}}
                                 {\sum_{i,j} L_{ij}}

    Parameters
    ----------
    maps : torch.Tensor
        Non-negative saliency maps ``[B, H, W]`` (such as normalised CAMs).
    masks : torch.Tensor, optional
        Object masks ``[B, H, W]``.
    boxes : torch.Tensor or sequence of torch.Tensor, optional
        Instead of masks, boxes as in :func:`pointing_game`.

    Returns
    -------
    torch.Tensor
        ``[B]`` proportions in [0, 1]; an all-zero map gives 0.

    Raises
    ------
    ValueError
        If a map has negative values, or the masks / boxes are invalid.

    References
    ----------
    H. Wang et al., "Score-CAM: Score-Weighted Visual Explanations for
    Convolutional Neural Networks", CVPR Workshops 2020. arXiv:1910.01279.

    Examples
    --------
    >>> import torch
    >>> maps = torch.zeros(1, 4, 4)
    >>> maps[0, 0, 0], maps[0, 3, 3] = 3.0, 1.0
    >>> energy_pointing_game(maps, boxes=torch.tensor([[0, 0, 2, 2]])).tolist()
    [0.75]
    """
    region = _regions(maps, masks, boxes)
    if bool((maps < 0).any()):
        msg = "energy_pointing_game needs non-negative maps; clamp(min=0) or normalise them"
        raise ValueError(msg)
    total = maps.flatten(1).sum(dim=1)
    inside = (maps * region).flatten(1).sum(dim=1)
    return torch.where(total > 0, inside / torch.where(total > 0, total, 1), 0)
