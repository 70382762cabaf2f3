"""Turn transformer tokens ``[B, N, C]`` into a feature map ``[B, C, h, w]``."""

from __future__ import annotations

import math

from torch import Tensor

__all__ = ["token_reshape_transform"]


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
        ``prefix_tokens`` of which are not patches.
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
        msg = (
            f"expected tokens [B, N, C] (3-D, batch first), got shape {tuple(tokens.shape)}; "
            "for a sequence-first layout write your own reshape_transform starting with "
            "t.transpose(0, 1)"
        )
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
