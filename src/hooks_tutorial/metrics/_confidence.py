"""Average drop and increase in confidence: keep only what the map shows."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .._checks import check_input, positive_int
from .._maps import check_maps
from .._scoring import Target, eval_mode, scorer


def _scores(
    model: nn.Module, x: Tensor, maps: Tensor, target: Target, batch_size: int
) -> tuple[Tensor, Tensor]:
    """Scores :math:`Y_i` of the images and :math:`O_i` of the images times their maps."""
    x = check_input(x)
    chunk = positive_int(batch_size, "batch_size")
    resized = check_maps(maps, x, "explanation")
    if bool((resized < 0).any() or (resized > 1).any()):
        msg = "maps must be in [0, 1] (use the normalised maps returned by a CAM method)"
        raise ValueError(msg)
    with eval_mode(model), torch.no_grad():
        score, original = scorer(model, x, target)
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
    return original, masked


def average_drop(
    model: nn.Module, x: Tensor, maps: Tensor, target: Target = None, *, batch_size: int = 64
) -> float:
    r"""Average drop in confidence when only the explained region is kept, in percent.

    Each image is multiplied by its map (in [0, 1], resized to the image),
    :math:`E_i = X_i \odot L_i`, and the score of the target class is
    compared: :math:`Y_i` on :math:`X_i`, :math:`O_i` on :math:`E_i`.

    .. math::

        \text{average drop} = \frac{100}{B} \sum_i \frac{\max(0, Y_i - O_i)}{Y_i}

    Lower is better: a map that keeps what the model needs loses little score.

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
    float
        The average drop in percent, in [0, 100].

    Raises
    ------
    ValueError
        If the maps are outside [0, 1] or a callable target gives a score
        :math:`Y_i \le 0`.

    See Also
    --------
    increase_in_confidence

    References
    ----------
    A. Chattopadhay, A. Sarkar, P. Howlader, V. N. Balasubramanian,
    "Grad-CAM++", WACV 2018. arXiv:1710.11063.

    Examples
    --------
    >>> import torch
    >>> from torch import nn
    >>> model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 4 * 4, 2))
    >>> average_drop(model, torch.rand(2, 3, 4, 4), torch.ones(2, 4, 4))
    0.0
    """
    original, masked = _scores(model, x, maps, target, batch_size)
    drop = (original - masked).clamp(min=0) / original
    return float(100 * drop.mean())


def increase_in_confidence(
    model: nn.Module, x: Tensor, maps: Tensor, target: Target = None, *, batch_size: int = 64
) -> float:
    r"""Percentage of images whose score rises when only the explained region is kept.

    With :math:`Y_i` and :math:`O_i` as in :func:`average_drop`:

    .. math::

        \text{increase in confidence} = \frac{100}{B} \sum_i [O_i > Y_i]

    Higher is better.

    Parameters
    ----------
    model, x, maps, target, batch_size
        See :func:`average_drop`.

    Returns
    -------
    float
        The percentage of images, in [0, 100].

    Raises
    ------
    ValueError
        As for :func:`average_drop`.

    References
    ----------
    A. Chattopadhay, A. Sarkar, P. Howlader, V. N. Balasubramanian,
    "Grad-CAM++", WACV 2018. arXiv:1710.11063.

    Examples
    --------
    >>> import torch
    >>> from torch import nn
    >>> model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 4 * 4, 2))
    >>> increase_in_confidence(model, torch.rand(2, 3, 4, 4), torch.ones(2, 4, 4))
    0.0
    """
    original, masked = _scores(model, x, maps, target, batch_size)
    return float(100 * (masked > original).float().mean())
