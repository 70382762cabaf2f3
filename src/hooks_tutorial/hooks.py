"""Register hooks that never outlive their ``with`` block, and count what is left.

:class:`HookGroup` collects the :class:`~torch.utils.hooks.RemovableHandle`
objects returned by every ``register_*`` call and removes them all on exit,
also when the body raises. :func:`count_hooks` shows which hooks a model
carries (handy in tests and when debugging a leak), and
:func:`remove_all_hooks` is the last resort when handles were lost.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from types import TracebackType
from typing import TYPE_CHECKING, Any, NamedTuple

import torch
from torch import nn
from torch.utils.hooks import RemovableHandle

from ._checks import check_model

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = [
    "HookCounts",
    "HookGroup",
    "HookReport",
    "count_hooks",
    "remove_all_hooks",
]


def _module_to_hook(module: object) -> nn.Module:
    return check_model(
        module,
        "to hook a tensor use HookGroup.tensor(tensor, fn)",
        what="an nn.Module to hook",
    )


class HookGroup:
    """A set of hook handles that are removed together.

    Use it as a context manager: every hook registered through the group is
    removed when the ``with`` block ends, whether it ends normally or by an
    exception. The exception itself is never swallowed.

    Parameters
    ----------
    handles : iterable of torch.utils.hooks.RemovableHandle, optional
        Handles to own from the start.

    See Also
    --------
    count_hooks : Check that a model is back to its hook-free state.

    Notes
    -----
    :meth:`remove` can be called any number of times; a removed group can be
    reused to register new hooks.

    Examples
    --------
    >>> import torch
    >>> from torch import nn
    >>> model = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
    >>> shapes = []
    >>> with HookGroup() as hooks:
    ...     _ = hooks.forward(model[0], lambda m, args, out: shapes.append(tuple(out.shape)))
    ...     _ = model(torch.ones(4, 3))
    ...     len(hooks)
    1
    >>> shapes
    [(4, 2)]
    >>> len(model[0]._forward_hooks)
    0
    """

    def __init__(self, handles: Iterable[RemovableHandle] | None = None) -> None:
        self._handles: list[RemovableHandle] = list(handles or [])

    # -- collecting -------------------------------------------------------
    def add(self, handle: RemovableHandle) -> RemovableHandle:
        """Own ``handle``: it will be removed with the group.

        Parameters
        ----------
        handle : torch.utils.hooks.RemovableHandle
            What a ``register_*`` call returned.

        Returns
        -------
        torch.utils.hooks.RemovableHandle
            The same handle, so that ``h = group.add(m.register_...(...))`` reads well.

        Raises
        ------
        TypeError
            If ``handle`` has no ``remove()`` method (for example the hook
            function itself was passed instead of the handle).

        Examples
        --------
        >>> from torch import nn
        >>> layer = nn.Linear(2, 2)
        >>> group = HookGroup()
        >>> handle = group.add(layer.register_forward_pre_hook(lambda m, args: None))
        >>> len(group), len(layer._forward_pre_hooks)
        (1, 1)
        >>> group.remove()
        >>> len(group), len(layer._forward_pre_hooks)
        (0, 0)
        """
        if not callable(getattr(handle, "remove", None)):
            msg = (
                f"expected the handle returned by a register_* call, got "
                f"{type(handle).__name__}; write group.add(module.register_forward_hook(fn)), "
                "not group.add(fn)"
            )
            raise TypeError(msg)
        self._handles.append(handle)
        return handle

    def forward(self, module: nn.Module, fn: Callable[..., Any], **kwargs: Any) -> RemovableHandle:
        """Register a forward hook ``fn(module, args, output)`` on ``module``.

        Parameters
        ----------
        module : torch.nn.Module
            The module to hook.
        fn : callable
            The hook; returning anything but ``None`` replaces the output.
        **kwargs
            Passed to :meth:`torch.nn.Module.register_forward_hook`
            (``prepend``, ``with_kwargs``, ``always_call``).

        Returns
        -------
        torch.utils.hooks.RemovableHandle
            The handle, also owned by the group.

        Examples
        --------
        >>> from torch import nn
        >>> with HookGroup() as hooks:
        ...     _ = hooks.forward(nn.ReLU(), lambda m, args, out: None)
        ...     len(hooks)
        1
        """
        return self.add(_module_to_hook(module).register_forward_hook(fn, **kwargs))

    def forward_pre(
        self, module: nn.Module, fn: Callable[..., Any], **kwargs: Any
    ) -> RemovableHandle:
        """Register a forward pre-hook ``fn(module, args)`` on ``module``.

        Parameters
        ----------
        module : torch.nn.Module
            The module to hook.
        fn : callable
            The hook; returning anything but ``None`` replaces the inputs.
        **kwargs
            Passed to :meth:`torch.nn.Module.register_forward_pre_hook`
            (``prepend``, ``with_kwargs``).

        Returns
        -------
        torch.utils.hooks.RemovableHandle
            The handle, also owned by the group.

        Examples
        --------
        >>> from torch import nn
        >>> relu = nn.ReLU()
        >>> with HookGroup() as hooks:
        ...     _ = hooks.forward_pre(relu, lambda m, args: None)
        ...     len(relu._forward_pre_hooks)
        1
        >>> len(relu._forward_pre_hooks)
        0
        """
        return self.add(_module_to_hook(module).register_forward_pre_hook(fn, **kwargs))

    def full_backward(
        self, module: nn.Module, fn: Callable[..., Any], **kwargs: Any
    ) -> RemovableHandle:
        """Register a full backward hook ``fn(module, grad_input, grad_output)``.

        Parameters
        ----------
        module : torch.nn.Module
            The module to hook. Beware: if an in-place operation (such as
            ``ReLU(inplace=True)``) modifies this module's output, the forward
            pass raises; prefer a tensor hook on the output in that case.
        fn : callable
            The hook; returning anything but ``None`` replaces ``grad_input``.
        **kwargs
            Passed to :meth:`torch.nn.Module.register_full_backward_hook`
            (``prepend``).

        Returns
        -------
        torch.utils.hooks.RemovableHandle
            The handle, also owned by the group.

        Examples
        --------
        >>> from torch import nn
        >>> layer = nn.Linear(2, 2)
        >>> with HookGroup() as hooks:
        ...     _ = hooks.full_backward(layer, lambda m, gin, gout: None)
        ...     len(layer._backward_hooks)
        1
        """
        return self.add(_module_to_hook(module).register_full_backward_hook(fn, **kwargs))

    def full_backward_pre(
        self, module: nn.Module, fn: Callable[..., Any], **kwargs: Any
    ) -> RemovableHandle:
        """Register a full backward pre-hook ``fn(module, grad_output)``.

        Parameters
        ----------
        module : torch.nn.Module
            The module to hook.
        fn : callable
            The hook; returning anything but ``None`` replaces ``grad_output``.
        **kwargs
            Passed to :meth:`torch.nn.Module.register_full_backward_pre_hook`
            (``prepend``).

        Returns
        -------
        torch.utils.hooks.RemovableHandle
            The handle, also owned by the group.

        Examples
        --------
        >>> from torch import nn
        >>> layer = nn.Linear(2, 2)
        >>> with HookGroup() as hooks:
        ...     _ = hooks.full_backward_pre(layer, lambda m, gout: None)
        ...     len(layer._backward_pre_hooks)
        1
        """
        return self.add(_module_to_hook(module).register_full_backward_pre_hook(fn, **kwargs))

    def tensor(
        self, tensor: torch.Tensor, fn: Callable[[torch.Tensor], torch.Tensor | None]
    ) -> RemovableHandle:
        """Register a gradient hook ``fn(grad)`` on a tensor.

        Parameters
        ----------
        tensor : torch.Tensor
            A tensor that requires grad (a parameter or an intermediate result).
        fn : callable
            Called with the gradient of ``tensor``; returning a tensor replaces it.

        Returns
        -------
        torch.utils.hooks.RemovableHandle
            The handle, also owned by the group.

        Raises
        ------
        RuntimeError
            If ``tensor`` does not require grad (raised by PyTorch).

        Examples
        --------
        >>> import torch
        >>> x = torch.tensor(2.0, requires_grad=True)
        >>> with HookGroup() as hooks:
        ...     _ = hooks.tensor(x, lambda g: g * 10)
        ...     (x * 3).backward()
        >>> x.grad
        tensor(30.)
        """
        return self.add(tensor.register_hook(fn))  # type: ignore[no-untyped-call]

    def post_accumulate_grad(
        self, tensor: torch.Tensor, fn: Callable[[torch.Tensor], None]
    ) -> RemovableHandle:
        """Register ``fn(tensor)`` to run after ``tensor.grad`` is accumulated.

        Parameters
        ----------
        tensor : torch.Tensor
            A leaf tensor that requires grad, typically a parameter.
        fn : callable
            Called with the tensor itself (read or edit ``tensor.grad`` in
            place); runs under ``torch.no_grad()``.

        Returns
        -------
        torch.utils.hooks.RemovableHandle
            The handle, also owned by the group.

        Examples
        --------
        >>> import torch
        >>> w = torch.nn.Parameter(torch.tensor(1.0))
        >>> def halve(t):
        ...     t.grad.mul_(0.5)
        >>> with HookGroup() as hooks:
        ...     _ = hooks.post_accumulate_grad(w, halve)
        ...     (w * 4).backward()
        >>> w.grad
        tensor(2.)
        """
        return self.add(tensor.register_post_accumulate_grad_hook(fn))  # type: ignore[no-untyped-call]

    # -- removing -----------------------------------------------------------
    def remove(self) -> None:
        """Remove every hook of the group; safe to call more than once.

        Every handle is removed even if one removal fails; the first failure
        is re-raised afterwards.

        Examples
        --------
        >>> from torch import nn
        >>> relu = nn.ReLU()
        >>> group = HookGroup()
        >>> _ = group.forward(relu, lambda m, args, out: None)
        >>> group.remove()
        >>> group.remove()
        >>> len(relu._forward_hooks)
        0
        """
        handles, self._handles = self._handles, []
        first_error: BaseException | None = None
        for handle in reversed(handles):
            try:
                handle.remove()
            except Exception as error:  # noqa: BLE001 - keep removing the others, re-raise below
                if first_error is None:
                    first_error = error
        if first_error is not None:
            raise first_error

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Remove every hook of the group, whether the block ended normally or by an exception.

        The exception, if any, propagates.
        """
        self.remove()

    def __len__(self) -> int:
        return len(self._handles)

    def __repr__(self) -> str:
        return f"HookGroup({len(self._handles)} handle(s))"


class HookCounts(NamedTuple):
    """Numbers of hooks on one module.

    Attributes
    ----------
    forward : int
        Forward hooks (``module._forward_hooks``).
    forward_pre : int
        Forward pre-hooks (``module._forward_pre_hooks``).
    backward : int
        Backward hooks (``module._backward_hooks``): full backward hooks and
        the deprecated ``register_backward_hook`` ones.
    backward_pre : int
        Full backward pre-hooks (``module._backward_pre_hooks``).
    params : int
        Gradient hooks (``register_hook`` and
        ``register_post_accumulate_grad_hook``) on the module's own parameters.

    Examples
    --------
    >>> HookCounts(forward=1, forward_pre=0, backward=2, backward_pre=0).total
    3
    """

    forward: int
    forward_pre: int
    backward: int
    backward_pre: int
    params: int = 0

    @property
    def total(self) -> int:
        """All hooks counted on the module."""
        return self.forward + self.forward_pre + self.backward + self.backward_pre + self.params


_COLUMNS = ("forward", "forward_pre", "backward", "backward_pre", "params", "total")


class HookReport(dict[str, HookCounts]):
    """Hook counts per module name, as returned by :func:`count_hooks`.

    A plain ``dict`` from dotted module name (``""`` is the model itself) to
    :class:`HookCounts`, with a readable ``str()`` and a :attr:`total`.

    Examples
    --------
    >>> from torch import nn
    >>> model = nn.Sequential(nn.Linear(2, 2))
    >>> str(count_hooks(model))
    'no hooks'
    """

    @property
    def total(self) -> int:
        """All hooks on all modules."""
        return sum(c.total for c in self.values())

    def __str__(self) -> str:
        if not self:
            return "no hooks"
        header = ("module", *_COLUMNS)
        rows = [
            (name or "(model)", *(str(v) for v in (*counts, counts.total)))
            for name, counts in self.items()
        ]
        rows.append(
            ("total", *(str(sum(r[i] for r in self.values())) for i in range(5)), str(self.total))
        )
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        lines = [
            "  ".join(
                cell.ljust(w) if i == 0 else cell.rjust(w)
                for i, (cell, w) in enumerate(zip(row, widths, strict=True))
            ).rstrip()
            for row in [header, *rows]
        ]
        return "\n".join(lines)


def _param_hook_count(module: nn.Module) -> int:
    n = 0
    for p in module.parameters(recurse=False):
        n += len(p._backward_hooks or {})
        n += len(getattr(p, "_post_accumulate_grad_hooks", None) or {})
    return n


def _counts(module: nn.Module) -> HookCounts:
    return HookCounts(
        forward=len(module._forward_hooks),
        forward_pre=len(module._forward_pre_hooks),
        backward=len(module._backward_hooks),
        backward_pre=len(module._backward_pre_hooks),
        params=_param_hook_count(module),
    )


def count_hooks(model: nn.Module) -> HookReport:
    """Count the hooks on every module of ``model``.

    Only modules that carry at least one hook are listed, so a model without
    hooks gives an empty report (``count_hooks(model) == {}``). Global module
    hooks (``torch.nn.modules.module.register_module_forward_hook``) are not
    counted.

    Parameters
    ----------
    model : torch.nn.Module
        The model to inspect, including itself (name ``""``) and all submodules.

    Returns
    -------
    HookReport
        ``dict`` from dotted module name to :class:`HookCounts`; ``str()`` of
        it is an aligned table, ``.total`` the grand total.

    Raises
    ------
    TypeError
        If ``model`` is not an ``nn.Module``.

    Examples
    --------
    >>> from torch import nn
    >>> model = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    >>> handle = model[1].register_forward_hook(lambda m, args, out: None)
    >>> count_hooks(model)
    {'1': HookCounts(forward=1, forward_pre=0, backward=0, backward_pre=0, params=0)}
    >>> print(count_hooks(model))
    module  forward  forward_pre  backward  backward_pre  params  total
    1             1            0         0             0       0      1
    total         1            0         0             0       0      1
    >>> handle.remove()
    >>> count_hooks(model)
    {}
    """
    check_model(model)
    report = HookReport()
    for name, module in model.named_modules(remove_duplicate=True):
        counts = _counts(module)
        if counts.total:
            report[name] = counts
    return report


def remove_all_hooks(model: nn.Module) -> int:
    """Remove every hook from ``model`` and its submodules: a last resort.

    Prefer removing the handles you registered (:class:`HookGroup` does it for
    you). This function also removes hooks that *others* put there on purpose,
    for example by :func:`torch.nn.utils.weight_norm` or a profiler, so use it
    only to recover a model whose handles were lost (say, after an interrupted
    notebook cell registered hooks in a loop).

    It empties the forward, forward pre-, backward and backward pre-hook
    dictionaries of each module, their bookkeeping dictionaries
    (``_forward_hooks_with_kwargs``, ``_forward_hooks_always_called``,
    ``_forward_pre_hooks_with_kwargs``), resets ``_is_full_backward_hook`` so
    that either kind of backward hook can be registered again, and removes
    gradient hooks on the parameters. State-dict hooks are left alone.

    Parameters
    ----------
    model : torch.nn.Module
        The model to clean, including its submodules.

    Returns
    -------
    int
        The number of hooks removed (as counted by :func:`count_hooks`).

    Raises
    ------
    TypeError
        If ``model`` is not an ``nn.Module``.

    Examples
    --------
    >>> from torch import nn
    >>> model = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    >>> for _ in range(3):  # handles thrown away: a leak
    ...     _ = model[0].register_forward_hook(lambda m, args, out: None)
    >>> remove_all_hooks(model)
    3
    >>> count_hooks(model)
    {}
    """
    check_model(model)
    removed = 0
    for module in model.modules():
        removed += _counts(module).total
        module._forward_hooks.clear()
        module._forward_hooks_with_kwargs.clear()
        module._forward_hooks_always_called.clear()
        module._forward_pre_hooks.clear()
        module._forward_pre_hooks_with_kwargs.clear()
        module._backward_hooks.clear()
        module._backward_pre_hooks.clear()
        module._is_full_backward_hook = None
        for p in module.parameters(recurse=False):
            # Clear in place: autograd keeps a reference to these very dicts.
            if p._backward_hooks:
                p._backward_hooks.clear()
            post = getattr(p, "_post_accumulate_grad_hooks", None)
            if post:
                post.clear()
    return removed
