"""Run a model once and tabulate what each layer received and returned."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple, overload

import torch
from torch import nn

from ._checks import check_model
from .hooks import HookGroup

__all__ = ["TraceResult", "TraceRow", "trace"]

#: The shape of one input or output: a tuple of ints for a tensor, a type
#: name for anything else.
Shape = tuple[int, ...] | str


class TraceRow(NamedTuple):
    """One call of one module during :func:`trace`.

    Attributes
    ----------
    name : str
        Dotted module name (``""`` for the model itself).
    type : str
        Class name of the module.
    input_shapes : tuple
        Shapes of the positional inputs, in order (a type name for non-tensors).
    output_shapes : tuple
        Shapes of the output tensors (one entry for a single tensor).
    params : int
        Number of parameter elements of the module, its submodules included.
    time_ms : float
        Wall-clock time of this call in milliseconds, measured between the
        forward pre-hook and the forward hook. One call, no warm-up: a rough
        guide to where time goes, not a benchmark.
    depth : int
        Number of traced calls this call ran inside: always 0 with
        ``leaves_only=True``; otherwise 0 for the model, 1 for its children...

    Examples
    --------
    >>> row = TraceRow("0", "Linear", ((1, 3),), ((1, 2),), 8, 0.1, 0)
    >>> row.params, row.output_shapes
    (8, ((1, 2),))
    """

    name: str
    type: str
    input_shapes: tuple[Shape, ...]
    output_shapes: tuple[Shape, ...]
    params: int
    time_ms: float
    depth: int


def _shapes(value: Any) -> tuple[Shape, ...]:
    if isinstance(value, torch.Tensor):
        return (tuple(value.shape),)
    if isinstance(value, (tuple, list)):
        return tuple(s for v in value for s in _shapes(v))
    if isinstance(value, dict):
        return tuple(s for v in value.values() for s in _shapes(v))
    return (type(value).__name__,)


def _format_shapes(shapes: tuple[Shape, ...]) -> str:
    parts = [
        "[" + ", ".join(str(d) for d in s) + "]" if isinstance(s, tuple) else s for s in shapes
    ]
    return ", ".join(parts)


class TraceResult(Sequence[TraceRow]):
    """The rows of a :func:`trace`, printable as an aligned table.

    A read-only sequence of :class:`TraceRow` in call order;
    ``str(result)`` is a text table with a total line.

    Parameters
    ----------
    rows : sequence of TraceRow
        The rows, in call order.
    total_params : int
        Number of parameter elements of the whole model.
    total_ms : float
        Wall-clock time of the whole forward call in milliseconds.

    Attributes
    ----------
    rows : tuple of TraceRow
        The rows, in the order the calls started (a container before its
        submodules; for leaf modules, the order they ran).
    total_params : int
        Number of parameter elements of the whole model (shared parameters
        counted once).
    total_ms : float
        Wall-clock time of the whole forward call in milliseconds.

    Examples
    --------
    >>> import torch
    >>> from torch import nn
    >>> result = trace(nn.Sequential(nn.Linear(3, 2), nn.ReLU()), torch.zeros(1, 3))
    >>> [row.name for row in result]
    ['0', '1']
    >>> result[0].output_shapes
    ((1, 2),)
    """

    def __init__(self, rows: Sequence[TraceRow], total_params: int, total_ms: float) -> None:
        self.rows: tuple[TraceRow, ...] = tuple(rows)
        self.total_params = total_params
        self.total_ms = total_ms

    @overload
    def __getitem__(self, index: int) -> TraceRow: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[TraceRow]: ...
    def __getitem__(self, index: int | slice) -> TraceRow | Sequence[TraceRow]:
        return self.rows[index]

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[TraceRow]:
        return iter(self.rows)

    def __repr__(self) -> str:
        return f"TraceResult({len(self.rows)} rows, {self.total_params} params)"

    def to_text(self, *, times: bool = True) -> str:
        """Format the rows as an aligned text table.

        Parameters
        ----------
        times : bool, default True
            Include the time column (leave it out for output that must not
            change from run to run, such as doctests).

        Returns
        -------
        str
            One line per row, a header and a total line.

        Examples
        --------
        >>> import torch
        >>> from torch import nn
        >>> model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Flatten())
        >>> print(trace(model, torch.zeros(2, 1, 5, 5)).to_text(times=False))
        name   type     input         output        params
        0      Conv2d   [2, 1, 5, 5]  [2, 4, 3, 3]      40
        1      ReLU     [2, 4, 3, 3]  [2, 4, 3, 3]       0
        2      Flatten  [2, 4, 3, 3]  [2, 36]            0
        total                                           40
        """
        header = ["name", "type", "input", "output", "params"]
        if times:
            header.append("time (ms)")
        table = [header]
        for row in self.rows:
            line = [
                "  " * row.depth + (row.name or "(model)"),
                row.type,
                _format_shapes(row.input_shapes),
                _format_shapes(row.output_shapes),
                f"{row.params:,}",
            ]
            if times:
                line.append(f"{row.time_ms:.3f}")
            table.append(line)
        total = ["total", "", "", "", f"{self.total_params:,}"]
        if times:
            total.append(f"{self.total_ms:.3f}")
        table.append(total)
        widths = [max(len(r[i]) for r in table) for i in range(len(header))]
        numeric = {4, 5}
        lines = []
        for r in table:
            cells = [
                cell.rjust(w) if i in numeric else cell.ljust(w)
                for i, (cell, w) in enumerate(zip(r, widths, strict=True))
            ]
            lines.append("  ".join(cells).rstrip())
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.to_text()


def trace(
    model: nn.Module,
    example_input: Any,
    *,
    leaves_only: bool = True,
    grad: bool = False,
) -> TraceResult:
    """Run ``model`` once and record, per layer, shapes, parameters and time.

    A forward pre-hook on each module notes the inputs and the start time, a
    forward hook the outputs and the end time; all hooks are removed before
    the function returns, also when the forward pass raises. The model's
    mode (``train()``/``eval()``) is left as it is.

    Parameters
    ----------
    model : torch.nn.Module
        The model to run.
    example_input : torch.Tensor or tuple
        The input: a tensor, or a tuple of positional arguments for
        ``model(*example_input)``.
    leaves_only : bool, default True
        Only modules without submodules. With ``False`` every module is
        listed, containers too, indented by depth.
    grad : bool, default False
        Run with autograd enabled (by default the pass runs under
        ``torch.no_grad()``, which is cheaper).

    Returns
    -------
    TraceResult
        Sequence of :class:`TraceRow`; ``print(result)`` shows a table.

    Raises
    ------
    TypeError
        If ``model`` is not an ``nn.Module``.

    Examples
    --------
    >>> import torch
    >>> from torch import nn
    >>> model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    >>> result = trace(model, torch.zeros(8, 3))
    >>> [(r.name, r.type, r.output_shapes, r.params) for r in result]
    [('0', 'Linear', ((8, 4),), 16), ('1', 'ReLU', ((8, 4),), 0), ('2', 'Linear', ((8, 2),), 10)]
    >>> print(result.to_text(times=False))
    name   type    input   output  params
    0      Linear  [8, 3]  [8, 4]      16
    1      ReLU    [8, 4]  [8, 4]       0
    2      Linear  [8, 4]  [8, 2]      10
    total                              26
    """
    check_model(model, "call trace(model, example_input)")
    args = example_input if isinstance(example_input, tuple) else (example_input,)
    names = {id(m): n for n, m in model.named_modules()}
    slots: list[TraceRow | None] = []  # filled in call order (pre-order)
    open_calls: list[tuple[int, float, tuple[Shape, ...]]] = []  # stack of running calls

    def pre_hook(_module: nn.Module, inputs: tuple[Any, ...]) -> None:
        slots.append(None)
        open_calls.append((len(slots) - 1, time.perf_counter(), _shapes(inputs)))

    def post_hook(module: nn.Module, _inputs: tuple[Any, ...], output: Any) -> None:
        end = time.perf_counter()
        index, start, in_shapes = open_calls.pop()
        slots[index] = TraceRow(
            name=names[id(module)],
            type=type(module).__name__,
            input_shapes=in_shapes,
            output_shapes=_shapes(output),
            params=sum(p.numel() for p in module.parameters()),
            time_ms=(end - start) * 1e3,
            depth=len(open_calls),
        )

    if leaves_only:
        modules = [m for m in model.modules() if next(m.children(), None) is None]
    else:
        modules = list(model.modules())
    with HookGroup() as group:
        for module in modules:
            group.forward_pre(module, pre_hook)
            group.forward(module, post_hook)
        context = torch.enable_grad() if grad else torch.no_grad()
        start = time.perf_counter()
        with context:
            model(*args)
        total_ms = (time.perf_counter() - start) * 1e3
    rows = [row for row in slots if row is not None]
    total_params = sum(p.numel() for p in model.parameters())
    return TraceResult(rows, total_params, total_ms)
