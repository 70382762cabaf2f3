"""How similar are two maps: rank and linear correlation, structural similarity."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor


def gaussian_kernel(sigma: float, size: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    r = torch.arange(size, dtype=dtype, device=device) - (size - 1) / 2
    k = torch.exp(-(r**2) / (2 * sigma**2))
    return k / k.sum()


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
    k1 = gaussian_kernel(sigma, size, dtype, a.device)
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
