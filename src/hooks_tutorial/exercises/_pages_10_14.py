"""The checks of chapter 3, tensor hooks (pages 10 to 14): gradients, parameters, saved tensors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from ._guard import watch
from ._helpers import require_callable, returned_type
from ._language import Text
from ._registry import Problem, Values, exercise

# -- page 10: tensor hooks ----------------------------------------------------------------


def _x_grad(x_value: float, *hooks: Callable[..., Any]) -> tuple[float, list[object]]:
    """The notes' example, ``z = (x ** 2) ** 3``, with ``hooks`` on ``y``: ``x.grad`` and the
    values the hooks returned."""
    returned: list[object] = []

    def spy(hook: Callable[..., Any]) -> Callable[[torch.Tensor], Any]:
        def call(grad: torch.Tensor) -> Any:
            returned.append(hook(grad))
            return returned[-1]

        return call

    x = torch.tensor([x_value], requires_grad=True)
    y = x**2
    for hook in hooks:
        y.register_hook(spy(hook))  # type: ignore[no-untyped-call]
    (y**3).backward()  # type: ignore[no-untyped-call]
    assert x.grad is not None
    return x.grad.item(), returned


@exercise(
    "10.1",
    passed=Text(
        "With your hook on `y`, `x.grad` is {grad:g} for `x = 2` (3 * 48 * 4) and {other:g} "
        "for `x = 1` (3 * 3 * 2): the tensor your hook returned replaced the gradient at `y`, "
        "and autograd multiplied it by dy/dx on the way to `x`.",
        "把你的钩子注册在 `y` 上之后，`x = 2` 时 `x.grad` 是 {grad:g}（3 * 48 * 4），`x = 1` 时是 "
        "{other:g}（3 * 3 * 2）。你的钩子返回的张量替换了到达 `y` 的梯度，自动求导在传向 `x` "
        "的路上再把它乘以 dy/dx。",
    ),
    returned_none=Text(
        "Your hook returned None and left the gradient as it was, so `x.grad` is {grad:g}, "
        "the value without a hook. A tensor hook changes a gradient through what it returns: "
        "`return grad * 3`.",
        "你的钩子返回了 None，梯度保持原样，所以 `x.grad` 是 {grad:g}，也就是没有钩子时的值。"
        "张量钩子通过返回值来改变梯度：`return grad * 3`。",
    ),
    wrong_factor=Text(
        "With your hook on `y`, `x.grad` is {grad:g} for `x = 2`; tripling the gradient that "
        "arrives at `y` (48) gives 144, and autograd multiplies that by dy/dx = 4: 576.",
        "把你的钩子注册在 `y` 上之后，`x = 2` 时 `x.grad` 是 {grad:g}；把到达 `y` 的梯度（48）"
        "乘以 3 得到 144，自动求导再把它乘以 dy/dx = 4，应为 576。",
    ),
)
def _triple(answer: object) -> Values:
    triple = require_callable(answer)
    grads = {}
    for x_value, expected in ((2.0, 576.0), (1.0, 18.0)):
        grad, returned = _x_grad(x_value, triple)
        # exact: small powers of 2 and 3 times small integers are exact in float32
        if grad != expected:
            plain = expected / 3
            if returned and returned[0] is None and grad == plain:
                raise Problem("returned_none", grad=grad)
            raise Problem("wrong_factor", grad=grad)
        grads[x_value] = grad
    return {"grad": grads[2.0], "other": grads[1.0]}


@exercise(
    "10.2",
    passed=Text(
        "Halving first gives `x.grad` = {halve_first:g}, (48 / 2 + 1) * 4; adding 1 first "
        "gives {add_first:g}, (48 + 1) / 2 * 4. So the order matters: the hooks of one tensor "
        "run in the order they were registered, each on what the one before returned.",
        "先减半，`x.grad` = {halve_first:g}，即 (48 / 2 + 1) * 4；先加 1，得到 {add_first:g}，即 "
        "(48 + 1) / 2 * 4。所以顺序有影响，同一个张量上的钩子按注册顺序运行，"
        "每个钩子处理的都是前一个钩子返回的值。",
    ),
    not_a_pair=Text(
        "The check needs your two hooks as a pair, `(halve, add_one)`; it got a `{got}`.",
        "检查需要你的两个钩子组成的一对，`(halve, add_one)`；它得到的是一个 `{got}`。",
    ),
    returned_none=Text(
        "`{name}` returned None, so it did not change the gradient: a tensor hook changes a "
        "gradient through what it returns (`return grad / 2`, `return grad + 1`).",
        "`{name}` 返回了 None，所以它没有改变梯度，张量钩子通过返回值来改变梯度"
        "（`return grad / 2`、`return grad + 1`）。",
    ),
    wrong_halve=Text(
        "Alone on `y`, `halve` gives `x.grad` = {grad:g}; the gradient arriving at `y` is 48, "
        "so halving it gives 24, and autograd multiplies that by dy/dx = 4: 96.",
        "单独注册在 `y` 上时，`halve` 使 `x.grad` = {grad:g}；到达 `y` 的梯度是 48，减半得 24，"
        "自动求导再把它乘以 dy/dx = 4，应为 96。",
    ),
    wrong_add_one=Text(
        "Alone on `y`, `add_one` gives `x.grad` = {grad:g}; the gradient arriving at `y` is 48, "
        "so adding 1 gives 49, and autograd multiplies that by dy/dx = 4: 196.",
        "单独注册在 `y` 上时，`add_one` 使 `x.grad` = {grad:g}；到达 `y` 的梯度是 48，加 1 得 49，"
        "自动求导再把它乘以 dy/dx = 4，应为 196。",
    ),
)
def _two_hooks(answer: object) -> Values:
    if not (isinstance(answer, (tuple, list)) and len(answer) == 2):
        raise Problem("not_a_pair", got=type(answer).__name__)
    halve, add_one = (require_callable(hook) for hook in answer)
    # exact: halves and small integers are exact in float32
    cases = ((halve, "halve", 96.0, "wrong_halve"), (add_one, "add_one", 196.0, "wrong_add_one"))
    for hook, name, expected, problem in cases:
        grad, returned = _x_grad(2.0, hook)
        if returned and returned[0] is None and grad == 192.0:
            raise Problem("returned_none", name=name)
        if grad != expected:
            raise Problem(problem, grad=grad)
    halve_first = _x_grad(2.0, halve, add_one)[0]
    add_first = _x_grad(2.0, add_one, halve)[0]
    assert (halve_first, add_first) == (100.0, 98.0)  # each hook is right on its own
    return {"halve_first": halve_first, "add_first": add_first}


@exercise(
    "10.3",
    passed=Text(
        "On the check's own model and inputs, your function returned the gradient with "
        "respect to the output of `model[0]`: it is zero exactly where the ReLU's output is zero ({inactive} of {total} entries), "
        "and equal to the gradient after the ReLU everywhere else.",
        "在检查自己的模型和输入上，你的函数返回的是关于 `model[0]` 输出的梯度，它恰好在 ReLU 输出为零的地方为零"
        "（{total} 个元素中的 {inactive} 个），其他地方都等于 ReLU 之后的梯度。",
    ),
    not_a_tensor=Text(
        "`pre_relu_gradient(model, inputs)` returned a `{got}`; it should return one tensor, "
        "the gradient with respect to the output of `model[0]`, of shape {shape}.",
        "`pre_relu_gradient(model, inputs)` 返回了一个 `{got}`；它应当返回一个张量，"
        "即关于 `model[0]` 输出的梯度，形状为 {shape}。",
    ),
    after_relu=Text(
        "Your function returned the gradient after the ReLU: it is not zero where the ReLU's "
        "output is zero. Register the forward hook on `model[0]`, and the tensor hook on its "
        "`output`: the ReLU's backward then has set those entries to zero.",
        "你的函数返回的是 ReLU 之后的梯度，在 ReLU 输出为零的地方它不为零。请把前向钩子注册在 "
        "`model[0]` 上，再在它的 `output` 上注册张量钩子，这时 ReLU 的反向传播已把那些元素置零。",
    ),
    wrong_gradient=Text(
        "`pre_relu_gradient(model, inputs)` returned a tensor that is not the gradient of "
        "`model(inputs).sum()` with respect to the output of `model[0]` (largest difference "
        "{difference:.3g}): keep the `grad` that the tensor hook on that output receives.",
        "`pre_relu_gradient(model, inputs)` 返回的张量不是 `model(inputs).sum()` 关于 "
        "`model[0]` 输出的梯度（最大相差 {difference:.3g}），请保存该输出上的张量钩子收到的 `grad`。",
    ),
)
def _pre_relu_gradient(answer: object) -> Values:
    pre_relu_gradient = require_callable(answer)
    model = watch(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)))
    inputs = torch.randn(6, 4)
    before = model[0](inputs)
    after = model[1](before)
    expected, expected_after = torch.autograd.grad(model[2](after).sum(), (before, after))
    returned = pre_relu_gradient(model, inputs)
    if not isinstance(returned, torch.Tensor) or returned.shape != expected.shape:
        kind = returned_type(returned)
        if isinstance(returned, torch.Tensor):
            kind = f"Tensor of shape {tuple(returned.shape)}"
        raise Problem("not_a_tensor", got=kind, shape=tuple(expected.shape))
    got = returned.detach()
    # allclose: the check's own backward pass may sum in another order than the learner's
    if torch.allclose(got, expected_after) and not torch.allclose(got, expected):
        raise Problem("after_relu")
    if not torch.allclose(got, expected):
        raise Problem("wrong_gradient", difference=(got - expected).abs().max().item())
    inactive = int((after == 0).sum())
    assert 0 < inactive < after.numel()  # the seeded case has both kinds of entries
    return {"inactive": inactive, "total": after.numel()}
