"""Cascading model randomisation: a sanity check for saliency methods."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import NamedTuple

import torch
from torch import Tensor, nn

from .._checks import check_input
from .._layers import resolve_layers
from .._scoring import Target, check_logits, eval_mode
from ..hooks import HookGroup
from ._similarity import pearson, spearman, ssim


class RandomizationStep(NamedTuple):
    """Maps after randomising the model down to one layer, and their similarity.

    Attributes
    ----------
    layer : str
        The layer randomised at this step (cumulatively with those before);
        ``"(original)"`` for the first entry.
    maps : torch.Tensor
        ``[B, H, W]`` maps of the (partly) randomised model.
    spearman, pearson, ssim : torch.Tensor
        ``[B]`` similarity to the original maps.
    """

    layer: str
    maps: Tensor
    spearman: Tensor
    pearson: Tensor
    ssim: Tensor


def _execution_order(
    model: nn.Module, x: Tensor, candidates: list[tuple[str, nn.Module]]
) -> list[str]:
    """Names of ``candidates`` in the order their first call happens in a forward pass."""
    seen: list[str] = []
    with HookGroup() as hooks:
        for name, module in candidates:

            def first_call(m: nn.Module, args: object, out: object, name: str = name) -> None:
                del m, args, out
                if name not in seen:
                    seen.append(name)

            hooks.forward(module, first_call)
        with eval_mode(model), torch.no_grad():
            model(x)
    return seen


def _default_layers(model: nn.Module, x: Tensor) -> list[str]:
    prefix, parent = "", model
    while True:
        children = [
            (f"{prefix}{n}", c)
            for n, c in parent.named_children()
            if any(True for _ in c.parameters())
        ]
        if len(children) != 1 or any(True for _ in parent.parameters(recurse=False)):
            break
        prefix, parent = f"{children[0][0]}.", children[0][1]
    if not children:
        msg = "the model has no submodule with parameters to randomise; pass layers=[...]"
        raise ValueError(msg)
    return list(reversed(_execution_order(model, x, children)))


def _reinitialize(module: nn.Module) -> None:
    for sub in module.modules():
        reset = getattr(sub, "reset_parameters", None)
        if callable(reset):
            reset()
        else:
            for p in sub.parameters(recurse=False):
                with torch.no_grad():
                    std = float(p.std()) if p.numel() > 1 else 0.02
                    p.normal_(float(p.mean()), std if std > 0 else 0.02)


def model_randomization(
    model: nn.Module,
    explainer: Callable[[nn.Module], Callable[[Tensor, Target], Tensor]],
    x: Tensor,
    target: Target = None,
    *,
    layers: Sequence[str] | None = None,
    seed: int = 0,
) -> list[RandomizationStep]:
    """Cascading model-parameter randomisation: a sanity check for saliency methods.

    The layers are re-initialised one after the other from the output
    towards the input, cumulatively, on a deep copy of the model; after each
    step the maps are recomputed and compared with the original ones. A
    method whose maps stay similar while the weights become random does not
    explain the model (it behaves like an edge detector).

    Parameters
    ----------
    model : torch.nn.Module
        The model; it is deep-copied and never modified.
    explainer : callable
        ``explainer(model_copy)`` returns a callable ``(x, target) -> maps
        [B, H, W]``, for example ``lambda m: GradCAM(m, "layer4")``. It is
        called once, on the copy.
    x : torch.Tensor
        Images ``[B, C, H, W]``.
    target : None, int, sequence of int, torch.Tensor, or callable, optional
        What to explain; ``None`` is fixed to the top-1 classes of the
        original model, so every step explains the same classes.
    layers : sequence of str, optional
        Dotted names of the modules to randomise, in order. By default the
        children of the model that have parameters (descending into a single
        wrapper child), in reverse order of execution (found with forward
        hooks): for a ResNet ``fc, layer4, layer3, layer2, layer1, bn1,
        conv1``.
    seed : int, default 0
        Seed for the re-initialisation (the global random state is restored
        afterwards).

    Returns
    -------
    list of named tuples ``(layer, maps, spearman, pearson, ssim)``
        First the original maps (``layer="(original)"``, similarity 1), then
        one entry per layer: the layer randomised at this step (cumulatively
        with those before), the maps ``[B, H, W]`` of the partly randomised
        model, and their similarities ``[B]`` to the original maps.

    Raises
    ------
    ValueError
        If a layer name is unknown.

    Notes
    -----
    Modules are re-initialised with their own ``reset_parameters()``;
    parameters of modules without it are redrawn from a normal distribution
    with their current mean and standard deviation.

    References
    ----------
    J. Adebayo, J. Gilmer, M. Muelly, I. Goodfellow, M. Hardt, B. Kim,
    "Sanity Checks for Saliency Maps", NeurIPS 2018. arXiv:1810.03292.

    Examples
    --------
    >>> import torch
    >>> from torch import nn
    >>> from hooks_tutorial.cam import GradCAM
    >>> model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
    ...                       nn.Flatten(), nn.Linear(4, 2))
    >>> steps = model_randomization(model, lambda m: GradCAM(m, "1"), torch.rand(2, 3, 8, 8))
    >>> [s.layer for s in steps]
    ['(original)', '4', '0']
    """
    x = check_input(x)
    clone = copy.deepcopy(model)
    names = list(layers) if layers is not None else _default_layers(clone, x)
    modules = [m for _, m in resolve_layers(clone, names)] if names else []
    if target is None:
        with eval_mode(clone), torch.no_grad():
            target = check_logits(clone(x), x.shape[0]).argmax(dim=1)
    explain = explainer(clone)
    original = explain(x, target).detach()
    ones = torch.ones(x.shape[0], dtype=original.dtype, device=original.device)
    steps = [RandomizationStep("(original)", original, ones, ones.clone(), ones.clone())]
    devices = sorted({p.device.index or 0 for p in clone.parameters() if p.device.type == "cuda"})
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        for name, module in zip(names, modules, strict=True):
            _reinitialize(module)
            maps = explain(x, target).detach()
            steps.append(
                RandomizationStep(
                    name,
                    maps,
                    spearman(original, maps),
                    pearson(original, maps),
                    ssim(original, maps),
                )
            )
    return steps
