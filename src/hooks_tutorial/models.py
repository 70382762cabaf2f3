"""Small models for the tutorial pages: a three-block CNN and a one-conv toy.

:class:`SimpleCNN` is the model the Grad-CAM pages explain. Its layers have
names a reader can type (``model.conv3``, ``"relu3"``), its last conv block
keeps an 8x8 map for 64x64 inputs, and global average pooling sits before
the single linear layer, so CAM and Grad-CAM can be compared exactly.

:class:`TinyConvNet` is the one-conv model of the hook examples: ``model.conv``
on a 1-channel 4x4 input, small enough to print every number.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, cast

import torch
from torch import Tensor, nn

from ._checks import positive_int

__all__ = ["SimpleCNN", "TinyConvNet"]


class SimpleCNN(nn.Module):
    r"""Three conv blocks, global average pooling and one linear layer.

    ======  ==========================================  ========================
    block   layers                                      output for a 64x64 input
    ======  ==========================================  ========================
    1       ``conv1`` (5x5, stride 2), ``bn1``,          ``[B, c1, 16, 16]``
            ``relu1``, ``pool1``
    2       ``conv2``, ``bn2``, ``relu2``, ``pool2``    ``[B, c2, 8, 8]``
    3       ``conv3``, ``bn3``, ``relu3``               ``[B, c3, 8, 8]``
    head    ``gap``, ``flatten``, ``fc``                ``[B, num_classes]``
    ======  ==========================================  ========================

    The strided first convolution keeps training fast on a CPU; block 3 has no
    pooling, so a Grad-CAM on ``relu3`` (or ``conv3``) has an 8x8 map whose
    cells see 35x35 pixels. With global average pooling before ``fc``, the
    score of class :math:`c` is linear in the last feature map :math:`A`
    (``relu3``'s output, :math:`Z = h w` positions):

    .. math::

        y^c = \sum_k w^c_k \frac{1}{Z} \sum_{i,j} A^k_{ij} + b^c,

    so the gradient :math:`\partial y^c / \partial A^k_{ij} = w^c_k / Z` is the
    same at every position, and Grad-CAM equals the class activation map
    :math:`\mathrm{CAM}^c = \mathrm{ReLU}(\sum_k w^c_k A^k)` divided by
    :math:`Z`. The ReLUs are not in-place, so hooks on any layer are safe.

    ``pool="max"`` replaces the average by a maximum (global max pooling; the
    layer keeps the name ``gap``). Grad-CAM then still equals CAM / Z (each
    channel's gradient, now at one position, still sums to :math:`w^c_k`),
    but the gradient is no longer the same at every position, so HiResCAM and
    XGrad-CAM differ from Grad-CAM. On the generated shapes it learns several
    times faster, which is why :func:`hooks_tutorial.pretrained` uses it (see
    ``benchmarks/bench_training.py``).

    Parameters
    ----------
    num_classes : int, default 5
        Number of output scores (logits).
    in_channels : int, default 3
        Channels of the input images.
    channels : (int, int, int), default (16, 32, 64)
        Output channels of the three conv blocks.
    pool : {"avg", "max"}, default "avg"
        Global pooling before ``fc`` (the ``gap`` layer).
    seed : int or None, default None
        If given, initialise the weights from this seed without touching the
        global random state, so ``SimpleCNN(seed=0)`` is the same network on
        every run (with the same torch version).

    Raises
    ------
    ValueError
        If a size is not a positive int, or ``pool`` is unknown.

    Examples
    --------
    >>> model = SimpleCNN(seed=0).eval()
    >>> model(torch.rand(2, 3, 64, 64)).shape
    torch.Size([2, 5])
    >>> model.forward_features(torch.rand(2, 3, 64, 64)).shape
    torch.Size([2, 64, 8, 8])
    """

    def __init__(
        self,
        num_classes: int = 5,
        in_channels: int = 3,
        channels: tuple[int, int, int] = (16, 32, 64),
        *,
        pool: Literal["avg", "max"] = "avg",
        seed: int | None = None,
    ) -> None:
        super().__init__()
        if len(cast("Sequence[int]", channels)) != 3:
            msg = f"channels must give the widths of the 3 conv blocks, got {channels!r}"
            raise ValueError(msg)
        c1, c2, c3 = channels
        sizes = {
            "num_classes": num_classes,
            "in_channels": in_channels,
            "c1": c1,
            "c2": c2,
            "c3": c3,
        }
        for name, value in sizes.items():
            positive_int(value, name)
        if pool not in ("avg", "max"):
            msg = f"pool must be 'avg' (global average pooling) or 'max', got {pool!r}"
            raise ValueError(msg)
        self.num_classes = num_classes
        self.pool = pool
        with torch.random.fork_rng(devices=[], enabled=seed is not None):
            if seed is not None:
                torch.manual_seed(seed)
            self.conv1 = nn.Conv2d(in_channels, c1, kernel_size=5, stride=2, padding=2, bias=False)
            self.bn1 = nn.BatchNorm2d(c1)
            self.relu1 = nn.ReLU()
            self.pool1 = nn.MaxPool2d(2)
            self.conv2 = nn.Conv2d(c1, c2, kernel_size=3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(c2)
            self.relu2 = nn.ReLU()
            self.pool2 = nn.MaxPool2d(2)
            self.conv3 = nn.Conv2d(c2, c3, kernel_size=3, padding=1, bias=False)
            self.bn3 = nn.BatchNorm2d(c3)
            self.relu3 = nn.ReLU()
            self.gap = nn.AdaptiveAvgPool2d(1) if pool == "avg" else nn.AdaptiveMaxPool2d(1)
            self.flatten = nn.Flatten()
            self.fc = nn.Linear(c3, num_classes)

    def forward_features(self, x: Tensor) -> Tensor:
        """Run the three conv blocks: the feature map ``A`` that CAM methods use.

        Parameters
        ----------
        x : Tensor
            Images ``[B, in_channels, H, W]``.

        Returns
        -------
        Tensor
            ``relu3``'s output, ``[B, c3, H / 8, W / 8]``.
        """
        x = self.pool1(self.relu1(self.bn1(self.conv1(x))))
        x = self.pool2(self.relu2(self.bn2(self.conv2(x))))
        features: Tensor = self.relu3(self.bn3(self.conv3(x)))
        return features

    def forward(self, x: Tensor) -> Tensor:
        """Class scores (logits, before softmax) ``[B, num_classes]``."""
        scores: Tensor = self.fc(self.flatten(self.gap(self.forward_features(x))))
        return scores


class TinyConvNet(nn.Module):
    """The one-conv model of the hook examples: ``conv``, ``relu``, ``flatten``, ``fc``.

    A 1-channel 4x4 input goes through ``conv`` (3x3, padding 1, 2 channels),
    ``relu`` and ``fc`` to ``num_classes`` scores; every tensor is small
    enough to print.

    Parameters
    ----------
    in_channels : int, default 1
        Input channels.
    out_channels : int, default 2
        Channels of ``conv``.
    num_classes : int, default 2
        Output scores.
    input_size : int, default 4
        Side of the square input.
    seed : int or None, default 0
        Seed for the weights (``None``: use the global random state).

    Raises
    ------
    ValueError
        If a size is not a positive int.

    Examples
    --------
    >>> model = TinyConvNet()
    >>> outputs = []
    >>> handle = model.conv.register_forward_hook(lambda m, args, out: outputs.append(out.shape))
    >>> model(torch.randn(1, 1, 4, 4)).shape
    torch.Size([1, 2])
    >>> handle.remove()
    >>> outputs
    [torch.Size([1, 2, 4, 4])]
    """

    def __init__(
        self,
        in_channels: int = 1,
        out_channels: int = 2,
        num_classes: int = 2,
        input_size: int = 4,
        *,
        seed: int | None = 0,
    ) -> None:
        super().__init__()
        sizes = {
            "in_channels": in_channels,
            "out_channels": out_channels,
            "num_classes": num_classes,
            "input_size": input_size,
        }
        for name, value in sizes.items():
            positive_int(value, name)
        self.num_classes = num_classes
        with torch.random.fork_rng(devices=[], enabled=seed is not None):
            if seed is not None:
                torch.manual_seed(seed)
            self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1)
            self.relu = nn.ReLU()
            self.flatten = nn.Flatten()
            self.fc = nn.Linear(out_channels * input_size * input_size, num_classes)

    def forward(self, x: Tensor) -> Tensor:
        """Scores ``[B, num_classes]`` for inputs ``[B, in_channels, input_size, input_size]``."""
        scores: Tensor = self.fc(self.flatten(self.relu(self.conv(x))))
        return scores
