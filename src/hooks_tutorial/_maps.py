"""Saliency maps ``[B, h, w]``: check them against images, resize, normalise to [0, 1]."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor


def upsample(maps: Tensor, size: tuple[int, int]) -> Tensor:
    """Resize maps ``[B, h, w]`` to ``size`` with bilinear interpolation."""
    if tuple(maps.shape[-2:]) == tuple(size):
        return maps
    return F.interpolate(maps[:, None], size=size, mode="bilinear", align_corners=False)[:, 0]


def normalize(maps: Tensor) -> Tensor:
    """Min-max normalise each map of ``[B, ...]`` to [0, 1]; a constant map becomes zeros.

    A map whose range is below the floating-point resolution of its values
    (``max - min <= eps * max(|min|, |max|)``) is constant up to rounding and
    becomes all zeros instead of amplified rounding noise (or NaN for 0 / 0).
    """
    lo, span, ok = min_and_span(maps)
    shape = (-1,) + (1,) * (maps.dim() - 1)
    out = (maps - lo.view(shape)) / span.view(shape)
    return torch.where(ok.view(shape), out, torch.zeros_like(out))


def min_and_span(maps: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Per map of ``[B, ...]``: the minimum, the span (1 where not ``ok``) and ``ok``.

    ``normalize(maps)`` is ``(maps - lo) / span`` where ``ok``, zeros elsewhere.
    """
    flat = maps.flatten(1)
    lo = flat.min(dim=1).values
    hi = flat.max(dim=1).values
    span = hi - lo
    scale = torch.maximum(lo.abs(), hi.abs())
    ok = span > torch.finfo(maps.dtype).eps * scale
    return lo, torch.where(ok, span, torch.ones_like(span)), ok


def check_maps(maps: object, x: Tensor, what: str = "saliency") -> Tensor:
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
        msg = (
            f"the {what} maps contain NaN or infinity; check the model's input and "
            "weights for NaN or infinity (torch.isfinite(x).all()), or clean the maps "
            "with torch.nan_to_num(maps)"
        )
        raise ValueError(msg)
    return upsample(maps.to(device=x.device, dtype=x.dtype), (x.shape[-2], x.shape[-1]))
