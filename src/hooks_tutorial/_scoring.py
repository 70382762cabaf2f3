"""How an explained model is run and scored: eval mode, targets, class scores.

The CAM engine and the metrics both explain "the score of the target": a
class index (its logit, or its softmax probability on a changed input) or a
callable that picks one score per image from the model output.
"""

from __future__ import annotations

import contextlib
import numbers
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeAlias

import torch
from torch import Tensor, nn

#: What to explain: ``None`` (top-1 class), a class index, one index per image,
#: or a callable mapping the model output to one score per image.
Target: TypeAlias = "int | Sequence[int] | Tensor | Callable[[Any], Tensor] | None"


_EVAL_LOCK = threading.Lock()
# model -> [number of calls inside eval_mode(model), the flags to restore]
_EVAL_USERS: weakref.WeakKeyDictionary[nn.Module, list[Any]] = weakref.WeakKeyDictionary()


@contextlib.contextmanager
def eval_mode(model: nn.Module) -> Iterator[None]:
    """Put ``model`` in eval mode and restore every submodule's own flag afterwards.

    Calls that overlap on one model (from several threads, or nested) share
    one eval period: the first to enter records the flags, the last to leave
    restores them, so no call sees the model switch back to training mode
    under it.
    """
    with _EVAL_LOCK:
        entry = _EVAL_USERS.get(model)
        if entry is None:
            flags = [(module, module.training) for module in model.modules()]
            model.eval()
            _EVAL_USERS[model] = [1, flags]
        else:
            entry[0] += 1
    try:
        yield
    finally:
        with _EVAL_LOCK:
            entry = _EVAL_USERS[model]
            entry[0] -= 1
            if entry[0] == 0:
                del _EVAL_USERS[model]
                for module, flag in entry[1]:
                    module.training = flag


def check_logits(output: object, batch: int) -> Tensor:
    """Return the model output as logits ``[B, classes]`` or explain what to pass instead."""
    if not isinstance(output, Tensor):
        msg = (
            f"the model returned a {type(output).__name__}, not a tensor of class scores; "
            "pass a callable target that picks one score per image from it, for example "
            "target=lambda out: out['logits'][:, 3]"
        )
        raise TypeError(msg)
    if output.dim() != 2 or output.shape[0] != batch:
        msg = (
            f"a class-index target needs a model output of shape [B, classes] = [{batch}, K], "
            f"got {tuple(output.shape)}; pass a callable target that returns one score per "
            "image, for example target=lambda out: out.flatten(1)[:, 3]"
        )
        raise ValueError(msg)
    return output


def class_indices(logits: Tensor, target: object, batch: int) -> Tensor:
    """Turn ``target`` (None, int, sequence or tensor) into class indices ``[B]``."""
    n_classes = logits.shape[1]
    if target is None:
        return logits.argmax(dim=1)
    if isinstance(target, bool):
        msg = "target must be a class index (int), not a bool"
        raise TypeError(msg)
    if isinstance(target, numbers.Integral):
        idx = torch.full((batch,), int(target), dtype=torch.long, device=logits.device)
    else:
        if isinstance(target, (str, bytes)):
            msg = f"target must be a class index or a list of them, got the string {target!r}"
            raise TypeError(msg)
        try:
            t = torch.as_tensor(target)
        except (TypeError, ValueError, RuntimeError) as error:
            msg = (
                f"target must be None, an int, a sequence or 1-D tensor of ints, or a "
                f"callable; got {type(target).__name__}"
            )
            raise TypeError(msg) from error
        if t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
            msg = (
                f"target class indices must be integers, got dtype {t.dtype}; to explain a "
                "score computed from the output, pass a callable target"
            )
            raise TypeError(msg)
        if t.dim() == 0:
            t = t.expand(batch)
        if t.dim() != 1 or t.numel() != batch:
            msg = (
                f"got {t.numel()} target indices (shape {tuple(t.shape)}) for a batch of "
                f"{batch} image(s); pass one class index per image, a single int for all, or "
                "None for each image's top-1 class"
            )
            raise ValueError(msg)
        idx = t.to(device=logits.device, dtype=torch.long)
    bad = (idx < 0) | (idx >= n_classes)
    if bool(bad.any()):
        value = int(idx[bad][0])
        msg = (
            f"target class {value} is out of range for a model with {n_classes} outputs; "
            f"use a class index in 0..{n_classes - 1}"
        )
        raise IndexError(msg)
    return idx


def resolve_target(output: object, target: object, batch: int) -> tuple[Tensor, Tensor | None]:
    """Return the score per image ``[B]`` and the class indices (``None`` for a callable)."""
    if callable(target):
        scores = target(output)
        if not isinstance(scores, Tensor):
            msg = (
                f"the target callable returned a {type(scores).__name__}; it must return a "
                f"tensor with one score per image, shape ({batch},)"
            )
            raise TypeError(msg)
        if tuple(scores.shape) != (batch,):
            msg = (
                f"the target callable returned a tensor of shape {tuple(scores.shape)}; it "
                f"must return one score per image, shape ({batch},), for example "
                "target=lambda out: out[:, 3]"
            )
            raise ValueError(msg)
        return scores, None
    logits = check_logits(output, batch)
    idx = class_indices(logits, target, batch)
    return logits.gather(1, idx[:, None]).squeeze(1), idx


def target_indices(output: object, target: object, batch: int) -> Tensor | None:
    """Return the class index per image ``[B]``, or ``None`` for a callable target."""
    if callable(target):
        return None
    return class_indices(check_logits(output, batch), target, batch)


def row_scores(output: object, target: Target, indices: Tensor | None, rows: Tensor) -> Tensor:
    """Score each row of the output of a changed (masked, perturbed) batch of inputs.

    Row ``r`` of ``output`` comes from a copy of image ``rows[r]``. With class
    indices (``indices`` ``[B]``, from :func:`target_indices` on the original
    images) the score is the softmax probability of class ``indices[rows[r]]``;
    with a callable target (``indices`` is ``None``) it is the callable's own
    value, which must score each row on its own.
    """
    if indices is None:
        scores, _ = resolve_target(output, target, rows.shape[0])
        return scores
    probs = check_logits(output, rows.shape[0]).softmax(dim=1)
    return probs.gather(1, indices[rows][:, None]).squeeze(1)


def scorer(
    model: nn.Module, x: Tensor, target: Target
) -> tuple[Callable[[Tensor, Tensor], Tensor], Tensor]:
    """Return ``score(inputs, rows) -> [n]`` and the scores of ``x`` itself.

    Class-index targets are scored by their softmax probability (fixed to
    the class found on ``x`` when ``target`` is None); a callable target by
    its own value (see :func:`row_scores`).
    """
    output = model(x)
    indices = target_indices(output, target, x.shape[0])

    def score(inputs: Tensor, rows: Tensor) -> Tensor:
        return row_scores(model(inputs), target, indices, rows)

    return score, row_scores(output, target, indices, torch.arange(x.shape[0], device=x.device))
