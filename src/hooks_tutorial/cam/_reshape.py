"""A layer's output as the feature map ``[B, C, h, w]`` that the CAM methods read.

The public helpers are ``reshape_transform`` functions for the two common
layouts that are not ``[B, C, h, w]``: transformer tokens ``[B, N, C]`` and
channels-last maps ``[B, H, W, C]``. The private ones walk a layer's output
when it is a tuple or a dict, and tell a channels-last output from its
parameters.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any

from torch import Tensor, nn

__all__ = ["channels_last_reshape_transform", "token_reshape_transform"]


def token_reshape_transform(
    tokens: Tensor, *, prefix_tokens: int | None = None, grid: tuple[int, int] | None = None
) -> Tensor:
    """Drop the class (and register) tokens and arrange the patch tokens on their grid.

    Use it as ``reshape_transform`` of a CAM method, directly (the grid is
    inferred) or with options bound by :func:`functools.partial`.

    Parameters
    ----------
    tokens : torch.Tensor
        Token activations ``[B, N, C]`` (batch first), the first
        ``prefix_tokens`` of which are not patches. For a sequence-first
        layer (``[N, B, C]``, such as ``nn.TransformerEncoderLayer`` without
        ``batch_first=True``) pass
        ``reshape_transform=lambda t: token_reshape_transform(t.transpose(0, 1))``.
    prefix_tokens : int, optional
        Number of leading non-patch tokens (1 for a class token, 1 + R with
        R register tokens). If omitted: 0 when ``N`` is a square number,
        1 when ``N - 1`` is, else an error; with ``grid``,
        ``N - h * w``.
    grid : (int, int), optional
        The patch grid ``(h, w)``, needed when it is not square.

    Returns
    -------
    torch.Tensor
        ``[B, C, h, w]`` (a view of ``tokens`` where possible).

    Raises
    ------
    ValueError
        If ``tokens`` is not 3-D or the tokens do not fit the grid.

    See Also
    --------
    channels_last_reshape_transform : for maps ``[B, H, W, C]`` (timm's Swin).

    Examples
    --------
    >>> import functools
    >>> import torch
    >>> token_reshape_transform(torch.zeros(2, 1 + 14 * 14, 64)).shape
    torch.Size([2, 64, 14, 14])
    >>> with_registers = functools.partial(token_reshape_transform, prefix_tokens=5)
    >>> with_registers(torch.zeros(2, 5 + 16, 8)).shape
    torch.Size([2, 8, 4, 4])
    >>> token_reshape_transform(torch.zeros(1, 3 + 6, 8), grid=(2, 3)).shape
    torch.Size([1, 8, 2, 3])
    """
    if tokens.dim() != 3:
        hint = (
            "; a 4-D output needs no token reshape: a feature map [B, C, H, W] needs no "
            "reshape_transform at all, and a channels-last one [B, H, W, C] (timm's Swin "
            "stages and blocks) needs reshape_transform=channels_last_reshape_transform"
            if tokens.dim() == 4
            else ""
        )
        msg = f"expected tokens [B, N, C] (3-D, batch first), got shape {tuple(tokens.shape)}{hint}"
        raise ValueError(msg)
    b, n, c = tokens.shape
    if grid is not None:
        h, w = grid
        prefix = n - h * w if prefix_tokens is None else prefix_tokens
        if h < 1 or w < 1 or prefix < 0 or prefix + h * w != n:
            msg = (
                f"{n} tokens do not fit a grid of {h} x {w} = {h * w} patches with "
                f"{prefix_tokens if prefix_tokens is not None else 'the remaining'} prefix "
                "token(s); check grid=(h, w) and prefix_tokens"
            )
            raise ValueError(msg)
    else:
        if prefix_tokens is None:
            if _is_square(n):
                prefix = 0
            elif n > 1 and _is_square(n - 1):
                prefix = 1
            else:
                msg = (
                    f"cannot arrange {n} tokens in a square grid (neither {n} nor {n - 1} is a "
                    "square number); pass prefix_tokens (1 for a class token, 1 + R with R "
                    "register tokens) or grid=(h, w), for example reshape_transform="
                    "functools.partial(token_reshape_transform, prefix_tokens=5)"
                )
                raise ValueError(msg)
        else:
            prefix = prefix_tokens
            if prefix < 0 or prefix >= n or not _is_square(n - prefix):
                msg = (
                    f"{n} tokens minus {prefix} prefix token(s) leaves {n - prefix}, which is "
                    "not a square number of patches; check prefix_tokens or pass grid=(h, w) "
                    "for a non-square grid"
                )
                raise ValueError(msg)
        h = w = math.isqrt(n - prefix)
    return tokens[:, prefix:, :].reshape(b, h, w, c).permute(0, 3, 1, 2)


def _is_square(n: int) -> bool:
    return n >= 1 and math.isqrt(n) ** 2 == n


def channels_last_reshape_transform(features: Tensor) -> Tensor:
    """Move the channels of a channels-last map ``[B, H, W, C]`` to dim 1: ``[B, C, H, W]``.

    The CAM methods read dim 1 of a layer's output as its channels. Some
    models keep the channels last instead: timm's Swin Transformer stages and
    blocks, and the ``LayerNorm`` and ``nn.Linear`` layers that act on such a
    map, return ``[B, H, W, C]``. Pass this function as ``reshape_transform``
    for them. (A convolution run in the ``torch.channels_last`` *memory
    format* is a different thing: its output's shape is still
    ``[B, C, H, W]``, only its strides differ, and it needs no transform.)

    Parameters
    ----------
    features : torch.Tensor
        A channels-last map ``[B, H, W, C]``.

    Returns
    -------
    torch.Tensor
        ``features.permute(0, 3, 1, 2)``, a view ``[B, C, H, W]``.

    Raises
    ------
    ValueError
        If ``features`` is not 4-D.

    See Also
    --------
    token_reshape_transform : for transformer tokens ``[B, N, C]``.

    Examples
    --------
    >>> import torch
    >>> channels_last_reshape_transform(torch.zeros(2, 7, 7, 768)).shape
    torch.Size([2, 768, 7, 7])

    As the ``reshape_transform`` of a CAM method, for a stage that ends in a
    ``LayerNorm`` over the last dimension, as Swin's do:

    >>> from torch import nn
    >>> from hooks_tutorial.cam import GradCAM
    >>> class ToChannelsLast(nn.Module):
    ...     def forward(self, x):
    ...         return x.permute(0, 2, 3, 1)
    >>> model = nn.Sequential(nn.Conv2d(3, 8, 4, stride=4), ToChannelsLast(),
    ...                       nn.LayerNorm(8), nn.Flatten(), nn.Linear(8 * 4 * 4, 2))
    >>> cam = GradCAM(model, "2", reshape_transform=channels_last_reshape_transform)
    >>> cam(torch.randn(1, 3, 16, 16), raw=True).shape
    torch.Size([1, 4, 4])
    """
    if features.dim() != 4:
        hint = (
            "; for transformer tokens [B, N, C] use token_reshape_transform"
            if features.dim() == 3
            else ""
        )
        msg = (
            f"expected a channels-last map [B, H, W, C] (4-D), got shape "
            f"{tuple(features.shape)}{hint}"
        )
        raise ValueError(msg)
    return features.permute(0, 3, 1, 2)


# -- private: channels-last detection, outputs that are tuples or dicts -------
_CHANNELS_FIRST = (nn.Conv2d, nn.ConvTranspose2d, nn.BatchNorm2d, nn.InstanceNorm2d, nn.GroupNorm)


def features_last(layer: nn.Module) -> tuple[int, str] | None:
    """The feature count of ``layer`` if its last parametrised layer puts features last.

    Walks ``layer`` (itself included) back from its last submodule to the
    first that states a channel count. A convolution or a BatchNorm /
    GroupNorm puts its channels in dim 1: ``None``. An ``nn.Linear`` or a
    ``LayerNorm`` over one dimension acts on the *last* dimension: its
    ``out_features`` or ``normalized_shape``, and a description of where the
    number comes from. ``None`` too when no submodule states a count (a
    ReLU, a parameter-free block).
    """
    for name, module in reversed(list(layer.named_modules())):
        if isinstance(module, _CHANNELS_FIRST):
            return None
        kind = type(module).__name__
        where = f"of its {kind} {name!r}" if name else f"of the {kind} itself"
        if isinstance(module, nn.Linear):
            return module.out_features, f"out_features {where}"
        if isinstance(module, nn.LayerNorm) and len(module.normalized_shape) == 1:
            return module.normalized_shape[0], f"normalized_shape {where}"
    return None


def check_channels_first(features: Tensor, layer: nn.Module, name: str) -> None:
    """Raise if the 4-D output of ``layer`` is channels-last ``[B, H, W, C]``.

    The CAM methods read dim 1 as the channels, so a channels-last output
    would give a wrong map without any error. It is detected from the
    layer's own parameters (see :func:`features_last`): their feature count
    is the size of the last dimension and not of dim 1. When it is both
    (``H`` or ``W`` equal to ``C``) the layout is known only if the layer
    itself is an ``nn.Linear`` or ``nn.LayerNorm``, which always act on the
    last dimension; a block that ends in one may permute back, so it is left
    alone, as is a layer without such parameters.
    """
    found = features_last(layer)
    if found is None or features.shape[-1] != found[0]:
        return
    channels, where = found
    surely_last = type(layer) in (nn.Linear, nn.LayerNorm)
    if features.shape[1] != channels or surely_last:
        msg = (
            f"the output of layer {name!r} has shape {tuple(features.shape)}: its last "
            f"dimension is {channels}, the {where}, so it is channels-last [B, H, W, C] "
            "(as timm's Swin stages and blocks are), but CAM methods read dim 1 as the "
            "channels and the map would be wrong; pass "
            "reshape_transform=channels_last_reshape_transform"
        )
        raise ValueError(msg)


def map_tensors(fn: Callable[[Tensor], object], output: object) -> object:
    """Apply ``fn`` to every tensor in a layer's output: a tensor, a tuple, list or dict of them.

    The structure is rebuilt around the results (same type, same keys);
    anything that is not a tensor is kept as it is.
    """
    if isinstance(output, Tensor):
        return fn(output)
    if isinstance(output, dict):
        mapped = copy.copy(output)  # the same kind of dict (OrderedDict, ...)
        for key, value in output.items():
            mapped[key] = map_tensors(fn, value)
        return mapped
    if isinstance(output, (tuple, list)):
        items = [map_tensors(fn, value) for value in output]
        if isinstance(output, list):
            return items
        rebuild: Any = type(output)
        return rebuild(*items) if hasattr(output, "_fields") else rebuild(items)  # namedtuple?
    return output


def tensors_in(output: object) -> list[Tensor]:
    """The tensors in a layer's output, in the order :func:`map_tensors` visits them."""
    found: list[Tensor] = []
    map_tensors(found.append, output)
    return found
