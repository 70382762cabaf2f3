"""A small training loop built on callbacks: the callback pattern at work.

:func:`fit` runs the loop; at fixed moments it calls the methods of the
callback objects it was given, so printing, recording and stopping live
outside the loop, each in its own small class:

========================================  =========================================
event                                     when
========================================  =========================================
``on_train_begin(model, params)``         once, before the first batch
``on_batch_end(batch, logs)``             after each optimiser step
``on_epoch_end(epoch, logs)``             after each epoch (and its validation)
``on_train_end(logs)``                    once, at the end, also after a stop
========================================  =========================================

A callback is any object with some of these methods (duck typing);
:class:`Callback` is a base class with do-nothing methods to start from. To
stop training, a callback raises :class:`StopTraining` from any event; the
other callbacks still receive that event, the epoch is finished (logs,
validation, ``on_epoch_end``), then ``on_train_end`` runs and :func:`fit`
returns.

Epochs and batches are counted from 1.
"""

from __future__ import annotations

import itertools
import math
import sys
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence, Sized
from typing import Any, Literal, TextIO, TypeAlias, cast

import torch
from torch import Tensor, nn
from torch.utils.data import DataLoader, Dataset, TensorDataset

from ._checks import positive_int

__all__ = [
    "Callback",
    "EarlyStopping",
    "History",
    "ProgressPrinter",
    "StopTraining",
    "evaluate",
    "fit",
]

#: What :func:`fit` accepts as data: a data set of ``(input, label)`` pairs, a
#: ``(inputs, labels)`` pair of tensors, or any iterable of ``(inputs, labels)``
#: batches such as a :class:`~torch.utils.data.DataLoader`.
Data: TypeAlias = "Dataset[Any] | tuple[Tensor, Tensor] | Iterable[Sequence[Tensor]]"


class StopTraining(Exception):
    """Raise from a callback to end training after the current step.

    The other callbacks still receive the event that raised it; the current
    epoch is finished with the batches already run (logs, validation,
    ``on_epoch_end``); then ``on_train_end`` runs and :func:`fit` returns the
    history.

    Examples
    --------
    >>> class StopAtLoss(Callback):
    ...     def on_epoch_end(self, epoch, logs):
    ...         if logs["loss"] < 0.1:
    ...             raise StopTraining(f"loss below 0.1 at epoch {epoch}")
    """


class Callback:
    """Base class with one do-nothing method per event; override the ones you need.

    Subclassing is optional: :func:`fit` calls whichever of these methods an
    object has.

    Examples
    --------
    >>> class PrintLoss(Callback):
    ...     def on_epoch_end(self, epoch, logs):
    ...         print(f"epoch {epoch}: loss {logs['loss']:.3f}")
    """

    def on_train_begin(self, model: nn.Module, params: Mapping[str, Any]) -> None:
        """Called once before training.

        Parameters
        ----------
        model : nn.Module
            The model being trained.
        params : mapping
            ``epochs``, ``batch_size``, ``steps`` (batches per epoch, or ``None``
            if unknown), ``samples`` (or ``None``), ``validation`` (bool).
        """

    def on_batch_end(self, batch: int, logs: Mapping[str, float]) -> None:
        """Called after each optimiser step.

        Parameters
        ----------
        batch : int
            Batch number within the epoch, from 1.
        logs : mapping
            ``epoch``, ``loss`` (this batch's mean loss), ``size`` (its sample count).
        """

    def on_epoch_end(self, epoch: int, logs: Mapping[str, float]) -> None:
        """Called after each epoch and its validation.

        Parameters
        ----------
        epoch : int
            The epoch just finished, from 1.
        logs : mapping
            ``loss`` and ``accuracy`` (means over the epoch's training batches),
            ``val_loss`` and ``val_accuracy`` with validation data, and
            ``seconds`` (the epoch's wall time).
        """

    def on_train_end(self, logs: Mapping[str, float]) -> None:
        """Called once after training, also when it was stopped.

        Parameters
        ----------
        logs : mapping
            The last epoch's logs (empty if no epoch ran).
        """


class History(Callback):
    """Record the epoch logs, for a loss or accuracy plot.

    :func:`fit` always returns one (the first ``History`` among the callbacks,
    or a new one). It is cleared when training begins.

    Attributes
    ----------
    epochs : list of int
        Epoch numbers recorded.
    history : dict of str to list of float
        One list per log key, e.g. ``history["val_loss"]``.

    Examples
    --------
    >>> history = History()
    >>> history.on_epoch_end(1, {"loss": 0.9, "accuracy": 0.6})
    >>> history.on_epoch_end(2, {"loss": 0.5, "accuracy": 0.8})
    >>> history["loss"], history.epochs, len(history)
    ([0.9, 0.5], [1, 2], 2)
    """

    def __init__(self) -> None:
        self.epochs: list[int] = []
        self.history: dict[str, list[float]] = {}

    def on_train_begin(self, model: nn.Module, params: Mapping[str, Any]) -> None:  # noqa: ARG002 - protocol signature
        """Forget earlier records."""
        self.epochs.clear()
        self.history.clear()

    def on_epoch_end(self, epoch: int, logs: Mapping[str, float]) -> None:
        """Append this epoch's logs."""
        self.epochs.append(epoch)
        for key, value in logs.items():
            self.history.setdefault(key, []).append(float(value))

    def __getitem__(self, key: str) -> list[float]:
        try:
            return self.history[key]
        except KeyError:
            known = ", ".join(self.history) or "none yet"
            msg = f"no {key!r} in the history; recorded keys: {known}"
            raise KeyError(msg) from None

    def __len__(self) -> int:
        return len(self.epochs)

    def __repr__(self) -> str:
        return f"History(epochs={len(self)}, keys={list(self.history)})"


class ProgressPrinter(Callback):
    """Print one line per epoch (printing is this callback's purpose).

    Parameters
    ----------
    stream : text stream, optional
        Where to print; ``None`` means ``sys.stdout`` at the time of printing.
    every : int, default 1
        Print every ``every`` epochs (the last epoch is always printed).
    times : bool, default True
        Print wall-clock times. Pass ``False`` for output that is the same on
        every run (as the tutorial pages do).

    Examples
    --------
    >>> import io
    >>> out = io.StringIO()
    >>> printer = ProgressPrinter(out)
    >>> printer.on_train_begin(nn.Linear(1, 1), {"epochs": 2})
    >>> printer.on_epoch_end(1, {"loss": 0.5, "accuracy": 0.75, "seconds": 1.25})
    >>> out.getvalue()
    'epoch 1/2  loss 0.5000  accuracy 0.7500  (1.2 s)\\n'
    """

    def __init__(self, stream: TextIO | None = None, *, every: int = 1, times: bool = True) -> None:
        positive_int(every, "every", meaning="print every n epochs")
        self.stream = stream
        self.every = every
        self.times = times
        self._epochs: int | None = None
        self._start = 0.0

    def _print(self, text: str) -> None:
        print(text, file=self.stream if self.stream is not None else sys.stdout)

    def on_train_begin(self, model: nn.Module, params: Mapping[str, Any]) -> None:  # noqa: ARG002 - protocol signature
        """Remember the number of epochs and the start time."""
        self._epochs = params.get("epochs")
        self._start = time.perf_counter()

    def on_epoch_end(self, epoch: int, logs: Mapping[str, float]) -> None:
        """Print the epoch's logs."""
        if epoch % self.every != 0 and epoch != self._epochs:
            return
        total = f"/{self._epochs}" if self._epochs is not None else ""
        parts = [f"epoch {epoch}{total}"]
        parts += [f"{key} {value:.4f}" for key, value in logs.items() if key != "seconds"]
        line = "  ".join(parts)
        if self.times and "seconds" in logs:
            line += f"  ({logs['seconds']:.1f} s)"
        self._print(line)

    def on_train_end(self, logs: Mapping[str, float]) -> None:  # noqa: ARG002 - protocol signature
        """Print the total time (or just "done" when ``times=False``)."""
        if self.times:
            self._print(f"done in {time.perf_counter() - self._start:.1f} s")
        else:
            self._print("done")


class EarlyStopping(Callback):
    """Stop when a logged value has not improved for ``patience`` epochs.

    It stops training by raising :class:`StopTraining` from ``on_epoch_end``.

    Parameters
    ----------
    monitor : str, default "val_loss"
        The log key to watch.
    patience : int, default 3
        Epochs without improvement before stopping.
    min_delta : float, default 0.0
        A value counts as an improvement only if it beats ``best`` by at
        least this much. So with ``min_delta > 0`` the best epoch (the one
        restored) need not be the epoch with the best value seen: a later,
        slightly better value does not count.
    mode : {"auto", "min", "max"}, default "auto"
        Whether lower or higher is better; ``"auto"`` means higher for keys
        containing ``"acc"``, lower otherwise.
    restore_best : bool, default True
        At the end of training, load the weights of ``best_epoch`` (if it
        was not the last).

    Attributes
    ----------
    best : float
        The value of the last epoch that counted as an improvement.
    best_epoch : int
        That epoch (0 before the first epoch); its weights are restored.
    stopped_epoch : int
        Epoch at which it stopped training (0 if it did not).

    Raises
    ------
    ValueError
        For a bad argument, or (during training) if ``monitor`` is not in the logs.

    Examples
    --------
    >>> stopper = EarlyStopping(monitor="val_accuracy", patience=2)
    >>> stopper.mode
    'max'
    """

    def __init__(
        self,
        monitor: str = "val_loss",
        *,
        patience: int = 3,
        min_delta: float = 0.0,
        mode: Literal["auto", "min", "max"] = "auto",
        restore_best: bool = True,
    ) -> None:
        positive_int(patience, "patience", meaning="epochs without improvement")
        if not min_delta >= 0:
            msg = f"min_delta must be >= 0, got {min_delta!r}"
            raise ValueError(msg)
        if mode not in ("auto", "min", "max"):
            msg = f"mode must be 'auto', 'min' or 'max', got {mode!r}"
            raise ValueError(msg)
        self.monitor = monitor
        self.patience = patience
        self.min_delta = min_delta
        self.mode: Literal["min", "max"] = (
            ("max" if "acc" in monitor else "min") if mode == "auto" else mode
        )
        self.restore_best = restore_best
        self._reset()
        self._model: nn.Module | None = None

    def _reset(self) -> None:
        self.best = math.inf if self.mode == "min" else -math.inf
        self.best_epoch = 0
        self.stopped_epoch = 0
        self._waited = 0
        self._last_epoch = 0
        self._best_state: dict[str, Tensor] | None = None

    def on_train_begin(self, model: nn.Module, params: Mapping[str, Any]) -> None:  # noqa: ARG002 - protocol signature
        """Reset, and remember the model (to restore the best weights)."""
        self._reset()
        self._model = model

    def on_epoch_end(self, epoch: int, logs: Mapping[str, float]) -> None:
        """Compare with the best value; raise :class:`StopTraining` when out of patience."""
        if self.monitor not in logs:
            hint = " (pass val_data to fit to get val_* logs)" if "val_" in self.monitor else ""
            msg = (
                f"EarlyStopping monitors {self.monitor!r}, which is not in the logs "
                f"({', '.join(logs)}){hint}; choose monitor= among those"
            )
            raise ValueError(msg)
        value = float(logs[self.monitor])
        self._last_epoch = epoch
        if self.mode == "min":
            improved = value < self.best - self.min_delta
        else:
            improved = value > self.best + self.min_delta
        if improved:
            self.best, self.best_epoch, self._waited = value, epoch, 0
            if self.restore_best and self._model is not None:
                state = self._model.state_dict()
                self._best_state = {key: t.detach().clone() for key, t in state.items()}
            return
        self._waited += 1
        if self._waited >= self.patience:
            self.stopped_epoch = epoch
            msg = (
                f"{self.monitor} has not improved for {self.patience} epochs "
                f"(best {self.best:.4g} at epoch {self.best_epoch})"
            )
            raise StopTraining(msg)

    def on_train_end(self, logs: Mapping[str, float]) -> None:  # noqa: ARG002 - protocol signature
        """Load the best weights if they are not the last ones."""
        if (
            self.restore_best
            and self._model is not None
            and self._best_state is not None
            and self.best_epoch != self._last_epoch
        ):
            self._model.load_state_dict(self._best_state)
        self._best_state = None


# ---------------------------------------------------------------------- the loop


def _notify(callbacks: Sequence[object], event: str, *args: object) -> StopTraining | None:
    """Call ``event`` on every callback that has it; return a stop request, if any."""
    stop: StopTraining | None = None
    for callback in callbacks:
        method = getattr(callback, event, None)
        if method is None:
            continue
        try:
            method(*args)
        except StopTraining as request:
            stop = stop or request
    return stop


def _batches(
    data: object, name: str, batch_size: int, *, shuffle: bool, seed: int | None
) -> Iterable[Sequence[Tensor]]:
    """Turn what the user gave into an iterable of batches, rejecting empty data."""
    if isinstance(data, tuple) and len(data) == 2 and all(isinstance(t, Tensor) for t in data):
        inputs, labels = data
        if inputs.shape[0] != labels.shape[0]:
            msg = (
                f"{name} has {inputs.shape[0]} inputs but {labels.shape[0]} labels; "
                "give one label per input"
            )
            raise ValueError(msg)
        data = TensorDataset(inputs, labels)
    if isinstance(data, Dataset):
        if not isinstance(data, Sized):
            msg = f"{name} must have a length; wrap an iterable data set in a DataLoader"
            raise TypeError(msg)
        if len(data) == 0:
            msg = f"{name} is empty; give it at least one (input, label) pair"
            raise ValueError(msg)
        generator = torch.Generator().manual_seed(seed) if seed is not None else None
        return DataLoader(data, batch_size=batch_size, shuffle=shuffle, generator=generator)
    if isinstance(data, DataLoader):
        dataset = data.dataset
        if isinstance(dataset, Sized) and len(dataset) == 0:
            msg = f"{name} is empty (its DataLoader's dataset has no items)"
            raise ValueError(msg)
        return data
    if isinstance(data, Iterable):
        return cast("Iterable[Sequence[Tensor]]", data)
    msg = (
        f"{name} must be a Dataset, a DataLoader, a (inputs, labels) tuple of tensors or an "
        f"iterable of (inputs, labels) batches; got {type(data).__name__}"
    )
    raise TypeError(msg)


def _samples(loader: Iterable[Sequence[Tensor]]) -> int | None:
    """The number of training samples, if the loader knows it."""
    dataset: object = loader.dataset if isinstance(loader, DataLoader) else None
    return len(dataset) if isinstance(dataset, Sized) else None


def _num_classes(data: object) -> int | None:
    """The number of classes a data set declares (``num_classes``), if any."""
    source = data.dataset if isinstance(data, DataLoader) else data
    value = getattr(source, "num_classes", None)
    return value if isinstance(value, int) else None


def _check_batch(scores: Tensor, labels: Tensor, num_classes: int | None) -> None:
    """Check the model's scores against the labels, with errors that say what to change."""
    if scores.ndim != 2:
        msg = (
            f"the model should return class scores [batch, classes], got shape "
            f"{tuple(scores.shape)}; end the model with a Linear layer (flatten first)"
        )
        raise ValueError(msg)
    outputs = scores.shape[1]
    if num_classes is not None and outputs != num_classes:
        msg = (
            f"the model outputs {outputs} scores per input but the data has {num_classes} "
            f"classes; build the model with num_classes={num_classes}"
        )
        raise ValueError(msg)
    if labels.is_floating_point():
        if labels.ndim != 2 or labels.shape[1] != outputs:
            msg = (
                f"float labels are per-class targets [batch, classes] and should have shape "
                f"[{scores.shape[0]}, {outputs}] for this model, got {tuple(labels.shape)}; "
                "give class indices as int64 [batch], or one target column per class"
            )
            raise ValueError(msg)
        return
    if labels.ndim != 1:
        msg = (
            f"labels should be class indices [batch] (or float targets [batch, classes]), "
            f"got a {labels.dtype} tensor of shape {tuple(labels.shape)}"
        )
        raise ValueError(msg)
    if labels.numel() and (int(labels.max()) >= outputs or int(labels.min()) < 0):
        msg = (
            f"labels range from {int(labels.min())} to {int(labels.max())} but the model "
            f"outputs {outputs} scores per input; labels must be in [0, {outputs - 1}]: build "
            "the model with one output per class"
        )
        raise ValueError(msg)


def _correct(scores: Tensor, labels: Tensor) -> int:
    """How many top-scoring classes are right: the label, or one of the target classes."""
    top = scores.argmax(dim=1)
    if labels.ndim == 2:  # per-class targets: right if the top class is one of them
        return int((labels.gather(1, top[:, None])[:, 0] > 0).sum())
    return int((top == labels).sum())


def _unpack(batch: object, name: str) -> tuple[Tensor, Tensor]:
    if not (isinstance(batch, (tuple, list)) and len(batch) == 2):
        msg = f"each batch of {name} must be an (inputs, labels) pair, got {type(batch).__name__}"
        raise TypeError(msg)
    inputs, labels = batch
    return inputs, labels


class _Running:
    """Mean loss and accuracy over the batches seen so far (one epoch, or one evaluation)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.loss, self.correct, self.count = 0.0, 0, 0

    def add(self, loss: Tensor, scores: Tensor, labels: Tensor) -> float:
        """Count one batch; return its mean loss."""
        value = float(loss.detach())
        size = labels.shape[0]
        self.loss += value * size
        self.correct += _correct(scores.detach(), labels)
        self.count += size
        return value

    def means(self) -> dict[str, float]:
        if self.count == 0:
            msg = f"{self.name} gave no batches; give it at least one (input, label) pair"
            raise ValueError(msg)
        return {"loss": self.loss / self.count, "accuracy": self.correct / self.count}


def _scored(
    model: nn.Module,
    batches: Iterable[object],
    name: str,
    loss_fn: nn.Module,
    num_classes: int | None,
    device: torch.device | None,
) -> Iterator[tuple[Tensor, Tensor, Tensor]]:
    """The batch loop of :func:`fit` and :func:`evaluate`: ``(scores, labels, loss)`` per batch."""
    # device None (a model without parameters or buffers): the inputs stay where
    # they are and the labels join them
    for batch in batches:
        inputs, labels = _unpack(batch, name)
        inputs = inputs if device is None else inputs.to(device)
        labels = labels.to(inputs.device)
        scores = model(inputs)
        _check_batch(scores, labels, num_classes)
        yield scores, labels, loss_fn(scores, labels)


def evaluate(
    model: nn.Module,
    data: Data,
    *,
    batch_size: int = 256,
    loss_fn: nn.Module | None = None,
) -> dict[str, float]:
    """Mean loss and accuracy of ``model`` on ``data``, in eval mode, without gradients.

    Parameters
    ----------
    model : nn.Module
        A classifier returning scores ``[batch, classes]``.
    data : Dataset, DataLoader, (inputs, labels) or iterable of batches
        The data to score; labels as in :func:`fit` (class indices or
        per-class targets).
    batch_size : int, default 256
        Batch size when ``data`` is not already batched.
    loss_fn : nn.Module, optional
        Defaults to :class:`torch.nn.CrossEntropyLoss`.

    Returns
    -------
    dict
        ``{"loss": ..., "accuracy": ...}``. The accuracy is the share of
        inputs whose top-scoring class is the label (or, with per-class
        targets, has a positive target).

    Raises
    ------
    ValueError
        If ``data`` is empty or the model's outputs do not match the labels.

    Examples
    --------
    >>> from hooks_tutorial.models import TinyConvNet
    >>> x, y = torch.randn(8, 1, 4, 4), torch.randint(0, 2, (8,))
    >>> sorted(evaluate(TinyConvNet(), (x, y)))
    ['accuracy', 'loss']
    """
    loss_fn = loss_fn if loss_fn is not None else nn.CrossEntropyLoss()
    # the model's device; a model without parameters or buffers runs where the data is
    tensor = next(itertools.chain(model.parameters(), model.buffers()), None)
    device = tensor.device if tensor is not None else None
    num_classes = _num_classes(data)
    was_training = model.training
    model.eval()
    running = _Running("data")
    try:
        with torch.no_grad():
            batches = _batches(data, "data", batch_size, shuffle=False, seed=None)
            for scores, labels, loss in _scored(
                model, batches, "data", loss_fn, num_classes, device
            ):
                running.add(loss, scores, labels)
    finally:
        model.train(was_training)
    return running.means()


def fit(
    model: nn.Module,
    train_data: Data,
    *,
    epochs: int,
    val_data: Data | None = None,
    batch_size: int = 64,
    lr: float = 1e-3,
    optimizer: torch.optim.Optimizer | None = None,
    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
    loss_fn: nn.Module | None = None,
    callbacks: Iterable[object] = (),
    shuffle: bool = True,
    seed: int | None = 0,
) -> History:
    """Train a classifier, calling the callbacks' methods at each event.

    The loop, in plain PyTorch::

        for epoch in range(1, epochs + 1):
            for batch, (x, y) in enumerate(loader, 1):
                optimizer.zero_grad()
                loss = loss_fn(model(x), y)
                loss.backward()
                optimizer.step()  # then scheduler.step(), if given
                # -> on_batch_end(batch, logs)
            # validation, then -> on_epoch_end(epoch, logs)

    Parameters
    ----------
    model : nn.Module
        A classifier returning scores (logits) ``[batch, classes]``.
    train_data : Dataset, DataLoader, (inputs, labels) or iterable of batches
        Training data. A data set or a tensor pair is batched here
        (``batch_size``, ``shuffle``, ``seed``); a DataLoader or other
        iterable is used as it is. Labels are class indices (``int64``
        ``[batch]``) or per-class targets (float ``[batch, classes]``): soft
        labels for the cross-entropy, or multi-hot targets for a multi-label
        model with ``loss_fn=nn.BCEWithLogitsLoss()``. With targets, the logged
        accuracy counts a prediction as right when the top-scoring class has
        a positive target.
    epochs : int
        Passes over the training data.
    val_data : same kinds as ``train_data``, optional
        If given, each epoch's logs include ``val_loss`` and ``val_accuracy``.
    batch_size : int, default 64
        Batch size when ``train_data`` is not already batched.
    lr : float, default 1e-3
        Learning rate of the default Adam optimiser (ignored with ``optimizer``).
    optimizer : torch.optim.Optimizer, optional
        Defaults to ``torch.optim.Adam(model.parameters(), lr=lr)``.
    scheduler : torch.optim.lr_scheduler.LRScheduler, optional
        A learning-rate schedule of ``optimizer``, stepped after every batch
        (for example :class:`~torch.optim.lr_scheduler.OneCycleLR` with
        ``total_steps=epochs * len(loader)``).
    loss_fn : nn.Module, optional
        Defaults to :class:`torch.nn.CrossEntropyLoss`.
    callbacks : iterable of objects
        Objects with some of the methods of :class:`Callback`, called in order.
    shuffle : bool, default True
        Shuffle the training data each epoch (when batched here).
    seed : int or None, default 0
        Seed of the shuffling order; with the same seed, model initialisation
        and thread count, training gives the same weights. ``None`` uses the
        global random state.

    Returns
    -------
    History
        The epoch logs: the first :class:`History` in ``callbacks``, or a new one.
        The model is left in eval mode.

    Raises
    ------
    ValueError
        If ``epochs`` is not a positive int, the data is empty, the model has
        no parameters, its output size does not match the number of classes,
        or ``scheduler`` belongs to another optimizer.
    TypeError
        If the data is of an unsupported kind.

    Examples
    --------
    >>> from hooks_tutorial.models import TinyConvNet
    >>> x, y = torch.randn(32, 1, 4, 4), torch.randint(0, 2, (32,))
    >>> history = fit(TinyConvNet(), (x, y), epochs=2, batch_size=8)
    >>> len(history), sorted(history.history)
    (2, ['accuracy', 'loss', 'seconds'])
    """
    positive_int(epochs, "epochs", meaning="passes over the training data")
    positive_int(batch_size, "batch_size", meaning="samples per batch")
    parameters = list(model.parameters())
    if not parameters:
        msg = f"the model ({type(model).__name__}) has no parameters to train"
        raise ValueError(msg)
    callbacks = list(callbacks)
    history = next((cb for cb in callbacks if isinstance(cb, History)), None)
    if history is None:
        history = History()
        callbacks.insert(0, history)
    loss_fn = loss_fn if loss_fn is not None else nn.CrossEntropyLoss()
    optimizer = optimizer if optimizer is not None else torch.optim.Adam(parameters, lr=lr)
    if scheduler is not None and scheduler.optimizer is not optimizer:
        msg = "scheduler schedules another optimizer; pass that optimizer as optimizer= too"
        raise ValueError(msg)
    device = parameters[0].device
    num_classes = _num_classes(train_data)
    loader = _batches(train_data, "train_data", batch_size, shuffle=shuffle, seed=seed)
    if val_data is not None:  # fail early on empty validation data
        _batches(val_data, "val_data", batch_size, shuffle=False, seed=None)

    params = {
        "epochs": epochs,
        "batch_size": batch_size,
        "steps": len(loader) if isinstance(loader, Sized) else None,
        "samples": _samples(loader),
        "validation": val_data is not None,
    }
    stop = _notify(callbacks, "on_train_begin", model, params)
    logs: dict[str, float] = {}
    epoch = 0
    while stop is None and epoch < epochs:
        epoch += 1
        start = time.perf_counter()
        model.train()
        running = _Running("train_data")
        steps = _scored(model, loader, "train_data", loss_fn, num_classes, device)
        for batch, (scores, labels, loss) in enumerate(steps, 1):
            optimizer.zero_grad(set_to_none=True)
            torch.autograd.backward(loss)  # what loss.backward() calls (typed)
            optimizer.step()
            if scheduler is not None:
                scheduler.step()
            batch_loss = running.add(loss, scores, labels)
            batch_logs = {"epoch": epoch, "loss": batch_loss, "size": labels.shape[0]}
            stop = _notify(callbacks, "on_batch_end", batch, batch_logs)
            if stop is not None:
                break
        logs = running.means()
        if val_data is not None:
            scores_val = evaluate(model, val_data, batch_size=batch_size, loss_fn=loss_fn)
            logs |= {"val_loss": scores_val["loss"], "val_accuracy": scores_val["accuracy"]}
        logs["seconds"] = time.perf_counter() - start
        stop = _notify(callbacks, "on_epoch_end", epoch, logs) or stop
    model.eval()
    _notify(callbacks, "on_train_end", logs)
    return history
