"""Class activation maps: Grad-CAM and its family, built on PyTorch hooks.

Every method is constructed as ``Method(model, target_layer, *,
reshape_transform=None)`` and called as ``cam(x, target=None)``; it returns
maps ``[B, H, W]`` in [0, 1] (or raw maps with ``raw=True``). Hooks live only
during a call and act only on the forward pass that the call runs, so threads
can share one model (:class:`BaseCAM` states the rule); the model runs in
eval mode for the call, which a pass that another thread runs meanwhile sees
too, and is otherwise left as it was (training flags, parameters' ``.grad``,
BatchNorm statistics).

========================  ==================================================
:class:`GradCAM`          channels weighted by their mean gradient
:class:`GradCAMPlusPlus`  positive gradients weighted per position
:class:`XGradCAM`         gradients averaged with activation weights
:class:`LayerCAM`         positive gradient times activation, per position
:class:`HiResCAM`         gradient times activation, per position
:class:`ScoreCAM`         weights from scores of masked inputs, two variants
:class:`EigenCAM`         first principal component (class-agnostic)
:class:`CAM`              the original CAM, for GAP -> linear networks
:class:`GuidedBackprop`   input saliency with guided ReLU gradients
:class:`GuidedGradCAM`    guided backpropagation x Grad-CAM
========================  ==================================================

A layer whose output is not ``[B, C, h, w]`` needs a ``reshape_transform``:
:func:`token_reshape_transform` for transformer tokens ``[B, N, C]``,
:func:`channels_last_reshape_transform` for channels-last maps ``[B, H, W,
C]`` (timm's Swin), and a function of your own for a tuple or dict of
levels (``lambda out: out["0"]``). A map that is zero everywhere comes with
a :class:`ZeroMapWarning` naming the cause.
"""

from __future__ import annotations

from ._base import BaseCAM
from ._guided import GuidedBackprop, GuidedGradCAM
from ._methods import CAM, EigenCAM, GradCAM, GradCAMPlusPlus, HiResCAM, LayerCAM, XGradCAM
from ._reshape import channels_last_reshape_transform, token_reshape_transform
from ._score import ScoreCAM
from ._warnings import ZeroMapWarning

__all__ = [
    "CAM",
    "BaseCAM",
    "EigenCAM",
    "GradCAM",
    "GradCAMPlusPlus",
    "GuidedBackprop",
    "GuidedGradCAM",
    "HiResCAM",
    "LayerCAM",
    "ScoreCAM",
    "XGradCAM",
    "ZeroMapWarning",
    "channels_last_reshape_transform",
    "token_reshape_transform",
]
