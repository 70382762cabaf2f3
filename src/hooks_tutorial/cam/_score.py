"""Score-CAM: channel weights from forward passes on masked inputs, no gradients."""

from __future__ import annotations

from typing import ClassVar

import torch
from torch import Tensor, nn

from .._checks import check_finite, positive_int
from .._maps import normalize, upsample
from .._scoring import Target, eval_mode, row_scores
from ..layers import LayersLike
from ._base import BaseCAM, ReshapeTransform

__all__ = ["ScoreCAM"]


class ScoreCAM(BaseCAM):
    r"""Score-CAM: each channel is weighted by the score of the input masked with it.

    For each channel :math:`k`, the activation is upsampled to the input size
    and min-max normalised into a mask :math:`M_k`; the weight is the
    softmax probability of the target class for the masked input:

    .. math::

        M_k = \frac{\operatorname{Up}(A^k) - \min \operatorname{Up}(A^k)}
                   {\max \operatorname{Up}(A^k) - \min \operatorname{Up}(A^k)},
        \qquad
        w^c_k = \operatorname{softmax}\big(f(X \odot M_k)\big)_c,
        \qquad
        L^c = \operatorname{ReLU}\Big(\sum_k w^c_k A^k\Big)

    Channels that are constant over space (empty masks) get weight zero, as in
    the authors' code. With a callable target, :math:`w^c_k` is the
    callable's score of the masked input (no softmax).

    The cost is one forward pass per channel and image (512 for a ResNet-18
    ``layer4``); the masked inputs are batched ``batch_size`` at a time, and
    ``top_k`` scores only the ``k`` channels with the largest mean activation
    of each image, a large speed-up at a small cost in agreement with the
    exact map (see ``benchmarks/bench_cam.py``).

    Parameters
    ----------
    model : torch.nn.Module
        The classifier to explain (see :class:`GradCAM`).
    target_layer : torch.nn.Module, str, or list of them
        The layer(s) whose channels become masks (see :class:`GradCAM`).
    reshape_transform : callable, optional
        See :class:`GradCAM`.
    batch_size : int, default 32
        Masked inputs per forward pass.
    top_k : int, optional
        Score only this many channels per image, those with the largest
        mean activation; the others get weight zero. ``None`` scores all.
    relu : bool, default True
        Apply the final ReLU.

    Raises
    ------
    ValueError
        If ``batch_size`` or ``top_k`` is not a positive integer.

    Notes
    -----
    No gradient is needed: every pass runs under ``torch.no_grad()`` in eval
    mode (so this method also works under ``torch.inference_mode()``). A
    callable target is applied to the outputs of masked copies, whose rows
    may come from different images: it must score each row on its own (for
    example ``lambda out: out[:, 3]``).

    References
    ----------
    H. Wang, Z. Wang, M. Du, F. Yang, Z. Zhang, S. Ding, P. Mardziel, X. Hu,
    "Score-CAM: Score-Weighted Visual Explanations for Convolutional Neural
    Networks", CVPR Workshops 2020. arXiv:1910.01279.

    Examples
    --------
    >>> import torch
    >>> from torch import nn
    >>> model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
    ...                       nn.Flatten(), nn.Linear(8, 4))
    >>> ScoreCAM(model, "1", batch_size=16, top_k=4)(torch.randn(2, 3, 10, 10)).shape
    torch.Size([2, 10, 10])
    """

    uses_gradients: ClassVar[bool] = False

    def __init__(
        self,
        model: nn.Module,
        target_layer: LayersLike,
        *,
        reshape_transform: ReshapeTransform | None = None,
        batch_size: int = 32,
        top_k: int | None = None,
        relu: bool = True,
    ) -> None:
        super().__init__(model, target_layer, reshape_transform=reshape_transform, relu=relu)
        self.batch_size = positive_int(batch_size, "batch_size")
        self.top_k = positive_int(top_k, "top_k", allow_none=True)

    def _maps(self, x: Tensor, target: Target) -> list[Tensor]:
        record = self._run(x, target)
        with eval_mode(self.model), torch.no_grad():
            return [self._layer_map(x, a, target, record.indices) for a in record.activations]

    def channels(self, activations: Tensor) -> Tensor:
        """Which channels are scored: non-constant ones, within the ``top_k`` budget.

        Parameters
        ----------
        activations : torch.Tensor
            ``[B, K, h, w]``.

        Returns
        -------
        torch.Tensor
            Boolean ``[B, K]``.
        """
        flat = activations.flatten(2)
        chosen = flat.amax(dim=2) > flat.amin(dim=2)
        if self.top_k is not None and self.top_k < activations.shape[1]:
            top = activations.mean(dim=(2, 3)).topk(self.top_k, dim=1).indices
            budget = torch.zeros_like(chosen).scatter_(1, top, True)
            chosen &= budget
        return chosen

    def _layer_map(
        self, x: Tensor, activations: Tensor, target: Target, indices: Tensor | None
    ) -> Tensor:
        size = (x.shape[-2], x.shape[-1])
        pairs = self.channels(activations).nonzero()  # [P, 2]: (image, channel)
        weights = torch.zeros(activations.shape[:2], dtype=activations.dtype, device=x.device)
        for start in range(0, pairs.shape[0], self.batch_size):
            image, channel = pairs[start : start + self.batch_size].unbind(dim=1)
            masks = normalize(upsample(activations[image, channel], size))
            output = self.model(x[image] * masks[:, None].to(x.dtype))
            scores = row_scores(output, target, indices, image)
            check_finite(scores, "scores of the masked inputs")
            weights[image, channel] = scores.to(weights.dtype)
        return torch.einsum("bk,bkhw->bhw", weights, activations)
