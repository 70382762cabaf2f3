"""The CAM engine shared by every method: hooks on the target layers, the ReLU, the maps."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, ClassVar, TypeAlias, cast

import torch
from torch import Tensor, nn

if TYPE_CHECKING:
    from typing_extensions import Self

from .._checks import check_finite, check_grad_mode, check_input
from .._layers import LayersLike, check_not_compiled_in_place, eager_module, resolve_layers
from .._maps import normalize, upsample
from .._scope import Scope
from .._scoring import Target, eval_mode, resolve_target
from ..hooks import HookGroup
from ._reshape import check_channels_first, map_tensors, tensors_in
from ._warnings import ZeroMapWarning

__all__ = [
    "BaseCAM",
    "LayerRecord",
    "NoHooksHeld",
    "ReshapeTransform",
    "combine",
]

#: Maps a layer's output (tokens ``[B, N, C]``, a tuple or dict of levels) to ``[B, C, h, w]``.
ReshapeTransform: TypeAlias = "Callable[[Any], Tensor]"


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
@dataclass(frozen=True)
class LayerRecord:
    """The tensors one CAM call recorded at its target layers, one entry per layer.

    ``activations`` and ``gradients`` are ``[B, C, h, w]`` (after the
    ``reshape_transform``); ``gradients`` is ``None`` for a method that does
    not use them, ``indices`` (the explained class per image) is ``None`` for
    a callable target or a class-agnostic method.
    """

    activations: list[Tensor]
    gradients: list[Tensor] | None
    indices: Tensor | None


class NoHooksHeld:
    """Calls hold no hook; ``with`` is accepted so that pytorch-grad-cam's idiom runs.

    Base of the CAM and saliency classes. Each call registers its hooks when
    it starts and removes them in ``finally`` before it returns or raises, so
    an object holds no hook between calls, and ``with GradCAM(...) as cam:``
    registers and removes nothing. The ``with`` support exists only so that
    code written for pytorch-grad-cam (whose objects hold hooks and use
    ``with`` to remove them) runs unchanged; the tutorial pages use the plain
    call, ``GradCAM(model, layer)(x)``.
    """

    def __enter__(self) -> Self:
        """Return the object itself: there is nothing to register."""
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Do nothing: there is no hook to remove, and an exception propagates."""


class BaseCAM(NoHooksHeld):
    """Common base of the CAM methods: hook lifecycle, checks, targets, post-processing.

    The hook rule of every CAM and saliency class, written once: an object
    holds no hook. Each call registers its hooks when it starts and removes
    them in ``finally`` before it returns, whether it returns or raises (any
    exception, ``KeyboardInterrupt`` included). So ``with Method(...) as
    cam:`` registers and removes nothing: it is accepted only so that code
    written for pytorch-grad-cam's ``with`` idiom runs unchanged; the
    tutorial pages use the plain call.

    While they exist, a call's hooks act only on the passes that the call
    itself runs, in its own thread, so one model (and one object) can serve
    concurrent calls, whose results equal those of the same calls made one
    after another. The model's mode is shared, though: a call puts the model
    in eval mode while it runs, and a pass that another thread runs
    meanwhile runs in eval mode too; do not explain a model while another
    thread trains it.

    A subclass implements ``_maps(x, target)``, returning one signed map
    ``[B, h, w]`` per target layer, from the ``LayerRecord`` that
    ``self._run(x, target)`` returns. Two class attributes say what the call
    records: ``uses_gradients`` (differentiate the score) and ``uses_target``
    (resolve the target to a score and class indices; ``False`` for a
    class-agnostic method). Everything else (input checks, eval mode, hooks
    that live only during the call, the final ReLU, upsampling,
    normalisation, several layers) is shared.

    Parameters
    ----------
    model : torch.nn.Module
        The model to explain. For the wrapper that :func:`torch.compile`
        returns, the original module is explained (and stored as ``model``),
        in eager mode: see :class:`~hooks_tutorial.GradCAM`. A model compiled
        in place (``model.compile()``) is refused: it has no eager module.
    target_layer : torch.nn.Module, str, or list of them
        The layer(s) whose output is explained, as modules or dotted names
        as :meth:`torch.nn.Module.named_modules` lists them (``"layer4.1"``).
    reshape_transform : callable, optional
        Maps the layer's output to ``[B, C, h, w]``: transformer tokens
        ``[B, N, C]`` (:func:`~hooks_tutorial.token_reshape_transform`), a
        channels-last map ``[B, H, W, C]``
        (:func:`~hooks_tutorial.channels_last_reshape_transform`), or the
        tuple or dict that a layer such as a feature pyramid returns
        (``lambda out: out["0"]`` picks one level). It receives the raw
        output, and then the gradient in the same structure (each tensor
        replaced by the score's gradient with respect to it, zeros where the
        score does not use it), so it should only select and re-arrange
        values: pick, reshape, permute, or concatenate levels of one size.
    relu : bool, default True
        Keep only the positive part of each map (the final ReLU of the
        methods); ``False`` gives the signed map.

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
    ...     uses_target = False
    ...     def _maps(self, x, target):
    ...         return [a.mean(dim=1) for a in self._run(x, target).activations]
    >>> model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU())
    >>> MeanActivation(model, "1")(torch.rand(2, 3, 8, 8)).shape
    torch.Size([2, 8, 8])
    """

    #: Whether the method needs gradients (and so cannot run under inference_mode).
    uses_gradients: ClassVar[bool] = True
    #: Whether the method explains a target (``False``: class-agnostic, target ignored).
    uses_target: ClassVar[bool] = True

    def __init__(
        self,
        model: nn.Module,
        target_layer: LayersLike,
        *,
        reshape_transform: ReshapeTransform | None = None,
        relu: bool = True,
    ) -> None:
        self.model = eager_module(model)  # torch.compile's wrapper: the original module
        self.layers = resolve_layers(model, target_layer)
        if reshape_transform is not None and not callable(cast("object", reshape_transform)):
            msg = (
                f"reshape_transform must be a callable mapping the layer output to "
                f"[B, C, h, w], got {type(reshape_transform).__name__}"
            )
            raise TypeError(msg)
        self.reshape_transform = reshape_transform
        self.relu = relu

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
            tensor (a tuple or dict) and there is no ``reshape_transform``,
            or ``target`` has a wrong type.
        ValueError
            If ``x`` is not 4-D (a single image ``[C, H, W]``: add a batch
            dimension with ``x.unsqueeze(0)``), the target layer's output is
            not 4-D, or is channels-last ``[B, H, W, C]`` by the layer's own
            ``LayerNorm`` or ``Linear``, and there is no ``reshape_transform``,
            the number of target indices does not match the batch, a
            callable target returns the wrong shape, or a module of the model
            was compiled in place with ``module.compile()`` (compile a wrapper,
            ``torch.compile(model)``, instead).
        IndexError
            If a target class index is out of range.
        RuntimeError
            If a target layer does not run in the forward pass, the score does
            not depend on it, or (gradient methods) the call happens under
            ``torch.inference_mode()``.
        FloatingPointError
            If the activations or gradients contain NaN or infinity.

        Warns
        -----
        ZeroMapWarning
            If an image's map is zero at every position because the score's
            gradient with respect to the layer's output is (gradient
            methods), or the map itself is (the other methods).
        """
        x = check_input(x)
        if self.uses_gradients:
            check_grad_mode(type(self).__name__)
        maps = self._maps(x, target)
        if not self.uses_gradients:  # the gradient methods check their gradients in _run
            self._warn_zero_maps(maps)
        if self.relu:
            maps = [m.clamp(min=0) for m in maps]
        return combine(maps, (x.shape[-2], x.shape[-1]), raw=raw)

    def __repr__(self) -> str:
        names = [name for name, _ in self.layers]
        return f"{type(self).__name__}(target_layer={names[0] if len(names) == 1 else names!r})"

    # -- for subclasses --------------------------------------------------------
    def _maps(self, x: Tensor, target: Target) -> list[Tensor]:
        """One signed map ``[B, h, w]`` per target layer (before the final ReLU)."""
        raise NotImplementedError

    def _run(self, x: Tensor, target: Target) -> LayerRecord:
        """Run the model once with forward hooks on the target layers (and differentiate).

        The activations are checked first, then the target is resolved (if
        ``uses_target``), then the score is differentiated (if
        ``uses_gradients``).
        """
        batch = x.shape[0]
        records: list[list[object]] = [[] for _ in self.layers]
        grads: list[Any] | None = None
        indices: Tensor | None = None
        grad_mode = torch.enable_grad() if self.uses_gradients else torch.no_grad()
        scope = Scope()
        check_not_compiled_in_place(self.model)  # checked when hooks are added: now
        with eval_mode(self.model), grad_mode:
            with HookGroup() as hooks:
                for (_, module), record in zip(self.layers, records, strict=True):
                    hooks.forward(module, scope.wrap(functools.partial(self._record, record)))
                with scope:
                    output = self.model(x)
            kept = self._last_calls(records)
            detached = [map_tensors(Tensor.detach, k) for k in kept]
            activations = self._checked(detached, "activations of layer", batch)
            if self.uses_target:
                scores, indices = resolve_target(output, target, batch)
                if self.uses_gradients:
                    grads = self._gradients(scores, kept)
        if grads is not None:
            grads = self._checked(grads, "gradients at layer", batch)
            self._warn_zero_gradients(grads)
        return LayerRecord(activations, grads, indices)

    def _record(
        self, records: list[object], module: nn.Module, args: tuple[Any, ...], output: Any
    ) -> Any:
        # The output may be a tensor or a tuple or dict of them (a feature
        # pyramid); reshape_transform turns it into [B, C, h, w] after the pass.
        del module, args
        if not self.uses_gradients:
            records.append(map_tensors(lambda t: t.detach().clone(), output))
            return None
        # Keep the output itself (for torch.autograd.grad) and hand the rest of
        # the model a clone, so that in-place operations after the layer (such
        # as ReLU(inplace=True) or "out += identity") change the clone only.
        kept = map_tensors(_differentiable, output)
        records.append(kept)
        return map_tensors(Tensor.clone, kept)

    def _checked(self, outputs: list[Any], what: str, batch: int) -> list[Tensor]:
        """Reshape each layer's output to ``[B, C, h, w]`` and check that it is finite."""
        out = [
            self._transform(t, name, module, batch)
            for t, (name, module) in zip(outputs, self.layers, strict=True)
        ]
        for t, (name, _) in zip(out, self.layers, strict=True):
            check_finite(t, f"{what} {name!r}")
        return out

    def _last_calls(self, records: list[list[object]]) -> list[object]:
        kept = []
        for record, (name, _) in zip(records, self.layers, strict=True):
            if not record:
                msg = (
                    f"the target layer {name!r} did not run during the forward pass (its "
                    "forward hook never fired); pick a layer that the model's forward() "
                    "calls, such as one listed by model.named_modules() that produces the "
                    "last feature map. A layer that runs in another thread (nn.DataParallel "
                    "on several GPUs) is not seen: explain model.module instead"
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

    def _gradients(self, scores: Tensor, kept: list[object]) -> list[object]:
        """The score's gradient with respect to each layer's output, in the output's structure."""
        if not scores.requires_grad:
            msg = (
                "the score does not depend on anything that requires grad (is the output "
                "detached inside the model?); CAM needs the score to be differentiable with "
                "respect to the target layer"
            )
            raise RuntimeError(msg)
        # torch.autograd.grad differentiates only down to the captured outputs and
        # never touches the parameters' .grad (unlike .backward()).
        inputs = [t for k in kept for t in tensors_in(k) if t.requires_grad]
        grads: tuple[Tensor | None, ...] = (
            torch.autograd.grad(scores.sum(), inputs, allow_unused=True) if inputs else ()
        )
        grad_of = {id(t): g for t, g in zip(inputs, grads, strict=True)}
        out: list[object] = []
        for k, (name, _) in zip(kept, self.layers, strict=True):
            if all(grad_of.get(id(t)) is None for t in tensors_in(k)):
                msg = (
                    f"the score does not depend on the output of layer {name!r}; pick a "
                    "layer on the path from the input to the explained score"
                )
                raise RuntimeError(msg)
            # One level of a pyramid that the score does not use gets a zero gradient.
            out.append(map_tensors(lambda t: _gradient_or_zeros(grad_of.get(id(t)), t), k))
        return out

    def _warn_zero_gradients(self, grads: list[Tensor]) -> None:
        """Warn for each layer whose gradient is zero at every position of an image."""
        for g, (name, _) in zip(grads, self.layers, strict=True):
            zero = ~g.flatten(1).any(dim=1)
            if zero.any():
                msg = (
                    f"the map of layer {name!r} is zero for {_images(zero)}: the score's "
                    "gradient with respect to this layer's output is zero at every position, "
                    "so the score does not depend on it through these positions (as at a "
                    "ViT's last block, whose patch tokens the class-token head never reads, "
                    "at a pyramid level the score does not use, or with a target that "
                    "selects nothing, such as an empty segmentation region or a box that "
                    "matches no detection). Pick a layer whose output the score reads at "
                    "every position: for a ViT, one before "
                    "the last block's attention (its first LayerNorm, norm1 or ln_1, in the "
                    "pre-norm blocks of timm and torchvision, or the previous block); "
                    "otherwise an earlier layer"
                )
                warnings.warn(msg, ZeroMapWarning, stacklevel=5)

    def _warn_zero_maps(self, maps: list[Tensor]) -> None:
        """Warn for each layer whose map is zero at every position of an image."""
        for m, (name, _) in zip(maps, self.layers, strict=True):
            zero = ~m.flatten(1).any(dim=1)
            if zero.any():
                msg = (
                    f"the map of layer {name!r} is zero for {_images(zero)}: "
                    f"{type(self).__name__} found nothing to weight in this layer's output "
                    "(for example, its activations are the same at every position, or zero "
                    "everywhere). Pick a layer whose activations vary over the image, for "
                    "example an earlier layer"
                )
                warnings.warn(msg, ZeroMapWarning, stacklevel=3)

    def _transform(self, t: Any, name: str, module: nn.Module, batch: int) -> Tensor:
        shape_in = tuple(t.shape) if isinstance(t, Tensor) else f"a {type(t).__name__}"
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
        if not isinstance(t, Tensor):
            msg = (
                f"the target layer {name!r} returned {shape_in}, not a tensor; pass a "
                "reshape_transform that turns it into a tensor [B, C, h, w], for example "
                f"reshape_transform={_picker(t)}, or pick a layer whose output is a tensor"
            )
            raise TypeError(msg)
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
        check_channels_first(t, module, name)
        return t


def _differentiable(t: Tensor) -> Tensor:
    """``t`` itself, or for a frozen model (nothing requires grad) a leaf to differentiate."""
    if t.requires_grad or not t.is_floating_point():
        return t
    return t.detach().requires_grad_(True)


def _gradient_or_zeros(grad: Tensor | None, t: Tensor) -> Tensor:
    return torch.zeros_like(t) if grad is None else grad.reshape(t.shape)


def _images(zero: Tensor) -> str:
    """``"all 4 image(s)"`` or ``"image(s) 0, 3 of 4"``, for a boolean mask over the batch."""
    if bool(zero.all()):
        return f"all {len(zero)} image(s)"
    which = [str(i) for i in zero.nonzero()[:, 0].tolist()]
    shown = ", ".join(which[:8]) + (f" and {len(which) - 8} more" if len(which) > 8 else "")
    return f"image(s) {shown} of {len(zero)}"


def _picker(output: object) -> str:
    """A ``reshape_transform`` that picks the first tensor of a tuple or dict, as text."""
    if isinstance(output, dict) and output:
        key = next(iter(output))
        return f"lambda out: out[{key!r}] (keys: {', '.join(map(repr, output))})"
    if isinstance(output, (tuple, list)) and output:
        return f"lambda out: out[0] ({len(output)} items)"
    return "lambda out: ..."
