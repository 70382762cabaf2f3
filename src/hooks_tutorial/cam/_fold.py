"""Score-CAM's masked passes with each eval-mode BatchNorm folded into its convolution.

In eval mode, ``batch_norm(conv2d(x, W, b))`` equals ``conv2d(x, W', b')``
with ``W' = W * s`` and ``b' = (b - mean) * s + beta``, ``s = gamma /
sqrt(var + eps)``: one pass over the feature map instead of two. The
masked passes of a Score-CAM call run the user's own model (its modules,
its hooks) under a :class:`torch.overrides.TorchFunctionMode`, which is
local to the calling thread, so other threads' passes through the same
model are untouched. The mode replaces a folded ``conv2d`` call by the
fused one and the ``batch_norm`` call that follows by its input.

Which pairs fold is found on a real pass of one image, at call time (so the
fused weights are those of the call): a ``conv2d`` output whose only use is
an eval-mode ``batch_norm`` with running statistics. Every masked pass then
checks that the same pattern holds (the fused output's only use is that
``batch_norm``, before and after it); if not, the batch is run again
unfolded and the rest of the call runs unfolded. Nothing is folded while a
hook of the model other than another call's (inactive) hook is present.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.overrides import TorchFunctionMode

from .._scope import inert
from ..gradtools import _tensors

__all__ = ["FoldedPasses"]

# Calls that read a tensor's metadata, not its values (not a "use" of a conv output).
_METADATA = frozenset(
    {"dim", "size", "ndimension", "numel", "nelement", "is_contiguous", "is_floating_point",
     "is_complex", "element_size", "stride", "storage_offset", "get_device", "__len__"}
)  # fmt: skip
_GETTERS = frozenset(
    {"shape", "ndim", "dtype", "device", "layout", "requires_grad", "is_cuda", "is_cpu",
     "is_sparse", "is_quantized", "is_meta", "is_mkldnn", "is_nested", "grad_fn", "is_leaf",
     "names", "_version"}
)  # fmt: skip


def _is_metadata(func: Callable[..., Any]) -> bool:
    name = getattr(func, "__name__", "")
    if name == "__get__":
        return getattr(getattr(func, "__self__", None), "__name__", "") in _GETTERS
    return name in _METADATA


def _conv_args(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
) -> tuple[Tensor, Tensor, Tensor | None, tuple[Any, ...]]:
    return input, weight, bias, (stride, padding, dilation, groups)


@dataclass(frozen=True)
class _BatchNorm:
    input: Tensor
    running_mean: Tensor | None
    running_var: Tensor | None
    weight: Tensor | None
    bias: Tensor | None
    training: bool
    eps: float


def _bn_args(
    input: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: float | None = 0.1,
    eps: float = 1e-5,
) -> _BatchNorm:
    del momentum
    return _BatchNorm(input, running_mean, running_var, weight, bias, training, eps)


@dataclass(frozen=True)
class _Fold:
    """A conv weight, the batch norm that follows it, and the fused weight and bias."""

    weight: Tensor
    bn: _BatchNorm
    fused_weight: Tensor
    fused_bias: Tensor

    def matches(self, bn: _BatchNorm) -> bool:
        return (
            not bn.training
            and bn.eps == self.bn.eps
            and bn.running_mean is self.bn.running_mean
            and bn.running_var is self.bn.running_var
            and bn.weight is self.bn.weight
            and bn.bias is self.bn.bias
        )


def _fuse(weight: Tensor, bias: Tensor | None, bn: _BatchNorm) -> tuple[Tensor, Tensor]:
    assert bn.running_mean is not None
    assert bn.running_var is not None
    scale = torch.rsqrt(bn.running_var + bn.eps)
    if bn.weight is not None:
        scale = scale * bn.weight
    shift = -bn.running_mean * scale
    if bias is not None:
        shift = shift + bias * scale
    if bn.bias is not None:
        shift = shift + bn.bias
    fused = weight * scale.to(weight.dtype).reshape(-1, *([1] * (weight.dim() - 1)))
    return fused.contiguous(memory_format=torch.channels_last), shift.to(weight.dtype)


class _Mismatch(BaseException):
    """A masked pass left the pattern found on the first pass (a BaseException, so that
    ``except Exception`` in a model's forward does not swallow it)."""


class _Finder(TorchFunctionMode):
    """Record each conv2d output's uses during one pass."""

    def __init__(self, probe: Tensor) -> None:
        super().__init__()
        # id(output) -> [output, weight, bias, uses, batch norm or None]
        self.outputs: dict[int, list[Any]] = {}
        self.probe = probe
        # The calls that used the probe (the model's input) other than to read metadata.
        self.probe_uses: list[tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]] = []

    def __torch_function__(
        self,
        func: Callable[..., Any],
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        if not _is_metadata(func):
            if any(t is self.probe for t in _tensors((args, kwargs))):
                self.probe_uses.append((func, args, kwargs))
            for t in _tensors((args, kwargs)):
                entry = self.outputs.get(id(t))
                if entry is None or entry[0] is not t:
                    continue
                entry[3] += 1
                if func is F.batch_norm:
                    bn = _bn_args(*args, **kwargs)
                    if bn.input is t:
                        entry[4] = bn
        out = func(*args, **kwargs)
        if func is torch.conv2d and isinstance(out, Tensor):
            _, weight, bias, _ = _conv_args(*args, **kwargs)
            self.outputs[id(out)] = [out, weight, bias, 0, None]
        return out

    def folds(self) -> dict[int, _Fold]:
        by_weight: dict[int, list[list[Any]]] = {}
        for entry in self.outputs.values():
            by_weight.setdefault(id(entry[1]), []).append(entry)
        folds: dict[int, _Fold] = {}
        for key, entries in by_weight.items():
            _, weight, bias, _, bn = entries[0]
            if (
                bn is None
                or weight.dim() != 4
                or bn.training
                or bn.running_mean is None
                or bn.running_var is None
            ):
                continue
            probe = _Fold(weight, bn, weight, weight)
            # Every call of this weight: its output used once, by the same batch norm.
            if all(e[3] == 1 and e[2] is bias and e[4] and probe.matches(e[4]) for e in entries):
                fused_weight, fused_bias = _fuse(weight, bias, bn)
                folds[key] = _Fold(weight, bn, fused_weight, fused_bias)
        return folds

    def first_conv(self, folds: dict[int, _Fold]) -> _FirstConv | None:
        """The conv2d that is the only use of the model's input, if there is one."""
        if len(self.probe_uses) != 1:
            return None
        func, args, kwargs = self.probe_uses[0]
        if func is not torch.conv2d:
            return None
        inputs, weight, bias, params = _conv_args(*args, **kwargs)
        if inputs is not self.probe or weight.dim() != 4 or isinstance(params[1], str):
            return None
        fold = folds.get(id(weight))
        if fold is not None:
            return _FirstConv(weight, fold.fused_weight, fold.fused_bias, params, fold)
        return _FirstConv(weight, weight, bias, params, None)


@dataclass(frozen=True)
class _FirstConv:
    """The model's first layer, a conv2d (fused with its batch norm if that folds)."""

    original: Tensor
    weight: Tensor
    bias: Tensor | None
    params: tuple[Any, ...]
    fold: _Fold | None


class _Folding(TorchFunctionMode):
    """Run conv2d + batch_norm pairs as one fused conv2d; check the pattern holds."""

    def __init__(
        self,
        folds: dict[int, _Fold],
        first: tuple[Tensor, _FirstConv, Tensor] | None = None,
    ) -> None:
        super().__init__()
        self.folds = folds
        # (stand-in input, the first conv, its precomputed output)
        self.first = first
        self.first_done = False
        self.pending: dict[int, tuple[Tensor, _Fold]] = {}
        self.spent: dict[int, weakref.ref[Tensor]] = {}

    def __torch_function__(
        self,
        func: Callable[..., Any],
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        if self.first is not None and not _is_metadata(func):
            stand_in, first, output = self.first
            if any(t is stand_in for t in _tensors((args, kwargs))):
                if func is not torch.conv2d:
                    raise _Mismatch
                inputs, weight, _, _ = _conv_args(*args, **kwargs)
                if self.first_done or inputs is not stand_in or weight is not first.original:
                    raise _Mismatch
                self.first_done = True
                if first.fold is not None:
                    self.pending[id(output)] = (output, first.fold)
                return output
        if (self.pending or self.spent) and not _is_metadata(func):
            for t in _tensors((args, kwargs)):
                ref = self.spent.get(id(t))
                if ref is not None and ref() is t:
                    raise _Mismatch
                entry = self.pending.get(id(t))
                if entry is None or entry[0] is not t:
                    continue
                if func is not F.batch_norm:
                    raise _Mismatch
                bn = _bn_args(*args, **kwargs)
                if bn.input is not t or not entry[1].matches(bn):
                    raise _Mismatch
                del self.pending[id(t)]
                self.spent[id(t)] = weakref.ref(t)
                return t.view_as(t)  # a new tensor: later uses of t itself are caught
        if func is torch.conv2d:
            inputs, weight, _, params = _conv_args(*args, **kwargs)
            fold = self.folds.get(id(weight))
            if fold is not None and fold.weight is weight:
                out: Tensor = func(inputs, fold.fused_weight, fold.fused_bias, *params)
                self.pending[id(out)] = (out, fold)
                return out
        return func(*args, **kwargs)


def _hooks(model: nn.Module) -> Iterator[Callable[..., object]]:
    for module in model.modules():
        for hooks in (
            module._forward_hooks,
            module._forward_pre_hooks,
        ):
            yield from list(hooks.values())


class FoldedPasses:
    """Run masked batches through ``model`` with BatchNorm folded where it is safe.

    Built per call, inside ``eval_mode`` and ``torch.inference_mode()``:
    the first pass (one image, ``probe``) finds the pairs and fuses the
    call's current weights. ``folded`` says whether any pair folds.

    If the model's input goes only into a conv2d (a ResNet's ``conv1``),
    :meth:`factored` also uses that the conv is linear: for masks
    ``M_k = sum_j c_kj B_j`` over a fixed basis ``B_j``, the first layer's
    output on ``x * M_k`` is ``sum_j c_kj conv(x * B_j)`` (plus the bias),
    so ``m`` convolutions per image and one matrix product replace one
    convolution per masked input.
    """

    def __init__(self, model: nn.Module, probe: Tensor) -> None:
        self.model = model
        self.folds: dict[int, _Fold] = {}
        self.first: _FirstConv | None = None
        self._basis: tuple[Tensor, Tensor, Tensor, Tensor | None, tuple[int, ...]] | None = None
        if not all(inert(hook) for hook in _hooks(model)):
            return
        finder = _Finder(probe)
        with finder:
            model(probe)
        self.folds = finder.folds()
        self.first = finder.first_conv(self.folds)

    @property
    def folded(self) -> bool:
        """Whether the passes run with at least one BatchNorm folded."""
        return bool(self.folds)

    def __call__(self, inputs: Tensor) -> object:
        if not self.folds:
            return self.model(inputs)
        mode = _Folding(self.folds)
        try:
            with mode:
                out = self.model(inputs)
            if mode.pending:
                raise _Mismatch
        except _Mismatch:
            self.folds = {}
            self.first = None
            return self.model(inputs)
        return out

    def factorable(self, basis_size: int, count: int) -> bool:
        """Whether factoring the first conv over ``basis_size`` maps saves work for ``count`` masks."""
        if self.first is None:
            return False
        per_output = self.first.weight[0].numel()  # multiply-adds per output of the conv
        return count * (per_output - basis_size) > 2 * basis_size * per_output

    def factored(self, image: Tensor, basis: Tensor, coefficients: Tensor) -> object | None:
        """``model(image * masks)`` for ``masks = coefficients @ basis``, via the first conv.

        ``image`` is ``[1, C, H, W]``, ``basis`` ``[m, H, W]``, ``coefficients``
        ``[n, m]``. Returns ``None`` if the model leaves the pattern (the
        caller then runs the masked inputs).
        """
        first = self.first
        if first is None:
            return None
        if self._basis is None or self._basis[0] is not image or self._basis[1] is not basis:
            inputs = (image * basis[:, None]).contiguous(memory_format=torch.channels_last)
            z = F.conv2d(inputs, first.weight, None, *first.params)  # [m, C', H', W']
            z = z.contiguous(memory_format=torch.channels_last)
            flat = z.permute(0, 2, 3, 1).reshape(z.shape[0], -1)
            bias_row = None
            if first.bias is not None:
                bias_row = first.bias.to(z.dtype).expand(z.shape[2], z.shape[3], -1).reshape(1, -1)
            self._basis = (image, basis, flat, bias_row, tuple(z.shape[1:]))
        _, _, flat, bias_row, (channels, height, width) = self._basis
        coefficients = coefficients.to(flat.dtype)
        out = coefficients @ flat if bias_row is None else torch.addmm(bias_row, coefficients, flat)
        out = out.view(-1, height, width, channels).permute(0, 3, 1, 2)
        stand_in = image.expand(coefficients.shape[0], -1, -1, -1)
        mode = _Folding(self.folds, (stand_in, first, out))
        try:
            with mode:
                result: object = self.model(stand_in)
            if mode.pending or not mode.first_done:
                raise _Mismatch
        except _Mismatch:
            self.first = None
            self._basis = None
            return None
        return result
