"""The hook cheat sheet is true on the installed torch.

The sheet's rows live in ``docs/cheatsheet.toml``; ``docs/cheatsheet.md`` shows
them (``docs/_ext/cheatsheet.py``) and this file checks each of them, so the page
and its checks share one source. For every row:

- the registering function exists where ``api`` says, with exactly the
  parameters (names, keyword-only marks, defaults) that ``register`` shows;
- its check (``@check(<id>)`` below) registers a hook whose parameters are those
  of each form in ``calls``, and asserts what ``fires``, ``returns`` and
  ``remove`` say, sentence by sentence (each sentence is quoted next to its
  assertions).

Notes under the tables are checked the same way, and every hook named as
untaught must exist. A row without a check, or a check without a row, fails.
``nox -s tests`` runs this file on the newest torch the project allows and
``nox -s oldest`` on the oldest, the two versions the page names.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.distributed as dist
from torch import nn
from torch.autograd.graph import register_multi_grad_hook, save_on_cpu, saved_tensors_hooks
from torch.nn.modules.module import (
    register_module_buffer_registration_hook,
    register_module_forward_hook,
    register_module_forward_pre_hook,
    register_module_full_backward_hook,
    register_module_full_backward_pre_hook,
    register_module_module_registration_hook,
    register_module_parameter_registration_hook,
)
from torch.utils.hooks import RemovableHandle

from hooks_tutorial import count_hooks

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the test group installs tomli there
    import tomli as tomllib

SHEET = tomllib.loads(
    (Path(__file__).parents[1] / "docs" / "cheatsheet.toml").read_text(encoding="utf-8")
)
ROWS = {row["id"]: row for row in SHEET["row"]}
NOTES = {note["id"]: note for note in SHEET["note"]}
# "with torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):" -> name, parameters
REGISTER = re.compile(r"(?:with )?[\w.]+\.(?P<name>\w+)\((?P<params>.*)\):?")
NO_DEFAULT = "(no default)"


# -- what every row must satisfy ----------------------------------------------------------


def resolve(dotted: str) -> Any:
    """``"torch.nn.Module.register_forward_hook"`` -> that object (a ``LookupError`` if absent)."""
    parts = dotted.split(".")
    for split in range(len(parts), 0, -1):
        try:
            found: Any = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for name in parts[split:]:
            if not hasattr(found, name):
                msg = f"{dotted}: {'.'.join(parts[:split])} has no {name!r}"
                raise LookupError(msg)
            found = getattr(found, name)
        return found
    msg = f"{dotted}: no such module"
    raise LookupError(msg)


def shown_parameters(register: str) -> list[tuple[str, str, Any]]:
    """``"module.f(hook, *, prepend=False)"`` -> ``[("hook", "positional", NO_DEFAULT),
    ("prepend", "keyword", False)]``."""
    match = REGISTER.fullmatch(register)
    assert match, f"{register!r} is not `receiver.function(parameters)`"
    function = ast.parse(f"def f({match['params']}): pass").body[0]
    assert isinstance(function, ast.FunctionDef)
    args = function.args
    positional = args.posonlyargs + args.args
    defaults = [NO_DEFAULT] * (len(positional) - len(args.defaults))
    defaults += [ast.literal_eval(d) for d in args.defaults]
    shown = [(a.arg, "positional", d) for a, d in zip(positional, defaults, strict=True)]
    shown += [
        (a.arg, "keyword", NO_DEFAULT if d is None else ast.literal_eval(d))
        for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
    ]
    return shown


def actual_parameters(function: Any) -> list[tuple[str, str, Any]]:
    kinds = {
        inspect.Parameter.POSITIONAL_ONLY: "positional",
        inspect.Parameter.POSITIONAL_OR_KEYWORD: "positional",
        inspect.Parameter.KEYWORD_ONLY: "keyword",
    }
    return [
        (p.name, kinds.get(p.kind, str(p.kind)), NO_DEFAULT if p.default is p.empty else p.default)
        for p in inspect.signature(function).parameters.values()
        if p.name != "self"
    ]


def call_parameters(call: str) -> list[str]:
    """``"hook(module, args)  # with_kwargs=True"`` -> ``["module", "args"]``."""
    expression = ast.parse(call.split("#", 1)[0].strip(), mode="eval").body
    assert isinstance(expression, ast.Call), call
    assert all(isinstance(arg, ast.Name) for arg in expression.args), call
    return [arg.id for arg in expression.args if isinstance(arg, ast.Name)]


@dataclass
class Row:
    """One row of the sheet, as its check sees it: ``hook`` checks a hook's parameters."""

    data: dict[str, Any]
    forms_checked: set[int] = field(default_factory=set)

    def hook(self, function: Callable[..., Any], form: int = 0) -> Callable[..., Any]:
        """``function``, once its parameters are those of the sheet's ``calls[form]``."""
        wanted = call_parameters(self.data["calls"][form])
        assert list(inspect.signature(function).parameters) == wanted, self.data["calls"][form]
        self.forms_checked.add(form)
        return function


CHECKS: dict[str, Callable[[Row], None]] = {}
NOTE_CHECKS: dict[str, Callable[[], None]] = {}


def check(row_id: str) -> Callable[[Callable[[Row], None]], Callable[[Row], None]]:
    def register(function: Callable[[Row], None]) -> Callable[[Row], None]:
        CHECKS[row_id] = function
        return function

    return register


def check_note(note_id: str) -> Callable[[Callable[[], None]], Callable[[], None]]:
    def register(function: Callable[[], None]) -> Callable[[], None]:
        NOTE_CHECKS[note_id] = function
        return function

    return register


def test_every_row_and_note_has_a_check() -> None:
    assert set(CHECKS) == set(ROWS)
    assert set(NOTE_CHECKS) == set(NOTES)
    assert len(ROWS) == len(SHEET["row"]), "two rows share an id"


@pytest.mark.parametrize("row", ROWS.values(), ids=ROWS.keys())
def test_the_registering_function_takes_the_parameters_shown(row: dict[str, Any]) -> None:
    function = resolve(row["api"])
    match = REGISTER.fullmatch(row["register"])
    assert match
    assert match["name"] == row["api"].rsplit(".", 1)[1]
    assert shown_parameters(row["register"]) == actual_parameters(function)


# rows whose check needs a fixture
FIXTURES = {"comm-hook": "process_group"}


@pytest.mark.parametrize("row", ROWS.values(), ids=ROWS.keys())
def test_the_row_is_true(row: dict[str, Any], request: pytest.FixtureRequest) -> None:
    if row["id"] in FIXTURES:
        request.getfixturevalue(FIXTURES[row["id"]])
    checked = Row(row)
    CHECKS[row["id"]](checked)
    assert checked.forms_checked == set(range(len(row["calls"]))), "a form of `calls` unchecked"


@pytest.mark.parametrize("note", NOTES.values(), ids=NOTES.keys())
def test_the_note_is_true(note: dict[str, Any]) -> None:
    NOTE_CHECKS[note["id"]]()


@pytest.mark.parametrize("name", SHEET["untaught"]["names"])
def test_the_untaught_hooks_exist(name: str) -> None:
    assert callable(resolve(name))


def test_pages_exist() -> None:
    examples = Path(__file__).parents[1] / "examples"
    for row in ROWS.values():
        for page in row["pages"]:
            assert (examples / f"{page}.py").is_file(), (row["id"], page)


# -- small models -----------------------------------------------------------------------


class Scale(nn.Module):
    """``forward(x, factor=1.0)`` returns ``x * factor`` and records each call; NaN raises."""

    def __init__(self) -> None:
        super().__init__()
        self.received: list[tuple[torch.Tensor, float]] = []

    def forward(self, x: torch.Tensor, factor: float = 1.0) -> torch.Tensor:
        self.received.append((x, factor))
        if x.isnan().any():
            msg = "input contains NaN"
            raise ValueError(msg)
        return x * factor


class Mix(nn.Module):
    """``linear(x) + y``: two positional inputs, of which only ``x`` needs a gradient here."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.linear = nn.Linear(3, 2)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.linear(x) + y


def mix_gradients(
    mix: Mix, hooks: Callable[[], Any] | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """``x.grad`` and ``linear.weight.grad`` of one backward pass through ``mix``."""
    mix.zero_grad(set_to_none=True)
    x = torch.tensor([[1.0, -2.0, 3.0]], requires_grad=True)
    (mix(x, torch.ones(1, 2)) * torch.tensor([[1.0, 2.0]])).sum().backward()
    assert x.grad is not None
    assert mix.linear.weight.grad is not None
    return x.grad, mix.linear.weight.grad.clone()


# -- module hooks -------------------------------------------------------------------------


@check("forward-pre-hook")
def _forward_pre_hook(row: Row) -> None:
    scale, x = Scale(), torch.tensor([1.0, 2.0])
    seen = []

    def hook(module, args):
        seen.append((module, args, len(scale.received)))
        return args[0] * 10  # not a tuple

    handle = scale.register_forward_pre_hook(row.hook(hook))
    out = scale(x)
    # "At each call module(x), before forward runs"
    ((module, args, calls_before),) = seen
    assert module is scale
    assert calls_before == 0
    assert isinstance(args, tuple)
    assert torch.equal(args[0], x)
    # "Anything but None replaces args (a value that is not a tuple is wrapped in one)"
    assert torch.equal(scale.received[-1][0], 10 * x)
    assert torch.equal(out, 10 * x)
    # "not when module.forward(x) is called directly"
    scale.forward(x)
    assert len(seen) == 1
    # "handle.remove()"
    handle.remove()
    scale(x)
    assert len(seen) == 1
    assert not count_hooks(scale)

    # "With with_kwargs=True: None or a pair (args, kwargs)"
    def hook_with_kwargs(module, args, kwargs):
        return args, {**kwargs, "factor": 3.0}

    with scale.register_forward_pre_hook(row.hook(hook_with_kwargs, 1), with_kwargs=True):
        assert torch.equal(scale(x, factor=2.0), 3 * x)
    with scale.register_forward_pre_hook(lambda m, a, k: None, with_kwargs=True):
        assert torch.equal(scale(x, factor=2.0), 2 * x)
    # "..., else RuntimeError"
    with (
        scale.register_forward_pre_hook(lambda m, args, kwargs: args, with_kwargs=True),
        pytest.raises(RuntimeError, match=r"must return None or a tuple of \(new_args"),
    ):
        scale(x, factor=2.0)
    assert not count_hooks(scale)


@check("forward-hook")
def _forward_hook(row: Row) -> None:
    first, second = Scale(), Scale()
    model = nn.Sequential(first, second)
    x = torch.tensor([1.0, 2.0])
    seen = []

    def hook(module, args, output):
        seen.append((module, args, output, len(first.received)))
        return output + 100

    handle = first.register_forward_hook(row.hook(hook))
    out = model(x)
    # "At each call module(x), after forward returned"
    ((module, args, output, calls_before),) = seen
    assert module is first
    assert calls_before == 1
    assert torch.equal(args[0], x)
    assert torch.equal(output, x)
    # "Anything but None replaces the output: the caller and the next layer get it"
    assert torch.equal(second.received[-1][0], x + 100)
    assert torch.equal(out, x + 100)
    assert torch.equal(first(x), x + 100)
    # "not for module.forward(x)"
    calls = len(seen)
    first.forward(x)
    assert len(seen) == calls
    handle.remove()
    assert torch.equal(model(x), x)
    assert len(seen) == calls

    def hook_with_kwargs(module, args, kwargs, output):
        seen.append(kwargs)

    with first.register_forward_hook(row.hook(hook_with_kwargs, 1), with_kwargs=True):
        first(x, factor=2.0)
    assert seen[-1] == {"factor": 2.0}

    # "With always_call=True also when forward raises, with output set to None"
    log: list[Any] = []
    with (
        first.register_forward_hook(lambda m, a, out: log.append(("ordinary", out))),
        first.register_forward_hook(
            lambda m, a, out: log.append(("always", out)), always_call=True
        ),
        pytest.raises(ValueError, match="input contains NaN"),
    ):
        first(torch.tensor([float("nan")]))
    assert log == [("always", None)]
    assert not count_hooks(model)


@check("full-backward-pre-hook")
def _full_backward_pre_hook(row: Row) -> None:
    mix = Mix()
    plain_x, plain_weight = mix_gradients(mix)
    seen = []

    def hook(module, grad_output):
        seen.append((module, grad_output, mix.linear.weight.grad))
        return (2 * grad_output[0],)

    with mix.register_full_backward_pre_hook(row.hook(hook)):
        x_grad, weight_grad = mix_gradients(mix)
    # "when the gradients of the module's outputs are ready, before the gradients of its
    # inputs and parameters are computed"
    ((module, grad_output, weight_grad_then),) = seen
    assert module is mix
    assert torch.equal(grad_output[0], torch.tensor([[1.0, 2.0]]))
    assert weight_grad_then is None
    # "A new grad_output (a tuple): the module's input and parameter gradients are
    # computed from it"
    assert torch.equal(x_grad, 2 * plain_x)
    assert torch.equal(weight_grad, 2 * plain_weight)
    # removed by the with block (a handle)
    assert torch.equal(mix_gradients(mix)[0], plain_x)
    assert not count_hooks(mix)


@check("full-backward-hook")
def _full_backward_hook(row: Row) -> None:
    mix = Mix()
    plain_x, plain_weight = mix_gradients(mix)
    seen = []

    def hook(module, grad_input, grad_output):
        seen.append((module, grad_input, grad_output))
        return tuple(None if g is None else torch.zeros_like(g) for g in grad_input)

    handle = mix.register_full_backward_hook(row.hook(hook))
    x_grad, weight_grad = mix_gradients(mix)
    # "when the gradients of the module's positional inputs are computed"
    ((module, grad_input, grad_output),) = seen
    assert module is mix
    assert torch.equal(grad_input[0], plain_x)
    assert torch.equal(grad_output[0], torch.tensor([[1.0, 2.0]]))
    # "A new grad_input (a tuple): the gradients that earlier layers receive. The
    # parameters' gradients do not change."
    assert torch.equal(x_grad, torch.zeros_like(plain_x))
    assert torch.equal(weight_grad, plain_weight)
    # "When no input needs a gradient (a first layer), once those of its outputs are,
    # with grad_input all None" (PyTorch warns that it does so)
    seen.clear()
    with pytest.warns(
        UserWarning, match="Full backward hook is firing when gradients are computed"
    ):
        mix(torch.ones(1, 3), torch.ones(1, 2)).sum().backward()
    ((module, grad_input, grad_output),) = seen
    assert grad_input == (None, None)
    assert torch.equal(grad_output[0], torch.ones(1, 2))
    handle.remove()
    assert torch.equal(mix_gradients(mix)[0], plain_x)
    assert len(seen) == 1
    assert not count_hooks(mix)


class ReluTimesFive(nn.Module):
    """Two operations: the old backward hook sees only the second one (page 7)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x) * 5


@check("backward-hook")
def _backward_hook(row: Row) -> None:
    module = ReluTimesFive()
    x = torch.tensor([-1.0, 2.0, -3.0, 4.0], requires_grad=True)
    seen = []

    def hook(module, grad_input, grad_output):
        seen.append(grad_input)
        return tuple(None if g is None else torch.zeros_like(g) for g in grad_input)

    handle = module.register_backward_hook(row.hook(hook))
    with pytest.warns(FutureWarning, match="non-full backward hook"):
        y = module(x)
    y.sum().backward()
    # "it hooks only the last operation of forward, so grad_input is that operation's,
    # wrong for most modules": d(5 r)/dr = 5 everywhere, while the true gradient with
    # respect to x is 0 where x < 0
    assert torch.equal(seen[0][0], torch.full((4,), 5.0))
    assert not torch.equal(seen[0][0], torch.tensor([0.0, 5.0, 0.0, 5.0]))
    # "A new grad_input of that last operation": zeros flow on through the ReLU
    assert x.grad is not None
    assert torch.equal(x.grad, torch.zeros(4))
    # "Not on a module with a full backward hook (RuntimeError)", either way round
    with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full"):
        module.register_full_backward_hook(lambda m, gi, go: None)
    other = ReluTimesFive()
    with (
        other.register_full_backward_hook(lambda m, gi, go: None),
        pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full"),
    ):
        other.register_backward_hook(hook)
    handle.remove()
    module(x).sum().backward()
    assert len(seen) == 1
    assert not count_hooks(module)


@check_note("handles")
def _handles() -> None:
    scale = Scale()
    calls = []
    # "Every register_... function returns a handle": each row's check shows it for its
    # own function; here the removal itself
    handle = scale.register_forward_hook(lambda m, a, out: calls.append(1))
    assert isinstance(handle, RemovableHandle)
    scale(torch.ones(1))
    # "handle.remove() takes the hook off, and calling it again does nothing"
    handle.remove()
    handle.remove()
    scale(torch.ones(1))
    assert calls == [1]
    # "with module.register_forward_hook(hook): removes the hook when the block ends"
    with scale.register_forward_hook(lambda m, a, out: calls.append(2)):
        scale(torch.ones(1))
        assert count_hooks(scale).total == 1
    scale(torch.ones(1))
    assert calls == [1, 2]
    assert not count_hooks(scale)


@check_note("order")
def _order() -> None:
    scale = Scale()
    order: list[str] = []
    with (
        scale.register_forward_hook(lambda m, a, out: order.append("first")),
        scale.register_forward_hook(lambda m, a, out: order.append("second")),
        scale.register_forward_hook(lambda m, a, out: order.append("prepended"), prepend=True),
        scale.register_forward_pre_hook(lambda m, a: order.append("pre, first")),
        scale.register_forward_pre_hook(lambda m, a: order.append("pre, prepended"), prepend=True),
    ):
        scale(torch.ones(1))
    # "in the order they were registered; prepend=True puts a new hook before the others"
    assert order == ["pre, prepended", "pre, first", "prepended", "first", "second"]

    # "PyTorch passes a hook its arguments by position, so their names are yours to choose"
    def unusual_names(layer, inputs, result):
        return result * 3

    with scale.register_forward_hook(unusual_names):
        assert torch.equal(scale(torch.ones(1)), torch.full((1,), 3.0))
    assert not count_hooks(scale)


# -- global module hooks -------------------------------------------------------------------


@check("global-forward-pre-hook")
def _global_forward_pre_hook(row: Row) -> None:
    order = []

    def hook(module, args):
        order.append(("global", module))
        return args[0] * 10

    handle = register_module_forward_pre_hook(row.hook(hook))
    try:
        created_later = Scale()  # "modules created later too"
        with created_later.register_forward_pre_hook(lambda m, a: order.append(("own", m))):
            out = created_later(torch.ones(1))
    finally:
        handle.remove()
    # "Before the forward of every module in the process ..., before the module's own
    # pre-hooks"
    assert order == [("global", created_later), ("own", created_later)]
    # "anything but None replaces args"
    assert torch.equal(out, torch.full((1,), 10.0))
    created_later(torch.ones(1))
    assert len(order) == 2


@check("global-forward-hook")
def _global_forward_hook(row: Row) -> None:
    order = []
    model = nn.Sequential(Scale(), Scale())

    def hook(module, args, output):
        order.append(("global", module))
        return output + 1

    handle = register_module_forward_hook(row.hook(hook))
    try:
        with model[0].register_forward_hook(lambda m, a, out: order.append(("own", m))):
            out = model(torch.zeros(1))
    finally:
        handle.remove()
    # "After the forward of every module in the process, before the module's own forward
    # hooks"
    assert order == [
        ("global", model[0]),
        ("own", model[0]),
        ("global", model[1]),
        ("global", model),
    ]
    # "anything but None replaces the output": three modules, one each
    assert torch.equal(out, torch.full((1,), 3.0))
    model(torch.zeros(1))
    assert len(order) == 4

    def hook_with_kwargs(module, args, kwargs, output):
        order.append(kwargs)

    with register_module_forward_hook(row.hook(hook_with_kwargs, 1), with_kwargs=True) as handle:
        model[0](torch.zeros(1), factor=2.0)
    assert order[-1] == {"factor": 2.0}
    # torch's handle forgets the id it put in the with_kwargs table (torch 2.9 to 2.14):
    # left there, every later `torch.compile(module)` in this process warns of global
    # hooks (tests/test_compile.py runs in the same worker). Cleared by hand.
    torch.nn.modules.module._global_forward_hooks_with_kwargs.pop(handle.id, None)


@check("global-full-backward-pre-hook")
def _global_full_backward_pre_hook(row: Row) -> None:
    mix = Mix()
    plain_x, _ = mix_gradients(mix)
    order = []

    def hook(module, grad_output):
        order.append(("global", type(module).__name__))
        return (2 * grad_output[0],) if module is mix else None

    handle = register_module_full_backward_pre_hook(row.hook(hook))
    try:
        with mix.register_full_backward_pre_hook(lambda m, go: order.append(("own", "Mix"))):
            x_grad, _ = mix_gradients(mix)
    finally:
        handle.remove()
    # "for every module in the process, before the module's own backward pre-hooks"
    assert order == [("global", "Mix"), ("own", "Mix"), ("global", "Linear")]
    # "a new grad_output"
    assert torch.equal(x_grad, 2 * plain_x)
    assert torch.equal(mix_gradients(mix)[0], plain_x)
    assert len(order) == 3


@check("global-full-backward-hook")
def _global_full_backward_hook(row: Row) -> None:
    mix = Mix()
    plain_x, _ = mix_gradients(mix)
    order = []

    def hook(module, grad_input, grad_output):
        order.append(("global", type(module).__name__))
        return (3 * grad_input[0], None) if module is mix else None

    handle = register_module_full_backward_hook(row.hook(hook))
    try:
        with mix.register_full_backward_hook(lambda m, gi, go: order.append(("own", "Mix"))):
            x_grad, _ = mix_gradients(mix)
    finally:
        handle.remove()
    # "for every module in the process, before the module's own backward hooks"
    assert order == [("global", "Linear"), ("global", "Mix"), ("own", "Mix")]
    # "a new grad_input"
    assert torch.equal(x_grad, 3 * plain_x)
    assert torch.equal(mix_gradients(mix)[0], plain_x)
    assert len(order) == 3


@check_note("global-outlives")
def _global_outlives() -> None:
    calls = []

    def watch(model: nn.Module) -> RemovableHandle:
        """A global hook meant for ``model`` (it looks at every module all the same)."""
        return register_module_forward_hook(lambda m, args, out: calls.append(m))

    model = Scale()
    handle = watch(model)
    try:
        model(torch.ones(1))
        del model
        # "A global hook outlives the model it was meant for"
        Scale()(torch.ones(1))
        assert len(calls) == 2
    finally:
        # "remove it in a finally block"
        handle.remove()
    Scale()(torch.ones(1))
    assert len(calls) == 2


class _Registers(nn.Module):
    """Registers a parameter, a buffer and a submodule, each also as ``None``."""

    def __init__(self) -> None:
        super().__init__()
        self.register_parameter("no_weight", None)
        self.register_buffer("no_buffer", None)
        self.add_module("no_module", None)
        self.weight = nn.Parameter(torch.ones(2))
        self.register_buffer("count", torch.zeros(1))
        self.inner = nn.Identity()


@check_note("registration-hooks")
def _registration_hooks() -> None:
    seen = []

    def on_parameter(module, name, value):
        seen.append(("parameter", name))
        return nn.Parameter(value.to(torch.float64))

    def on_buffer(module, name, value):
        seen.append(("buffer", name))
        return None if value is None else value + 5

    def on_module(module, name, value):
        seen.append(("module", name))
        return nn.Tanh() if isinstance(value, nn.Identity) else None

    handles = [
        register_module_parameter_registration_hook(on_parameter),
        register_module_buffer_registration_hook(on_buffer),
        register_module_module_registration_hook(on_module),
    ]
    try:
        made = _Registers()
    finally:
        for handle in handles:
            handle.remove()
    # "call hook(module, name, value) each time any module registers one (a parameter: not
    # when it is None)"
    assert seen == [
        ("buffer", "no_buffer"),
        ("module", "no_module"),
        ("parameter", "weight"),
        ("buffer", "count"),
        ("module", "inner"),
    ]
    # "anything but None replaces the value"
    assert isinstance(made.weight, nn.Parameter)
    assert made.weight.dtype == torch.float64
    assert torch.equal(made.count, torch.full((1,), 5.0))
    assert isinstance(made.inner, nn.Tanh)
    plain = _Registers()
    assert plain.weight.dtype == torch.float32
    assert plain.count.item() == 0.0
    assert isinstance(plain.inner, nn.Identity)


# -- tensor hooks --------------------------------------------------------------------------


@check("tensor-hook")
def _tensor_hook(row: Row) -> None:
    x = torch.tensor(2.0, requires_grad=True)
    seen = []

    def hook(grad):
        seen.append((grad.clone(), None if x.grad is None else x.grad.clone()))
        return grad * 10

    handle = x.register_hook(row.hook(hook))
    (x * 3 + x * 4).backward()  # x used twice: one gradient, 7
    (x * 5).backward()
    # "once per pass, when the gradient with respect to this tensor is computed; for a
    # leaf tensor, before it is added to .grad"
    assert seen == [(torch.tensor(7.0), None), (torch.tensor(5.0), torch.tensor(70.0))]
    # "A tensor replaces the gradient: .grad ... get[s] the returned tensor"
    assert torch.equal(x.grad, torch.tensor(120.0))
    handle.remove()
    (x * 1).backward()
    assert len(seen) == 2
    assert torch.equal(x.grad, torch.tensor(121.0))

    # "... and the gradients computed from this one": a hook on an intermediate tensor
    # (the course notes' example: y = x**2, z = y**3, the gradient of y halved)
    x = torch.tensor(2.0, requires_grad=True)
    y = x**2
    with y.register_hook(lambda grad: grad / 2):
        (y**3).backward()
    assert torch.equal(x.grad, torch.tensor(96.0))  # 192 without the hook


@check("post-accumulate-grad-hook")
def _post_accumulate_grad_hook(row: Row) -> None:
    weight = nn.Parameter(torch.tensor([1.0, 2.0]))
    seen = []

    def hook(tensor):
        seen.append((tensor, tensor.grad.clone()))
        tensor.grad.clamp_(max=4.0)  # "change tensor.grad in place"

    handle = weight.register_post_accumulate_grad_hook(row.hook(hook))
    (weight * 3).sum().backward()
    (weight * 2).sum().backward()
    # "after the gradient was added to tensor.grad": the second call sees 3 + 2, before
    # its own clamp
    assert [t is weight for t, _ in seen] == [True, True]
    assert torch.equal(seen[0][1], torch.tensor([3.0, 3.0]))
    assert torch.equal(seen[1][1], torch.tensor([5.0, 5.0]))
    assert torch.equal(weight.grad, torch.tensor([4.0, 4.0]))
    handle.remove()
    weight.sum().backward()
    assert len(seen) == 2
    # "Leaf tensors only, such as parameters: on another tensor, registering raises
    # RuntimeError"
    with pytest.raises(RuntimeError, match="non-leaf"):
        (weight * 2).register_post_accumulate_grad_hook(hook)
    # "Must be None (else RuntimeError)"
    with (
        weight.register_post_accumulate_grad_hook(lambda tensor: tensor.grad),
        pytest.raises(RuntimeError, match="should return None"),
    ):
        weight.sum().backward()


# -- autograd graph and saved-tensor hooks ------------------------------------------------------


@check("node-prehook")
def _node_prehook(row: Row) -> None:
    x = torch.tensor([0.5, 1.0], requires_grad=True)
    y = x.sin()
    node = y.grad_fn
    seen = []

    def hook(grad_outputs):
        seen.append((grad_outputs, x.grad))
        return (grad_outputs[0] * 2,)

    handle = node.register_prehook(row.hook(hook))
    (y * 3).sum().backward()
    # "before this node of the graph runs": it receives dL/dy, and x has no gradient yet
    ((grad_outputs, x_grad_then),) = seen
    assert torch.equal(grad_outputs[0], torch.full((2,), 3.0))
    assert x_grad_then is None
    # "New grad_outputs: the gradients the node receives"
    assert torch.allclose(x.grad, 6 * x.detach().cos())
    handle.remove()
    x.grad = None
    y = x.sin()
    (y * 3).sum().backward()
    assert len(seen) == 1
    assert torch.allclose(x.grad, 3 * x.detach().cos())


@check("node-hook")
def _node_hook(row: Row) -> None:
    x = torch.tensor([0.5, 1.0], requires_grad=True)
    y = x.sin()
    node = y.grad_fn
    seen = []

    def hook(grad_inputs, grad_outputs):
        seen.append((grad_inputs, grad_outputs))
        return (torch.zeros_like(grad_inputs[0]),)

    handle = node.register_hook(row.hook(hook))
    (y * 3).sum().backward()
    # "after this node computed its grad_inputs": cos(x) * dL/dy
    ((grad_inputs, grad_outputs),) = seen
    assert torch.allclose(grad_inputs[0], 3 * x.detach().cos())
    assert torch.equal(grad_outputs[0], torch.full((2,), 3.0))
    # "New grad_inputs: the gradients passed on to the next nodes"
    assert torch.equal(x.grad, torch.zeros(2))
    handle.remove()
    x.grad = None
    y = x.sin()
    (y * 3).sum().backward()
    assert len(seen) == 1


@check("multi-grad-hook")
def _multi_grad_hook(row: Row) -> None:
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    b = torch.tensor([3.0], requires_grad=True)
    c = torch.tensor([4.0], requires_grad=True)
    seen: list[Any] = []

    def hook(grads):
        seen.append(list(grads))
        return [torch.zeros_like(g) if g is not None else None for g in grads]

    handle = register_multi_grad_hook((a, b, c), row.hook(hook), mode="all")
    (a.sum() * 2 + b.sum() * 3).backward()
    (a.sum() * 2 + b.sum() * 3).backward()
    # "once per pass: when the gradients of all the tensors that get one are computed
    # (None for the others)"
    assert len(seen) == 2
    grad_a, grad_b, grad_c = seen[0]
    assert torch.equal(grad_a, torch.full((2,), 2.0))
    assert torch.equal(grad_b, torch.tensor([3.0]))
    assert grad_c is None
    # "Ignored: the gradients do not change"
    assert torch.equal(a.grad, torch.full((2,), 4.0))
    handle.remove()
    (a.sum() + b.sum()).backward()
    assert len(seen) == 2

    firsts: list[torch.Tensor] = []

    def first_hook(grad):
        firsts.append(grad)

    # "with mode='any', at the first of them"
    with register_multi_grad_hook((a, b), row.hook(first_hook, 1), mode="any"):
        (a.sum() * 2 + b.sum() * 3).backward()
    assert len(firsts) == 1
    assert any(torch.equal(firsts[0], g) for g in (torch.full((2,), 2.0), torch.tensor([3.0])))


@check("saved-tensors-hooks")
def _saved_tensors_hooks(row: Row) -> None:
    packed, unpacked = [], []

    def pack_hook(tensor):
        packed.append(tensor)
        return ("kept", tensor.detach().clone())  # anything may be kept

    def unpack_hook(packed):
        unpacked.append(packed)
        return packed[1] * 2

    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with saved_tensors_hooks(row.hook(pack_hook, 0), row.hook(unpack_hook, 1)):
        y = (x * x).sum()  # the multiplication saves both of its inputs
    # "pack_hook each time an operation saves a tensor for the backward pass"
    assert len(packed) == 2
    assert all(torch.equal(t, x) for t in packed)
    assert not unpacked
    # "unpack_hook when the backward pass reads it back"; "tensors saved inside it keep
    # their unpack_hook" (the backward pass runs after the block)
    y.backward()
    assert [p[0] for p in unpacked] == ["kept", "kept"]
    # "what unpack_hook returns is the tensor the backward pass uses": d(x*x)/dx = 2x,
    # from the doubled x it is 4x
    assert torch.equal(x.grad, 4 * x.detach())
    # "Leave the with block": nothing is packed outside it
    (x * x).sum().backward()
    assert len(packed) == 2


@check_note("save-on-cpu")
def _save_on_cpu() -> None:
    # "a ready-made pair of saved-tensor hooks, used as a with block like them"
    assert issubclass(save_on_cpu, saved_tensors_hooks)
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with save_on_cpu():
        y = (x * x).sum()
    y.backward()
    assert torch.equal(x.grad, 2 * x.detach())
    # "it moves saved tensors that live on another device to CPU memory": a tensor that
    # is on the CPU already stays where it is (the hook keeps its device with it)
    hooks = save_on_cpu()
    device, kept = hooks.pack_hook(x)
    assert device == x.device
    assert kept.device.type == "cpu"
    assert torch.equal(hooks.unpack_hook((device, kept)), x)


# -- state-dict hooks of modules ---------------------------------------------------------------


@check("state-dict-post-hook")
def _state_dict_post_hook(row: Row) -> None:
    model = nn.Sequential(nn.Linear(2, 2))
    seen = []

    def hook(module, state_dict, prefix, local_metadata):
        seen.append((module, list(state_dict), prefix))
        local_metadata["format_version"] = 2  # "change ... local_metadata in place"
        state_dict.pop("0.bias")  # "change state_dict ... in place"

    handle = model.register_state_dict_post_hook(row.hook(hook))
    state = model.state_dict()
    # "after the entries of this module and its submodules were collected"
    assert seen == [(model, ["0.weight", "0.bias"], "")]
    assert list(state) == ["0.weight"]
    assert state._metadata[""]["format_version"] == 2
    handle.remove()
    assert list(model.state_dict()) == ["0.weight", "0.bias"]
    assert len(seen) == 1
    # "Must be None (else RuntimeError)"
    with (
        model.register_state_dict_post_hook(lambda m, sd, prefix, meta: sd),
        pytest.raises(RuntimeError, match="state_dict post-hook must return None"),
    ):
        model.state_dict()


@check("load-state-dict-pre-hook")
def _load_state_dict_pre_hook(row: Row) -> None:
    torch.manual_seed(0)
    old, new = nn.Linear(2, 2), nn.Linear(2, 2)
    checkpoint = {f"old_{k}": v for k, v in old.state_dict().items()}
    seen = []

    def hook(
        module,
        state_dict,
        prefix,
        local_metadata,
        strict,
        missing_keys,
        unexpected_keys,
        error_msgs,
    ):
        seen.append(torch.equal(module.weight, new_weight))
        for key in list(state_dict):
            state_dict[key.removeprefix("old_")] = state_dict.pop(key)
        return "ignored"

    new_weight = new.weight.detach().clone()
    handle = new.register_load_state_dict_pre_hook(row.hook(hook))
    result = new.load_state_dict(checkpoint)
    # "before this module copies its tensors"
    assert seen == [True]
    # "Ignored: rename or change keys in state_dict in place (a copy of the caller's
    # dictionary)"
    assert not result.missing_keys
    assert not result.unexpected_keys
    assert torch.equal(new.weight, old.weight)
    assert list(checkpoint) == ["old_weight", "old_bias"]
    handle.remove()
    with pytest.raises(RuntimeError, match="Missing key"):
        new.load_state_dict(checkpoint)
    assert len(seen) == 1


@check("load-state-dict-post-hook")
def _load_state_dict_post_hook(row: Row) -> None:
    torch.manual_seed(0)
    old, new = nn.Linear(2, 2), nn.Linear(2, 2)
    checkpoint = {"weight": old.weight.detach().clone()}  # no bias
    seen = []

    def hook(module, incompatible_keys):
        seen.append((torch.equal(module.weight, old.weight), list(incompatible_keys.missing_keys)))
        incompatible_keys.missing_keys.remove("bias")

    handle = new.register_load_state_dict_post_hook(row.hook(hook))
    result = new.load_state_dict(checkpoint)  # strict=True, and nothing raised
    # "after the tensors were copied, before strict=True raises for missing or unexpected
    # keys"; "remove a key from incompatible_keys.missing_keys in place to accept its
    # absence"
    assert seen == [(True, ["bias"])]
    assert not result.missing_keys
    handle.remove()
    with pytest.raises(RuntimeError, match=r'Missing key.*"bias"'):
        new.load_state_dict(checkpoint)
    assert len(seen) == 1
    # "Must be None (else AssertionError)"
    with (
        new.register_load_state_dict_post_hook(lambda m, keys: keys),
        pytest.raises(AssertionError, match="expected to return new values"),
    ):
        new.load_state_dict(new.state_dict())


# -- optimizer hooks -----------------------------------------------------------------------


def sgd() -> tuple[nn.Linear, torch.optim.SGD]:
    """A layer with gradients, and an SGD optimizer ready to step."""
    torch.manual_seed(0)
    layer = nn.Linear(2, 1)
    layer(torch.ones(1, 2)).sum().backward()
    return layer, torch.optim.SGD(layer.parameters(), lr=0.1, momentum=0.9)


@check("step-pre-hook")
def _step_pre_hook(row: Row) -> None:
    layer, optimizer = sgd()
    before = layer.weight.detach().clone()
    seen = []

    def closure():
        return torch.tensor(7.0)

    def hook(optimizer, args, kwargs):
        seen.append((args, kwargs, torch.equal(layer.weight, before)))
        return args, {"closure": closure}

    handle = optimizer.register_step_pre_hook(row.hook(hook))
    loss = optimizer.step()
    # "At each optimizer.step(), before the update; args starts with the optimizer itself"
    ((args, kwargs, unchanged),) = seen
    assert args == (optimizer,)
    assert kwargs == {}
    assert unchanged
    assert not torch.equal(layer.weight, before)
    # "a pair (args, kwargs) that step is then called with"
    assert torch.equal(loss, torch.tensor(7.0))
    handle.remove()
    assert optimizer.step() is None
    assert len(seen) == 1
    # "anything else raises RuntimeError"
    with (
        optimizer.register_step_pre_hook(lambda o, a, k: "new args"),
        pytest.raises(RuntimeError, match="must return None or a tuple of"),
    ):
        optimizer.step()


@check("step-post-hook")
def _step_post_hook(row: Row) -> None:
    layer, optimizer = sgd()
    twin, twin_optimizer = sgd()
    before = layer.weight.detach().clone()
    seen = []

    def hook(optimizer, args, kwargs):
        seen.append((args, layer.weight.detach().clone()))
        return "ignored"

    handle = optimizer.register_step_post_hook(row.hook(hook))
    result = optimizer.step()
    # "At each optimizer.step(), after the update"
    ((args, weight_then),) = seen
    assert args == (optimizer,)
    assert not torch.equal(weight_then, before)
    assert torch.equal(weight_then, layer.weight)
    # "Ignored": the same step as without the hook
    assert result is twin_optimizer.step() is None
    assert torch.equal(layer.weight, twin.weight)
    handle.remove()
    optimizer.step()
    assert len(seen) == 1


@check("optimizer-state-dict-pre-hook")
def _optimizer_state_dict_pre_hook(row: Row) -> None:
    _, optimizer = sgd()
    seen = []

    def hook(optimizer):
        seen.append(optimizer)
        optimizer.param_groups[0]["lr"] = 0.5
        return {"ignored": True}

    handle = optimizer.register_state_dict_pre_hook(row.hook(hook))
    state = optimizer.state_dict()
    # "before the state is collected": the learning rate it set is in the state
    assert seen == [optimizer]
    assert state["param_groups"][0]["lr"] == 0.5
    # "Ignored"
    assert "ignored" not in state
    handle.remove()
    optimizer.state_dict()
    assert len(seen) == 1


@check("optimizer-state-dict-post-hook")
def _optimizer_state_dict_post_hook(row: Row) -> None:
    _, optimizer = sgd()
    seen = []

    def hook(optimizer, state_dict):
        seen.append(state_dict["param_groups"][0]["lr"])
        return {**state_dict, "note": "saved with a hook"}

    handle = optimizer.register_state_dict_post_hook(row.hook(hook))
    state = optimizer.state_dict()
    # "after the state was collected"
    assert seen == [0.1]
    # "A returned dictionary is what state_dict() returns"
    assert state["note"] == "saved with a hook"
    handle.remove()
    assert "note" not in optimizer.state_dict()
    assert len(seen) == 1


@check("optimizer-load-state-dict-pre-hook")
def _optimizer_load_state_dict_pre_hook(row: Row) -> None:
    _, optimizer = sgd()
    saved = optimizer.state_dict()
    optimizer.param_groups[0]["lr"] = 0.3
    seen = []

    def hook(optimizer, state_dict):
        seen.append(optimizer.param_groups[0]["lr"])
        groups = [{**group, "lr": 0.01} for group in state_dict["param_groups"]]
        return {**state_dict, "param_groups": groups}

    handle = optimizer.register_load_state_dict_pre_hook(row.hook(hook))
    optimizer.load_state_dict(saved)
    # "before anything is loaded"
    assert seen == [0.3]
    # "A returned dictionary is loaded instead"
    assert optimizer.param_groups[0]["lr"] == 0.01
    handle.remove()
    optimizer.load_state_dict(saved)
    assert optimizer.param_groups[0]["lr"] == 0.1
    assert len(seen) == 1


@check("optimizer-load-state-dict-post-hook")
def _optimizer_load_state_dict_post_hook(row: Row) -> None:
    _, optimizer = sgd()
    saved = optimizer.state_dict()
    optimizer.param_groups[0]["lr"] = 0.3
    seen = []

    def hook(optimizer):
        seen.append(optimizer.param_groups[0]["lr"])
        return {"ignored": True}

    handle = optimizer.register_load_state_dict_post_hook(row.hook(hook))
    result = optimizer.load_state_dict(saved)
    # "after the state was loaded"
    assert seen == [0.1]
    # "Ignored"
    assert result is None
    assert optimizer.param_groups[0]["lr"] == 0.1
    handle.remove()
    optimizer.load_state_dict(saved)
    assert len(seen) == 1


# -- distributed data parallel -------------------------------------------------------------------


@pytest.fixture
def process_group(tmp_path: Path) -> Iterator[None]:
    """A process group of one process (gloo, on the CPU), destroyed afterwards."""
    dist.init_process_group(
        "gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1
    )
    try:
        yield
    finally:
        dist.destroy_process_group()


@check("comm-hook")
def _comm_hook(row: Row) -> None:
    torch.manual_seed(0)
    model = nn.Linear(3, 2)
    ddp_model = nn.parallel.DistributedDataParallel(model)
    buckets = []

    def hook(state, bucket):
        buckets.append((state, bucket.buffer().clone()))
        future: torch.futures.Future[torch.Tensor] = torch.futures.Future()
        future.set_result(torch.zeros_like(bucket.buffer()))
        return future

    # "It cannot be removed": registering returns no handle
    assert ddp_model.register_comm_hook("my state", row.hook(hook)) is None
    ddp_model(torch.ones(1, 3)).sum().backward()
    # "In backward(), each time all the gradients of a bucket are ready, in place of DDP's
    # all-reduce": one bucket here, holding the local gradients (one process)
    ((state, buffer),) = buckets
    assert state == "my state"
    assert torch.equal(buffer, torch.tensor([1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]))
    # "A torch.futures.Future whose tensor becomes the bucket's gradients"
    assert model.weight.grad is not None
    assert torch.equal(model.weight.grad, torch.zeros(2, 3))
    # "a second call raises RuntimeError"
    with pytest.raises(RuntimeError, match="can only be called once"):
        ddp_model.register_comm_hook(None, hook)
