"""Machinery shared by the CAM methods: input checks, targets, hooks, map post-processing."""

from __future__ import annotations

import contextlib
import functools
import numbers
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeAlias, cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .._layers import LayersLike, resolve_layers
from ..hooks import HookGroup, RemovesOnExit

#: What to explain: ``None`` (top-1 class), a class index, one index per image,
#: or a callable mapping the model output to one score per image.
Target: TypeAlias = "int | Sequence[int] | Tensor | Callable[[Any], Tensor] | None"
#: Maps a layer's activation (for example tokens ``[B, N, C]``) to ``[B, C, h, w]``.
ReshapeTransform: TypeAlias = "Callable[[Tensor], Tensor]"


# -- checks ------------------------------------------------------------------
def positive_int(value: object, name: str, *, allow_none: bool = False) -> int | None:
    """Return ``value`` if it is a positive int (or ``None`` when allowed), else raise."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        extra = "None or " if allow_none else ""
        msg = f"{name} must be {extra}a positive int, got {value!r}"
        raise ValueError(msg)
    return value


def check_input(x: object) -> Tensor:
    """Return ``x`` if it is a batch of images ``[B, C, H, W]``, else raise."""
    if not isinstance(x, Tensor):
        msg = f"expected the input as a torch.Tensor [B, C, H, W], got {type(x).__name__}"
        raise TypeError(msg)
    if x.dim() == 3:
        msg = (
            f"expected a batch of images [B, C, H, W], got a 3-D tensor of shape "
            f"{tuple(x.shape)}; add a batch dimension with x.unsqueeze(0)"
        )
        raise ValueError(msg)
    if x.dim() != 4:
        msg = (
            f"expected a batch of images [B, C, H, W] (4-D), got shape {tuple(x.shape)}; "
            "CAM maps are upsampled to the input's height and width"
        )
        raise ValueError(msg)
    if x.shape[0] == 0:
        msg = "got an empty batch (B = 0); pass at least one image"
        raise ValueError(msg)
    if x.is_inference():
        # An inference tensor cannot be saved for backward; a clone made
        # outside inference mode is an ordinary tensor.
        x = x.clone()
    return x


def check_grad_mode(method: str) -> None:
    """Raise if gradients cannot be computed here (inside ``torch.inference_mode()``)."""
    if torch.is_inference_mode_enabled():
        msg = (
            f"{method} needs gradients, which torch.inference_mode() forbids; call it "
            "outside the inference_mode() block (inside torch.no_grad() it works: "
            "gradients are enabled locally)"
        )
        raise RuntimeError(msg)


def check_finite(t: Tensor, what: str) -> None:
    """Raise ``FloatingPointError`` if ``t`` holds NaN or infinity."""
    finite = torch.isfinite(t)
    if not bool(finite.all()):
        bad = int((~finite).sum())
        msg = (
            f"the {what} contain {bad} non-finite value(s) (NaN or inf) out of {t.numel()}; "
            "check the input (torch.isfinite(x).all()) and the model's weights, or pick "
            "another layer"
        )
        raise FloatingPointError(msg)


@contextlib.contextmanager
def eval_mode(model: nn.Module) -> Iterator[None]:
    """Put ``model`` in eval mode and restore every submodule's own flag afterwards."""
    flags = [(module, module.training) for module in model.modules()]
    model.eval()
    try:
        yield
    finally:
        for module, flag in flags:
            module.training = flag


# -- targets -----------------------------------------------------------------
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


# -- maps --------------------------------------------------------------------
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
    flat = maps.flatten(1)
    lo = flat.min(dim=1).values
    hi = flat.max(dim=1).values
    span = hi - lo
    scale = torch.maximum(lo.abs(), hi.abs())
    ok = span > torch.finfo(maps.dtype).eps * scale
    shape = (-1,) + (1,) * (maps.dim() - 1)
    out = (maps - lo.view(shape)) / torch.where(ok, span, torch.ones_like(span)).view(shape)
    return torch.where(ok.view(shape), out, torch.zeros_like(out))


def combine(maps: Sequence[Tensor], size: tuple[int, int], *, raw: bool) -> Tensor:
    """Turn per-layer maps ``[B, h, w]`` into the result of a CAM call."""
    if raw:
        if len(maps) == 1:
            return maps[0]
        hw = max((tuple(m.shape[-2:]) for m in maps), key=lambda s: s[0] * s[1])
        return torch.stack([upsample(m, (hw[0], hw[1])) for m in maps]).mean(dim=0)
    scaled = [normalize(upsample(m, size)) for m in maps]
    if len(scaled) == 1:
        return scaled[0]
    return normalize(torch.stack(scaled).mean(dim=0))


# -- the engine --------------------------------------------------------------
@dataclass
class Capture:
    """What one forward (and backward) pass recorded at the target layers."""

    output: Any
    activations: list[Tensor]
    gradients: list[Tensor] | None
    indices: Tensor | None


class BaseCAM(RemovesOnExit):
    """Common base of the CAM methods: hook lifecycle, checks, targets, post-processing.

    A subclass implements ``_maps(x, target)``, returning one raw map
    ``[B, h, w]`` per target layer; it gets the activations (and gradients)
    from ``self._run(x, target, gradients=...)``. Everything else (input
    checks, eval mode, hooks that live only during the call, upsampling,
    normalisation, several layers) is shared.

    Parameters
    ----------
    model : torch.nn.Module
        The model to explain.
    target_layer : torch.nn.Module, str, or list of them
        The layer(s) whose output is explained, as modules or dotted names
        (resolved with :func:`hooks_tutorial.resolve_layers`).
    reshape_transform : callable, optional
        Maps the layer's output (and its gradient) to ``[B, C, h, w]``.

    Raises
    ------
    TypeError
        If ``reshape_transform`` is not callable, or a layer has a wrong type.
    ValueError
        If a layer name is unknown or a module is not part of ``model``.

    Examples
    --------
    A method that shows the channel-mean activation (class-agnostic):

    >>> import torch
    >>> from torch import nn
    >>> class MeanActivation(BaseCAM):
    ...     uses_gradients = False
    ...     def _maps(self, x, target):
    ...         capture = self._run(x, target, gradients=False, scored=False)
    ...         return [a.mean(dim=1) for a in capture.activations]
    >>> model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU())
    >>> MeanActivation(model, "1")(torch.rand(2, 3, 8, 8)).shape
    torch.Size([2, 8, 8])
    """

    #: Whether the method needs gradients (and so cannot run under inference_mode).
    uses_gradients: ClassVar[bool] = True

    def __init__(
        self,
        model: nn.Module,
        target_layer: LayersLike,
        *,
        reshape_transform: ReshapeTransform | None = None,
    ) -> None:
        self.model = model
        self.layers = resolve_layers(model, target_layer)
        if reshape_transform is not None and not callable(cast("object", reshape_transform)):
            msg = (
                f"reshape_transform must be a callable mapping the layer output to "
                f"[B, C, h, w], got {type(reshape_transform).__name__}"
            )
            raise TypeError(msg)
        self.reshape_transform = reshape_transform
        self._hooks = HookGroup()

    # -- public API ------------------------------------------------------------
    def __call__(self, x: Tensor, target: Target = None, *, raw: bool = False) -> Tensor:
        """Compute one map per image.

        The model runs in eval mode for the call (each submodule's
        ``training`` flag is restored afterwards), hooks are registered at
        the start and removed before returning, gradients are enabled locally
        (so the call works inside ``torch.no_grad()``), and parameters'
        ``.grad`` are never touched.

        Parameters
        ----------
        x : torch.Tensor
            A batch of images ``[B, C, H, W]``.
        target : None, int, sequence of int, torch.Tensor, or callable, optional
            What to explain. ``None``: each image's top-1 class; an int: that
            class for every image; a sequence or 1-D tensor: one class index
            per image; a callable: ``target(output)`` returns one score per
            image (shape ``[B]``), for models whose output is not
            ``[B, classes]`` or to explain any differentiable score. Class
            indices select the pre-softmax output (logit).
        raw : bool, default False
            If ``False``, maps are upsampled bilinearly to ``H x W`` and
            min-max normalised per image to [0, 1] (a constant map, such as
            an all-zero one, becomes all zeros). If ``True``, return the
            unnormalised map at the feature map's resolution ``[B, h, w]``
            (with several target layers, resized to the largest of their
            grids and averaged).

        Returns
        -------
        torch.Tensor
            Maps ``[B, H, W]`` (or ``[B, h, w]`` when ``raw=True``) on the
            input's device, in the activations' floating dtype.

        Raises
        ------
        TypeError
            If ``x`` is not a tensor, the model output is not a tensor and
            ``target`` is not callable, the target layer's output is not a
            tensor, or ``target`` has a wrong type.
        ValueError
            If ``x`` is not 4-D (a single image ``[C, H, W]``: add a batch
            dimension with ``x.unsqueeze(0)``), the target layer's output is
            not 4-D and there is no ``reshape_transform``, the number of
            target indices does not match the batch, or a callable target
            returns the wrong shape.
        IndexError
            If a target class index is out of range.
        RuntimeError
            If a target layer does not run in the forward pass, the score does
            not depend on it, or (gradient methods) the call happens under
            ``torch.inference_mode()``.
        FloatingPointError
            If the activations or gradients contain NaN or infinity.
        """
        x = check_input(x)
        if self.uses_gradients:
            check_grad_mode(type(self).__name__)
        maps = self._maps(x, target)
        return combine(maps, (x.shape[-2], x.shape[-1]), raw=raw)

    def remove(self) -> None:
        """Remove any hook this object still holds; safe to call more than once.

        Hooks are registered at the start of each call and removed before it
        returns, so this only matters after an interrupted call.
        """
        self._hooks.remove()

    def __repr__(self) -> str:
        names = [name for name, _ in self.layers]
        return f"{type(self).__name__}(target_layer={names[0] if len(names) == 1 else names!r})"

    # -- for subclasses --------------------------------------------------------
    def _maps(self, x: Tensor, target: Target) -> list[Tensor]:
        raise NotImplementedError

    def _record(
        self,
        records: list[Tensor],
        gradients: bool,
        module: nn.Module,
        args: tuple[Any, ...],
        output: Any,
    ) -> Tensor | None:
        del module, args
        if not isinstance(output, Tensor):
            msg = (
                f"the target layer returned a {type(output).__name__}, not a tensor; pick a "
                "layer whose output is a tensor [B, C, H, W] (or [B, tokens, C] together "
                "with reshape_transform)"
            )
            raise TypeError(msg)
        if not gradients:
            records.append(output.detach().clone())
            return None
        # Keep the output itself (for torch.autograd.grad) and hand the rest of
        # the model a clone, so that in-place operations after the layer (such
        # as ReLU(inplace=True) or "out += identity") change the clone only.
        # A frozen model (no parameter requires grad) gets a leaf to differentiate.
        kept = output if output.requires_grad else output.detach().requires_grad_(True)
        records.append(kept)
        return kept.clone()

    def _run(self, x: Tensor, target: Target, *, gradients: bool, scored: bool = True) -> Capture:
        """Run the model once with forward hooks on the target layers (and differentiate)."""
        records: list[list[Tensor]] = [[] for _ in self.layers]
        batch = x.shape[0]
        grad_mode = torch.enable_grad() if gradients else torch.no_grad()
        with eval_mode(self.model), grad_mode:
            with self._hooks:
                for (_, module), record in zip(self.layers, records, strict=True):
                    self._hooks.forward(module, functools.partial(self._record, record, gradients))
                output = self.model(x)
            kept = self._last_calls(records)
            activations = [
                self._transform(a.detach(), name, batch)
                for a, (name, _) in zip(kept, self.layers, strict=True)
            ]
            for a, (name, _) in zip(activations, self.layers, strict=True):
                check_finite(a, f"activations of layer {name!r}")
            if not scored:
                return Capture(output, activations, None, None)
            scores, indices = resolve_target(output, target, batch)
            if not gradients:
                return Capture(output, activations, None, indices)
            grads = self._gradients(scores, kept)
        grads = [
            self._transform(g, name, batch) for g, (name, _) in zip(grads, self.layers, strict=True)
        ]
        for g, (name, _) in zip(grads, self.layers, strict=True):
            check_finite(g, f"gradients at layer {name!r}")
        return Capture(output, activations, grads, indices)

    def _last_calls(self, records: list[list[Tensor]]) -> list[Tensor]:
        kept = []
        for record, (name, _) in zip(records, self.layers, strict=True):
            if not record:
                msg = (
                    f"the target layer {name!r} did not run during the forward pass (its "
                    "forward hook never fired); pick a layer that the model's forward() "
                    "calls, such as one listed by model.named_modules() that produces the "
                    "last feature map"
                )
                raise RuntimeError(msg)
            if len(record) > 1:
                warnings.warn(
                    f"the target layer {name!r} ran {len(record)} times in one forward pass; "
                    "the map uses its last call. Pick a module that runs once (for example "
                    "the enclosing block) to silence this warning",
                    UserWarning,
                    stacklevel=5,
                )
            kept.append(record[-1])
        return kept

    def _gradients(self, scores: Tensor, kept: list[Tensor]) -> list[Tensor]:
        if not scores.requires_grad:
            msg = (
                "the score does not depend on anything that requires grad (is the output "
                "detached inside the model?); CAM needs the score to be differentiable with "
                "respect to the target layer"
            )
            raise RuntimeError(msg)
        # torch.autograd.grad differentiates only down to the captured outputs and
        # never touches the parameters' .grad (unlike .backward()).
        grads: tuple[Tensor | None, ...] = torch.autograd.grad(
            scores.sum(), kept, allow_unused=True
        )
        out: list[Tensor] = []
        for g, a, (name, _) in zip(grads, kept, self.layers, strict=True):
            if g is None:
                msg = (
                    f"the score does not depend on the output of layer {name!r}; pick a "
                    "layer on the path from the input to the explained score"
                )
                raise RuntimeError(msg)
            out.append(g.reshape(a.shape))
        return out

    def _transform(self, t: Tensor, name: str, batch: int) -> Tensor:
        shape_in = tuple(t.shape)
        if self.reshape_transform is not None:
            reshaped: object = self.reshape_transform(t)
            if (
                not isinstance(reshaped, Tensor)
                or reshaped.dim() != 4
                or reshaped.shape[0] != batch
            ):
                got = (
                    tuple(reshaped.shape)
                    if isinstance(reshaped, Tensor)
                    else type(reshaped).__name__
                )
                msg = (
                    f"reshape_transform turned the output of layer {name!r} of shape "
                    f"{shape_in} into {got}; it must return a tensor [B, C, h, w] with "
                    f"B = {batch}"
                )
                raise ValueError(msg)
            return reshaped
        if t.dim() != 4:
            hint = (
                "; for transformer tokens [B, tokens, C] pass "
                "reshape_transform=token_reshape_transform"
                if t.dim() == 3
                else ""
            )
            msg = (
                f"the output of layer {name!r} has shape {shape_in} ({t.dim()}-D); CAM methods "
                f"need a feature map [B, C, H, W]{hint}, or pick a convolutional layer"
            )
            raise ValueError(msg)
        if t.shape[0] != batch:
            msg = (
                f"the output of layer {name!r} has batch size {t.shape[0]}, but the input has "
                f"{batch}; pass a reshape_transform that puts the batch first"
            )
            raise ValueError(msg)
        return t
