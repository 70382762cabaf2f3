"""The gradient-based CAM methods, plain CAM and Eigen-CAM.

Notation: :math:`A^k` is channel :math:`k` of the target layer's activation
(``[h, w]``), :math:`y^c` the explained score (the pre-softmax logit of class
:math:`c` unless a callable target says otherwise), :math:`g^k = \\partial y^c
/ \\partial A^k` and :math:`Z = h w`.
"""

from __future__ import annotations

from typing import ClassVar, cast

import torch
from torch import Tensor, nn

from .._layers import LayerLike, resolve_layers
from .._scoring import Target
from ._base import BaseCAM, ReshapeTransform

__all__ = [
    "CAM",
    "EigenCAM",
    "GradCAM",
    "GradCAMPlusPlus",
    "HiResCAM",
    "LayerCAM",
    "XGradCAM",
]


class _GradientCAM(BaseCAM):
    """A CAM computed from activations ``A`` and gradients ``g`` at the target layer."""

    def _maps(self, x: Tensor, target: Target) -> list[Tensor]:
        record = self._run(x, target)
        assert record.gradients is not None
        return [
            self.formula(a, g) for a, g in zip(record.activations, record.gradients, strict=True)
        ]

    @staticmethod
    def formula(activations: Tensor, gradients: Tensor) -> Tensor:
        """The method's map before the final ReLU.

        Parameters
        ----------
        activations, gradients : torch.Tensor
            ``A`` and ``dy/dA``, both ``[B, K, h, w]``.

        Returns
        -------
        torch.Tensor
            The signed map ``[B, h, w]``.
        """
        raise NotImplementedError


def _weighted_sum(weights: Tensor, activations: Tensor) -> Tensor:
    """``sum_k w_k A^k`` for weights ``[B, K]`` and activations ``[B, K, h, w]``."""
    return torch.einsum("bk,bkhw->bhw", weights, activations)


class GradCAM(_GradientCAM):
    r"""Grad-CAM: channels weighted by their spatially averaged gradient.

    .. math::

        \alpha_k^c = \frac{1}{Z} \sum_{i,j} \frac{\partial y^c}{\partial A^k_{ij}},
        \qquad
        L^c_{\text{Grad-CAM}} = \operatorname{ReLU}\Big(\sum_k \alpha_k^c A^k\Big)

    On a network that ends in global average pooling and one linear layer,
    :math:`\alpha_k^c = w^c_k / Z`, so Grad-CAM equals :class:`CAM` divided
    by :math:`Z`.

    Parameters
    ----------
    model : torch.nn.Module
        The classifier to explain. It is not modified: it runs in eval mode
        during a call and its previous ``training`` flags are restored.
    target_layer : torch.nn.Module, str, or list of them
        The layer whose output is explained (a submodule or its dotted name,
        such as ``"layer4"``); with a list, the normalised maps of the layers
        are averaged.
    reshape_transform : callable, optional
        Maps the layer's output (and its gradient) to ``[B, C, h, w]``, for
        example :func:`token_reshape_transform` for transformer tokens. It
        must only re-arrange values (select, reshape, permute), because it is
        applied to the gradient too.
    relu : bool, default True
        Keep only the positive evidence (the final ReLU). ``False`` gives the
        signed map.

    See Also
    --------
    CAM, HiResCAM, GradCAMPlusPlus

    Notes
    -----
    Call the object as ``cam(x, target=None, *, raw=False)``; see
    :meth:`BaseCAM.__call__ <hooks_tutorial.cam.BaseCAM.__call__>` for the
    accepted targets, the output and the errors. Hooks exist only during the
    call; ``with GradCAM(...) as cam:`` also works, and leaving the block has
    nothing to remove.

    The gradient is taken with :func:`torch.autograd.grad` with respect to
    the layer's output, captured by a forward hook that hands the rest of
    the model a clone, so in-place operations after the layer are harmless.

    A model compiled with ``compiled = torch.compile(model)`` is explained
    through the module it wraps, ``model`` itself, run in eager mode: the
    compiled code does not run hooks added after compiling, and autograd
    cannot differentiate down to a layer inside a compiled graph. The map
    is the eager model's map, and it costs an eager forward and backward
    pass. Layer names are accepted with or without the wrapper's
    ``"_orig_mod."`` prefix (``"layer4"`` or ``"_orig_mod.layer4"``); a
    layer module is the same object in both. The same holds for every CAM
    and saliency class.

    The maps of :class:`GradCAM`, :class:`HiResCAM`, :class:`XGradCAM` and
    :class:`LayerCAM` equal those of pytorch-grad-cam's classes of the same
    names up to float32 rounding: both libraries apply the ReLU, resize
    bilinearly (half-pixel centres, ``align_corners=False``) and min-max
    normalise, and normalising before or after a bilinear resize gives the
    same map. pytorch-grad-cam's ``XGradCAM`` adds :math:`10^{-7}` to each
    channel's activation sum, which matters only for sums near zero.
    :class:`GradCAMPlusPlus`, :class:`ScoreCAM` and :class:`EigenCAM`
    differ from theirs, as their notes say.

    References
    ----------
    R. R. Selvaraju, M. Cogswell, A. Das, R. Vedantam, D. Parikh, D. Batra,
    "Grad-CAM: Visual Explanations from Deep Networks via Gradient-based
    Localization", ICCV 2017; IJCV 2020. arXiv:1610.02391.

    Examples
    --------
    >>> import torch
    >>> from torch import nn
    >>> model = nn.Sequential(
    ...     nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(),
    ...     nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 5))
    >>> with GradCAM(model, "1") as cam:
    ...     maps = cam(torch.randn(2, 3, 16, 16), target=[0, 3])
    >>> maps.shape, bool(maps.min() >= 0), bool(maps.max() <= 1)
    (torch.Size([2, 16, 16]), True, True)
    """

    @staticmethod
    def formula(activations: Tensor, gradients: Tensor) -> Tensor:
        return _weighted_sum(gradients.mean(dim=(2, 3)), activations)


class HiResCAM(_GradientCAM):
    r"""HiResCAM: gradient times activation, summed over channels, position by position.

    .. math::

        L^c_{\text{HiResCAM}} = \operatorname{ReLU}\Big(\sum_k
        \frac{\partial y^c}{\partial A^k} \odot A^k\Big)

    Unlike Grad-CAM, the gradient is not averaged over space, so the map is
    faithful to the score (its sum over positions is the first-order
    contribution of the layer). On global average pooling followed by one
    linear layer the gradient is constant over space and HiResCAM equals
    Grad-CAM.

    Parameters
    ----------
    model : torch.nn.Module
        The classifier to explain (see :class:`GradCAM`).
    target_layer : torch.nn.Module, str, or list of them
        The layer(s) to explain (see :class:`GradCAM`).
    reshape_transform : callable, optional
        See :class:`GradCAM`.
    relu : bool, default True
        The paper's map is the signed sum; the final ReLU (kept by default,
        as for the other methods) shows positive evidence only. Pass
        ``relu=False`` for the signed map.

    References
    ----------
    R. L. Draelos, L. Carin, "Use HiResCAM instead of Grad-CAM for faithful
    explanations of convolutional neural networks", arXiv:2011.08891 (2020).

    Examples
    --------
    >>> import torch
    >>> from torch import nn
    >>> model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.Flatten(), nn.Linear(4 * 6 * 6, 2))
    >>> HiResCAM(model, "0", relu=False)(torch.randn(1, 3, 8, 8), raw=True).shape
    torch.Size([1, 6, 6])
    """

    @staticmethod
    def formula(activations: Tensor, gradients: Tensor) -> Tensor:
        return (gradients * activations).sum(dim=1)


class GradCAMPlusPlus(_GradientCAM):
    r"""Grad-CAM++: positive gradients weighted per position.

    .. math::

        a^{kc}_{ij} = \frac{(g^k_{ij})^2}
        {2 (g^k_{ij})^2 + \sum_{a,b} A^k_{ab} (g^k_{ij})^3},
        \qquad
        w^c_k = \sum_{i,j} a^{kc}_{ij} \operatorname{ReLU}(g^k_{ij}),
        \qquad
        L^c = \operatorname{ReLU}\Big(\sum_k w^c_k A^k\Big)

    with :math:`g^k_{ij} = \partial y^c / \partial A^k_{ij}`; the higher
    derivatives of the paper become powers of :math:`g` under its assumption
    of an exponential score. Only positions with :math:`g > 0` contribute, and
    there :math:`a\,\operatorname{ReLU}(g) = g / (2 + g \sum_{ab} A^k_{ab})`,
    which is how it is computed (no cancellation, no epsilon); a zero
    denominator gives a zero coefficient.

    Parameters
    ----------
    model : torch.nn.Module
        The classifier to explain (see :class:`GradCAM`).
    target_layer : torch.nn.Module, str, or list of them
        The layer(s) to explain (see :class:`GradCAM`).
    reshape_transform : callable, optional
        See :class:`GradCAM`.
    relu : bool, default True
        Apply the final ReLU.

    Notes
    -----
    pytorch-grad-cam's ``GradCAMPlusPlus`` (version 1.5.7) adds
    :math:`\varepsilon = 10^{-6}` to the denominator
    :math:`2 g^2 + g^3 \sum_{ab} A_{ab} = g^2 \, (2 + g \sum_{ab} A_{ab})`, so
    its coefficient is :math:`a = g^2 / (g^2 (2 + g \sum A) + \varepsilon)`
    instead of :math:`1 / (2 + g \sum A)`. Where :math:`g \sum A` is small,
    that shrinks the coefficient by the factor
    :math:`2 g^2 / (2 g^2 + \varepsilon)`: by 0.5 % at :math:`|g| = 10^{-2}`,
    by a third at :math:`|g| = 10^{-3}`, and below that the coefficient
    grows like :math:`g^2 / \varepsilon`. Gradients that small are common
    at the last convolutional layer, where global average pooling over
    7 x 7 positions divides them by 49 (at ``layer4`` of torchvision's
    ResNet-18 with random weights they are below :math:`10^{-3}`). The two
    maps then differ; with larger gradients they agree to float32 rounding.
    This class computes the paper's coefficient, without an epsilon.

    References
    ----------
    A. Chattopadhay, A. Sarkar, P. Howlader, V. N. Balasubramanian,
    "Grad-CAM++: Generalized Gradient-based Visual Explanations for Deep
    Convolutional Networks", WACV 2018. arXiv:1710.11063.

    Examples
    --------
    >>> import torch
    >>> from torch import nn
    >>> model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(),
    ...                       nn.Linear(4 * 6 * 6, 2))
    >>> GradCAMPlusPlus(model, "1")(torch.randn(3, 3, 8, 8), target=1).shape
    torch.Size([3, 8, 8])
    """

    @staticmethod
    def formula(activations: Tensor, gradients: Tensor) -> Tensor:
        sums = activations.sum(dim=(2, 3), keepdim=True)
        denominator = 2 + sums * gradients
        usable = (gradients > 0) & (denominator != 0)
        safe = torch.where(usable, denominator, torch.ones_like(denominator))
        terms = torch.where(usable, gradients / safe, torch.zeros_like(gradients))
        return _weighted_sum(terms.sum(dim=(2, 3)), activations)


class XGradCAM(_GradientCAM):
    r"""XGrad-CAM: gradients averaged with the activations as weights.

    .. math::

        \alpha^c_k = \sum_{i,j} \frac{A^k_{ij}}{\sum_{a,b} A^k_{ab}}
        \frac{\partial y^c}{\partial A^k_{ij}},
        \qquad
        L^c = \operatorname{ReLU}\Big(\sum_k \alpha^c_k A^k\Big)

    A channel whose activations sum to zero gets weight zero. On global
    average pooling followed by one linear layer the gradient is constant
    over space, so both weights equal that constant and XGrad-CAM equals
    Grad-CAM.

    Parameters
    ----------
    model : torch.nn.Module
        The classifier to explain (see :class:`GradCAM`).
    target_layer : torch.nn.Module, str, or list of them
        The layer(s) to explain (see :class:`GradCAM`).
    reshape_transform : callable, optional
        See :class:`GradCAM`.
    relu : bool, default True
        Apply the final ReLU.

    References
    ----------
    R. Fu, Q. Hu, X. Dong, Y. Guo, Y. Gao, B. Li, "Axiom-based Grad-CAM:
    Towards Accurate Visualization and Explanation of CNNs", BMVC 2020.
    arXiv:2008.02312.

    Examples
    --------
    >>> import torch
    >>> from torch import nn
    >>> model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(),
    ...                       nn.Linear(4 * 6 * 6, 2))
    >>> XGradCAM(model, "1")(torch.randn(1, 3, 8, 8)).shape
    torch.Size([1, 8, 8])
    """

    @staticmethod
    def formula(activations: Tensor, gradients: Tensor) -> Tensor:
        sums = activations.sum(dim=(2, 3))
        weighted = (activations * gradients).sum(dim=(2, 3))
        nonzero = sums != 0
        safe = torch.where(nonzero, sums, torch.ones_like(sums))
        weights = torch.where(nonzero, weighted / safe, torch.zeros_like(sums))
        return _weighted_sum(weights, activations)


class LayerCAM(_GradientCAM):
    r"""Layer-CAM: positive gradients as position-wise weights.

    .. math::

        L^c = \operatorname{ReLU}\Big(\sum_k \operatorname{ReLU}\Big(
        \frac{\partial y^c}{\partial A^k}\Big) \odot A^k\Big)

    Because the weights are per position, it gives useful maps also for
    early, high-resolution layers (average the maps of several layers by
    passing a list as ``target_layer``).

    Parameters
    ----------
    model : torch.nn.Module
        The classifier to explain (see :class:`GradCAM`).
    target_layer : torch.nn.Module, str, or list of them
        The layer(s) to explain (see :class:`GradCAM`).
    reshape_transform : callable, optional
        See :class:`GradCAM`.
    relu : bool, default True
        Apply the outer ReLU (the inner one on the gradients is always there).

    References
    ----------
    P.-T. Jiang, C.-B. Zhang, Q. Hou, M.-M. Cheng, Y. Wei, "LayerCAM:
    Exploring Hierarchical Class Activation Maps for Localization", IEEE
    Transactions on Image Processing 30, 2021.

    Examples
    --------
    >>> import torch
    >>> from torch import nn
    >>> model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Conv2d(4, 4, 3), nn.ReLU(),
    ...                       nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 2))
    >>> LayerCAM(model, ["1", "3"])(torch.randn(2, 3, 12, 12)).shape
    torch.Size([2, 12, 12])
    """

    @staticmethod
    def formula(activations: Tensor, gradients: Tensor) -> Tensor:
        return (gradients.clamp(min=0) * activations).sum(dim=1)


class CAM(BaseCAM):
    r"""Class activation mapping for networks ending in global average pooling and a linear layer.

    .. math::

        M^c = \sum_k w^c_k A^k

    where :math:`w^c` is row :math:`c` of the weight of the linear layer that
    follows global average pooling of the target layer (the bias does not
    enter). No gradient is needed; the model runs once under
    ``torch.no_grad()``. On such a network Grad-CAM equals :math:`M^c / Z`.

    Parameters
    ----------
    model : torch.nn.Module
        The classifier, of the form ``features -> global average pooling ->
        fc`` (for example a torchvision ResNet).
    target_layer : torch.nn.Module or str
        The last feature layer, whose channels the pooling averages
        (``"layer4"`` for a ResNet).
    fc_layer : torch.nn.Module or str
        The linear layer after the pooling (``"fc"`` for a ResNet); its
        weight must have one column per channel of ``target_layer``.
    reshape_transform : callable, optional
        See :class:`GradCAM`.
    relu : bool, default True
        Keep only the positive part. The paper's map is signed
        (``relu=False``); the default matches the other methods, so that
        ``CAM`` equals ``GradCAM * Z`` as returned.

    Raises
    ------
    TypeError
        If a layer is given as a list, or ``fc_layer`` has no 2-D ``weight``.

    Notes
    -----
    A callable target is not supported: CAM needs a class index to pick the
    row of the weight.

    References
    ----------
    B. Zhou, A. Khosla, A. Lapedriza, A. Oliva, A. Torralba, "Learning Deep
    Features for Discriminative Localization", CVPR 2016. arXiv:1512.04150.

    Examples
    --------
    >>> import torch
    >>> from torch import nn
    >>> model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
    ...                       nn.Flatten(), nn.Linear(8, 4))
    >>> CAM(model, "1", "4")(torch.randn(2, 3, 10, 10), raw=True).shape
    torch.Size([2, 8, 8])
    """

    uses_gradients: ClassVar[bool] = False

    def __init__(
        self,
        model: nn.Module,
        target_layer: LayerLike,
        fc_layer: LayerLike,
        *,
        reshape_transform: ReshapeTransform | None = None,
        relu: bool = True,
    ) -> None:
        if not all(
            isinstance(cast("object", t), (str, nn.Module)) for t in (target_layer, fc_layer)
        ):
            msg = (
                "CAM takes one target layer and one fc layer (a module or a dotted name "
                "each), not lists"
            )
            raise TypeError(msg)
        super().__init__(model, target_layer, reshape_transform=reshape_transform, relu=relu)
        self.fc_name, self.fc = resolve_layers(model, fc_layer)[0]
        weight = getattr(self.fc, "weight", None)
        if not isinstance(weight, Tensor) or weight.dim() != 2:
            msg = (
                f"fc_layer {self.fc_name!r} ({type(self.fc).__name__}) has no 2-D weight; "
                "pass the nn.Linear layer that follows global average pooling"
            )
            raise TypeError(msg)

    def _maps(self, x: Tensor, target: Target) -> list[Tensor]:
        if callable(target):
            msg = (
                "CAM needs a class index to select a row of the fc weight; pass None, an "
                "int or one index per image, or use GradCAM for a callable target"
            )
            raise TypeError(msg)
        record = self._run(x, target)
        assert record.indices is not None
        activations = record.activations[0]
        weight = self.fc.weight
        assert isinstance(weight, Tensor)
        if weight.shape[1] != activations.shape[1]:
            msg = (
                f"the fc layer {self.fc_name!r} takes {weight.shape[1]} features but the "
                f"target layer {self.layers[0][0]!r} has {activations.shape[1]} channels; "
                "pass the last feature layer before global average pooling"
            )
            raise ValueError(msg)
        rows = weight.detach()[record.indices].to(activations.dtype)
        return [_weighted_sum(rows, activations)]


class EigenCAM(BaseCAM):
    r"""Eigen-CAM: the first principal component of the activations (class-agnostic).

    With the activations arranged as a matrix :math:`X \in \mathbb{R}^{hw
    \times K}` (one row per position), centred over positions,
    :math:`\bar X = X - \mathbf{1}\mu^\top`, and the singular value
    decomposition :math:`\bar X = U \Sigma V^\top`:

    .. math::

        L = \operatorname{ReLU}(\bar X v_1) \in \mathbb{R}^{hw},

    reshaped to :math:`h \times w`. No gradient and no target are used: the
    map shows the dominant pattern of the layer, whatever the class. The
    sign of :math:`v_1` is arbitrary; it is chosen so that the map
    correlates positively with the channel-mean activation.

    Parameters
    ----------
    model : torch.nn.Module
        The model (see :class:`GradCAM`).
    target_layer : torch.nn.Module, str, or list of them
        The layer(s) to explain (see :class:`GradCAM`).
    reshape_transform : callable, optional
        See :class:`GradCAM`.
    relu : bool, default True
        Keep only the positive side of the projection.

    Notes
    -----
    ``target`` is accepted for a uniform interface and ignored. The model
    runs once under ``torch.no_grad()`` (so this method also works under
    ``torch.inference_mode()``).

    pytorch-grad-cam's ``EigenCAM`` (its ``get_2d_projection``) computes the
    same centred projection but keeps the sign of :math:`v_1` that the SVD
    returns, which is arbitrary: for some images its projection is the
    negative of this one, and after the final ReLU its map shows the other
    side of the component, which correlates negatively with the
    channel-mean activation. The projections agree up to that sign. (Its ``SegEigenCAM`` instead flips the sign when
    :math:`|\min| > |\max|`.)

    References
    ----------
    M. B. Muhammad, M. Yeasin, "Eigen-CAM: Class Activation Map using
    Principal Components", IJCNN 2020. arXiv:2008.00299.

    Examples
    --------
    >>> import torch
    >>> from torch import nn
    >>> model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
    ...                       nn.Flatten(), nn.Linear(8, 4))
    >>> EigenCAM(model, "1")(torch.randn(2, 3, 10, 10)).shape
    torch.Size([2, 10, 10])
    """

    uses_gradients: ClassVar[bool] = False
    uses_target: ClassVar[bool] = False

    def _maps(self, x: Tensor, target: Target) -> list[Tensor]:
        return [self.projection(a) for a in self._run(x, target).activations]

    @staticmethod
    def projection(activations: Tensor) -> Tensor:
        """Project each position on the first principal component of the channels.

        Parameters
        ----------
        activations : torch.Tensor
            ``[B, K, h, w]``.

        Returns
        -------
        torch.Tensor
            The signed projection ``[B, h, w]``, oriented to correlate
            positively with the channel-mean activation.
        """
        b, k, h, w = activations.shape
        flat = activations.reshape(b, k, h * w).transpose(1, 2)  # [B, hw, K]
        centred = flat - flat.mean(dim=1, keepdim=True)
        _, _, vh = torch.linalg.svd(centred, full_matrices=False)
        projection = torch.einsum("bpk,bk->bp", centred, vh[:, 0, :])
        mean_map = flat.mean(dim=2)
        mean_map = mean_map - mean_map.mean(dim=1, keepdim=True)
        sign = torch.where((projection * mean_map).sum(dim=1) < 0, -1.0, 1.0)
        return (projection * sign.to(projection.dtype)[:, None]).reshape(b, h, w)
