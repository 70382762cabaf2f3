r"""Change or check gradients during the backward pass, with removable hooks.

* :func:`scale_gradients` multiplies the gradient of chosen parameters.
* :func:`clip_gradients` bounds them, by value or by norm, per parameter.
* :func:`detect_anomalies` stops at the first NaN or Inf, forward or
  backward, and names the module.

Each returns something to use in a ``with`` statement; every hook is removed
when the block ends, normally or by an exception.

Threads: :func:`scale_gradients` and :func:`clip_gradients` hook the
parameters themselves, so they act on every backward pass through those
parameters while the hooks exist, whichever thread runs it (autograd may run
a backward pass in its own threads, on a GPU). :func:`detect_anomalies`
checks the forward passes run in the context that entered its block only (a
pass that another thread runs through the model is neither checked nor
stopped), the gradients of those passes' outputs, and every gradient that
reaches a parameter.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable, Iterator
from typing import Any, Literal

import torch
from torch import nn
from torch.utils.hooks import RemovableHandle
from torch.utils.weak import WeakIdKeyDictionary

from ._checks import check_model, positive_number
from ._layers import LayersLike, check_not_compiled, resolve_layers
from ._scope import Scope
from .hooks import HookGroup

__all__ = ["AnomalyError", "clip_gradients", "detect_anomalies", "scale_gradients"]

ParamsLike = nn.Module | torch.Tensor | Iterable[torch.Tensor]


def _parameters(target: object, layers: LayersLike | None, *, what: str) -> list[torch.Tensor]:
    """The distinct tensors that require grad, from a model, layers or a list."""
    if isinstance(target, nn.Module):
        modules = [target] if layers is None else [m for _, m in resolve_layers(target, layers)]
        params: list[torch.Tensor] = [p for m in modules for p in m.parameters() if p.requires_grad]
        if not params:
            where = type(target).__name__ if layers is None else "the chosen layers"
            msg = (
                f"no parameter of {where} requires grad, so there is nothing to {what}; "
                "unfreeze some parameters (p.requires_grad_(True)) or pass other layers"
            )
            raise ValueError(msg)
    else:
        if layers is not None:
            msg = (
                "layers= only works when the first argument is the model; pass the model, "
                "or pass the parameters alone"
            )
            raise TypeError(msg)
        if isinstance(target, torch.Tensor):
            candidates: list[object] = [target]
        elif isinstance(target, (str, bytes)) or not isinstance(target, Iterable):
            msg = (
                f"expected a model, a tensor or an iterable of parameters, got "
                f"{type(target).__name__}; to choose layers by name write "
                f"{what}_gradients(model, ..., layers=['layer4'])"
            )
            raise TypeError(msg)
        else:
            candidates = list(target)
        params = []
        for i, p in enumerate(candidates):
            if not isinstance(p, torch.Tensor):
                msg = (
                    f"item {i} is a {type(p).__name__}, not a tensor; pass parameters "
                    "(model.parameters()) or the model itself"
                )
                raise TypeError(msg)
            if not p.requires_grad:
                msg = (
                    f"tensor {i} (shape {tuple(p.shape)}) does not require grad, so it never "
                    f"gets a gradient to {what}; leave it out or call requires_grad_(True)"
                )
                raise ValueError(msg)
            params.append(p)
        if not params:
            msg = f"no parameters given; pass the model or a non-empty list of parameters to {what}"
            raise ValueError(msg)
    seen: set[int] = set()
    unique: list[torch.Tensor] = []
    for p in params:
        if id(p) not in seen:
            seen.add(id(p))
            unique.append(p)
    return unique


def scale_gradients(
    target: ParamsLike, factor: float, *, layers: LayersLike | None = None
) -> HookGroup:
    r"""Multiply the gradient of chosen parameters by ``factor`` during backward.

    A tensor hook (:meth:`torch.Tensor.register_hook`) on each parameter
    scales the gradient that a backward pass computes, before it is added to
    ``.grad``:

    .. math:: g \leftarrow \text{factor} \cdot g.

    A tensor hook (rather than ``register_post_accumulate_grad_hook``) is the
    right tool here: it scales only the new contribution, so gradients
    accumulated over several ``backward()`` calls are each scaled once. It also
    works on intermediate tensors, not just parameters.

    Parameters
    ----------
    target : torch.nn.Module, torch.Tensor or iterable of torch.Tensor
        A model (all its parameters that require grad), one tensor, or
        parameters such as ``model.fc.parameters()``.
    factor : float
        The multiplier; ``0`` adds nothing to the parameters' ``.grad`` in
        this pass, a value in ``(0, 1)`` shrinks what is added. A zero
        gradient does not freeze a layer: optimizers with momentum, weight
        decay or Adam's running averages still move it. To freeze it, use
        ``p.requires_grad_(False)`` or leave it out of the optimizer.
    layers : torch.nn.Module, str, or list of them, optional
        With a model as ``target``, only the parameters of these layers.

    Returns
    -------
    HookGroup
        The hooks; use it in a ``with`` statement, or call ``remove()``.

    Raises
    ------
    TypeError
        If ``target`` or ``factor`` has the wrong type.
    ValueError
        If ``factor`` is not finite, or no chosen parameter requires grad.

    Examples
    --------
    >>> import torch
    >>> from torch import nn
    >>> model = nn.Linear(1, 1, bias=False)
    >>> _ = nn.init.ones_(model.weight)
    >>> with scale_gradients(model, 0.1):
    ...     model(torch.tensor([[3.0]])).sum().backward()
    >>> model.weight.grad  # 3 without the hook
    tensor([[0.3000]])
    """
    if isinstance(factor, bool) or not isinstance(factor, (int, float)):
        msg = f"factor must be a number, got {type(factor).__name__}"
        raise TypeError(msg)
    scale = float(factor)
    if not math.isfinite(scale):
        msg = f"factor must be finite, got {factor!r}"
        raise ValueError(msg)
    params = _parameters(target, layers, what="scale")

    def hook(grad: torch.Tensor) -> torch.Tensor:
        return grad * scale

    group = HookGroup()
    try:
        for p in params:
            group.tensor(p, hook)
    except BaseException:
        group.remove()
        raise
    return group


def clip_gradients(
    target: ParamsLike,
    *,
    max_norm: float | None = None,
    max_value: float | None = None,
    norm_type: float = 2.0,
    layers: LayersLike | None = None,
) -> HookGroup:
    r"""Clip the gradient of each chosen parameter as soon as it is accumulated.

    A ``register_post_accumulate_grad_hook`` on each parameter edits
    ``p.grad`` in place right after the backward pass has added to it. This
    hook (rather than a tensor hook) is the right tool here because it sees
    the accumulated ``.grad``, the value the optimizer will use: with
    gradient accumulation over several ``backward()`` calls the bound holds
    for the sum, not only for each part. With ``max_value = c``

    .. math:: g \leftarrow \min(\max(g, -c), c)

    element-wise, and with ``max_norm = n`` (the same formula as
    :func:`torch.nn.utils.clip_grad_norm_`, but per parameter)

    .. math:: g \leftarrow g \cdot \min\left(1, \frac{n}{\lVert g \rVert_p + 10^{-6}}\right).

    Clipping by the *global* norm over all parameters needs every gradient
    first; for that call :func:`torch.nn.utils.clip_grad_norm_` after
    ``backward()``.

    Parameters
    ----------
    target : torch.nn.Module, torch.Tensor or iterable of torch.Tensor
        A model (all its parameters that require grad), one leaf tensor, or
        parameters such as ``model.fc.parameters()``.
    max_norm : float, optional
        Largest allowed norm of each parameter's gradient.
    max_value : float, optional
        Largest allowed absolute value of each gradient element. At least one
        of ``max_norm`` and ``max_value`` is needed; with both, values are
        clipped first.
    norm_type : float, default 2.0
        The :math:`p` of the norm (``math.inf`` for the largest absolute value).
    layers : torch.nn.Module, str, or list of them, optional
        With a model as ``target``, only the parameters of these layers.

    Returns
    -------
    HookGroup
        The hooks; use it in a ``with`` statement, or call ``remove()``.

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    ValueError
        If neither bound is given, a bound is not positive and finite, a
        tensor is not a leaf (only leaf tensors have ``.grad``), or no chosen
        parameter requires grad.

    Examples
    --------
    >>> import torch
    >>> from torch import nn
    >>> model = nn.Linear(2, 1, bias=False)
    >>> with torch.no_grad():
    ...     _ = model.weight.copy_(torch.tensor([[1.0, 1.0]]))
    >>> with clip_gradients(model, max_norm=1.0):
    ...     model(torch.tensor([[3.0, 4.0]])).sum().backward()
    >>> model.weight.grad  # [[3, 4]] has norm 5
    tensor([[0.6000, 0.8000]])
    """
    if max_norm is None and max_value is None:
        msg = "give max_norm, max_value or both: clip_gradients(model, max_norm=1.0)"
        raise ValueError(msg)
    norm_bound = None if max_norm is None else positive_number(max_norm, "max_norm")
    value_bound = None if max_value is None else positive_number(max_value, "max_value")
    p_norm = positive_number(norm_type, "norm_type", allow_inf=True)
    params = _parameters(target, layers, what="clip")
    for i, p in enumerate(params):
        if not p.is_leaf:
            msg = (
                f"tensor {i} (shape {tuple(p.shape)}) is not a leaf tensor, so it has no .grad "
                "to clip; pass parameters, or use a tensor hook (HookGroup.tensor) to change "
                "the gradient of an intermediate value"
            )
            raise ValueError(msg)

    def hook(p: torch.Tensor) -> None:
        grad = p.grad
        if grad is None:  # pragma: no cover - autograd always sets it before the hook
            return
        if value_bound is not None:
            grad.clamp_(-value_bound, value_bound)
        if norm_bound is not None:
            norm = torch.linalg.vector_norm(grad, ord=p_norm)
            grad.mul_(torch.clamp(norm_bound / (norm + 1e-6), max=1.0))

    group = HookGroup()
    try:
        for p in params:
            group.post_accumulate_grad(p, hook)
    except BaseException:
        group.remove()
        raise
    return group


class AnomalyError(RuntimeError):
    """A NaN or Inf appeared in a forward output or a gradient.

    Raised by :func:`detect_anomalies`. The parameters are kept as
    attributes of the same names.

    Parameters
    ----------
    module : str
        Dotted name of the module (``""`` for the model itself).
    phase : {"forward", "backward"}
        The pass in which the values appeared.
    what : str
        Which tensor: ``"output"``, ``"input"``, ``"gradient of the output"`` or
        ``"gradient of parameter 'name'"``.
    nan, inf : int
        How many NaN and how many infinite values the tensor has.
    numel : int
        Number of elements of the tensor.
    hint : str, optional
        Where the values most likely came from, appended to the message.

    Examples
    --------
    >>> err = AnomalyError("fc", "forward", "output", nan=2, inf=0, numel=10)
    >>> err.phase, err.nan
    ('forward', 2)
    >>> str(err)
    "forward pass: the output of module 'fc' has 2 NaN and 0 Inf values (of 10)"
    """

    def __init__(
        self,
        module: str,
        phase: Literal["forward", "backward"],
        what: str,
        *,
        nan: int,
        inf: int,
        numel: int,
        hint: str = "",
    ) -> None:
        self.module = module
        self.phase = phase
        self.what = what
        self.nan = nan
        self.inf = inf
        self.numel = numel
        label = repr(module) if module else "(the model itself)"
        message = (
            f"{phase} pass: the {what} of module {label} has {nan} NaN and {inf} Inf "
            f"values (of {numel})"
        )
        super().__init__(f"{message}; {hint}" if hint else message)


def _tensors(value: Any) -> Iterator[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _tensors(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _tensors(v)


def _bad_counts(t: torch.Tensor) -> tuple[int, int] | None:
    """``(nan, inf)`` counts if ``t`` has non-finite values, else ``None``."""
    if not (t.is_floating_point() or t.is_complex()) or bool(torch.isfinite(t).all()):
        return None
    return int(torch.isnan(t).sum()), int(torch.isinf(t).sum())


def _parent(name: str) -> str:
    return name.rpartition(".")[0]


def _most_specific(names: list[str]) -> list[str]:
    """Drop names that are ancestors of other names in the list (keep order)."""
    unique = list(dict.fromkeys(names))
    return [n for n in unique if not any(o != n and o.startswith(f"{n}.") for o in unique)]


def _label(name: str) -> str:
    return repr(name) if name else "the model itself"


@contextlib.contextmanager
def detect_anomalies(model: nn.Module) -> Iterator[None]:
    """Raise :class:`AnomalyError` at the first NaN or Inf, naming the module.

    Inside the ``with`` block, hooks on every module of ``model`` check:

    * in the forward pass, each module's inputs (forward pre-hook) and
      outputs (forward hook). Submodules finish before their parent, so the
      first module whose output is bad while its inputs were fine is the one
      that created the values;
    * in the backward pass, the gradient with respect to each module's output
      (a tensor hook registered from the forward hook, as in
      :func:`~hooks_tutorial.capture_gradients`) and the gradient of each
      parameter (a tensor hook on the parameter).

    Compared with :class:`torch.autograd.detect_anomaly` it names modules
    rather than autograd nodes, and also checks forward values.

    Parameters
    ----------
    model : torch.nn.Module
        The model, called inside the block as ``model(x)``.

    Yields
    ------
    None

    Raises
    ------
    AnomalyError
        From the forward call or from ``backward()``, at the first non-finite
        value (a subclass of :class:`RuntimeError`).
    TypeError
        If ``model`` is not an ``nn.Module``.
    ValueError
        If ``model`` is the wrapper that :func:`torch.compile` returned (its
        compiled code does not run hooks added after compiling): pass the
        original module and call that.

    Examples
    --------
    >>> import torch
    >>> from torch import nn
    >>> class Log(nn.Module):
    ...     def forward(self, x):
    ...         return torch.log(x)
    >>> model = nn.Sequential(nn.Identity(), Log())
    >>> with detect_anomalies(model):
    ...     _ = model(torch.tensor([1.0, 0.0, -1.0]))
    Traceback (most recent call last):
    ...
    hooks_tutorial.gradtools.AnomalyError: forward pass: the output of module '1' has 1 NaN and 1 Inf values (of 3); its inputs were finite, so Log created them in its forward
    """
    check_model(model, "write `with detect_anomalies(model):`")
    check_not_compiled(model, "with detect_anomalies(model): model(x)")
    names = {id(m): n for n, m in model.named_modules()}
    # output tensor -> names of the modules that then took it as input. The list is
    # shared with the output's gradient hook, which names them if the gradient is bad.
    users_of: WeakIdKeyDictionary = WeakIdKeyDictionary()
    tensor_handles: list[RemovableHandle] = []

    def pre_hook(module: nn.Module, args: tuple[Any, ...]) -> None:
        name = names[id(module)]
        for t in _tensors(args):
            bad = _bad_counts(t)
            if bad is not None:
                if module is model:
                    hint = "the data passed to the model is already bad; check the input batch"
                else:
                    hint = (
                        f"the module before it produced them, or the forward code of "
                        f"{_label(_parent(name))} outside its submodules"
                    )
                raise AnomalyError(
                    name, "forward", "input", nan=bad[0], inf=bad[1], numel=t.numel(), hint=hint
                )
            users = users_of.get(t)  # type: ignore[no-untyped-call]
            if users is not None:
                users.append(name)

    def output_grad_hook(name: str, users: list[str]) -> Any:
        def hook(grad: torch.Tensor) -> None:
            bad = _bad_counts(grad)
            if bad is None:
                return
            if users:
                hint = (
                    "it was computed by the backward of the module(s) using this output: "
                    + ", ".join(_label(u) for u in _most_specific(users))
                )
            else:
                hint = "it came from code outside the model's modules, such as the loss"
            raise AnomalyError(
                name,
                "backward",
                "gradient of the output",
                nan=bad[0],
                inf=bad[1],
                numel=grad.numel(),
                hint=hint,
            )

        return hook

    def forward_hook(module: nn.Module, _args: tuple[Any, ...], output: Any) -> None:
        name = names[id(module)]
        for t in _tensors(output):
            bad = _bad_counts(t)
            if bad is not None:
                hint = f"its inputs were finite, so {type(module).__name__} created them in its forward"
                raise AnomalyError(
                    name, "forward", "output", nan=bad[0], inf=bad[1], numel=t.numel(), hint=hint
                )
            if t.requires_grad and torch.is_grad_enabled():
                users: list[str] = []
                users_of[t] = users  # a new list: an in-place module returns its input
                handle = t.register_hook(output_grad_hook(name, users))  # type: ignore[no-untyped-call]
                tensor_handles.append(handle)
                if len(tensor_handles) > 256:  # forget handles of graphs that are gone
                    tensor_handles[:] = [
                        h for h in tensor_handles if h.hooks_dict_ref() is not None
                    ]

    def param_hook(owner: str, pname: str) -> Any:
        def hook(grad: torch.Tensor) -> None:
            bad = _bad_counts(grad)
            if bad is not None:
                raise AnomalyError(
                    owner,
                    "backward",
                    f"gradient of parameter {pname!r}",
                    nan=bad[0],
                    inf=bad[1],
                    numel=grad.numel(),
                    hint="the gradients of this module's outputs were finite",
                )

        return hook

    scope = Scope()
    try:
        with HookGroup() as group, scope:
            for module in model.modules():
                name = names[id(module)]
                group.forward_pre(module, scope.wrap(pre_hook))
                group.forward(module, scope.wrap(forward_hook))
                for pname, p in module.named_parameters(recurse=False):
                    if p.requires_grad:
                        full = f"{name}.{pname}" if name else pname
                        group.tensor(p, param_hook(name, full))
            yield
    finally:
        with HookGroup(tensor_handles):
            pass
