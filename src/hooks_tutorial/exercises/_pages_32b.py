"""The checks of page 32b, hooks at the level of operations (chapter 6).

Exercise 1 counts an operation with a ``TorchDispatchMode``; exercise 2 writes a
global parameter registration hook. Exercise 3 asks why: it is answered in words.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch._C import _len_torch_dispatch_stack
from torch.nn.modules.module import register_module_parameter_registration_hook
from torch.utils._python_dispatch import _get_current_dispatch_mode

from ._helpers import require_callable, returned_type
from ._language import Text
from ._registry import Problem, Values, exercise, prose

prose("32b.3")


class _ThreeRelus(nn.Module):
    """ReLU three ways: a module, ``torch.relu`` and ``torch.nn.functional.relu``."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.act = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.act(self.fc(x))
        h = torch.relu(self.fc(h))
        return nn.functional.relu(self.fc(h))


class _OneRelu(nn.Module):
    """A single ``torch.relu``, in the forward method, with no ReLU module at all."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x))


def _modes_left(before: int) -> int:
    """Pop the dispatch modes that an answer entered and never left; return how many."""
    left = 0
    while _len_torch_dispatch_stack() > before:
        # leave it as `with` would: popping it bare crashes torch 2.9 at exit
        mode: Any = _get_current_dispatch_mode()
        mode.__exit__(None, None, None)
        left += 1
    return left


@exercise(
    "32b.1",
    passed=Text(
        "Your dispatch mode counted {counts} calls of `aten.relu` in the two models' forward "
        "passes: the ReLU module and the `torch.relu` and `F.relu` calls in `forward` alike, "
        "because every one of them ends in the same operation.",
        "你的分派模式在两个模型的前向传播中数到 {counts} 次 `aten.relu` 调用。ReLU 模块以及 "
        "`forward` 里的 `torch.relu` 和 `F.relu` 调用都被数到了，因为它们最终都是同一个运算。",
    ),
    module_hooks_only=Text(
        "Your function counted {counts} instead of {expected}: it sees only the `nn.ReLU` "
        "modules. `torch.relu` called inside `forward` is not a module, so no module hook "
        "fires for it; a `TorchDispatchMode` sees the `aten.relu` operation whoever calls it.",
        "你的函数数到 {counts}，而不是 {expected}。它只看到了 `nn.ReLU` 模块。"
        "在 `forward` 里调用的 `torch.relu` 不是模块，不会触发任何模块钩子；"
        "而 `TorchDispatchMode` 无论谁调用都能看到 `aten.relu` 运算。",
    ),
    wrong_count=Text(
        "Your function counted {counts} instead of {expected}. Count only the calls whose "
        "`func` is `torch.ops.aten.relu.default` (or whose `func.overloadpacket` is "
        "`torch.ops.aten.relu`), during `model(x)` only.",
        "你的函数数到 {counts}，而不是 {expected}。只数 `func` 为 "
        "`torch.ops.aten.relu.default`（或 `func.overloadpacket` 为 `torch.ops.aten.relu`）"
        "的调用，并且只在 `model(x)` 期间计数。",
    ),
    not_an_int=Text(
        "Your function returned a `{returned}`; it should return the number of `aten.relu` "
        "calls, an `int`.",
        "你的函数返回了一个 `{returned}`，它应当返回 `aten.relu` 的调用次数，即一个 `int`。",
    ),
    mode_left=Text(
        "Your function left {left} dispatch mode(s) active after it returned, so every later "
        "operation in the notebook would still go through it (the check removed it). Enter "
        "the mode with `with`, which leaves it even when the model raises.",
        "你的函数返回后仍有 {left} 个分派模式处于激活状态，之后笔记本里的每个运算都会经过它"
        "（检查已把它移除）。请用 `with` 进入模式，这样即使模型抛出异常也会退出。",
    ),
)
def _count_relus(answer: object) -> Values:
    count_relus = require_callable(answer)
    torch.manual_seed(0)
    cases = [(_ThreeRelus(), 3), (_OneRelu(), 1)]
    counts: list[object] = []
    for model, _ in cases:
        before = _len_torch_dispatch_stack()
        try:
            counts.append(count_relus(model, torch.randn(2, 4)))
        finally:
            left = _modes_left(before)
        if left:
            raise Problem("mode_left", left=left)
    expected = [n for _, n in cases]
    for count in counts:
        if not isinstance(count, int) or isinstance(count, bool):
            raise Problem("not_an_int", returned=returned_type(count))
    if counts == [1, 0]:  # one nn.ReLU module, none in the second model
        raise Problem("module_hooks_only", counts=counts, expected=expected)
    if counts != expected:
        raise Problem("wrong_count", counts=counts, expected=expected)
    return {"counts": counts}


@exercise(
    "32b.2",
    passed=Text(
        "With your hook registered, every parameter of a new `nn.Linear` and `nn.LayerNorm` "
        "is a float64 `nn.Parameter` and a leaf: the model trains in double precision "
        "without a single `.double()` in its code.",
        "注册了你的钩子之后，新建的 `nn.Linear` 和 `nn.LayerNorm` 的每个参数都是 float64 的 "
        "`nn.Parameter`，并且是叶子张量。模型的代码里没有一个 `.double()`，却以双精度训练。",
    ),
    returned_none=Text(
        "Your hook returned None, so the parameters stayed {dtype}: a registration hook "
        "replaces the parameter only through what it returns, "
        "`nn.Parameter(param.to(torch.float64))`.",
        "你的钩子返回了 None，所以参数仍是 {dtype}。注册钩子只能通过返回值替换参数："
        "`nn.Parameter(param.to(torch.float64))`。",
    ),
    not_a_parameter=Text(
        "Your hook returned a `{returned}`, not an `nn.Parameter`: the module stored it as "
        "it is, a tensor computed from the parameter (not a leaf), so an optimizer refuses "
        "it. Wrap it: `nn.Parameter(param.to(torch.float64))`.",
        "你的钩子返回了一个 `{returned}`，而不是 `nn.Parameter`。模块原样保存了它，"
        "这是一个由参数计算出的张量（不是叶子张量），优化器会拒绝它。请包装一下："
        "`nn.Parameter(param.to(torch.float64))`。",
    ),
    wrong_dtype=Text(
        "With your hook the parameters are {dtype}, not float64: convert with "
        "`param.to(torch.float64)`.",
        "有了你的钩子，参数是 {dtype}，而不是 float64，请用 `param.to(torch.float64)` 转换。",
    ),
)
def _to_double(answer: object) -> Values:
    to_double = require_callable(answer)
    handle = register_module_parameter_registration_hook(to_double)
    try:
        model: Any = nn.Sequential(nn.Linear(3, 2), nn.LayerNorm(2))
    finally:
        handle.remove()
    parameters = [model[0].weight, model[0].bias, model[1].weight, model[1].bias]
    for parameter in parameters:
        if not isinstance(parameter, nn.Parameter):
            raise Problem("not_a_parameter", returned=returned_type(parameter))
    dtypes = {parameter.dtype for parameter in parameters}
    if dtypes == {torch.float32}:
        raise Problem("returned_none", dtype="float32")
    if dtypes != {torch.float64}:
        raise Problem("wrong_dtype", dtype=", ".join(sorted(str(d) for d in dtypes)))
    return {}
