"""A procedurally generated image data set with ground truth, made in memory.

The tutorial needs images whose heatmaps can be checked: every image holds a
simple object (circle, square, triangle, star or cross) of random size,
position, colour and rotation, on a textured, noisy background with small
distractors, and the data set keeps the object's exact pixel mask and box. So
"does the Grad-CAM heatmap point at the object?" becomes a number.

Three variants:

``"single"``
    One object per image; the label is its class.
``"two"``
    Two objects of different classes, one in each half of the image (split
    left/right or top/bottom at random). Both labels, masks and boxes are
    kept, for class-discriminative demonstrations: target each class in turn.
``"shortcut"``
    One object plus a small coloured square (the *cue*) in a random corner.
    In the ``"train"`` split the cue's colour encodes the label, in the
    ``"test"`` split it is random, so a model can learn the shortcut, and
    Grad-CAM can reveal it. The cue's mask is kept.

Everything is vectorised with NumPy coordinate grids: a few thousand 64x64
images take a fraction of a second, and a seed gives the same images on every
run.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, get_args

import numpy as np
import numpy.typing as npt
import torch
from torch import Tensor
from torch.utils.data import Dataset

__all__ = ["CLASSES", "CUE_COLOURS", "ShapesData", "ShapesSpec", "make_shapes"]

#: Class names, in label order.
CLASSES: tuple[str, ...] = ("circle", "square", "triangle", "star", "cross")

#: RGB colour of the shortcut cue for each class (label ``i`` -> ``CUE_COLOURS[i]``).
CUE_COLOURS: tuple[tuple[float, float, float], ...] = (
    (1.0, 0.0, 0.0),
    (0.0, 1.0, 0.0),
    (0.0, 0.0, 1.0),
    (1.0, 1.0, 0.0),
    (1.0, 0.0, 1.0),
)

Variant: TypeAlias = Literal["single", "two", "shortcut"]
Split: TypeAlias = Literal["train", "test"]

_F32: TypeAlias = npt.NDArray[np.float32]
_F64: TypeAlias = npt.NDArray[np.float64]
_BOOL: TypeAlias = npt.NDArray[np.bool_]
_INT: TypeAlias = npt.NDArray[np.int64]

_MIN_OBJECT_PX = 10  # smallest object diameter (pixels) that still shows its shape
_MARGIN = 1.0  # pixels kept free between an object and the image border
_CLUTTER_PATCH = 0.25  # clutter items fit in a square of this fraction of the image side
_VARIANT_CODE = {"single": 1, "two": 2, "shortcut": 3}
_SPLIT_CODE = {"train": 1, "test": 2}


def _is_int(value: object) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


@dataclass(frozen=True)
class ShapesSpec:
    """What the generated images look like: every option of :func:`make_shapes` but the count.

    A frozen, validated description of the data, shared by :func:`make_shapes`
    and :class:`~hooks_tutorial.PretrainedConfig`; change it with
    :func:`dataclasses.replace`. The split and the seed are not part of it:
    the same spec gives the train and test sets.

    Attributes
    ----------
    variant : {"single", "two", "shortcut"}, default "single"
        ``"single"``: one object. ``"two"``: two objects of different classes,
        one in each half of the image. ``"shortcut"``: one object and a small
        coloured square (the cue) in a random corner, whose colour
        ``CUE_COLOURS[c]`` stands for class ``c``.
    image_size : int, default 64
        Side of the square images in pixels.
    num_classes : int, default 5
        Use the first ``num_classes`` of ``CLASSES``.
    object_size : (float, float), default (0.35, 0.6)
        Smallest and largest object diameter as fractions of ``image_size``. In
        the ``"two"`` variant an object is at most half the image wide.
    clutter : int, default 4
        Distractors per image.
    noise : float, default 0.05
        Largest standard deviation of the background noise (each image draws its
        own, up to this).
    rotation : float, default 180.0
        Objects are turned by a random angle in ``[-rotation, rotation]`` degrees
        (``0``: upright shapes).
    cue_agreement : float or None, default None
        Shortcut variant only: the probability that the cue shows the image's
        own class; otherwise it shows a class drawn at random. ``None`` means 1
        for the train split and 0 (a random cue, independent of the label) for
        the test split.

    Raises
    ------
    ValueError
        For an unknown variant, ``num_classes`` outside 1 to 5 (or below 2 for
        ``"two"``), negative ``clutter`` or ``noise``, ``rotation`` outside 0 to
        180, ``cue_agreement`` outside [0, 1], or an image too small for the
        objects.

    Examples
    --------
    >>> spec = ShapesSpec(variant="two", image_size=48)
    >>> make_shapes(4, spec, split="test").images.shape
    torch.Size([4, 3, 48, 48])
    >>> ShapesSpec(num_classes=9)
    Traceback (most recent call last):
    ...
    ValueError: num_classes must be an int from 1 to 5 (the shapes are circle, square, triangle, star, cross), got 9
    """

    variant: Variant = "single"
    image_size: int = 64
    num_classes: int = 5
    object_size: tuple[float, float] = (0.35, 0.6)
    clutter: int = 4
    noise: float = 0.05
    rotation: float = 180.0
    cue_agreement: float | None = None

    def __post_init__(self) -> None:
        self._check_kinds()
        self._check_fit()

    def _check_kinds(self) -> None:
        variant, num_classes, clutter = self.variant, self.num_classes, self.clutter
        if variant not in _VARIANT_CODE:
            msg = (
                f"unknown variant {variant!r}; use one of {', '.join(map(repr, get_args(Variant)))}"
            )
            raise ValueError(msg)
        if not _is_int(num_classes) or not 1 <= num_classes <= len(CLASSES):
            msg = (
                f"num_classes must be an int from 1 to {len(CLASSES)} (the shapes are "
                f"{', '.join(CLASSES)}), got {num_classes!r}"
            )
            raise ValueError(msg)
        if variant == "two" and num_classes < 2:
            msg = "the 'two' variant puts two different classes in each image; use num_classes >= 2"
            raise ValueError(msg)
        if not _is_int(clutter) or clutter < 0:
            msg = f"clutter must be a non-negative int (distractors per image), got {clutter!r}"
            raise ValueError(msg)
        if not math.isfinite(self.noise) or self.noise < 0:
            msg = (
                "noise must be a finite number >= 0 (the noise's standard deviation), "
                f"got {self.noise!r}"
            )
            raise ValueError(msg)
        if not 0.0 <= self.rotation <= 180.0:
            msg = f"rotation must be an angle in degrees from 0 to 180, got {self.rotation!r}"
            raise ValueError(msg)
        agreement = self.cue_agreement
        if agreement is not None and not 0.0 <= agreement <= 1.0:
            msg = f"cue_agreement must be a probability in [0, 1] or None, got {agreement!r}"
            raise ValueError(msg)

    def _check_fit(self) -> None:
        """The objects must fit the image (and, for ``"two"``, half of it)."""
        lo, hi = self.object_size
        if not 0.0 < lo <= hi <= 1.0:
            msg = (
                "object_size must be (smallest, largest) object diameter as fractions of the "
                f"image side, with 0 < smallest <= largest <= 1; got {self.object_size!r}"
            )
            raise ValueError(msg)
        image_size = self.image_size
        if not _is_int(image_size):
            msg = f"image_size must be an int, got {image_size!r}"
            raise ValueError(msg)
        smallest = lo * image_size
        if smallest < _MIN_OBJECT_PX:
            msg = (
                f"image too small for the objects: at image_size={image_size} the smallest "
                f"object would be {smallest:.1f} px wide, and shapes need {_MIN_OBJECT_PX} px; "
                f"use image_size >= {math.ceil(_MIN_OBJECT_PX / lo)} or a larger object_size[0]"
            )
            raise ValueError(msg)
        if self.variant == "two" and smallest > image_size / 2 - 2 * _MARGIN:
            msg = (
                f"objects too large for the 'two' variant: each object gets half the image, at "
                f"most {image_size / 2 - 2 * _MARGIN:.1f} px at image_size={image_size}, but "
                f"object_size[0]={lo} asks for {smallest:.1f} px; use object_size[0] <= "
                f"{(image_size / 2 - 2 * _MARGIN) / image_size:.2f}"
            )
            raise ValueError(msg)


@dataclass(frozen=True, eq=False)
class ShapesData(Dataset[tuple[Tensor, Tensor]]):
    """Images and their ground truth, as tensors (returned by :func:`make_shapes`).

    It is also a :class:`torch.utils.data.Dataset` of ``(image, label)`` pairs,
    so it can be passed to :func:`~hooks_tutorial.fit` or a
    :class:`~torch.utils.data.DataLoader` as it is (``fit`` then checks the
    model's outputs against :attr:`num_classes`).

    ``N`` is the number of images, ``S`` the image side and ``K`` the number of
    objects per image (1, or 2 for the ``"two"`` variant). Boxes are
    ``(x0, y0, x1, y1)`` in pixels with exclusive ends, so
    ``mask[y0:y1, x0:x1]`` holds every pixel of the mask.

    Attributes
    ----------
    images : Tensor
        ``float32`` ``[N, 3, S, S]``, values in ``[0, 1]``.
    labels : Tensor
        ``int64`` ``[N]``: the class of the first object (the training target).
    masks : Tensor
        ``bool`` ``[N, S, S]``: the first object's pixels.
    boxes : Tensor
        ``int64`` ``[N, 4]``: the first object's box.
    object_labels, object_masks, object_boxes : Tensor
        The same for every object: ``[N, K]``, ``[N, K, S, S]``, ``[N, K, 4]``.
    cue_masks : Tensor
        ``bool`` ``[N, S, S]``: the shortcut cue's pixels (all ``False`` without a cue).
    cue_labels : Tensor
        ``int64`` ``[N]``: the class the cue's colour stands for, ``-1`` without a cue.
    classes : tuple of str
        Class names in label order.
    variant, split : str
        How the data was made.
    seed : int
        The seed it was made with.
    """

    images: Tensor
    labels: Tensor
    masks: Tensor
    boxes: Tensor
    object_labels: Tensor
    object_masks: Tensor
    object_boxes: Tensor
    cue_masks: Tensor
    cue_labels: Tensor
    classes: tuple[str, ...]
    variant: Variant
    split: Split
    seed: int

    def __len__(self) -> int:
        return int(self.images.shape[0])

    def __getitem__(self, index: int) -> tuple[Tensor, Tensor]:
        return self.images[index], self.labels[index]

    @property
    def num_classes(self) -> int:
        """Number of classes."""
        return len(self.classes)

    def multi_hot(self) -> Tensor:
        """Per-class targets: 1.0 for every class drawn in the image, else 0.0.

        The targets of a multi-label classifier, trained for example with
        :class:`torch.nn.BCEWithLogitsLoss` (one yes/no question per class).

        Returns
        -------
        Tensor
            ``float32`` ``[N, num_classes]``; rows hold one 1.0 (one object) or
            two (the ``"two"`` variant). The shortcut cue is not an object.

        Examples
        --------
        >>> two = make_shapes(3, variant="two", seed=0)
        >>> two.multi_hot().sum(dim=1).tolist()
        [2.0, 2.0, 2.0]
        """
        targets = torch.zeros(len(self), self.num_classes)
        return targets.scatter_(1, self.object_labels, 1.0)


# ------------------------------------------------------------------ shape drawing


def _inside(shape: int, u: _F32, v: _F32) -> _BOOL:
    """Whether points ``(u, v)`` in the object's frame (bounding radius 1) are inside."""
    name = CLASSES[shape]
    if name == "circle":
        inside: _BOOL = u * u + v * v <= 0.85**2
    elif name == "square":
        inside = np.maximum(np.abs(u), np.abs(v)) <= 0.7
    elif name == "triangle":  # equilateral, circumradius 1: three half-planes at apothem 0.5
        inside = v <= 0.5
        for angle in (math.pi / 6, 5 * math.pi / 6):
            inside &= u * math.cos(angle) - v * math.sin(angle) <= 0.5
    elif name == "star":  # five points, outer radius 1, inner radius 0.45
        rho = np.hypot(u, v)
        sector = 2 * math.pi / 5
        t = np.mod(np.arctan2(v, u) + math.pi / 2, sector)
        a = np.minimum(t, sector - t)  # angle to the nearest tip, in [0, pi/5]
        px, py = rho * np.cos(a), rho * np.sin(a)
        # the edge from the tip (1, 0) to the inner corner; the origin side is inside
        dx = 0.45 * math.cos(sector / 2) - 1.0
        dy = 0.45 * math.sin(sector / 2)
        inside = dx * py - dy * (px - 1.0) >= 0
    else:  # cross: two bars
        au, av = np.abs(u), np.abs(v)
        inside = ((au <= 0.3) & (av <= 0.95)) | ((av <= 0.3) & (au <= 0.95))
    return inside


def _window(cx: _F64, cy: _F64, side: int, size: int) -> tuple[_INT, _BOOL, _F32, _F32]:
    """A ``side x side`` window of pixels around each centre ``(cx[i], cy[i])``.

    Returns the flat pixel index ``y * size + x`` of each window pixel
    ``[m, side, side]``, whether it lies in the image, and the pixel centres
    relative to the window's centre: ``x`` as ``[m, 1, side]``, ``y`` as
    ``[m, side, 1]``.
    """
    offsets = np.arange(side)
    xs = np.floor(cx - side / 2).astype(np.int64)[:, None] + offsets  # [m, side]
    ys = np.floor(cy - side / 2).astype(np.int64)[:, None] + offsets
    px = (xs + 0.5 - cx[:, None]).astype(np.float32)[:, None, :]
    py = (ys + 0.5 - cy[:, None]).astype(np.float32)[:, :, None]
    in_x = (xs >= 0) & (xs < size)
    in_y = (ys >= 0) & (ys < size)
    valid = in_y[:, :, None] & in_x[:, None, :]
    flat = ys[:, :, None] * size + xs[:, None, :]
    return flat, valid, px, py


def _painted(flat: _INT, painted: _BOOL) -> tuple[_INT, _INT]:
    """``(image index, flat pixel index)`` of the painted pixels of one item per image."""
    rows = np.broadcast_to(np.arange(flat.shape[0])[:, None, None], flat.shape)
    return rows[painted], flat[painted]


def _draw_objects(
    shapes: _INT, cx: _F64, cy: _F64, radius: _F64, angle: _F64, size: int
) -> tuple[_INT, _INT]:
    """Draw one object per image; return ``(image index, flat pixel index)`` of its pixels."""
    side = math.ceil(2 * float(radius.max(initial=0.0))) + 2
    flat, valid, px, py = _window(cx, cy, side, size)
    painted = np.zeros(flat.shape, dtype=bool)
    scale = (1.0 / radius).astype(np.float32)[:, None, None]
    cos = (np.cos(angle) * scale[:, 0, 0]).astype(np.float32)[:, None, None]
    sin = (np.sin(angle) * scale[:, 0, 0]).astype(np.float32)[:, None, None]
    for shape in np.unique(shapes):
        idx = np.flatnonzero(shapes == shape)
        # rotate by -angle and scale to a bounding radius of 1
        u = px[idx] * cos[idx] + py[idx] * sin[idx]
        v = py[idx] * cos[idx] - px[idx] * sin[idx]
        painted[idx] = _inside(int(shape), u, v)
    return _painted(flat, painted & valid)


def _draw_clutter(rng: np.random.Generator, n: int, size: int) -> tuple[_INT, _INT]:
    """Draw one small distractor (segment, dot or ring) per image.

    Returns ``(image index, flat pixel index)`` of its pixels.
    """
    side = max(5, round(_CLUTTER_PATCH * size))
    reach = side / 2 - 1  # how far from its centre an item may reach
    kind = rng.integers(0, 3, n)
    cx = rng.uniform(0, size, n)
    cy = rng.uniform(0, size, n)
    half_length = (rng.uniform(0.3, 1.0, n) * (reach - 1)).astype(np.float32)
    angle = rng.uniform(0, math.pi, n)
    thickness = rng.uniform(0.5, 1.1, n).astype(np.float32)
    dot_radius = (rng.uniform(0.03, 0.06, n) * size).astype(np.float32)
    ring_radius = (rng.uniform(0.05, 0.09, n) * size).astype(np.float32)

    flat, valid, px, py = _window(cx, cy, side, size)
    painted = np.zeros(flat.shape, dtype=bool)
    seg = np.flatnonzero(kind == 0)
    cos = np.cos(angle[seg]).astype(np.float32)[:, None, None]
    sin = np.sin(angle[seg]).astype(np.float32)[:, None, None]
    along = np.abs(px[seg] * cos + py[seg] * sin) - half_length[seg, None, None]
    across = py[seg] * cos - px[seg] * sin
    painted[seg] = np.hypot(np.maximum(along, 0), across) <= thickness[seg, None, None]
    dot = np.flatnonzero(kind == 1)
    painted[dot] = np.hypot(px[dot], py[dot]) <= dot_radius[dot, None, None]
    ring = np.flatnonzero(kind == 2)
    painted[ring] = np.abs(np.hypot(px[ring], py[ring]) - ring_radius[ring, None, None]) <= 0.75
    return _painted(flat, painted & valid)


def _contrasting(rng: np.random.Generator, background: _F64, n: int) -> _F64:
    """Random colours that differ from ``background`` by >= 0.45 in some channel."""
    colour = rng.uniform(0, 1, (n, 3))
    diff = np.abs(colour - background)
    weak = diff.max(axis=1) < 0.45
    channel = diff.argmax(axis=1)
    rows = np.flatnonzero(weak)
    base = background[rows, channel[rows]]
    colour[rows, channel[rows]] = np.where(base < 0.5, base + 0.45, base - 0.45)
    return colour


def _boxes(masks: _BOOL) -> _INT:
    """Boxes ``(x0, y0, x1, y1)`` with exclusive ends for masks ``[..., H, W]``."""
    rows: _BOOL = np.any(masks, axis=-1)
    cols: _BOOL = np.any(masks, axis=-2)
    height, width = masks.shape[-2:]
    y0 = rows.argmax(axis=-1)
    y1 = height - rows[..., ::-1].argmax(axis=-1)
    x0 = cols.argmax(axis=-1)
    x1 = width - cols[..., ::-1].argmax(axis=-1)
    boxes = np.stack([x0, y0, x1, y1], axis=-1).astype(np.int64)
    boxes[~rows.any(axis=-1)] = 0
    return boxes


# -------------------------------------------------------------------- the generator


def _background(rng: np.random.Generator, n: int, size: int, noise: float) -> tuple[_F32, _F64]:
    """Colour + brightness ramp + stripes + noise: images ``[n, 3, S * S]`` and their colours."""
    colour = rng.uniform(0.1, 0.9, (n, 3))
    tilt = rng.uniform(0, 2 * math.pi, n)
    ramp = rng.uniform(0.0, 0.3, n)
    stripe_angle = rng.uniform(0, math.pi, n)
    stripe_freq = rng.uniform(2, 7, n) * 2 * math.pi / size
    stripe_phase = rng.uniform(0, 2 * math.pi, n)
    stripe_amp = rng.uniform(0.0, 0.12, n) * (rng.random(n) < 0.6)
    sigma = rng.uniform(0.3, 1.0, n) * noise
    noise_bytes = rng.integers(0, 256, (n, size, size), dtype=np.uint8)
    # The texture is the same in the three channels and separable in y and x:
    #   ramp:    r (sin(t) y' + cos(t) x')           with y', x' centred on the image
    #   stripes: A sin(a x + b y + p) = A [cos(b y + p) sin(a x) + sin(b y + p) cos(a x)]
    # so it is one batched matrix product [n, S, 4] @ [n, 4, S], with no [n, S, S] sin.
    grid = np.arange(size) + 0.5
    centred = (grid - size / 2) / size
    a_x = (stripe_freq * np.cos(stripe_angle))[:, None] * grid
    b_y = (stripe_freq * np.sin(stripe_angle))[:, None] * grid + stripe_phase[:, None]
    # uniform noise of standard deviation sigma: (byte - 127.5) * sigma * sqrt(3) / 127.5
    step = sigma * math.sqrt(3) / 127.5
    ones = np.ones((n, size))
    left = np.stack(
        [
            (ramp * np.sin(tilt))[:, None] * centred - (127.5 * step)[:, None],
            ones,
            stripe_amp[:, None] * np.cos(b_y),
            stripe_amp[:, None] * np.sin(b_y),
        ],
        axis=2,
    ).astype(np.float32)
    right = np.stack(
        [ones, (ramp * np.cos(tilt))[:, None] * centred, np.sin(a_x), np.cos(a_x)], axis=1
    ).astype(np.float32)
    texture = np.matmul(left, right)  # [n, S, S]
    texture += noise_bytes * step.astype(np.float32)[:, None, None]
    images = np.empty((n, 3, size * size), dtype=np.float32)
    np.add(texture.reshape(n, 1, size * size), colour.astype(np.float32)[:, :, None], out=images)
    np.clip(images, 0.0, 1.0, out=images)
    return images, colour


def _paint(images: _F32, rows: _INT, pixels: _INT, colours: _F64) -> None:
    """Give pixel ``pixels[j]`` of image ``rows[j]`` the colour ``colours[rows[j]]``, in place.

    ``images`` is ``[n, 3, S * S]``; items painted later cover earlier ones.
    """
    plane = images.shape[2]
    flat = images.reshape(-1)
    start = rows * (3 * plane) + pixels
    for channel in range(3):
        flat[start + channel * plane] = colours[rows, channel]


def _objects(
    rng: np.random.Generator, spec: ShapesSpec, images: _F32, colour: _F64
) -> tuple[_INT, _BOOL]:
    """Draw the object(s) of every image; return labels ``[n, K]`` and masks ``[n, K, S * S]``."""
    n: int = images.shape[0]
    size, num_classes = int(spec.image_size), spec.num_classes
    n_objects = 2 if spec.variant == "two" else 1
    labels = np.zeros((n, n_objects), dtype=np.int64)
    labels[:, 0] = rng.integers(0, num_classes, n)
    if n_objects == 2:  # a different class for the second object
        labels[:, 1] = (labels[:, 0] + rng.integers(1, num_classes, n)) % num_classes
    lo, hi = spec.object_size[0] * size, spec.object_size[1] * size
    masks = np.zeros((n, n_objects, size * size), dtype=bool)
    if n_objects == 2:
        hi = min(hi, size / 2 - 2 * _MARGIN)
        left_right = rng.random(n) < 0.5  # split into left/right (else top/bottom) halves
        first_half = rng.integers(0, 2, n)  # the half that holds object 0
    for k in range(n_objects):
        radius = rng.uniform(lo, hi, n) / 2
        if n_objects == 1:
            cx = rng.uniform(radius + _MARGIN, size - radius - _MARGIN)
            cy = rng.uniform(radius + _MARGIN, size - radius - _MARGIN)
        else:
            offset = (first_half if k == 0 else 1 - first_half) * (size / 2)
            along = rng.uniform(radius + _MARGIN, size / 2 - radius - _MARGIN) + offset
            across = rng.uniform(radius + _MARGIN, size - radius - _MARGIN)
            cx = np.where(left_right, along, across)
            cy = np.where(left_right, across, along)
        angle = np.deg2rad(rng.uniform(-spec.rotation, spec.rotation, n))
        rows, pixels = _draw_objects(labels[:, k], cx, cy, radius, angle, size)
        masks[rows, k, pixels] = True
        _paint(images, rows, pixels, _contrasting(rng, colour, n))
    return labels, masks


def _cue(
    rng: np.random.Generator, spec: ShapesSpec, split: Split, images: _F32, labels: _INT
) -> tuple[_BOOL, _INT]:
    """Paint the shortcut cue in a random corner; return its masks ``[n, S * S]`` and classes."""
    n: int = images.shape[0]
    size = int(spec.image_size)
    agreement = spec.cue_agreement if spec.cue_agreement is not None else float(split == "train")
    honest = rng.random(n) < agreement
    cue_labels = np.where(honest, labels[:, 0], rng.integers(0, spec.num_classes, n))
    side = max(3, round(0.1 * size))
    corner = rng.integers(0, 4, n)
    x0 = np.where(corner % 2 == 0, 2, size - 2 - side)
    y0 = np.where(corner // 2 == 0, 2, size - 2 - side)
    square = np.arange(side)
    pixels = (y0[:, None] + square)[:, :, None] * size + (x0[:, None] + square)[:, None, :]
    rows = np.broadcast_to(np.arange(n)[:, None, None], pixels.shape)
    cue_masks = np.zeros((n, size * size), dtype=bool)
    cue_masks[rows, pixels] = True
    _paint(images, rows.reshape(-1), pixels.reshape(-1), np.asarray(CUE_COLOURS)[cue_labels])
    return cue_masks, cue_labels


def _with_options(spec: ShapesSpec, options: dict[str, Any]) -> ShapesSpec:
    """``spec`` with the fields in ``options`` replaced; a ``TypeError`` names an unknown one."""
    if not options:
        return spec
    valid = [field.name for field in dataclasses.fields(ShapesSpec)]
    for name in options:
        if name not in valid:
            close = difflib.get_close_matches(name, valid, n=1, cutoff=0.7)
            hint = f"did you mean {close[0]!r}? " if close else ""
            msg = (
                f"make_shapes() got an unknown option {name!r}; {hint}"
                f"the options are the fields of ShapesSpec: {', '.join(valid)}"
            )
            raise TypeError(msg)
    return dataclasses.replace(spec, **options)


def make_shapes(
    n: int = 1000,
    spec: ShapesSpec | None = None,
    *,
    split: Split = "train",
    seed: int = 0,
    **options: Any,
) -> ShapesData:
    """Generate ``n`` images of simple shapes with their labels, masks and boxes.

    Each image has a background made of a colour, a brightness gradient, faint
    stripes and noise; ``clutter`` small distractors (short segments, dots,
    rings); and the object(s), drawn in a flat colour that contrasts with the
    background. The object's pixels are exactly its mask.

    Parameters
    ----------
    n : int, default 1000
        Number of images (``0`` gives an empty set).
    spec : ShapesSpec, optional
        What the images look like (variant, size, classes, objects, clutter,
        noise, rotation, cue); defaults to ``ShapesSpec()``.
    split : {"train", "test"}, default "train"
        Train and test sets made with the same seed hold different images. For
        the shortcut variant the split sets how often the cue tells the truth
        (see ``ShapesSpec.cue_agreement``).
    seed : int, default 0
        Same seed, same arguments: same data, on every run.
    **options
        Any field of :class:`ShapesSpec` (``variant``, ``image_size``,
        ``num_classes``, ``object_size``, ``clutter``, ``noise``,
        ``rotation``, ``cue_agreement``), replacing the one in ``spec``:
        ``make_shapes(64, variant="two")``.

    Returns
    -------
    ShapesData
        Images ``float32 [n, 3, S, S]`` in ``[0, 1]``, labels ``int64 [n]``,
        masks ``bool [n, S, S]``, boxes ``int64 [n, 4]``, the same per object,
        and the cue's mask and class.

    Raises
    ------
    ValueError
        For a negative ``n``, an unknown split, or an invalid option (see
        :class:`ShapesSpec`).
    TypeError
        For an unknown option.

    Examples
    --------
    >>> data = make_shapes(8, seed=0)
    >>> data.images.shape, data.labels.shape, data.masks.shape, data.boxes.shape
    (torch.Size([8, 3, 64, 64]), torch.Size([8]), torch.Size([8, 64, 64]), torch.Size([8, 4]))
    >>> bool(torch.equal(data.images, make_shapes(8, seed=0).images))
    True
    """
    spec = _with_options(spec or ShapesSpec(), options)
    if not _is_int(n) or n < 0:
        msg = f"n must be a non-negative int (the number of images), got {n!r}"
        raise ValueError(msg)
    if split not in _SPLIT_CODE:
        msg = f"unknown split {split!r}; use 'train' or 'test'"
        raise ValueError(msg)
    size = int(spec.image_size)
    rng = np.random.default_rng(
        [int(seed) & 0xFFFFFFFF, _VARIANT_CODE[spec.variant], _SPLIT_CODE[split]]
    )
    images, colour = _background(rng, n, size, spec.noise)
    for _ in range(spec.clutter):
        rows, pixels = _draw_clutter(rng, n, size)
        _paint(images, rows, pixels, rng.uniform(0, 1, (n, 3)))
    labels, object_masks = _objects(rng, spec, images, colour)
    if spec.variant == "shortcut":
        cue_masks, cue_labels = _cue(rng, spec, split, images, labels)
        object_masks &= ~cue_masks[:, None]  # the cue covers what lies under it
    else:
        cue_masks, cue_labels = np.zeros((n, size * size), dtype=bool), np.full(n, -1)

    n_objects = labels.shape[1]
    object_masks_2d = object_masks.reshape(n, n_objects, size, size)
    object_labels = torch.from_numpy(labels)
    object_masks_t = torch.from_numpy(object_masks_2d)
    object_boxes_t = torch.from_numpy(_boxes(object_masks_2d))
    return ShapesData(
        images=torch.from_numpy(images.reshape(n, 3, size, size)),
        labels=object_labels[:, 0].contiguous(),
        masks=object_masks_t[:, 0].contiguous(),
        boxes=object_boxes_t[:, 0].contiguous(),
        object_labels=object_labels,
        object_masks=object_masks_t,
        object_boxes=object_boxes_t,
        cue_masks=torch.from_numpy(cue_masks.reshape(n, size, size)),
        cue_labels=torch.from_numpy(cue_labels.astype(np.int64)),
        classes=CLASSES[: spec.num_classes],
        variant=spec.variant,
        split=split,
        seed=int(seed),
    )
