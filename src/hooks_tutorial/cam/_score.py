"""Score-CAM: channel weights from forward passes on masked inputs, no gradients."""

from __future__ import annotations

from typing import ClassVar, Literal

import torch
from torch import Tensor, nn

from .._checks import check_finite, positive_int
from .._layers import LayersLike
from .._maps import normalize, upsample
from .._scoring import Target, check_logits, eval_mode, resolve_target
from ._base import BaseCAM, ReshapeTransform

__all__ = ["ScoreCAM"]

_WEIGHTS = ("probability", "channel_softmax")


class ScoreCAM(BaseCAM):
    r"""Score-CAM: each channel is weighted by the score of the input masked with it.

    For each channel :math:`k`, the activation is upsampled to the input size
    and min-max normalised into a mask :math:`M_k`, and the model scores the
    masked input :math:`X \odot M_k`. Two ways of turning these scores into
    channel weights are in use, chosen with ``weights``:

    .. math::

        M_k = \frac{\operatorname{Up}(A^k) - \min \operatorname{Up}(A^k)}
                   {\max \operatorname{Up}(A^k) - \min \operatorname{Up}(A^k)},
        \qquad
        L^c = \operatorname{ReLU}\Big(\sum_k w^c_k A^k\Big),

    ``weights="probability"`` (the default; the authors' code):
    the class probability of each masked input, a softmax over *classes*,

    .. math::

        w^c_k = \operatorname{softmax}\big(f(X \odot M_k)\big)_c ;

    ``weights="channel_softmax"`` (pytorch-grad-cam's ``ScoreCAM`` and
    torchcam's ``ScoreCAM``): a softmax over *channels* of the masked
    inputs' class logits,

    .. math::

        w^c_k = \frac{\exp f_c(X \odot M_k)}{\sum_j \exp f_c(X \odot M_j)}.

    torchcam subtracts the logit of a baseline input from every
    :math:`f_c(X \odot M_k)`; the same number is subtracted from every
    channel's logit, so it cancels in the softmax. The two variants can
    disagree a lot: the probabilities are independent numbers in [0, 1],
    while the channel softmax makes the channels compete and gives most of
    the weight to the few with the largest logits.

    A channel that is constant over space gives an all-zero mask. With
    ``"probability"`` it gets weight zero, as in the authors' code (which
    skips it); with ``"channel_softmax"`` its masked input, the all-zero
    image, is scored like any other, as in the peers' code. With a callable
    target, the callable's score of each masked input replaces the
    probability (``"probability"``, no softmax) or the logit
    (``"channel_softmax"``).

    The cost is one forward pass per channel and image (512 for a ResNet-18
    ``layer4``), run without autograd, ``batch_size`` masked inputs at a
    time. ``top_k`` scores only the ``k`` channels with the largest mean
    activation of each image, a large speed-up at a small cost in agreement
    with the exact map (see ``benchmarks/bench_scorecam.py``).

    Parameters
    ----------
    model : torch.nn.Module
        The classifier to explain (see :class:`GradCAM`).
    target_layer : torch.nn.Module, str, or list of them
        The layer(s) whose channels become masks (see :class:`GradCAM`).
    reshape_transform : callable, optional
        See :class:`GradCAM`.
    batch_size : int, default 64
        Masked inputs per forward pass. Larger batches are faster per image
        on the CPU, at the cost of memory (for a ResNet-18 at 224 x 224,
        roughly 6 MB per masked input).
    top_k : int, optional
        Score only this many channels per image, those with the largest
        mean activation; the others get weight zero. ``None`` scores all.
    weights : {"probability", "channel_softmax"}, default "probability"
        How scores become channel weights (see above).
    relu : bool, default True
        Apply the final ReLU.

    Raises
    ------
    ValueError
        If ``batch_size`` or ``top_k`` is not a positive integer, or
        ``weights`` is not one of the two names.

    Notes
    -----
    No gradient is needed: every pass runs without autograd in eval mode (so
    this method also works under ``torch.inference_mode()``). A callable
    target is applied to the outputs of masked copies of one image at a
    time: it must score each row on its own (for example
    ``lambda out: out[:, 3]``).

    pytorch-grad-cam's ``ScoreCAM`` (the ``"channel_softmax"`` weighting)
    upsamples the activations into masks with
    :class:`torch.nn.UpsamplingBilinear2d`, that is with
    ``align_corners=True``, and adds :math:`10^{-8}` to the min-max span.
    This class upsamples with ``align_corners=False``, as every other resize
    in both libraries does (the final maps included). Where the target layer
    is smaller than the input, the masks and so the weights differ a little;
    with the same upsampling the maps agree to float32 rounding.

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
    >>> x = torch.randn(2, 3, 10, 10)
    >>> ScoreCAM(model, "1", batch_size=16, top_k=4)(x).shape
    torch.Size([2, 10, 10])
    >>> ScoreCAM(model, "1", weights="channel_softmax")(x).shape
    torch.Size([2, 10, 10])
    """

    uses_gradients: ClassVar[bool] = False

    def __init__(
        self,
        model: nn.Module,
        target_layer: LayersLike,
        *,
        reshape_transform: ReshapeTransform | None = None,
        batch_size: int = 64,
        top_k: int | None = None,
        weights: Literal["probability", "channel_softmax"] = "probability",
        relu: bool = True,
    ) -> None:
        super().__init__(model, target_layer, reshape_transform=reshape_transform, relu=relu)
        self.batch_size = positive_int(batch_size, "batch_size")
        self.top_k = positive_int(top_k, "top_k", allow_none=True)
        if weights not in _WEIGHTS:
            msg = (
                f"weights must be 'probability' (the authors' Score-CAM) or "
                f"'channel_softmax' (pytorch-grad-cam's and torchcam's), got {weights!r}"
            )
            raise ValueError(msg)
        self.weights = weights

    def __repr__(self) -> str:
        names = [name for name, _ in self.layers]
        layer = names[0] if len(names) == 1 else names
        return f"ScoreCAM(target_layer={layer!r}, weights={self.weights!r})"

    def _maps(self, x: Tensor, target: Target) -> list[Tensor]:
        record = self._run(x, target)
        with eval_mode(self.model), torch.no_grad():
            return [self._layer_map(x, a, target, record.indices) for a in record.activations]

    def _layer_map(
        self, x: Tensor, activations: Tensor, target: Target, indices: Tensor | None
    ) -> Tensor:
        """Score-CAM at one layer: mask, batch, forward, score, weight."""
        size = (x.shape[-2], x.shape[-1])
        chosen = self._chosen(activations)  # [B, K]: the channels to score
        scores = torch.zeros(activations.shape[:2], dtype=activations.dtype, device=x.device)
        for i in range(x.shape[0]):
            channels = chosen[i].nonzero()[:, 0]
            for start in range(0, len(channels), self.batch_size):
                batch = channels[start : start + self.batch_size]
                # mask: each channel upsampled to the input and min-max normalised
                masks = normalize(upsample(activations[i, batch], size))  # [n, H, W]
                # forward: the image times each mask, n masked copies in one batch
                output = self.model(x[i] * masks[:, None].to(x.dtype))
                # score: each masked copy's probability (or logit) of the explained class
                score = self._score(output, target, indices, i, len(batch))
                scores[i, batch] = score.to(scores.dtype)
        # weight: the scores themselves, or their softmax over the chosen channels
        if self.weights == "channel_softmax":
            scores = scores.masked_fill(~chosen, float("-inf")).softmax(dim=1)
        return torch.einsum("bk,bkhw->bhw", scores, activations)

    def _chosen(self, activations: Tensor) -> Tensor:
        """The channels to score ``[B, K]``: within ``top_k``, and not constant for "probability"."""
        chosen = torch.ones(activations.shape[:2], dtype=torch.bool, device=activations.device)
        if self.top_k is not None and self.top_k < activations.shape[1]:
            top = activations.mean(dim=(2, 3)).topk(self.top_k, dim=1).indices
            chosen = torch.zeros_like(chosen).scatter_(1, top, True)
        if self.weights == "probability":  # the authors skip constant channels (weight 0)
            flat = activations.flatten(2)
            chosen &= flat.amax(dim=2) > flat.amin(dim=2)
        return chosen

    def _score(
        self, output: object, target: Target, indices: Tensor | None, image: int, n: int
    ) -> Tensor:
        """The scores ``[n]`` of ``n`` masked copies of image ``image``: probabilities or logits."""
        if indices is None:  # a callable target scores each copy itself
            scores, _ = resolve_target(output, target, n)
        else:
            logits = check_logits(output, n)
            if self.weights == "probability":
                logits = logits.softmax(dim=1)
            scores = logits[:, indices[image]]
        check_finite(scores, "scores of the masked inputs")
        return scores
