"""Guided backpropagation and Guided Grad-CAM."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from .._checks import check_finite, check_grad_mode, check_input, check_model
from .._layers import LayersLike, check_not_compiled_in_place, eager_module
from .._scope import Scope
from .._scoring import Target, eval_mode, resolve_target
from ..hooks import HookGroup
from ._base import NoHooksHeld, ReshapeTransform
from ._methods import GradCAM

__all__ = ["GuidedBackprop", "GuidedGradCAM"]


def _positive(grad: Tensor) -> Tensor:
    return grad.clamp(min=0)


class GuidedBackprop(NoHooksHeld):
    r"""Guided backpropagation: input gradients that pass only positive signals through ReLUs.

    A ReLU normally passes the gradient where its input was positive. Guided
    backpropagation also zeroes negative gradients coming from above, so for
    a ReLU with input :math:`x` and output gradient :math:`g`:

    .. math::

        \frac{\partial^{\text{guided}}}{\partial x} = [x > 0] \cdot
        \operatorname{ReLU}(g),

    and the saliency is the resulting gradient of the score with respect to
    the input image, ``[B, C, H, W]``.

    Parameters
    ----------
    model : torch.nn.Module
        The classifier. Only its :class:`torch.nn.ReLU` modules are changed
        (functional ``torch.relu`` calls and other activations are not seen).

    Raises
    ------
    ValueError
        If the model has no ``nn.ReLU`` module.

    Notes
    -----
    Call the object as ``guided(x, target=None)`` with ``target`` as for
    :class:`GradCAM`; it returns the unnormalised saliency ``[B, C, H, W]``
    on the input's device. The model runs in eval mode; the parameters'
    ``.grad`` are not touched.

    The rule is installed with a forward hook on every ReLU that registers a
    tensor hook on the ReLU's output, clamping the incoming gradient to
    :math:`\ge 0`; autograd's own ReLU backward then applies :math:`[x > 0]`.
    This is equivalent to a full backward hook that clamps ``grad_input``,
    but unlike it works with ``ReLU(inplace=True)`` (torchvision's ResNets)
    without changing the module, and leaves no trace on the modules: module
    hooks are removed after the forward pass, tensor hooks after the
    backward pass.

    References
    ----------
    J. T. Springenberg, A. Dosovitskiy, T. Brox, M. Riedmiller, "Striving for
    Simplicity: The All Convolutional Net", ICLR Workshop 2015.
    arXiv:1412.6806.

    Examples
    --------
    >>> import torch
    >>> from torch import nn
    >>> model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(inplace=True), nn.Flatten(),
    ...                       nn.Linear(4 * 6 * 6, 2))
    >>> with GuidedBackprop(model) as guided:
    ...     saliency = guided(torch.randn(2, 3, 8, 8), target=1)
    >>> saliency.shape
    torch.Size([2, 3, 8, 8])
    """

    def __init__(self, model: nn.Module) -> None:
        self.model = eager_module(check_model(model))  # torch.compile's wrapper: the original
        self.relus = [(n, m) for n, m in self.model.named_modules() if isinstance(m, nn.ReLU)]
        if not self.relus:
            msg = (
                f"the model ({type(model).__name__}) has no nn.ReLU module; guided "
                "backpropagation changes the backward pass of nn.ReLU modules only "
                "(functional torch.relu calls and other activations such as GELU are not seen)"
            )
            raise ValueError(msg)

    def __call__(self, x: Tensor, target: Target = None) -> Tensor:
        """Return the guided saliency ``[B, C, H, W]``; see the class docstring."""
        saliency, _ = self.saliency(x, target)
        return saliency

    def saliency(self, x: Tensor, target: Target = None) -> tuple[Tensor, Tensor | None]:
        """Return the guided saliency and the explained class indices.

        Parameters
        ----------
        x : torch.Tensor
            A batch of images ``[B, C, H, W]``.
        target : None, int, sequence of int, torch.Tensor, or callable, optional
            As for :class:`GradCAM`.

        Returns
        -------
        saliency : torch.Tensor
            ``[B, C, H, W]``.
        indices : torch.Tensor or None
            The class index per image, or ``None`` for a callable target.
        """
        x = check_input(x)
        check_grad_mode(type(self).__name__)
        check_not_compiled_in_place(self.model)  # its compiled code would skip the ReLU hooks
        x_in = x.detach().clone().requires_grad_(True)
        with HookGroup() as tensor_hooks, eval_mode(self.model), torch.enable_grad():

            def guide(module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
                del module, args
                if isinstance(output, Tensor) and output.requires_grad:
                    tensor_hooks.tensor(output, _positive)

            scope = Scope()
            with HookGroup() as relu_hooks:
                for _, relu in self.relus:
                    relu_hooks.forward(relu, scope.wrap(guide))
                with scope:
                    output = self.model(x_in)
            scores, indices = resolve_target(output, target, x.shape[0])
            if not scores.requires_grad:
                msg = (
                    "the score does not depend on the input; cannot backpropagate to it; "
                    "check that the model's forward does not detach its output or run under "
                    "torch.no_grad(), and that a callable target returns a score computed "
                    "from the output"
                )
                raise RuntimeError(msg)
            (grad,) = torch.autograd.grad(scores.sum(), x_in)
        check_finite(grad, "input gradients")
        return grad, indices

    def __repr__(self) -> str:
        return f"GuidedBackprop({len(self.relus)} ReLU module(s))"


class GuidedGradCAM(NoHooksHeld):
    r"""Guided Grad-CAM: guided backpropagation masked by the upsampled Grad-CAM map.

    .. math::

        S^c = \frac{\partial^{\text{guided}} y^c}{\partial X} \odot
        \operatorname{Up}\big(L^c_{\text{Grad-CAM}}\big)

    where the Grad-CAM map is upsampled to the input size and min-max
    normalised per image (broadcast over the colour channels). The result
    has the fine detail of guided backpropagation and the class
    discrimination of Grad-CAM.

    Parameters
    ----------
    model : torch.nn.Module
        The classifier (it needs ``nn.ReLU`` modules, see :class:`GuidedBackprop`).
    target_layer : torch.nn.Module, str, or list of them
        The Grad-CAM layer(s).
    reshape_transform : callable, optional
        See :class:`GradCAM`.

    Notes
    -----
    Call as ``ggc(x, target=None)``; returns ``[B, C, H, W]``. Two passes are
    made (one guided, one plain), because the guided rule must not change the
    Grad-CAM gradient; with ``target=None`` the class found in the first
    pass is reused in the second.

    References
    ----------
    R. R. Selvaraju et al., "Grad-CAM: Visual Explanations from Deep Networks
    via Gradient-based Localization", ICCV 2017. arXiv:1610.02391.

    Examples
    --------
    >>> import torch
    >>> from torch import nn
    >>> model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(),
    ...                       nn.Linear(4 * 6 * 6, 2))
    >>> GuidedGradCAM(model, "1")(torch.randn(2, 3, 8, 8)).shape
    torch.Size([2, 3, 8, 8])
    """

    def __init__(
        self,
        model: nn.Module,
        target_layer: LayersLike,
        *,
        reshape_transform: ReshapeTransform | None = None,
    ) -> None:
        self.gradcam = GradCAM(model, target_layer, reshape_transform=reshape_transform)
        self.guided = GuidedBackprop(model)

    def __call__(self, x: Tensor, target: Target = None) -> Tensor:
        """Return the Guided Grad-CAM saliency ``[B, C, H, W]``; see the class docstring."""
        saliency, indices = self.guided.saliency(x, target)
        cam = self.gradcam(x, target if indices is None else indices)
        return saliency * cam[:, None].to(saliency.dtype)

    def __repr__(self) -> str:
        return f"GuidedGradCAM({self.gradcam!r})"
