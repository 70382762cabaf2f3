"""Draw CAM heatmaps over images: :func:`overlay` for one image, :func:`plot_cams` for a grid.

matplotlib is imported inside the functions, so importing this module stays cheap.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
import torch.nn.functional as F

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from numpy.typing import NDArray

__all__ = ["overlay", "plot_cams"]


def _as_numpy(a: object, what: str) -> NDArray[Any]:
    if isinstance(a, torch.Tensor):
        return a.detach().cpu().numpy()
    if isinstance(a, np.ndarray):
        return a
    msg = f"expected the {what} as a torch.Tensor or a numpy array, got {type(a).__name__}"
    raise TypeError(msg)


def _image_hwc(image: object) -> NDArray[np.float64]:
    """Return ``image`` as a float array ``[H, W, 3]`` in [0, 1]."""
    is_torch = isinstance(image, torch.Tensor)
    a = _as_numpy(image, "image")
    if a.ndim == 4 and a.shape[0] == 1:
        a = a[0]
    if a.ndim == 2:
        a = a[:, :, None]
    elif a.ndim == 3:
        first, last = a.shape[0] in (1, 3), a.shape[-1] in (1, 3, 4)
        if first and (is_torch or not last):
            a = np.moveaxis(a, 0, -1)
        elif not last:
            msg = (
                f"cannot tell the colour channels in an image of shape {a.shape}; pass "
                "[C, H, W] or [H, W, C] with C = 1 or 3 (or [H, W] for grey)"
            )
            raise ValueError(msg)
    else:
        msg = (
            f"expected one image [C, H, W], [H, W, C] or [H, W], got shape {a.shape}; for a "
            "batch, use plot_cams or call overlay once per image"
        )
        raise ValueError(msg)
    if a.shape[-1] == 4:
        a = a[..., :3]  # drop the alpha channel of an RGBA image
    if a.shape[-1] == 1:
        a = np.repeat(a, 3, axis=-1)
    if a.dtype == np.uint8:
        out = a.astype(np.float64) / 255.0
    else:
        out = a.astype(np.float64)
        if not np.isfinite(out).all():
            msg = (
                "the image contains NaN or infinity; check where it came from, or clean "
                "it with torch.nan_to_num(image) (numpy.nan_to_num for an array)"
            )
            raise ValueError(msg)
        lo, hi = float(out.min()), float(out.max())
        if lo < 0.0 or hi > 1.0:  # e.g. a normalised network input: rescale for display
            out = (out - lo) / (hi - lo) if hi > lo else np.zeros_like(out)
    return out


def _heat(cam: object, size: tuple[int, int]) -> NDArray[np.float64]:
    """Return ``cam`` as ``[H, W]`` in [0, 1], resized to ``size`` if needed."""
    a = _as_numpy(cam, "cam").astype(np.float64)
    while a.ndim > 2 and a.shape[0] == 1:
        a = a[0]
    if a.ndim != 2:
        msg = f"expected one map [H, W] (or [1, H, W]), got shape {a.shape}"
        raise ValueError(msg)
    if not np.isfinite(a).all():
        msg = (
            "the map contains NaN or infinity; check the model's input and weights for "
            "NaN or infinity (torch.isfinite(x).all()), or clean the map with "
            "torch.nan_to_num(cam) (numpy.nan_to_num for an array)"
        )
        raise ValueError(msg)
    if a.shape != size:
        t = torch.from_numpy(a)[None, None]
        a = F.interpolate(t, size=size, mode="bilinear", align_corners=False)[0, 0].numpy()
    lo, hi = float(a.min()), float(a.max())
    if lo < 0.0 or hi > 1.0:
        a = (a - lo) / (hi - lo) if hi > lo else np.zeros_like(a)
    return np.clip(a, 0.0, 1.0)


def _colormap(name: str) -> Any:
    import matplotlib as mpl  # noqa: PLC0415 - keep `import hooks_tutorial.viz` cheap

    try:
        return mpl.colormaps[name]
    except KeyError:
        known = ", ".join(sorted(n for n in mpl.colormaps if not n.endswith("_r"))[:12])
        msg = f"unknown colormap {name!r}; try 'jet', 'viridis', 'inferno', 'turbo' ({known}, ...)"
        raise ValueError(msg) from None


def overlay(
    image: torch.Tensor | NDArray[Any],
    cam: torch.Tensor | NDArray[Any],
    *,
    alpha: float = 0.5,
    colormap: str = "jet",
) -> NDArray[np.float64]:
    r"""Blend a colour-mapped CAM over an image.

    .. math::

        \text{out} = (1 - \alpha)\, \text{image} + \alpha\, \text{colormap}(\text{cam})

    Parameters
    ----------
    image : torch.Tensor or numpy.ndarray
        One image, ``[C, H, W]`` or ``[H, W, C]`` with ``C`` = 1 or 3 (an
        RGBA ``[H, W, 4]`` image also works: its alpha channel is dropped),
        or ``[H, W]``. When both layouts fit, a tensor is read as
        ``[C, H, W]`` and an array as ``[H, W, C]``.
        ``uint8`` values are divided by 255; float values outside [0, 1]
        (a normalised network input) are min-max rescaled for display.
    cam : torch.Tensor or numpy.ndarray
        The map ``[H, W]`` (or ``[1, H, W]``), usually in [0, 1] as returned
        by a CAM method; values outside [0, 1] are min-max rescaled, and a
        map of another size is resized bilinearly to the image.
    alpha : float, default 0.5
        Weight of the heatmap, in [0, 1].
    colormap : str, default "jet"
        A matplotlib colormap name.

    Returns
    -------
    numpy.ndarray
        RGB float array ``[H, W, 3]`` in [0, 1], ready for ``plt.imshow``.

    Raises
    ------
    TypeError
        If ``image`` or ``cam`` is neither a tensor nor an array.
    ValueError
        If a shape cannot be understood, ``alpha`` is outside [0, 1], a value
        is NaN, or the colormap is unknown.

    Examples
    --------
    >>> import torch
    >>> image = torch.rand(3, 32, 32)
    >>> cam = torch.zeros(8, 8)
    >>> cam[2:4, 2:4] = 1.0
    >>> out = overlay(image, cam, alpha=0.4)
    >>> out.shape, out.dtype, bool(0 <= out.min() and out.max() <= 1)
    ((32, 32, 3), dtype('float64'), True)
    """
    if not 0.0 <= alpha <= 1.0:
        msg = f"alpha must be in [0, 1], got {alpha}"
        raise ValueError(msg)
    rgb = _image_hwc(image)
    heat = _heat(cam, (rgb.shape[0], rgb.shape[1]))
    colored = np.asarray(_colormap(colormap)(heat), dtype=np.float64)[..., :3]
    return np.clip((1.0 - alpha) * rgb + alpha * colored, 0.0, 1.0)


def _split_images(images: object) -> list[object]:
    if isinstance(images, (torch.Tensor, np.ndarray)):
        if images.ndim == 4:
            return list(images)
        if images.ndim in (2, 3):
            return [images]
        msg = f"expected images [B, C, H, W] (or one image), got shape {tuple(images.shape)}"
        raise ValueError(msg)
    if isinstance(images, Sequence) and not isinstance(images, (str, bytes)):
        return list(images)
    msg = f"expected images as a tensor, an array or a list of them, got {type(images).__name__}"
    raise TypeError(msg)


def plot_cams(
    images: torch.Tensor | NDArray[Any] | Sequence[torch.Tensor | NDArray[Any]],
    cams_by_method: Mapping[str, torch.Tensor | NDArray[Any]],
    *,
    labels: Sequence[str] | None = None,
    alpha: float = 0.5,
    colormap: str = "jet",
    panel_size: float = 2.0,
    show_images: bool = True,
    colorbar: bool = True,
    max_columns: int | None = None,
) -> Figure:
    """Lay out images (rows) with their maps for several methods (columns).

    Parameters
    ----------
    images : torch.Tensor, numpy.ndarray, or sequence of them
        A batch ``[B, C, H, W]`` (or ``[B, H, W, C]`` array), or a list of
        single images (any layout accepted by :func:`overlay`).
    cams_by_method : mapping of str to torch.Tensor or numpy.ndarray
        Method name -> maps ``[B, H, W]`` (one per image); the names become
        column titles, in the mapping's order.
    labels : sequence of str, optional
        One label per image (for example the explained class), shown left
        of each row.
    alpha : float, default 0.5
        Heatmap weight, see :func:`overlay`.
    colormap : str, default "jet"
        A matplotlib colormap name.
    panel_size : float, default 2.0
        Size of one panel in inches.
    show_images : bool, default True
        Add a first column with the plain images.
    colorbar : bool, default True
        Add one colorbar, below the panels, for the map values in [0, 1].
    max_columns : int, optional
        At most this many panels side by side: each image's panels (its
        picture, then its maps) go on in the next rows, each panel with its
        own title. A grid three panels wide stays readable on a phone, where a
        row of six panels is a strip a few pixels tall. ``None`` (the
        default): one row per image.

    Returns
    -------
    matplotlib.figure.Figure
        The figure, made with ``matplotlib.pyplot.figure`` so that
        ``plt.show()``, notebooks and sphinx-gallery display it; save it with
        ``fig.savefig(path)`` and close it with ``plt.close(fig)``.

    Raises
    ------
    ValueError
        If ``cams_by_method`` is empty, a method has a different number of
        maps than there are images, ``labels`` has the wrong length, or
        ``max_columns`` is less than 1.

    Examples
    --------
    >>> import torch
    >>> images = torch.rand(2, 3, 16, 16)
    >>> maps = {"Grad-CAM": torch.rand(2, 16, 16), "Score-CAM": torch.rand(2, 16, 16)}
    >>> fig = plot_cams(images, maps, labels=["cat", "dog"])
    >>> len(fig.axes)  # 2 rows x 3 columns + colorbar
    7
    >>> five = {f"method {k}": torch.rand(1, 16, 16) for k in range(5)}
    >>> fig = plot_cams(images[:1], five, max_columns=3)  # image + 5 maps: 2 rows of 3
    >>> len(fig.axes)
    7
    """
    import matplotlib.pyplot as plt  # noqa: PLC0415
    from matplotlib.cm import ScalarMappable  # noqa: PLC0415 - lazy: matplotlib is slow to import
    from matplotlib.colors import Normalize  # noqa: PLC0415

    pictures = _split_images(images)
    if not cams_by_method:
        msg = "cams_by_method is empty; pass a mapping such as {'Grad-CAM': maps}"
        raise ValueError(msg)
    n = len(pictures)
    columns: list[tuple[str, list[NDArray[Any]]]] = []
    for name, maps in cams_by_method.items():
        array = _as_numpy(maps, f"maps of {name!r}")
        if array.ndim == 2 and n == 1:
            array = array[None]
        if array.ndim != 3 or array.shape[0] != n:
            msg = (
                f"{name!r} has maps of shape {array.shape}, expected [{n}, H, W]: one map per image"
            )
            raise ValueError(msg)
        columns.append((name, list(array)))
    if labels is not None and len(labels) != n:
        msg = f"got {len(labels)} labels for {n} images; pass one label per image"
        raise ValueError(msg)
    if max_columns is not None and max_columns < 1:
        msg = f"max_columns must be at least 1, got {max_columns}"
        raise ValueError(msg)

    per_image = len(columns) + (1 if show_images else 0)  # panels of one image
    n_cols = min(per_image, max_columns or per_image)
    rows_per_image = -(-per_image // n_cols)  # ceiling division
    n_rows = n * rows_per_image
    titled_rows = n_rows if rows_per_image > 1 else 1
    fig = plt.figure(
        # room for the labels, the titles and the colorbar (below the panels, where it takes
        # no width: a phone's screen is narrow), so that they do not shrink the panels
        figsize=(
            panel_size * n_cols + (0.3 if labels is not None else 0.0),
            panel_size * n_rows + 0.3 * titled_rows + (0.7 if colorbar else 0.0),
        ),
        layout="constrained",
    )
    axes = fig.subplots(n_rows, n_cols, squeeze=False)
    for ax in axes.flat:
        ax.set_xticks([])
        ax.set_yticks([])
    for index, picture in enumerate(pictures):
        rgb = _image_hwc(picture)
        panels = [("image", rgb)] if show_images else []
        panels += [
            (name, overlay(rgb, column_maps[index], alpha=alpha, colormap=colormap))
            for name, column_maps in columns
        ]
        cells = axes[index * rows_per_image : (index + 1) * rows_per_image].flat
        for position, ax in enumerate(cells):
            if position >= len(panels):
                ax.set_axis_off()  # the last row of a wrapped image has room to spare
                continue
            title, picture_or_map = panels[position]
            ax.imshow(picture_or_map)
            # titles name the columns: on the first row only, unless the panels wrap
            if index == 0 or rows_per_image > 1:
                ax.set_title(title)
        if labels is not None:
            axes[index * rows_per_image, 0].set_ylabel(labels[index])
    if colorbar:
        mappable = ScalarMappable(norm=Normalize(0.0, 1.0), cmap=_colormap(colormap))
        fig.colorbar(mappable, ax=axes, location="bottom", shrink=0.6, label="relevance")
    return fig
