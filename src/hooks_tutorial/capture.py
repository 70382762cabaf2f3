"""Record layer activations and gradients with hooks that end with the ``with`` block.

Both context managers register their hooks on entry and remove every one of
them on exit, normally or by an exception; the recorded values stay readable
after the block. Only the latest, detached value per layer is kept, so a long
loop neither leaks autograd graphs nor grows memory. The hooks act only on the
forward passes run in the thread (context) that entered the block: another
thread's passes through the same model are neither recorded nor changed.
"""

from __future__ import annotations

import contextlib
import difflib
from collections.abc import Iterator, Mapping
from typing import Any, Generic, TypeVar

import torch
from torch import nn
from torch.utils.hooks import RemovableHandle

from ._layers import LayersLike, check_not_compiled, resolve_layers
from ._scope import Scope
from .hooks import HookGroup

__all__ = [
    "Activations",
    "Captures",
    "MissingCaptureError",
    "capture_activations",
    "capture_gradients",
]

V = TypeVar("V")

_PASS_INPUTS = "pass inputs=True to capture_activations"
_NOT_RECORDED_HINT = f"inputs were not recorded: {_PASS_INPUTS}"
_NOT_RUN_HINT = (
    "check that the model's forward calls it, as a module (layer(x); calling "
    "layer.forward(x) directly skips hooks), and that the forward pass ran inside "
    "the with block, in the thread that entered it (passes run by other threads, such "
    "as nn.DataParallel's replicas on several GPUs, are not recorded)"
)


class MissingCaptureError(KeyError):
    """A layer has no recorded value.

    Raised when reading a layer that did not run during the forward pass (or,
    for gradients, that no backward pass reached), or one that was not
    captured at all. A subclass of :class:`KeyError`, so ``dict``-style code
    that catches ``KeyError`` keeps working; unlike ``KeyError`` its message
    is printed without quotes.

    Examples
    --------
    >>> str(MissingCaptureError("layer 'fc2' did not run"))
    "layer 'fc2' did not run"
    """

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class Captures(Mapping[str, V], Generic[V]):
    """Read-only mapping from layer name to the latest recorded value.

    Returned by :func:`capture_activations` and :func:`capture_gradients`.
    Keys are the dotted layer names, in the order the layers were requested;
    only layers with a recorded value are iterated. A layer can also be looked
    up by its module: ``acts[model.layer4]``.

    Parameters
    ----------
    pairs : list of (str, torch.nn.Module)
        The layers, as ``(dotted name, module)`` pairs.
    what : str
        What is recorded (``"outputs"``, ``"gradients"``), for ``repr``.
    not_run_hint : str, optional
        Advice appended to the message for a layer that did not run.

    Attributes
    ----------
    layers : tuple of str
        The names of all requested layers, whether they ran or not.
    calls : dict of str to int
        How many times each layer's value was recorded (a layer that runs
        twice per forward pass, or several forward passes, counts each).

    Raises
    ------
    MissingCaptureError
        A :class:`KeyError`, when reading a requested layer that has no value
        (it did not run), or a layer that was not requested.

    Examples
    --------
    >>> import torch
    >>> from torch import nn
    >>> model = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
    >>> with capture_activations(model, ["0", "1"]) as acts:
    ...     _ = model(torch.ones(1, 3))
    >>> list(acts), acts.layers, acts.calls
    (['0', '1'], ('0', '1'), {'0': 1, '1': 1})
    >>> acts[model[0]].shape
    torch.Size([1, 2])
    """

    def __init__(
        self,
        pairs: list[tuple[str, nn.Module]],
        *,
        what: str,
        not_run_hint: str = _NOT_RUN_HINT,
    ) -> None:
        self.layers: tuple[str, ...] = tuple(name for name, _ in pairs)
        self.calls: dict[str, int] = {}
        self._names_by_module = {id(module): name for name, module in pairs}
        self._values: dict[str, V] = {}
        self._what = what
        self._not_run_hint = not_run_hint

    # -- recording (used by the hooks) ------------------------------------
    def _record(self, name: str, value: V) -> None:
        self._values[name] = value
        self.calls[name] = self.calls.get(name, 0) + 1

    # -- Mapping ------------------------------------------------------------
    def _name(self, key: object) -> str:
        if isinstance(key, nn.Module):
            name = self._names_by_module.get(id(key))
            if name is None:
                msg = (
                    f"the module {type(key).__name__} is not one of the captured layers "
                    f"({', '.join(self.layers)}); pass it to the capture function first"
                )
                raise MissingCaptureError(msg)
            return name
        if isinstance(key, str) and key in self.layers:
            return key
        close = difflib.get_close_matches(str(key), self.layers, n=3, cutoff=0.5)
        hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
        msg = (
            f"{key!r} is not one of the captured layers; {hint}Captured: "
            f"{', '.join(self.layers)}. To record another layer, add it to the capture call"
        )
        raise MissingCaptureError(msg)

    def __getitem__(self, key: str | nn.Module) -> V:
        name = self._name(key)
        try:
            return self._values[name]
        except KeyError:
            raise MissingCaptureError(self._missing_message(name)) from None

    def _missing_message(self, name: str) -> str:
        return f"layer {name!r} did not run during the forward pass; {self._not_run_hint}"

    def __iter__(self) -> Iterator[str]:
        return (name for name in self.layers if name in self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, key: object) -> bool:
        if isinstance(key, nn.Module):
            name = self._names_by_module.get(id(key))
            return name is not None and name in self._values
        return key in self._values

    def _missing_repr(self, name: str) -> str:
        del name
        return "not run"

    def __repr__(self) -> str:
        parts = []
        for name in self.layers:
            value = self._values.get(name)
            shown = _describe(value) if name in self._values else self._missing_repr(name)
            parts.append(f"{name!r}: {shown}")
        return f"Captures({self._what}; {{{', '.join(parts)}}})"


class _Gradients(Captures[torch.Tensor]):
    """The gradients of :func:`capture_gradients`; knows which layers' forward ran."""

    def __init__(self, pairs: list[tuple[str, nn.Module]]) -> None:
        super().__init__(pairs, what="gradients")
        self.forward_ran: set[str] = set()

    def _missing_message(self, name: str) -> str:
        if name in self.forward_ran:
            return (
                f"no gradient reached the output of layer {name!r}: it ran during the "
                "forward pass, but no backward pass through it happened while the hooks "
                "were in place; call .backward() (or torch.autograd.grad) on a result "
                "that depends on it inside the with block"
            )
        return super()._missing_message(name)


class Activations(Captures[torch.Tensor]):
    """The :class:`Captures` of :func:`capture_activations`, with the inputs too.

    Attributes
    ----------
    inputs : Captures of tuple
        Each layer's latest positional inputs, as a tuple of detached tensors;
        recorded only with ``capture_activations(..., inputs=True)``, and
        reading it otherwise raises :class:`MissingCaptureError` saying so.

    Examples
    --------
    >>> import torch
    >>> from torch import nn
    >>> model = nn.Sequential(nn.Linear(3, 2))
    >>> with capture_activations(model, "0", inputs=True) as acts:
    ...     _ = model(torch.zeros(1, 3))
    >>> acts.inputs["0"]
    (tensor([[0., 0., 0.]]),)
    """

    def __init__(self, pairs: list[tuple[str, nn.Module]], *, inputs: bool) -> None:
        super().__init__(pairs, what="outputs")
        self.inputs: Captures[tuple[Any, ...]] = (
            Captures(pairs, what="inputs") if inputs else _UnrecordedInputs(pairs, ran=self.calls)
        )


class _UnrecordedInputs(Captures[tuple[Any, ...]]):
    """The ``inputs`` of :func:`capture_activations` called without ``inputs=True``.

    Nothing is ever recorded in it; reading a layer says why, telling a layer
    that ran (its inputs were not asked for) from one that did not run.
    """

    def __init__(self, pairs: list[tuple[str, nn.Module]], *, ran: dict[str, int]) -> None:
        super().__init__(pairs, what="inputs", not_run_hint=_NOT_RECORDED_HINT)
        self._ran = ran  # the outputs' call counts: a layer in it ran

    def _missing_message(self, name: str) -> str:
        if name in self._ran:
            return f"inputs of layer {name!r} were not recorded; {_PASS_INPUTS}"
        return super()._missing_message(name)

    def _missing_repr(self, name: str) -> str:
        return "not recorded" if name in self._ran else "not run"


def _describe(value: object) -> str:
    if isinstance(value, torch.Tensor):
        return f"tensor{tuple(value.shape)}"
    if isinstance(value, (tuple, list)):
        inner = ", ".join(_describe(v) for v in value)
        return f"({inner})" if isinstance(value, tuple) else f"[{inner}]"
    return type(value).__name__


def _detach(value: Any, clone: bool) -> Any:
    """Detach (and maybe clone) every tensor in a nested tuple/list/dict."""
    if isinstance(value, torch.Tensor):
        out = value.detach()
        return out.clone() if clone else out
    if isinstance(value, tuple):
        items = [_detach(v, clone) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if isinstance(value, list):
        return [_detach(v, clone) for v in value]
    if isinstance(value, dict):
        return {k: _detach(v, clone) for k, v in value.items()}
    return value


@contextlib.contextmanager
def capture_activations(
    model: nn.Module,
    layers: LayersLike,
    *,
    clone: bool = False,
    inputs: bool = False,
) -> Iterator[Activations]:
    """Record the outputs (and optionally inputs) of some layers of ``model``.

    A forward hook on each layer stores the latest output, detached from the
    autograd graph: a loop of many forward passes keeps one tensor per layer,
    not one graph per step. All hooks are removed when the ``with`` block
    ends; the recorded values stay readable afterwards.

    Parameters
    ----------
    model : torch.nn.Module
        The model, called inside the ``with`` block.
    layers : torch.nn.Module, str, or list of them
        Submodules of ``model`` or their dotted names (``"layer4.1.conv2"``).
    clone : bool, default False
        Store a copy instead of a view. ``detach()`` shares storage with the
        original, so an in-place operation that runs after the layer (such
        as ``ReLU(inplace=True)`` in torchvision's ResNet) also changes the
        stored value; ``clone=True`` keeps the value the layer returned, at
        the cost of one copy per layer and call.
    inputs : bool, default False
        Also record each layer's positional inputs, as a tuple, in
        ``captures.inputs``. They are taken by a forward pre-hook, before the
        layer runs, so an in-place layer does not change them when ``clone=True``.

    Yields
    ------
    Activations
        Mapping from layer name to its latest detached output. For a layer
        whose output is a tuple, list or dict (``nn.LSTM``, for one) the value
        has the same structure with every tensor detached. When
        ``inputs=True`` its ``inputs`` attribute holds the inputs, a
        :class:`Captures` of tuples.

    Raises
    ------
    TypeError
        If ``model`` is not a module, or a layer is neither a module nor a name.
    ValueError
        If a layer name is unknown (the message lists the closest names), a
        module is not part of ``model``, ``model`` itself is given as a layer,
        or ``model`` is the wrapper that :func:`torch.compile` returned (its
        compiled code does not run hooks added after compiling: capture on the
        original module and call that).
    MissingCaptureError
        When reading a layer that did not run during the forward pass.

    Notes
    -----
    Only the forward passes run in the context that entered the ``with``
    block (its thread, or asyncio task) are recorded. A forward pass that
    another thread runs through the same model while the block is open is
    neither recorded nor changed, so a model shared by request threads can
    be inspected from one of them. To record a pass run in a worker thread on
    purpose, run it in a copy of the block's context:
    ``pool.submit(contextvars.copy_context().run, model, x)``. Under
    :class:`torch.nn.DataParallel` on the CPU (or on one GPU) the wrapped
    model runs in the calling thread and is recorded as usual (name the
    layers ``"module.<name>"``); with several GPUs its replicas run in worker
    threads and are not recorded: capture on ``model.module`` instead.

    See Also
    --------
    capture_gradients : The gradients with respect to layer outputs.

    Examples
    --------
    >>> import torch
    >>> from torch import nn
    >>> model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(inplace=True), nn.Linear(4, 2))
    >>> with capture_activations(model, ["0", "2"], clone=True, inputs=True) as acts:
    ...     _ = model(torch.randn(5, 3))
    >>> acts["0"].shape, acts["2"].shape, acts.inputs["2"][0].shape
    (torch.Size([5, 4]), torch.Size([5, 2]), torch.Size([5, 4]))
    >>> bool((acts["0"] < 0).any())  # clone=True: values before the in-place ReLU
    True
    >>> acts["fc"]
    Traceback (most recent call last):
    ...
    hooks_tutorial.capture.MissingCaptureError: 'fc' is not one of the captured layers; Captured: 0, 2. To record another layer, add it to the capture call
    """
    check_not_compiled(model, "with capture_activations(model, layers) as acts: model(x)")
    pairs = resolve_layers(model, layers)
    outputs = Activations(pairs, inputs=inputs)
    recorded_inputs = outputs.inputs

    def output_hook(name: str) -> Any:
        def hook(_module: nn.Module, _args: tuple[Any, ...], output: Any) -> None:
            outputs._record(name, _detach(output, clone))

        return hook

    def input_hook(name: str) -> Any:
        def hook(_module: nn.Module, args: tuple[Any, ...]) -> None:
            recorded_inputs._record(name, _detach(args, clone))

        return hook

    scope = Scope()
    with HookGroup() as group, scope:
        for name, module in pairs:  # one closure per layer: no late binding
            group.forward(module, scope.wrap(output_hook(name)))
            if inputs:
                group.forward_pre(module, scope.wrap(input_hook(name)))
        yield outputs


_GRAD_DISABLED = (
    "layer {name!r} ran with autograd disabled (inside torch.no_grad() or "
    "torch.inference_mode()), so no gradient can ever reach its output; call the "
    "model with gradients enabled, for example inside `with torch.enable_grad():` "
    "(model.eval() alone is fine: it only changes Dropout and BatchNorm)"
)
_NO_REQUIRES_GRAD = (
    "the output of layer {name!r} does not require grad: neither the input nor any "
    "parameter before it requires grad, so no gradient can reach it; set "
    "requires_grad=True on the input (x.requires_grad_()) or on the parameters "
    "of the layers up to it"
)


@contextlib.contextmanager
def capture_gradients(model: nn.Module, layers: LayersLike) -> Iterator[Captures[torch.Tensor]]:
    r"""Record the gradients with respect to the outputs of some layers.

    A forward hook on each layer registers a tensor hook on the layer's
    output; the tensor hook stores the gradient when the backward pass
    reaches it. Unlike a full backward hook this also works when an in-place
    operation follows the layer (``ReLU(inplace=True)``): the gradient is the
    one with respect to the value the layer returned, before the in-place
    change. For the output :math:`A` of a layer and the scalar :math:`y` that
    ``backward()`` starts from, the recorded value is

    .. math:: \frac{\partial y}{\partial A}.

    Parameters
    ----------
    model : torch.nn.Module
        The model, called inside the ``with`` block as ``model(x)`` with
        gradients enabled.
    layers : torch.nn.Module, str, or list of them
        Submodules of ``model`` or their dotted names. Each layer's output
        must be a single tensor.

    Yields
    ------
    Captures
        Mapping from layer name to the latest detached gradient. Call
        ``backward()`` inside the ``with`` block: the hooks are removed when it
        ends. If a layer runs several times in one forward pass, the value
        kept is the last one computed by the backward pass (that of the first
        call).

    Raises
    ------
    TypeError
        If ``model`` or a layer has the wrong type, or (during the forward
        pass) a layer's output is not a tensor.
    ValueError
        If a layer name is unknown, a module is not part of ``model``,
        ``model`` itself is given as a layer, or ``model`` is the wrapper that
        :func:`torch.compile` returned (capture on the original module).
    RuntimeError
        During the forward pass, if a layer runs with autograd disabled
        (``torch.no_grad()``, ``torch.inference_mode()``) or its output does
        not require grad.
    MissingCaptureError
        When reading a layer that did not run, or that no backward pass reached.

    Notes
    -----
    Only the forward passes run in the context that entered the ``with``
    block (its thread, or asyncio task) are recorded. A forward pass that
    another thread runs through the same model while the block is open is
    neither recorded nor changed, so a model shared by request threads can
    be inspected from one of them. To record a pass run in a worker thread on
    purpose, run it in a copy of the block's context:
    ``pool.submit(contextvars.copy_context().run, model, x)``. Under
    :class:`torch.nn.DataParallel` on the CPU (or on one GPU) the wrapped
    model runs in the calling thread and is recorded as usual (name the
    layers ``"module.<name>"``); its backward pass may run in any thread,
    which does not matter: tensor hooks record the gradients. With several
    GPUs its replicas run in worker threads and are not recorded: capture on
    ``model.module`` instead.

    See Also
    --------
    capture_activations : The outputs themselves.

    Examples
    --------
    >>> import torch
    >>> from torch import nn
    >>> model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(inplace=True), nn.Linear(4, 1))
    >>> with capture_gradients(model, "2") as grads:
    ...     model(torch.randn(5, 3)).sum().backward()
    >>> grads["2"]  # d(sum)/d(output) is all ones
    tensor([[1.],
            [1.],
            [1.],
            [1.],
            [1.]])
    >>> with torch.no_grad(), capture_gradients(model, "2"):
    ...     _ = model(torch.randn(5, 3))
    Traceback (most recent call last):
    ...
    RuntimeError: layer '2' ran with autograd disabled (inside torch.no_grad() or torch.inference_mode()), so no gradient can ever reach its output; call the model with gradients enabled, for example inside `with torch.enable_grad():` (model.eval() alone is fine: it only changes Dropout and BatchNorm)
    """
    check_not_compiled(
        model, "with capture_gradients(model, layers) as grads: model(x).sum().backward()"
    )
    pairs = resolve_layers(model, layers)
    grads = _Gradients(pairs)
    tensor_handles: list[RemovableHandle] = []

    def grad_hook(name: str) -> Any:
        def hook(grad: torch.Tensor) -> None:
            grads._record(name, grad.detach())

        return hook

    def forward_hook(name: str) -> Any:
        def hook(module: nn.Module, _args: tuple[Any, ...], output: Any) -> None:
            grads.forward_ran.add(name)
            if not isinstance(output, torch.Tensor):
                msg = (
                    f"capture_gradients needs layers whose output is a single tensor; layer "
                    f"{name!r} ({type(module).__name__}) returned {type(output).__name__}. "
                    "Pick a submodule that returns a tensor"
                )
                raise TypeError(msg)
            if not torch.is_grad_enabled() or torch.is_inference(output):
                raise RuntimeError(_GRAD_DISABLED.format(name=name))
            if not output.requires_grad:
                raise RuntimeError(_NO_REQUIRES_GRAD.format(name=name))
            handle = output.register_hook(grad_hook(name))  # type: ignore[no-untyped-call]
            tensor_handles.append(handle)
            if len(tensor_handles) > 64:  # forget handles of graphs that are gone
                tensor_handles[:] = [h for h in tensor_handles if h.hooks_dict_ref() is not None]

        return hook

    scope = Scope()
    try:
        with HookGroup() as group, scope:
            for name, module in pairs:
                group.forward(module, scope.wrap(forward_hook(name)))
            yield grads
    finally:
        # Tensor hooks live on outputs the caller may still hold; remove them too
        # so that a backward() after the block cannot write into `grads`.
        with HookGroup(tensor_handles):
            pass
