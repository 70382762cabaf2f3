"""How good is a saliency map? Faithfulness, localisation and sanity metrics.

=================================================  ======================================================
:func:`deletion_auc`                               remove the most salient pixels first; lower is better
:func:`insertion_auc`                              insert the most salient pixels first; higher is better
:func:`perturbation_curve`                         the score curves behind both AUCs
:func:`pointing_game`                              is the map's maximum on the object?
:func:`energy_pointing_game`                       share of the map's mass on the object
:func:`confidence_change`                          average drop and increase in confidence
:func:`model_randomization`                        do maps change when the weights are randomised?
:func:`spearman`, :func:`pearson`, :func:`ssim`    similarity of two maps
=================================================  ======================================================

Every function that runs the model does so in eval mode under
``torch.no_grad()`` (except inside the explainer of
:func:`model_randomization`) and restores the model's training flags.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from typing import Literal, NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ._checks import check_input, positive_int
from ._layers import resolve_layers
from ._maps import upsample
from ._scoring import Target, check_logits, eval_mode, row_scores, target_indices
from .hooks import HookGroup

__all__ = [
    "ConfidenceChange",
    "PerturbationCurve",
    "RandomizationStep",
    "average_drop",
    "confidence_change",
    "deletion_auc",
    "energy_pointing_game",
    "increase_in_confidence",
    "insertion_auc",
    "model_randomization",
    "pearson",
    "perturbation_curve",
    "pointing_game",
    "spearman",
    "ssim",
]

Baseline = Literal["zeros", "mean", "blur"]


# -- helpers -----------------------------------------------------------------
def _maps(maps: object, x: Tensor, what: str = "saliency") -> Tensor:
    """Check maps ``[B, h, w]`` against ``x`` and resize them to its size."""
    if not isinstance(maps, Tensor):
        msg = f"expected the {what} maps as a torch.Tensor [B, H, W], got {type(maps).__name__}"
        raise TypeError(msg)
    if maps.dim() == 4 and maps.shape[1] == 1:
        maps = maps[:, 0]
    if maps.dim() != 3 or maps.shape[0] != x.shape[0]:
        msg = f"expected {what} maps [B, H, W] with B = {x.shape[0]}, got shape {tuple(maps.shape)}"
        raise ValueError(msg)
    if not bool(torch.isfinite(maps).all()):
        msg = f"the {what} maps contain NaN or infinity"
        raise ValueError(msg)
    return upsample(maps.to(device=x.device, dtype=x.dtype), (x.shape[-2], x.shape[-1]))


def _gaussian_kernel(sigma: float, size: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    r = torch.arange(size, dtype=dtype, device=device) - (size - 1) / 2
    k = torch.exp(-(r**2) / (2 * sigma**2))
    return k / k.sum()


def _blur(x: Tensor, sigma: float, size: int = 11) -> Tensor:
    """Separable Gaussian blur of ``[B, C, H, W]`` with reflected borders."""
    k = _gaussian_kernel(sigma, size, x.dtype, x.device)
    c = x.shape[1]
    pad = size // 2
    mode = "reflect" if min(x.shape[-2:]) > pad else "replicate"
    y = F.pad(x, (pad, pad, 0, 0), mode=mode)
    y = F.conv2d(y, k.view(1, 1, 1, size).expand(c, 1, 1, size), groups=c)
    y = F.pad(y, (0, 0, pad, pad), mode=mode)
    return F.conv2d(y, k.view(1, 1, size, 1).expand(c, 1, size, 1), groups=c)


def _baseline(x: Tensor, baseline: str | Tensor, blur_sigma: float) -> Tensor:
    if isinstance(baseline, Tensor):
        try:
            return torch.broadcast_to(baseline.to(device=x.device, dtype=x.dtype), x.shape)
        except RuntimeError as error:
            msg = (
                f"a baseline tensor of shape {tuple(baseline.shape)} does not broadcast to the "
                f"input shape {tuple(x.shape)}"
            )
            raise ValueError(msg) from error
    if baseline == "zeros":
        return torch.zeros_like(x)
    if baseline == "mean":
        return x.mean(dim=(2, 3), keepdim=True).expand_as(x)
    if baseline == "blur":
        return _blur(x, blur_sigma)
    msg = f"unknown baseline {baseline!r}; use 'zeros', 'mean', 'blur' or a tensor"
    raise ValueError(msg)


def _scorer(
    model: nn.Module, x: Tensor, target: Target
) -> tuple[Callable[[Tensor, Tensor], Tensor], Tensor]:
    """Return ``score(inputs, rows) -> [n]`` and the scores of ``x`` itself.

    Class-index targets are scored by their softmax probability (fixed to
    the class found on ``x`` when ``target`` is None); a callable target by
    its own value (see :func:`row_scores`).
    """
    output = model(x)
    indices = target_indices(output, target, x.shape[0])

    def score(inputs: Tensor, rows: Tensor) -> Tensor:
        return row_scores(model(inputs), target, indices, rows)

    return score, row_scores(output, target, indices, torch.arange(x.shape[0], device=x.device))


# -- deletion / insertion ----------------------------------------------------
class PerturbationCurve(NamedTuple):
    """Scores along a deletion or insertion run.

    Attributes
    ----------
    fractions : torch.Tensor
        ``[S + 1]`` fraction of pixels changed at each step, from 0 to 1.
    scores : torch.Tensor
        ``[B, S + 1]`` score of the target at each step.
    auc : torch.Tensor
        ``[B]`` area under the curve (trapezoidal rule over ``fractions``).
    """

    fractions: Tensor
    scores: Tensor
    auc: Tensor


def perturbation_curve(
    model: nn.Module,
    x: Tensor,
    saliency: Tensor,
    target: Target = None,
    *,
    mode: Literal["deletion", "insertion"] = "deletion",
    steps: int = 32,
    baseline: Baseline | Tensor = "zeros",
    blur_sigma: float = 5.0,
    batch_size: int = 64,
) -> PerturbationCurve:
    r"""Change pixels from the most to the least salient and record the score.

    Pixels are ranked by the saliency map (resized to the input), highest
    first, ties by position. At step :math:`i = 0, \dots, S` the first
    :math:`n_i = \operatorname{round}(i H W / S)` pixels (all channels)
    are *deleted* (replaced by the baseline) or *inserted* (copied from the
    image onto the baseline). The score is the softmax probability of the
    target class (the top-1 class of the unperturbed image when ``target``
    is None), or the value of a callable target.

    .. math::

        \text{AUC} = \sum_{i=1}^{S} \tfrac{1}{2}\,(s_{i-1} + s_i)\,
        (f_i - f_{i-1}), \qquad f_i = n_i / (H W)

    Parameters
    ----------
    model : torch.nn.Module
        The classifier; it runs in eval mode under ``torch.no_grad()``.
    x : torch.Tensor
        Images ``[B, C, H, W]``.
    saliency : torch.Tensor
        Maps ``[B, h, w]`` (resized bilinearly to ``H x W`` if needed).
    target : None, int, sequence of int, torch.Tensor, or callable, optional
        As for the CAM methods; a callable must score each row on its own.
    mode : {"deletion", "insertion"}, default "deletion"
        Which run.
    steps : int, default 32
        Number of steps :math:`S`; the model sees :math:`B (S + 1)` images.
    baseline : {"zeros", "mean", "blur"} or torch.Tensor, default "zeros"
        What deleted pixels become, or what insertion starts from: zeros
        (black for inputs in [0, 1]; the dataset mean for standardised
        inputs), each image's per-channel mean, a Gaussian blur of the image
        (``blur_sigma``, 11 x 11 kernel), or a tensor broadcastable to ``x``.
    blur_sigma : float, default 5.0
        Standard deviation of the blur, in pixels.
    batch_size : int, default 64
        Perturbed images per forward pass.

    Returns
    -------
    PerturbationCurve
        ``fractions [S + 1]``, ``scores [B, S + 1]`` and ``auc [B]``.

    Raises
    ------
    ValueError
        If shapes do not match, ``steps`` or ``batch_size`` is not a positive
        int, or ``mode`` / ``baseline`` is unknown.

    References
    ----------
    V. Petsiuk, A. Das, K. Saenko, "RISE: Randomized Input Sampling for
    Explanation of Black-box Models", BMVC 2018. arXiv:1806.07421.

    Examples
    --------
    >>> import torch
    >>> from torch import nn
    >>> model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 4 * 4, 2))
    >>> curve = perturbation_curve(model, torch.rand(1, 3, 4, 4), torch.rand(1, 4, 4), steps=4)
    >>> curve.fractions.tolist(), curve.scores.shape
    ([0.0, 0.25, 0.5, 0.75, 1.0], torch.Size([1, 5]))
    """
    if mode not in ("deletion", "insertion"):
        msg = f"mode must be 'deletion' or 'insertion', got {mode!r}"
        raise ValueError(msg)
    n_steps = positive_int(steps, "steps")
    chunk = positive_int(batch_size, "batch_size")
    x = check_input(x)
    b = x.shape[0]
    hw = x.shape[-2] * x.shape[-1]
    order = _maps(saliency, x).flatten(1).argsort(dim=1, descending=True, stable=True)
    rank = torch.empty_like(order)
    rank.scatter_(1, order, torch.arange(hw, device=x.device).expand(b, hw))
    counts = torch.round(torch.arange(n_steps + 1, dtype=torch.float64) * hw / n_steps).long()
    fractions = counts.to(x.dtype) / hw
    with eval_mode(model), torch.no_grad():
        base = _baseline(x, baseline, blur_sigma)
        score, _ = _scorer(model, x, target)
        total = b * (n_steps + 1)
        scores = torch.empty(total, dtype=x.dtype, device=x.device)
        for start in range(0, total, chunk):
            rows = torch.arange(start, min(start + chunk, total), device=x.device)
            image, step = rows // (n_steps + 1), rows % (n_steps + 1)
            changed = rank[image] < counts.to(x.device)[step][:, None]  # [n, H*W]
            changed = changed.view(-1, 1, x.shape[-2], x.shape[-1])
            if mode == "deletion":
                inputs = torch.where(changed, base[image], x[image])
            else:
                inputs = torch.where(changed, x[image], base[image])
            scores[rows] = score(inputs, image).to(x.dtype)
    curve = scores.view(b, n_steps + 1)
    widths = fractions[1:] - fractions[:-1]
    auc = ((curve[:, 1:] + curve[:, :-1]) / 2 * widths.to(curve.device)).sum(dim=1)
    return PerturbationCurve(fractions, curve, auc)


def deletion_auc(
    model: nn.Module,
    x: Tensor,
    saliency: Tensor,
    target: Target = None,
    *,
    steps: int = 32,
    baseline: Baseline | Tensor = "zeros",
    blur_sigma: float = 5.0,
    batch_size: int = 64,
) -> Tensor:
    """Area under the deletion curve (lower is better), per image.

    Removing the pixels that the map calls most important first should make
    the score fall quickly. The default baseline is ``"zeros"`` (the RISE
    choice); see :func:`perturbation_curve` for the parameters.

    Parameters
    ----------
    model, x, saliency, target, steps, baseline, blur_sigma, batch_size
        See :func:`perturbation_curve`.

    Returns
    -------
    torch.Tensor
        ``[B]`` areas in [0, 1] for probability scores.

    References
    ----------
    V. Petsiuk, A. Das, K. Saenko, "RISE", BMVC 2018. arXiv:1806.07421.

    Examples
    --------
    >>> import torch
    >>> from torch import nn
    >>> model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 4 * 4, 2))
    >>> deletion_auc(model, torch.rand(2, 3, 4, 4), torch.rand(2, 4, 4), steps=4).shape
    torch.Size([2])
    """
    return perturbation_curve(
        model,
        x,
        saliency,
        target,
        mode="deletion",
        steps=steps,
        baseline=baseline,
        blur_sigma=blur_sigma,
        batch_size=batch_size,
    ).auc


def insertion_auc(
    model: nn.Module,
    x: Tensor,
    saliency: Tensor,
    target: Target = None,
    *,
    steps: int = 32,
    baseline: Baseline | Tensor = "blur",
    blur_sigma: float = 5.0,
    batch_size: int = 64,
) -> Tensor:
    """Area under the insertion curve (higher is better), per image.

    Starting from the baseline and inserting the most important pixels
    first should make the score rise quickly. The default baseline is a
    Gaussian blur of the image (the RISE choice: a blank canvas would put
    the model off its input distribution); see :func:`perturbation_curve`.

    Parameters
    ----------
    model, x, saliency, target, steps, baseline, blur_sigma, batch_size
        See :func:`perturbation_curve`.

    Returns
    -------
    torch.Tensor
        ``[B]`` areas in [0, 1] for probability scores.

    References
    ----------
    V. Petsiuk, A. Das, K. Saenko, "RISE", BMVC 2018. arXiv:1806.07421.

    Examples
    --------
    >>> import torch
    >>> from torch import nn
    >>> model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 4 * 4, 2))
    >>> insertion_auc(model, torch.rand(2, 3, 4, 4), torch.rand(2, 4, 4), steps=4).shape
    torch.Size([2])
    """
    return perturbation_curve(
        model,
        x,
        saliency,
        target,
        mode="insertion",
        steps=steps,
        baseline=baseline,
        blur_sigma=blur_sigma,
        batch_size=batch_size,
    ).auc


# -- pointing games ----------------------------------------------------------
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


# -- confidence --------------------------------------------------------------
class ConfidenceChange(NamedTuple):
    """Scores of images and of their explanation-masked versions.

    Attributes
    ----------
    average_drop : float
        :math:`100 \\cdot \\operatorname{mean}_i \\max(0, Y_i - O_i) / Y_i` (lower is better).
    increase_in_confidence : float
        Percentage of images with :math:`O_i > Y_i` (higher is better).
    original : torch.Tensor
        ``[B]`` scores :math:`Y_i` of the images.
    masked : torch.Tensor
        ``[B]`` scores :math:`O_i` of the images multiplied by their maps.
    """

    average_drop: float
    increase_in_confidence: float
    original: Tensor
    masked: Tensor


def confidence_change(
    model: nn.Module,
    x: Tensor,
    maps: Tensor,
    target: Target = None,
    *,
    batch_size: int = 64,
) -> ConfidenceChange:
    r"""Average drop and increase in confidence when only the explained region is kept.

    Each image is multiplied by its map (in [0, 1], resized to the image),
    :math:`E_i = X_i \odot L_i`, and the score of the target class is
    compared: :math:`Y_i` on :math:`X_i`, :math:`O_i` on :math:`E_i`.

    .. math::

        \text{average drop} = \frac{100}{B} \sum_i
        \frac{\max(0, Y_i - O_i)}{Y_i},
        \qquad
        \text{increase} = \frac{100}{B} \sum_i [O_i > Y_i]

    Parameters
    ----------
    model : torch.nn.Module
        The classifier; it runs in eval mode under ``torch.no_grad()``.
    x : torch.Tensor
        Images ``[B, C, H, W]``.
    maps : torch.Tensor
        Maps ``[B, h, w]`` in [0, 1] (as returned by the CAM methods).
    target : None, int, sequence of int, torch.Tensor, or callable, optional
        As for the CAM methods; class indices are scored by softmax
        probability, a callable by its (positive) value.
    batch_size : int, default 64
        Images per forward pass.

    Returns
    -------
    ConfidenceChange
        Both percentages and the per-image scores.

    Raises
    ------
    ValueError
        If the maps are outside [0, 1] or a callable target gives a score
        :math:`Y_i \le 0`.

    References
    ----------
    A. Chattopadhay, A. Sarkar, P. Howlader, V. N. Balasubramanian,
    "Grad-CAM++", WACV 2018. arXiv:1710.11063.

    Examples
    --------
    >>> import torch
    >>> from torch import nn
    >>> model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 4 * 4, 2))
    >>> result = confidence_change(model, torch.rand(2, 3, 4, 4), torch.ones(2, 4, 4))
    >>> result.average_drop
    0.0
    """
    x = check_input(x)
    chunk = positive_int(batch_size, "batch_size")
    resized = _maps(maps, x, "explanation")
    if bool((resized < 0).any() or (resized > 1).any()):
        msg = "maps must be in [0, 1] (use the normalised maps returned by a CAM method)"
        raise ValueError(msg)
    with eval_mode(model), torch.no_grad():
        score, original = _scorer(model, x, target)
        masked = torch.cat(
            [
                score(
                    x[s : s + chunk] * resized[s : s + chunk, None],
                    torch.arange(s, min(s + chunk, x.shape[0]), device=x.device),
                )
                for s in range(0, x.shape[0], chunk)
            ]
        )
    if bool((original <= 0).any()):
        msg = "average drop needs positive scores; use a class index target (probabilities)"
        raise ValueError(msg)
    drop = (original - masked).clamp(min=0) / original
    return ConfidenceChange(
        average_drop=float(100 * drop.mean()),
        increase_in_confidence=float(100 * (masked > original).float().mean()),
        original=original,
        masked=masked,
    )


def average_drop(
    model: nn.Module, x: Tensor, maps: Tensor, target: Target = None, *, batch_size: int = 64
) -> float:
    """Average drop in confidence, in percent (lower is better); see :func:`confidence_change`.

    Parameters
    ----------
    model, x, maps, target, batch_size
        See :func:`confidence_change`.

    Returns
    -------
    float
        The average drop in percent.

    Examples
    --------
    >>> import torch
    >>> from torch import nn
    >>> model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 4 * 4, 2))
    >>> average_drop(model, torch.rand(2, 3, 4, 4), torch.ones(2, 4, 4))
    0.0
    """
    return confidence_change(model, x, maps, target, batch_size=batch_size).average_drop


def increase_in_confidence(
    model: nn.Module, x: Tensor, maps: Tensor, target: Target = None, *, batch_size: int = 64
) -> float:
    """Percentage of images whose score rises when masked by their map; see :func:`confidence_change`.

    Parameters
    ----------
    model, x, maps, target, batch_size
        See :func:`confidence_change`.

    Returns
    -------
    float
        The increase in confidence in percent.

    Examples
    --------
    >>> import torch
    >>> from torch import nn
    >>> model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 4 * 4, 2))
    >>> increase_in_confidence(model, torch.rand(2, 3, 4, 4), torch.ones(2, 4, 4))
    0.0
    """
    return confidence_change(model, x, maps, target, batch_size=batch_size).increase_in_confidence


# -- similarity --------------------------------------------------------------
def _pairs(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    if a.shape != b.shape or a.dim() < 2:
        msg = f"expected two batches of maps of the same shape [B, ...], got {tuple(a.shape)} and {tuple(b.shape)}"
        raise ValueError(msg)
    dtype = torch.promote_types(torch.promote_types(a.dtype, b.dtype), torch.float32)
    return a.flatten(1).to(dtype), b.flatten(1).to(dtype)


def _correlation(a: Tensor, b: Tensor) -> Tensor:
    a = a - a.mean(dim=1, keepdim=True)
    b = b - b.mean(dim=1, keepdim=True)
    denom = a.norm(dim=1) * b.norm(dim=1)
    return torch.where(denom > 0, (a * b).sum(dim=1) / torch.where(denom > 0, denom, 1), 0)


def _ranks(v: Tensor) -> Tensor:
    """Ranks of each row (0-based), ties sharing their average rank."""
    out = torch.empty_like(v)
    for i, row in enumerate(v):
        values, order = row.sort(stable=True)
        _, inverse, counts = torch.unique_consecutive(
            values, return_inverse=True, return_counts=True
        )
        ends = counts.cumsum(0)
        mean_rank = (ends - counts + ends - 1).to(v.dtype) / 2
        out[i, order] = mean_rank[inverse]
    return out


def pearson(a: Tensor, b: Tensor) -> Tensor:
    """Pearson correlation of each pair of maps.

    Parameters
    ----------
    a, b : torch.Tensor
        Maps ``[B, ...]`` of the same shape.

    Returns
    -------
    torch.Tensor
        ``[B]`` correlations in [-1, 1]; 0 where a map is constant (the
        correlation is undefined there).

    Examples
    --------
    >>> import torch
    >>> a = torch.tensor([[0.0, 1.0, 2.0, 3.0]])
    >>> pearson(a, 2 * a + 1).tolist()
    [1.0]
    """
    fa, fb = _pairs(a, b)
    return _correlation(fa, fb)


def spearman(a: Tensor, b: Tensor) -> Tensor:
    """Spearman rank correlation of each pair of maps (ties get average ranks).

    Parameters
    ----------
    a, b : torch.Tensor
        Maps ``[B, ...]`` of the same shape.

    Returns
    -------
    torch.Tensor
        ``[B]`` rank correlations in [-1, 1]; 0 where a map is constant.

    Examples
    --------
    >>> import torch
    >>> a = torch.tensor([[0.0, 1.0, 2.0, 3.0]])
    >>> spearman(a, a**3).tolist()
    [1.0]
    """
    fa, fb = _pairs(a, b)
    return _correlation(_ranks(fa), _ranks(fb))


def ssim(a: Tensor, b: Tensor, *, data_range: float = 1.0, sigma: float = 1.5) -> Tensor:
    r"""Structural similarity of each pair of maps ``[B, H, W]`` (Gaussian window).

    .. math::

        \operatorname{SSIM} = \operatorname{mean}\,
        \frac{(2 \mu_a \mu_b + C_1)(2 \sigma_{ab} + C_2)}
             {(\mu_a^2 + \mu_b^2 + C_1)(\sigma_a^2 + \sigma_b^2 + C_2)}

    with local statistics from an 11 x 11 Gaussian window (:math:`\sigma` =
    1.5; smaller for maps under 11 pixels), valid positions only,
    :math:`C_1 = (0.01 R)^2`, :math:`C_2 = (0.03 R)^2`, :math:`R` =
    ``data_range``.

    Parameters
    ----------
    a, b : torch.Tensor
        Maps ``[B, H, W]`` of the same shape, values in ``[0, data_range]``.
    data_range : float, default 1.0
        The value range :math:`R` (1 for normalised CAMs).
    sigma : float, default 1.5
        Width of the Gaussian window.

    Returns
    -------
    torch.Tensor
        ``[B]`` similarities, 1 for identical maps.

    References
    ----------
    Z. Wang, A. C. Bovik, H. R. Sheikh, E. P. Simoncelli, "Image Quality
    Assessment: From Error Visibility to Structural Similarity", IEEE
    Transactions on Image Processing 13(4), 2004.

    Examples
    --------
    >>> import torch
    >>> maps = torch.rand(2, 16, 16)
    >>> ssim(maps, maps).tolist()
    [1.0, 1.0]
    """
    if a.shape != b.shape or a.dim() != 3:
        msg = f"expected two batches of maps [B, H, W] of the same shape, got {tuple(a.shape)} and {tuple(b.shape)}"
        raise ValueError(msg)
    dtype = torch.promote_types(torch.promote_types(a.dtype, b.dtype), torch.float32)
    a, b = a.to(dtype)[:, None], b.to(dtype)[:, None]
    size = min(11, a.shape[-2], a.shape[-1])
    size -= 1 - size % 2  # odd
    k1 = _gaussian_kernel(sigma, size, dtype, a.device)
    window = (k1[:, None] * k1[None, :])[None, None]

    def local(t: Tensor) -> Tensor:
        return F.conv2d(t, window)

    mu_a, mu_b = local(a), local(b)
    var_a = local(a * a) - mu_a**2
    var_b = local(b * b) - mu_b**2
    cov = local(a * b) - mu_a * mu_b
    c1, c2 = (0.01 * data_range) ** 2, (0.03 * data_range) ** 2
    s = ((2 * mu_a * mu_b + c1) * (2 * cov + c2)) / (
        (mu_a**2 + mu_b**2 + c1) * (var_a + var_b + c2)
    )
    return s.flatten(1).mean(dim=1)


# -- model randomisation -----------------------------------------------------
class RandomizationStep(NamedTuple):
    """Maps after randomising the model down to one layer, and their similarity.

    Attributes
    ----------
    layer : str
        The layer randomised at this step (cumulatively with those before);
        ``"(original)"`` for the first entry.
    maps : torch.Tensor
        ``[B, H, W]`` maps of the (partly) randomised model.
    spearman, pearson, ssim : torch.Tensor
        ``[B]`` similarity to the original maps.
    """

    layer: str
    maps: Tensor
    spearman: Tensor
    pearson: Tensor
    ssim: Tensor


def _execution_order(
    model: nn.Module, x: Tensor, candidates: list[tuple[str, nn.Module]]
) -> list[str]:
    """Names of ``candidates`` in the order their first call happens in a forward pass."""
    seen: list[str] = []
    with HookGroup() as hooks:
        for name, module in candidates:

            def first_call(m: nn.Module, args: object, out: object, name: str = name) -> None:
                del m, args, out
                if name not in seen:
                    seen.append(name)

            hooks.forward(module, first_call)
        with eval_mode(model), torch.no_grad():
            model(x)
    return seen


def _default_layers(model: nn.Module, x: Tensor) -> list[str]:
    prefix, parent = "", model
    while True:
        children = [
            (f"{prefix}{n}", c)
            for n, c in parent.named_children()
            if any(True for _ in c.parameters())
        ]
        if len(children) != 1 or any(True for _ in parent.parameters(recurse=False)):
            break
        prefix, parent = f"{children[0][0]}.", children[0][1]
    if not children:
        msg = "the model has no submodule with parameters to randomise; pass layers=[...]"
        raise ValueError(msg)
    return list(reversed(_execution_order(model, x, children)))


def _reinitialize(module: nn.Module) -> None:
    for sub in module.modules():
        reset = getattr(sub, "reset_parameters", None)
        if callable(reset):
            reset()
        else:
            for p in sub.parameters(recurse=False):
                with torch.no_grad():
                    std = float(p.std()) if p.numel() > 1 else 0.02
                    p.normal_(float(p.mean()), std if std > 0 else 0.02)


def model_randomization(
    model: nn.Module,
    explainer: Callable[[nn.Module], Callable[[Tensor, Target], Tensor]],
    x: Tensor,
    target: Target = None,
    *,
    layers: Sequence[str] | None = None,
    seed: int = 0,
) -> list[RandomizationStep]:
    """Cascading model-parameter randomisation: a sanity check for saliency methods.

    The layers are re-initialised one after the other from the output
    towards the input, cumulatively, on a deep copy of the model; after each
    step the maps are recomputed and compared with the original ones. A
    method whose maps stay similar while the weights become random does not
    explain the model (it behaves like an edge detector).

    Parameters
    ----------
    model : torch.nn.Module
        The model; it is deep-copied and never modified.
    explainer : callable
        ``explainer(model_copy)`` returns a callable ``(x, target) -> maps
        [B, H, W]``, for example ``lambda m: GradCAM(m, "layer4")``. It is
        called once, on the copy.
    x : torch.Tensor
        Images ``[B, C, H, W]``.
    target : None, int, sequence of int, torch.Tensor, or callable, optional
        What to explain; ``None`` is fixed to the top-1 classes of the
        original model, so every step explains the same classes.
    layers : sequence of str, optional
        Dotted names of the modules to randomise, in order. By default the
        children of the model that have parameters (descending into a single
        wrapper child), in reverse order of execution (found with forward
        hooks): for a ResNet ``fc, layer4, layer3, layer2, layer1, bn1,
        conv1``.
    seed : int, default 0
        Seed for the re-initialisation (the global random state is restored
        afterwards).

    Returns
    -------
    list of RandomizationStep
        First the original maps (similarity 1), then one entry per layer.

    Raises
    ------
    ValueError
        If a layer name is unknown (via :func:`~hooks_tutorial.resolve_layers`).

    Notes
    -----
    Modules are re-initialised with their own ``reset_parameters()``;
    parameters of modules without it are redrawn from a normal distribution
    with their current mean and standard deviation.

    References
    ----------
    J. Adebayo, J. Gilmer, M. Muelly, I. Goodfellow, M. Hardt, B. Kim,
    "Sanity Checks for Saliency Maps", NeurIPS 2018. arXiv:1810.03292.

    Examples
    --------
    >>> import torch
    >>> from torch import nn
    >>> from hooks_tutorial.cam import GradCAM
    >>> model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
    ...                       nn.Flatten(), nn.Linear(4, 2))
    >>> steps = model_randomization(model, lambda m: GradCAM(m, "1"), torch.rand(2, 3, 8, 8))
    >>> [s.layer for s in steps]
    ['(original)', '4', '0']
    """
    x = check_input(x)
    clone = copy.deepcopy(model)
    names = list(layers) if layers is not None else _default_layers(clone, x)
    modules = [m for _, m in resolve_layers(clone, names)] if names else []
    if target is None:
        with eval_mode(clone), torch.no_grad():
            target = check_logits(clone(x), x.shape[0]).argmax(dim=1)
    explain = explainer(clone)
    original = explain(x, target).detach()
    ones = torch.ones(x.shape[0], dtype=original.dtype, device=original.device)
    steps = [RandomizationStep("(original)", original, ones, ones.clone(), ones.clone())]
    devices = sorted({p.device.index or 0 for p in clone.parameters() if p.device.type == "cuda"})
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        for name, module in zip(names, modules, strict=True):
            _reinitialize(module)
            maps = explain(x, target).detach()
            steps.append(
                RandomizationStep(
                    name,
                    maps,
                    spearman(original, maps),
                    pearson(original, maps),
                    ssim(original, maps),
                )
            )
    return steps
