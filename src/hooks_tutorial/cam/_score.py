"""Score-CAM: channel weights from forward passes on masked inputs, no gradients."""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar, Literal, TypeAlias

import torch
from torch import Tensor, nn

from .._checks import check_finite, positive_int
from .._maps import min_and_span, normalize, upsample
from .._scoring import (
    ChannelsLastForward,
    Target,
    check_logits,
    eval_mode,
    resolve_target,
    row_scores,
)
from ..layers import LayersLike
from ._base import BaseCAM, ReshapeTransform
from ._fold import FoldedPasses

__all__ = ["ScoreCAM", "ScoreWeights"]

#: How Score-CAM turns the scores of the masked inputs into channel weights.
ScoreWeights: TypeAlias = Literal["probability", "channel_softmax"]
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

    Channels that are constant over space give an all-zero mask. With
    ``"probability"`` they get weight zero, as in the authors' code; with
    ``"channel_softmax"`` they take part in the softmax with the logit of
    the all-zero input (computed once per call), as in the peers' code. With
    a callable target, the callable's score of each masked input replaces
    the probability (``"probability"``, no softmax) or the logit
    (``"channel_softmax"``).

    The cost is one forward pass per channel and image (512 for a ResNet-18
    ``layer4``); the masked inputs are batched ``batch_size`` at a time, in
    ``torch.inference_mode()`` and in the channels-last memory format
    (faster convolutions on the CPU; a model whose forward calls
    ``.view()`` on a feature map that this makes non-contiguous falls back
    to the standard format). ``top_k`` scores only the ``k`` channels with
    the largest mean activation of each image, a large speed-up at a small
    cost in agreement with the exact map (see ``benchmarks/bench_scorecam.py``).

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
    target is applied to the outputs of masked copies, whose rows may come
    from different images: it must score each row on its own (for example
    ``lambda out: out[:, 3]``).

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
        weights: ScoreWeights = "probability",
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
        self.weights: ScoreWeights = weights

    def __repr__(self) -> str:
        names = [name for name, _ in self.layers]
        layer = names[0] if len(names) == 1 else names
        return f"ScoreCAM(target_layer={layer!r}, weights={self.weights!r})"

    def _maps(self, x: Tensor, target: Target) -> list[Tensor]:
        record = self._run(x, target)
        with eval_mode(self.model):
            forward = _Forward(self.model, x[:1])
            return [
                self._layer_map(x, a, target, record.indices, forward) for a in record.activations
            ]

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
        return self._budget(activations) & _varying(activations)

    def _budget(self, activations: Tensor) -> Tensor:
        """The ``top_k`` channels by mean activation (all channels without ``top_k``)."""
        budget = torch.ones(activations.shape[:2], dtype=torch.bool, device=activations.device)
        if self.top_k is not None and self.top_k < activations.shape[1]:
            top = activations.mean(dim=(2, 3)).topk(self.top_k, dim=1).indices
            budget = torch.zeros_like(budget).scatter_(1, top, True)
        return budget

    def _layer_map(
        self,
        x: Tensor,
        activations: Tensor,
        target: Target,
        indices: Tensor | None,
        forward: _Forward,
    ) -> Tensor:
        size = (x.shape[-2], x.shape[-1])
        budget = self._budget(activations)
        varying = _varying(activations)
        pairs = (budget & varying).nonzero()  # [P, 2]: (image, channel)
        softmax = self.weights == "channel_softmax"
        scores = torch.zeros(activations.shape[:2], dtype=activations.dtype, device=x.device)
        grid = activations.shape[-2] * activations.shape[-1]
        counts = torch.bincount(pairs[:, 0], minlength=x.shape[0]).tolist()
        factor = [forward.factorable(grid + 1, count) for count in counts]
        rows = [x[i : i + 1] for i in range(x.shape[0])]
        with torch.inference_mode():
            basis = _basis(activations.shape[-2:], size, x) if any(factor) else None
            for image, channel in _batches(pairs, self.batch_size, by_image=any(factor)):
                i = int(image[0])
                output = None
                if basis is not None and factor[i]:
                    coefficients = _coefficients(activations[image, channel], size)
                    output = forward.factored(rows[i], basis, coefficients)
                if output is None:
                    masks = normalize(upsample(activations[image, channel], size))
                    output = forward(x[image] * masks[:, None].to(x.dtype))
                if softmax:
                    batch_scores = _logits(output, target, indices, image)
                else:
                    batch_scores = row_scores(output, target, indices, image)
                check_finite(batch_scores, "scores of the masked inputs")
                scores[image, channel] = batch_scores.to(scores.dtype)
            empty = budget & ~varying
            if softmax and bool(empty.any()):
                # A constant channel's mask is all zeros: its masked input is the
                # all-zero image, whatever the channel; score it once.
                zero_output = forward(torch.zeros_like(x[:1]))
                if indices is None:
                    zero_scores = _logits(zero_output, target, None, indices_of_one(x))
                else:
                    zero_scores = check_logits(zero_output, 1)[0, indices]
                check_finite(zero_scores, "scores of the all-zero input")
                zero_scores = zero_scores.to(scores.dtype).expand(x.shape[0])
                scores = torch.where(empty, zero_scores[:, None], scores)
        if softmax:
            # Softmax over the channels in the budget; the others get weight zero.
            scores = scores.masked_fill(~budget, float("-inf")).softmax(dim=1)
        return torch.einsum("bk,bkhw->bhw", scores, activations)


def _batches(pairs: Tensor, size: int, *, by_image: bool) -> Iterator[tuple[Tensor, Tensor]]:
    """``(image, channel)`` index batches of at most ``size`` pairs (one image each if asked)."""
    groups = [pairs]
    if by_image:
        groups = [pairs[pairs[:, 0] == i] for i in sorted(set(pairs[:, 0].tolist()))]
    for group in groups:
        for start in range(0, group.shape[0], size):
            image, channel = group[start : start + size].unbind(dim=1)
            yield image, channel


def _basis(grid: torch.Size, size: tuple[int, int], x: Tensor) -> Tensor:
    """The upsampled unit maps of the feature grid and a constant map, ``[h * w + 1, H, W]``.

    ``upsample`` is linear, so ``upsample(a) = sum_j a_j basis_j`` and a mask
    ``(upsample(a) - lo) / span`` is ``basis`` weighted by :func:`_coefficients`.
    """
    h, w = grid
    units = torch.eye(h * w, dtype=x.dtype, device=x.device).view(h * w, h, w)
    ones = torch.ones(1, *size, dtype=x.dtype, device=x.device)
    return torch.cat([upsample(units, size), ones])


def _coefficients(activations: Tensor, size: tuple[int, int]) -> Tensor:
    """The masks ``normalize(upsample(a))`` of ``[n, h, w]`` as weights of :func:`_basis`."""
    lo, span, ok = min_and_span(upsample(activations, size))
    scale = torch.where(ok, 1 / span, torch.zeros_like(span))[:, None]
    return torch.cat([activations.flatten(1) * scale, (-lo * scale[:, 0])[:, None]], dim=1)


def indices_of_one(x: Tensor) -> Tensor:
    """Row indices ``[0]``: one output row, from one all-zero input."""
    return torch.zeros(1, dtype=torch.long, device=x.device)


def _varying(activations: Tensor) -> Tensor:
    """Channels that are not constant over space, ``[B, K]``."""
    flat = activations.flatten(2)
    return flat.amax(dim=2) > flat.amin(dim=2)


def _logits(output: object, target: Target, indices: Tensor | None, rows: Tensor) -> Tensor:
    """Each row's logit of its image's class (or a callable target's score of the row)."""
    if indices is None:
        scores, _ = resolve_target(output, target, rows.shape[0])
        return scores
    logits = check_logits(output, rows.shape[0])
    return logits.gather(1, indices[rows][:, None]).squeeze(1)


class _Forward(ChannelsLastForward):
    """Run the model on masked inputs: channels-last if the model allows, BatchNorm folded.

    The channels-last fallback is :class:`ChannelsLastForward`'s. Each
    eval-mode BatchNorm that follows a convolution is folded into it for
    these passes (see :class:`~hooks_tutorial.cam._fold.FoldedPasses`),
    found on ``probe`` (one image, in the format of the passes) at the first
    pass.
    """

    def __init__(self, model: nn.Module, probe: Tensor) -> None:
        super().__init__(model)
        self.probe = probe
        self.passes: FoldedPasses | None = None

    def _passes(self) -> FoldedPasses:
        if self.passes is None:
            cl = self.channels_last and self.probe.dim() == 4  # as the inputs (see __call__)
            fmt = torch.channels_last if cl else torch.contiguous_format
            with torch.inference_mode():
                self.passes = FoldedPasses(self.model, self.probe.contiguous(memory_format=fmt))
        return self.passes

    def _run(self, inputs: Tensor) -> object:
        return self._passes()(inputs)

    def factorable(self, basis_size: int, count: int) -> bool:
        """Whether :meth:`factored` applies and pays off for ``count`` masks of one image."""
        if not self.channels_last:
            return False
        try:
            passes = self._passes()
        except RuntimeError as error:
            self._leave_channels_last(error)
            return False
        return passes.factorable(basis_size, count)

    def factored(self, image: Tensor, basis: Tensor, coefficients: Tensor) -> object | None:
        """``model(image * (coefficients @ basis))`` through the first conv's linearity, or None."""
        if not self.channels_last or self.passes is None:
            return None
        try:
            return self.passes.factored(image, basis, coefficients)
        except RuntimeError as error:
            self._leave_channels_last(error)
            return None

    def _leave_channels_last(self, error: RuntimeError) -> None:
        super()._leave_channels_last(error)
        self.passes = None  # found on a channels-last probe: find again
