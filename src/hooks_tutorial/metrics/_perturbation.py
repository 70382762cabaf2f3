"""Deletion and insertion: remove or add the most salient pixels first and watch the score."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, NamedTuple, TypedDict

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .._checks import check_input, positive_int
from .._maps import check_maps
from .._scoring import Target, eval_mode, scorer

if TYPE_CHECKING:
    from typing_extensions import Unpack

from ._similarity import gaussian_kernel

Baseline = Literal["zeros", "mean", "blur"]


def _blur(x: Tensor, sigma: float, size: int = 11) -> Tensor:
    """Separable Gaussian blur of ``[B, C, H, W]`` with reflected borders."""
    k = gaussian_kernel(sigma, size, x.dtype, x.device)
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
    named tuple ``(fractions, scores, auc)``
        ``fractions [S + 1]``: the fraction of pixels changed at each step,
        from 0 to 1; ``scores [B, S + 1]``: the score of the target at each
        step; ``auc [B]``: the area under the curve.

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
    order = check_maps(saliency, x).flatten(1).argsort(dim=1, descending=True, stable=True)
    rank = torch.empty_like(order)
    rank.scatter_(1, order, torch.arange(hw, device=x.device).expand(b, hw))
    counts = torch.round(torch.arange(n_steps + 1, dtype=torch.float64) * hw / n_steps).long()
    fractions = counts.to(x.dtype) / hw
    with eval_mode(model), torch.no_grad():
        base = _baseline(x, baseline, blur_sigma)
        score, _ = scorer(model, x, target)
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


class CurveOptions(TypedDict, total=False):
    """The keyword options of :func:`perturbation_curve` that both AUCs pass on."""

    steps: int
    baseline: Baseline | Tensor
    blur_sigma: float
    batch_size: int


def deletion_auc(
    model: nn.Module,
    x: Tensor,
    saliency: Tensor,
    target: Target = None,
    **options: Unpack[CurveOptions],
) -> Tensor:
    """Area under the deletion curve (lower is better), per image.

    Removing the pixels that the map calls most important first should make
    the score fall quickly. This is ``perturbation_curve(..., mode="deletion").auc``
    with the default baseline ``"zeros"`` (the RISE choice).

    Parameters
    ----------
    model, x, saliency, target
        See :func:`perturbation_curve`.
    **options
        ``steps``, ``baseline`` (default ``"zeros"``), ``blur_sigma``,
        ``batch_size``: see :func:`perturbation_curve`.

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
    return perturbation_curve(model, x, saliency, target, mode="deletion", **options).auc


def insertion_auc(
    model: nn.Module,
    x: Tensor,
    saliency: Tensor,
    target: Target = None,
    **options: Unpack[CurveOptions],
) -> Tensor:
    """Area under the insertion curve (higher is better), per image.

    Starting from the baseline and inserting the most important pixels
    first should make the score rise quickly. This is
    ``perturbation_curve(..., mode="insertion", baseline="blur").auc``: by
    default the run starts from a Gaussian blur of the image (the RISE
    choice: a blank canvas would put the model off its input distribution).

    Parameters
    ----------
    model, x, saliency, target
        See :func:`perturbation_curve`.
    **options
        ``steps``, ``baseline`` (default ``"blur"``), ``blur_sigma``,
        ``batch_size``: see :func:`perturbation_curve`.

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
    options.setdefault("baseline", "blur")
    return perturbation_curve(model, x, saliency, target, mode="insertion", **options).auc
