"""Models trained on the generated shapes, whose weights ship with the library.

Nothing is downloaded. The registered models' weights ship inside the
package (``hooks_tutorial/weights/``, about 100 KB each): :func:`pretrained`
loads them with ``torch.load(..., weights_only=True)`` after checking their
SHA-256, so every machine gets the same weights, whatever its torch version
or thread count. :func:`pretrained_config` shows the recipe that trained
them; ``pretrained(name, config=...)`` trains a model with a recipe of your
own instead (seconds on a CPU; nothing is cached).
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import torch
from torch import nn

from .data import ShapesSpec, make_shapes
from .models import SimpleCNN
from .training import evaluate, fit

__all__ = ["PretrainedConfig", "pretrained", "pretrained_config"]

_DEFAULT_SPEC = ShapesSpec()


@dataclass(frozen=True)
class PretrainedConfig:
    """Everything that determined a pretrained model's weights: its training recipe.

    :func:`pretrained_config` returns the recipe of a registered model;
    change it with :func:`dataclasses.replace` and pass it to
    :func:`pretrained` to train a model of your own.

    Attributes
    ----------
    data : ShapesSpec
        What the training and test images look like (variant, size, classes,
        objects, clutter, noise): a :class:`~hooks_tutorial.data.ShapesSpec`.
    n_train : int
        Training images of that variant.
    n_train_two : int
        Extra training images with two objects (``variant="two"``), whose
        targets name both classes; ``0`` for none.
    multi_label : bool
        Train a multi-label classifier: one yes/no question per class, with
        :class:`torch.nn.BCEWithLogitsLoss` on
        :meth:`~hooks_tutorial.ShapesData.multi_hot` targets, instead of
        the cross-entropy on class indices (one answer per image).
    n_test : int
        Test images used to report the accuracy (``split="test"``).
    channels : (int, int, int)
        Widths of :class:`~hooks_tutorial.models.SimpleCNN`'s conv blocks.
    pool : {"avg", "max"}
        :class:`~hooks_tutorial.models.SimpleCNN`'s global pooling.
    seed : int
        Seed of the data, the initial weights and the shuffling.
    epochs, batch_size, lr : int, int, float
        Training settings of :func:`~hooks_tutorial.fit`: Adam with a
        one-cycle schedule peaking at ``lr``.

    Raises
    ------
    TypeError
        If ``data`` is not a :class:`~hooks_tutorial.data.ShapesSpec`.
    ValueError
        If ``n_train_two`` is not an int >= 0 (the data is checked by
        :class:`~hooks_tutorial.data.ShapesSpec`, the other settings by
        :func:`~hooks_tutorial.make_shapes` and the model).

    Examples
    --------
    >>> config = PretrainedConfig(data=ShapesSpec(variant="shortcut"), pool="max")
    >>> config.data.variant, config.n_train
    ('shortcut', 4000)
    """

    data: ShapesSpec = _DEFAULT_SPEC
    n_train: int = 4000
    n_train_two: int = 0
    multi_label: bool = False
    n_test: int = 1000
    channels: tuple[int, int, int] = (16, 32, 64)
    pool: Literal["avg", "max"] = "avg"
    seed: int = 0
    epochs: int = 16
    batch_size: int = 64
    lr: float = 1e-2

    def __post_init__(self) -> None:
        data: object = self.data  # checked at run time: dataclasses do not
        if not isinstance(data, ShapesSpec):
            msg = (
                f"data must be a ShapesSpec (what the images look like), got {type(data).__name__}"
            )
            raise TypeError(msg)
        count: object = self.n_train_two  # checked at run time: dataclasses do not
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            msg = f"n_train_two must be an int >= 0 (extra two-object images), got {count!r}"
            raise ValueError(msg)


# Global max pooling, not SimpleCNN's default average: on the shapes it reaches
# ~98.8 % test accuracy in 16 epochs (about 14 s on 2 cores) and its Grad-CAM points
# at the object; with average pooling the same run stops near 80 % (see
# benchmarks/bench_training.py). Grad-CAM == CAM / Z holds for both.
#
# The multi-label model sees 2000 two-object images besides the single ones and
# answers "is there a <class>?" for each class independently. Its Grad-CAM for
# each object's class points at that object far more often on two-object images,
# for every seed we tried (see benchmarks/bench_training.py --seeds 0,1,2 and the
# Grad-CAM library page).
_CONFIGS: dict[str, PretrainedConfig] = {
    "simple_cnn-shapes": PretrainedConfig(pool="max"),
    "simple_cnn-multilabel": PretrainedConfig(
        n_train_two=2000, multi_label=True, pool="max", epochs=12
    ),
    "simple_cnn-shortcut": PretrainedConfig(data=ShapesSpec(variant="shortcut"), pool="max"),
}


def pretrained_config(name: str) -> PretrainedConfig:
    """The training configuration registered under ``name``.

    Parameters
    ----------
    name : str
        ``"simple_cnn-shapes"`` (trained on single objects),
        ``"simple_cnn-multilabel"`` (trained to name every shape in an image,
        on single and two-object images) or ``"simple_cnn-shortcut"``
        (trained where a corner cue gives the label away).

    Returns
    -------
    PretrainedConfig
        A frozen dataclass; change it with :func:`dataclasses.replace`.

    Raises
    ------
    ValueError
        For an unknown name.

    Examples
    --------
    >>> pretrained_config("simple_cnn-shapes").data.variant
    'single'
    """
    try:
        return _CONFIGS[name]
    except (KeyError, TypeError):
        close = difflib.get_close_matches(str(name), list(_CONFIGS), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else "."
        msg = f"no pretrained model named {name!r}{hint} Available: {', '.join(_CONFIGS)}"
        raise ValueError(msg) from None


#: Where the registered models' weights ship, and their SHA-256 (tools/ship_weights.py
#: writes both; the weights were trained with the registered recipe on torch 2.14.1).
SHIPPED_DIR = Path(__file__).parent / "weights"
_SHIPPED_SHA256 = {
    "simple_cnn-shapes": "a5b128d766548ddf94b8c98248d63736a5460b46421738bd39a7e2522b688b4b",
    "simple_cnn-multilabel": "da98a0dd96bf5d4b67448aaae26efdc0a47add46f76bc32115106acb2aaaf6b2",
    "simple_cnn-shortcut": "1cdeefe177088c5bae74346aa7d6ba7f69d75c0bf4bc709d4d4139bb530ddba6",
}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _build(config: PretrainedConfig) -> SimpleCNN:
    return SimpleCNN(
        num_classes=config.data.num_classes,
        channels=config.channels,
        pool=config.pool,
        seed=config.seed,
    )


def _train(config: PretrainedConfig) -> tuple[SimpleCNN, dict[str, float]]:
    """Train a model as ``config`` says; return it (eval mode) and its test metrics."""
    train = make_shapes(config.n_train, config.data, split="train", seed=config.seed)
    images, labels = train.images, train.labels
    if config.multi_label or config.n_train_two:
        labels = train.multi_hot()  # one-hot: targets for BCE, soft labels for cross-entropy
    if config.n_train_two:
        two_objects = dataclasses.replace(config.data, variant="two")
        two = make_shapes(config.n_train_two, two_objects, split="train", seed=config.seed)
        both = two.multi_hot()
        if not config.multi_label:  # one answer per image: half for each object
            both = both / 2
        images, labels = torch.cat([images, two.images]), torch.cat([labels, both])
    loss_fn = nn.BCEWithLogitsLoss() if config.multi_label else nn.CrossEntropyLoss()
    model = _build(config).to(memory_format=torch.channels_last)  # faster on CPU
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    steps = math.ceil(len(images) / config.batch_size) * config.epochs
    # warm up, then anneal: fast, and the BatchNorm running statistics settle
    scheduler = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=config.lr, total_steps=steps, pct_start=0.3
    )
    start = time.perf_counter()
    fit(
        model,
        (images, labels),
        epochs=config.epochs,
        loss_fn=loss_fn,
        batch_size=config.batch_size,
        optimizer=optimizer,
        scheduler=scheduler,
        seed=config.seed,
    )
    seconds = time.perf_counter() - start
    model = model.to(memory_format=torch.contiguous_format)
    metrics = {"train_seconds": seconds}
    if config.n_test > 0:
        test = make_shapes(config.n_test, config.data, split="test", seed=config.seed)
        metrics["test_accuracy"] = evaluate(model, (test.images, test.labels))["accuracy"]
    return model.eval(), metrics


def pretrained(
    name: str = "simple_cnn-shapes", *, config: PretrainedConfig | None = None
) -> nn.Module:
    """A :class:`~hooks_tutorial.models.SimpleCNN` trained on the generated shapes.

    The registered models' weights ship with the library: they are loaded
    with ``torch.load(..., weights_only=True)`` after a SHA-256 check, in
    milliseconds, and are the same on every machine. They use global max
    pooling (``pool="max"``), which learns the shapes several times faster
    than average pooling; :func:`pretrained_config` shows every setting of
    the recipe that trained them. With ``config``, the model is trained with
    that recipe instead, at each call (seconds on a CPU; the result can
    differ slightly between torch versions and thread counts).

    Parameters
    ----------
    name : str, default "simple_cnn-shapes"
        ``"simple_cnn-shapes"``: trained on single objects (``variant="single"``).
        ``"simple_cnn-multilabel"``: a multi-label classifier (one yes/no score
        per class, :class:`torch.nn.BCEWithLogitsLoss`) trained on single and
        two-object images; its Grad-CAM separates two objects better.
        ``"simple_cnn-shortcut"``: trained on the shortcut variant, where a
        corner cue gives the label away; it learns the shortcut.
    config : PretrainedConfig, optional
        Train with these settings instead of loading the shipped weights,
        for example ``dataclasses.replace(pretrained_config(name), seed=1)``.

    Returns
    -------
    torch.nn.Module
        The model, in eval mode.

    Raises
    ------
    ValueError
        For an unknown name.
    RuntimeError
        If the shipped weights file is missing or damaged (reinstall the package).

    Examples
    --------
    >>> model = pretrained("simple_cnn-shapes")
    >>> model.conv3
    Conv2d(32, 64, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), bias=False)
    """
    registered = pretrained_config(name)
    if config is not None and config != registered:
        model, _ = _train(config)
        return model
    path = SHIPPED_DIR / f"{name}.pt"
    if not path.is_file() or _sha256(path) != _SHIPPED_SHA256[name]:
        problem = "is missing" if not path.is_file() else "is damaged (wrong SHA-256)"
        msg = (
            f"the weights file {path} {problem}; reinstall hooks-tutorial "
            "(pip install --force-reinstall hooks-tutorial)"
        )
        raise RuntimeError(msg)
    payload = torch.load(path, map_location="cpu", weights_only=True)
    model = _build(registered)
    model.load_state_dict(payload["state_dict"])
    return model.eval()
