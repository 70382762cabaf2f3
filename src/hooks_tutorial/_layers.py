"""Find layers of a model by module or by dotted name, with helpful errors."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from typing import TypeAlias

from torch import nn

from ._checks import check_model

#: A layer given as a submodule of the model or as its dotted name.
LayerLike: TypeAlias = "nn.Module | str"
#: One layer, or a list of them.
LayersLike: TypeAlias = "nn.Module | str | Sequence[nn.Module | str]"

_SHOWN = 12

# torch.compile(model) returns a wrapper module (torch._dynamo's OptimizedModule) that
# holds ``model`` itself, unchanged and sharing its weights, as its only submodule,
# ``_orig_mod``; the wrapper's names are those of ``model`` prefixed by "_orig_mod.".
# Its compiled code is not the model's forward: hooks registered after compiling are
# not run by code compiled before them (Dynamo does not guard on them), and a hook
# traced into the compiled graph records a tensor that autograd cannot differentiate
# the score with respect to. So code that runs the model itself (the CAM methods)
# runs the original module, in eager mode, and code that hooks a model the caller
# runs (capture_activations) refuses the wrapper and names the original instead.
# torch has no public accessor for the original; ``_orig_mod`` is the attribute that
# torch's own code reads (torch.distributed.checkpoint) and the prefix that every name
# and state_dict key of the wrapper shows. No global setting is changed:
# torch.compiler.set_stance("force_eager") would also run it eagerly, but for every
# thread at once.
_COMPILED = "_orig_mod"


def eager_module(model: nn.Module) -> nn.Module:
    """Return the module that ``torch.compile(model)`` wrapped, or ``model`` itself.

    Parameters
    ----------
    model : torch.nn.Module
        A model, or the wrapper that :func:`torch.compile` returned for it.

    Returns
    -------
    torch.nn.Module
        The original, eager module: the same object (same parameters, same
        submodules) that was passed to :func:`torch.compile`.
    """
    original = getattr(model, _COMPILED, None)
    return original if isinstance(original, nn.Module) else model


def check_not_compiled(model: nn.Module, fix: str) -> None:
    """Raise if ``model`` is a :func:`torch.compile` wrapper that the caller will run.

    For the functions whose hooks act on passes the caller runs
    (``capture_activations``): the compiled code would not run hooks added now.
    ``fix`` shows the call on the original module (``model`` in the message).
    """
    if eager_module(model) is not model:
        msg = (
            f"the model is a torch.compile wrapper ({type(model).__name__}); its compiled "
            "code does not run hooks added after compiling, so nothing would be recorded. "
            "Use the original module instead, the one passed to torch.compile (the same "
            f"object as compiled.{_COMPILED}, with the same weights), and call it: {fix}"
        )
        raise ValueError(msg)
    check_not_compiled_in_place(model)


def check_not_compiled_in_place(model: object) -> None:
    """Raise if a module of ``model`` was compiled in place, with ``module.compile()``.

    ``nn.Module.compile()`` keeps the module but replaces what calling it runs
    by compiled code, which does not run hooks added after compiling: a CAM
    would record nothing, or stale tensors. Unlike ``torch.compile(model)``,
    it leaves no eager module to run instead. torch offers no public query;
    ``Module.compile`` stores the compiled call in ``_compiled_call_impl``,
    which ``Module.__call__`` runs when it is set, and this reads it.
    """
    if not isinstance(model, nn.Module):
        return  # not a model at all: the caller's own check says so
    compiled = [
        name or "the model"
        for name, module in model.named_modules()
        if getattr(module, "_compiled_call_impl", None) is not None
    ]
    if compiled:
        msg = (
            f"{_available(compiled) if compiled != ['the model'] else 'the model'} was "
            "compiled in place (module.compile()): its compiled code does not run hooks "
            "added after compiling, so the hooks could record nothing or stale tensors. "
            "Compile a wrapper instead, compiled = torch.compile(model): it runs the compiled "
            "code and leaves model itself eager for hooks (the CAM methods accept either). "
            "module.compile() cannot be undone: create the model again to explain it"
        )
        raise ValueError(msg)


def _eager_name(name: str) -> str:
    """A layer name given on the compiled wrapper (``"_orig_mod.layer4"``) without its prefix."""
    if name == _COMPILED or name.startswith(_COMPILED + "."):
        return name[len(_COMPILED) + 1 :]
    return name


def _available(names: Sequence[str]) -> str:
    shown = [n for n in names if n]
    if len(shown) > _SHOWN:
        head = ", ".join(shown[: _SHOWN // 2])
        tail = ", ".join(shown[-_SHOWN // 2 :])
        return f"{head}, ..., {tail}"
    return ", ".join(shown)


def _lookup_name(modules: dict[str, nn.Module], name: str, names: list[str]) -> nn.Module:
    if name in modules and name != "":
        return modules[name]
    if name == "":
        msg = (
            "an empty layer name refers to the whole model; pass one of its "
            f"submodules instead. Available: {_available(names)}"
        )
        raise ValueError(msg)
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else "."
    msg = f"no submodule named {name!r}{hint} Available: {_available(names)}"
    raise ValueError(msg)


def _name_of(model: nn.Module, layer: nn.Module) -> str:
    for name, module in model.named_modules():
        if module is layer:
            if name == "":
                msg = (
                    f"expected a layer of the model, got the model itself "
                    f"({type(model).__name__}); pass one of its submodules, for example "
                    f"{_first_child_name(model)!r}"
                )
                raise ValueError(msg)
            return str(name)
    msg = (
        f"the layer {type(layer).__name__} is not part of this model "
        f"({type(model).__name__}); pass a submodule of the model (for example "
        f"model.{_first_child_name(model)}) or its dotted name"
    )
    raise ValueError(msg)


def _first_child_name(model: nn.Module) -> str:
    return next((n for n, _ in model.named_children()), "<layer>")


def resolve_layers(model: nn.Module, layers: LayersLike) -> list[tuple[str, nn.Module]]:
    """Turn layers given as modules or dotted names into ``(name, module)`` pairs.

    Parameters
    ----------
    model : torch.nn.Module
        The model that contains the layers.
    layers : torch.nn.Module, str, or sequence of them
        A submodule of ``model``, its dotted name as listed by
        :meth:`torch.nn.Module.named_modules` (``"layer4.1.conv2"``), or a list
        of such.

    Returns
    -------
    list of (str, torch.nn.Module)
        The dotted name and the module of each layer, in the order given,
        without duplicates. For a model wrapped by :func:`torch.compile`, the
        names are those of the original module (:func:`eager_module`), and
        a name is accepted with or without the wrapper's ``"_orig_mod."``
        prefix.

    Raises
    ------
    TypeError
        If ``model`` is not a module, or a layer is neither a module nor a string.
    ValueError
        If a name is unknown (the message names the closest names), a module is
        not part of ``model``, ``model`` itself is given as a layer, or the
        list is empty.

    Examples
    --------
    >>> from torch import nn
    >>> model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU())
    >>> resolve_layers(model, "0")
    [('0', Conv2d(1, 2, kernel_size=(3, 3), stride=(1, 1)))]
    >>> resolve_layers(model, "conv")
    Traceback (most recent call last):
    ...
    ValueError: no submodule named 'conv'. Available: 0, 1
    """
    check_model(model, "pass the model first and the layer(s) second")
    items: Iterable[object]
    given: object = layers
    if isinstance(given, (str, nn.Module)):
        items = [given]
    elif isinstance(given, Sequence):
        items = list(given)
        if not items:
            msg = "no layers given; pass at least one layer (a submodule or its dotted name)"
            raise ValueError(msg)
    else:
        msg = (
            f"expected a layer as an nn.Module or a dotted name (str), or a list of them, "
            f"got {type(given).__name__}"
        )
        raise TypeError(msg)

    eager = eager_module(model)
    modules = dict(eager.named_modules())
    names = [n for n in modules if n]
    resolved: list[tuple[str, nn.Module]] = []
    seen: set[int] = set()
    for item in items:
        if isinstance(item, str):
            name = item if eager is model else _eager_name(item)
            pair = (name, _lookup_name(modules, name, names))
        elif isinstance(item, nn.Module):
            pair = (_name_of(eager, item), item)
        else:
            msg = (
                f"expected a layer as an nn.Module or a dotted name (str), "
                f"got {type(item).__name__}"
            )
            raise TypeError(msg)
        if id(pair[1]) not in seen:
            seen.add(id(pair[1]))
            resolved.append(pair)
    return resolved
