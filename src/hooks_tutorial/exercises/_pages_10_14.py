"""The checks of chapter 3, tensor hooks (pages 10 to 14): gradients, parameters, saved tensors."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.autograd.graph import saved_tensors_hooks

from ..gradtools import clip_gradients
from ._guard import watch
from ._helpers import require_callable, returned_type
from ._language import Text
from ._registry import Problem, Values, exercise, prose

prose("11.2", "12.3", "13.2", "14.2", "14.3")

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


# -- page 11: parameter hooks -------------------------------------------------------------


class _TwoScales(nn.Module):
    """Page 11's ``TwoScales``: ``large`` sees its input scaled by 100, so its gradient is big."""

    def __init__(self) -> None:
        super().__init__()
        self.small = nn.Linear(4, 4)
        self.large = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.small(x) + self.large(100 * x)
        return out


@exercise(
    "11.1",
    passed=Text(
        "With your hook on every parameter, each gradient entry was clipped to [-0.5, 0.5] "
        "on its own (the largest entry was {largest:.1f} before), and the gradients equal "
        "those of `ht.clip_gradients(model, max_value=0.5)`. The hook changed `param.grad` "
        "in place, after autograd had accumulated it.",
        "在每个参数上注册你的钩子后，梯度的每个元素都被单独裁剪到 [-0.5, 0.5]（裁剪前最大的元素是 "
        "{largest:.1f}），得到的梯度与 `ht.clip_gradients(model, max_value=0.5)` 的相同。"
        "钩子在自动求导累加完梯度之后，原地修改了 `param.grad`。",
    ),
    returned_clipped=Text(
        "The gradients did not change: your hook returned the clipped gradient, and a "
        "post-accumulate hook's return value is ignored (it receives the parameter, not the "
        "gradient). Change the gradient in place: `param.grad.clamp_(-0.5, 0.5)`.",
        "梯度没有变化，你的钩子返回了裁剪后的梯度，而累加后钩子的返回值会被忽略（它收到的是参数，"
        "不是梯度）。请原地修改梯度：`param.grad.clamp_(-0.5, 0.5)`。",
    ),
    unchanged=Text(
        "The gradients did not change (the largest entry is still {largest:.1f}): clip "
        "`param.grad` in place, `param.grad.clamp_(-0.5, 0.5)`.",
        "梯度没有变化（最大的元素仍是 {largest:.1f}），请原地裁剪 `param.grad`："
        "`param.grad.clamp_(-0.5, 0.5)`。",
    ),
    norm_clipped=Text(
        "Your hook scaled each gradient down to a norm of at most 0.5: that is clipping by "
        "norm, which keeps a gradient's direction. The exercise clips each element on its "
        "own, `param.grad.clamp_(-0.5, 0.5)`, which can change the direction.",
        "你的钩子把每个梯度按比例缩小到范数不超过 0.5，这是按范数裁剪，它保持梯度的方向。"
        "练习要求逐元素裁剪，`param.grad.clamp_(-0.5, 0.5)`，这可能改变方向。",
    ),
    wrong_values=Text(
        "After your hook, the gradient of `{name}` is not its entries clipped to [-0.5, 0.5] "
        "(largest difference {difference:.3g}): clip with `param.grad.clamp_(-0.5, 0.5)`.",
        "经过你的钩子之后，`{name}` 的梯度不是其元素裁剪到 [-0.5, 0.5] 的结果（最大相差 "
        "{difference:.3g}），请用 `param.grad.clamp_(-0.5, 0.5)` 裁剪。",
    ),
)
def _clamp_elements(answer: object) -> Values:
    clamp_elements = require_callable(answer)
    model = watch(_TwoScales())
    inputs, targets = torch.randn(8, 4), torch.randn(8, 4)

    def backward() -> dict[str, torch.Tensor]:
        model.zero_grad(set_to_none=True)
        nn.functional.mse_loss(model(inputs), targets).backward()  # type: ignore[no-untyped-call]
        return {
            n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None
        }

    plain = backward()
    returned: list[object] = []

    def spy(param: torch.Tensor) -> None:
        returned.append(clamp_elements(param))

    handles = [
        p.register_post_accumulate_grad_hook(spy)  # type: ignore[no-untyped-call]
        for p in model.parameters()
    ]
    try:
        got = backward()
    finally:
        for handle in handles:
            handle.remove()
    with clip_gradients(model, max_value=0.5):
        library = backward()
    largest = max(g.abs().max().item() for g in plain.values())
    assert largest > 0.5  # the check's case needs clipping
    if all(torch.equal(got[n], plain[n]) for n in plain):
        if any(r is not None for r in returned):
            raise Problem("returned_clipped")
        raise Problem("unchanged", largest=largest)
    for name, grad in plain.items():
        expected = grad.clamp(-0.5, 0.5)
        if torch.equal(got[name], expected):  # exact: clamp only copies or replaces values
            continue
        # a scaled copy of the gradient with a norm of at most 0.5 (1e-4: float32 rounding)
        scaled = [
            got[n].norm() <= 0.5 + 1e-4
            and nn.functional.cosine_similarity(got[n].flatten(), g.flatten(), dim=0) > 1 - 1e-4
            for n, g in plain.items()
        ]
        if all(scaled):
            raise Problem("norm_clipped")
        raise Problem(
            "wrong_values", name=name, difference=(got[name] - expected).abs().max().item()
        )
    assert all(torch.equal(got[n], library[n]) for n in got)
    return {"largest": largest}


@exercise(
    "11.3",
    passed=Text(
        "In 30 steps of an SGD optimizer with two parameter groups, your pre-hook halved "
        "both learning rates at steps 10, 20 and 30, and each of those steps already used the new "
        "rate: a step pre-hook runs before its step.",
        "在一个有两个参数组的 SGD 优化器的 30 步中，你的预钩子在第 10、20 和 30 步把两个学习率都减半了，"
        "而且这几步用的已经是新的学习率，因为 step 预钩子在它的那一步之前运行。",
    ),
    never_halved=Text(
        "In 30 steps, your pre-hook never changed the learning rate: divide "
        '`group["lr"]` by 2 for every group of `optimizer.param_groups`, at every 10th call.',
        "在 30 步中，你的预钩子一次也没有改变学习率，请在每第 10 次调用时，把 "
        '`optimizer.param_groups` 中每个参数组的 `group["lr"]` 除以 2。',
    ),
    one_group=Text(
        "Your pre-hook halved the learning rate of the first parameter group only; the "
        "second kept `lr={lr:g}`. An optimizer may have several groups: halve "
        '`group["lr"]` in a loop over `optimizer.param_groups`.',
        "你的预钩子只把第一个参数组的学习率减半了，第二个仍是 `lr={lr:g}`。一个优化器可以有多个"
        '参数组，请遍历 `optimizer.param_groups`，把每个 `group["lr"]` 减半。',
    ),
    wrong_steps=Text(
        "Steps 1, 10, 20 and 30 of the check's fresh optimizer used the rates {rates}; "
        "halving every 10 steps gives 0.1, 0.05, 0.025 and 0.0125: the first "
        "halving belongs in the pre-hook of step 10. If your counter lives outside the hook "
        "(a global, a function attribute), it may still hold the count of an earlier run: "
        "make its count a multiple of 10 again, or count each optimizer's steps on their own.",
        "检查新建的优化器在第 1、10、20 和 30 步用的学习率是 {rates}；每 10 步减半应为 0.1、0.05、0.025、0.0125，第一次减半应在第 10 步的预钩子中进行。如果你的计数器"
        "放在钩子之外（全局变量、函数属性），它可能还保留着之前运行的计数，请让它重新成为 10 的"
        "倍数，或者为每个优化器分别计数。",
    ),
)
def _halve_every_10(answer: object) -> Values:
    halve_every_10 = require_callable(answer)
    first, second = nn.Parameter(torch.zeros(1)), nn.Parameter(torch.zeros(1))
    groups: list[dict[str, Any]] = [{"params": [first]}, {"params": [second], "lr": 0.01}]
    optimizer = torch.optim.SGD(groups, lr=0.1)
    used: list[tuple[float, float]] = []
    with optimizer.register_step_pre_hook(halve_every_10):
        for _ in range(30):
            for p in (first, second):
                p.grad = torch.ones(1)
            optimizer.step()
            # what this step used: a pre-hook changes the rate before the step reads it
            used.append((optimizer.param_groups[0]["lr"], optimizer.param_groups[1]["lr"]))
    expected = [0.1 * 0.5 ** (step // 10) for step in range(1, 31)]
    firsts = [lr for lr, _ in used]
    # isclose: 0.1 halved three times may be computed as 0.1 * 0.125 or as three divisions
    if all(math.isclose(lr, 0.1) for lr in firsts):
        raise Problem("never_halved")
    if not all(math.isclose(a, b) for a, b in zip(firsts, expected, strict=True)):
        rates = [firsts[i] for i in (0, 9, 19, 29)]
        raise Problem("wrong_steps", rates=[float(f"{r:.4g}") for r in rates])
    if not all(math.isclose(b, a / 10) for a, b in used):
        raise Problem("one_group", lr=used[-1][1])
    return {}


# -- page 12: saved-tensor hooks ----------------------------------------------------------


def _small_classifier() -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    """Page 12's kind of model, small: two linear layers with a ReLU, a batch and its labels."""
    model = watch(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)))
    return model, torch.randn(8, 16), torch.randint(0, 4, (8,))


def _gradients(
    model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor, hooks: saved_tensors_hooks
) -> list[torch.Tensor]:
    """One forward and backward pass with ``hooks`` around the forward pass; the gradients."""
    model.zero_grad(set_to_none=True)
    with hooks:
        loss = nn.functional.cross_entropy(model(inputs), targets)
    loss.backward()  # type: ignore[no-untyped-call]
    return [p.grad.detach().clone() for p in model.parameters() if p.grad is not None]


@exercise(
    "12.1",
    passed=Text(
        "For one training step of a small two-layer model your function counted "
        "`{counts}`, as many pack calls as unpack calls: the backward pass unpacks every "
        "tensor that the graph saved, once.",
        "对一个两层小模型的一个训练步，你的函数数出了 `{counts}`，pack 和 unpack 的调用次数相同，"
        "因为反向传播会把计算图保存的每个张量解包一次。",
    ),
    not_counts=Text(
        "`count_pack_unpack(model, inputs, targets)` returned `{returned}`; it should return "
        'a dictionary `{{"pack": ..., "unpack": ...}}`.',
        "`count_pack_unpack(model, inputs, targets)` 返回了 `{returned}`；它应当返回一个字典 "
        '`{{"pack": ..., "unpack": ...}}`。',
    ),
    no_backward=Text(
        "Your function counted `{counts}`: no unpack call. Unpack hooks run when the backward "
        "pass needs a saved tensor: call `loss.backward()` (it may be outside the `with` "
        "block; the hooks stay with the tensors they packed).",
        "你的函数数出了 `{counts}`，没有一次 unpack 调用。unpack 钩子在反向传播需要已保存张量时才运行，"
        "请调用 `loss.backward()`（它可以在 `with` 块之外，钩子会跟随它们打包的张量）。",
    ),
    loss_outside=Text(
        "Your function counted `{counts}`; one training step saves {expected} tensors. The "
        "loss saves tensors too: compute `cross_entropy(model(inputs), targets)` inside the "
        "`with` block.",
        "你的函数数出了 `{counts}`；一个训练步会保存 {expected} 个张量。损失函数也会保存张量，"
        "请在 `with` 块中计算 `cross_entropy(model(inputs), targets)`。",
    ),
    wrong_counts=Text(
        "Your function counted `{counts}`; one training step of the check's model, with "
        "`cross_entropy` as the loss, calls pack and unpack {expected} times each.",
        "你的函数数出了 `{counts}`；检查所用模型的一个训练步（损失为 `cross_entropy`），"
        "pack 和 unpack 各被调用 {expected} 次。",
    ),
)
def _count_pack_unpack(answer: object) -> Values:
    count_pack_unpack = require_callable(answer)
    model, inputs, targets = _small_classifier()
    expected = {"pack": 0, "unpack": 0}
    in_model = {"pack": 0}

    def count(kind: str, counts: dict[str, int]) -> Callable[[Any], Any]:
        def hook(tensor: Any) -> Any:
            counts[kind] += 1
            return tensor

        return hook

    with saved_tensors_hooks(count("pack", expected), count("unpack", expected)):
        loss = nn.functional.cross_entropy(model(inputs), targets)
    loss.backward()  # type: ignore[no-untyped-call]
    with saved_tensors_hooks(count("pack", in_model), lambda t: t):
        model(inputs)
    assert expected["pack"] == expected["unpack"] > in_model["pack"]
    counts = count_pack_unpack(model, inputs, targets)
    if not isinstance(counts, dict) or set(counts) != {"pack", "unpack"}:
        raise Problem("not_counts", returned=repr(counts))
    shown: dict[str, object] = {"counts": counts, "expected": expected["pack"]}
    if counts == expected:
        return shown
    if counts["unpack"] == 0:
        raise Problem("no_backward", **shown)
    if counts == {"pack": in_model["pack"], "unpack": in_model["pack"]}:
        raise Problem("loss_outside", **shown)
    raise Problem("wrong_counts", **shown)


@exercise(
    "12.2",
    passed=Text(
        "Your hooks store a float32 tensor as bfloat16 and give it back as float32, rounded "
        "to bfloat16's 8 significant bits. On a small model the gradients' relative error is "
        "{error:.1e} with bfloat16 and {float16:.1e} with float16: bfloat16 keeps float32's "
        "range but rounds to steps 8 times coarser.",
        "你的钩子把 float32 张量存成 bfloat16，取回时又还原为 float32，数值按 bfloat16 的 8 位"
        "有效位舍入。在一个小模型上，梯度的相对误差用 bfloat16 时是 {error:.1e}，用 float16 时是 "
        "{float16:.1e}。bfloat16 保留了 float32 的数值范围，但舍入的步长粗 8 倍。",
    ),
    not_hooks=Text(
        "`low_precision_hooks(torch.bfloat16)` returned a `{got}`; it should return the "
        "pack and unpack hooks as `torch.autograd.graph.saved_tensors_hooks(pack, unpack)`, "
        "to be used in a `with` block.",
        "`low_precision_hooks(torch.bfloat16)` 返回了一个 `{got}`；它应当以 "
        "`torch.autograd.graph.saved_tensors_hooks(pack, unpack)` 的形式返回 pack 和 unpack 钩子，"
        "以便在 `with` 块中使用。",
    ),
    unpacked_dtype=Text(
        "Your unpack hook gave back a {got} tensor for a saved float32 tensor: autograd "
        "needs the saved tensor back as it was saved, in float32. Convert it back in "
        "`unpack` (`tensor.to(torch.float32)`, or to the dtype that `pack` stored with it).",
        "对一个 float32 的已保存张量，你的 unpack 钩子返回了 {got} 张量。自动求导需要按保存时的样子取回"
        "已保存张量，也就是 float32。请在 `unpack` 中把它转换回去（`tensor.to(torch.float32)`，"
        "或转换为 `pack` 与它一起保存的 dtype）。",
    ),
    not_compressed=Text(
        "With `low_precision_hooks(torch.bfloat16)`, a saved float32 tensor came back with "
        "every value unchanged: it was stored in float32. Store `tensor.to(dtype)` in `pack`.",
        "使用 `low_precision_hooks(torch.bfloat16)` 时，一个 float32 的已保存张量取回后每个值都"
        "没有变化，说明它是以 float32 保存的。请在 `pack` 中保存 `tensor.to(dtype)`。",
    ),
    ignored_dtype=Text(
        "With `low_precision_hooks(torch.bfloat16)`, a saved tensor came back rounded to "
        "float16, not bfloat16: use the `dtype` argument in `pack`, `tensor.to(dtype)`.",
        "使用 `low_precision_hooks(torch.bfloat16)` 时，已保存张量取回后是按 float16 而不是 "
        "bfloat16 舍入的，请在 `pack` 中使用参数 `dtype`：`tensor.to(dtype)`。",
    ),
    wrong_values=Text(
        "With `low_precision_hooks(torch.bfloat16)`, a saved tensor came back with values "
        "other than the tensor rounded to bfloat16 (largest difference {difference:.3g}): "
        "store `tensor.to(dtype)` in `pack`, and return it `.to(torch.float32)` in `unpack`.",
        "使用 `low_precision_hooks(torch.bfloat16)` 时，已保存张量取回后的值不等于该张量按 "
        "bfloat16 舍入的结果（最大相差 {difference:.3g}），请在 `pack` 中保存 `tensor.to(dtype)`，"
        "在 `unpack` 中返回它的 `.to(torch.float32)`。",
    ),
)
def _low_precision_hooks(answer: object) -> Values:
    low_precision_hooks = require_callable(answer)
    hooks = low_precision_hooks(torch.bfloat16)
    if not isinstance(hooks, saved_tensors_hooks):
        raise Problem("not_hooks", got=type(hooks).__name__)
    saved = torch.randn(1000)
    back: object = hooks.unpack_hook(hooks.pack_hook(saved))  # the learner's: anything
    if not isinstance(back, torch.Tensor) or back.dtype != torch.float32:
        got = back.dtype if isinstance(back, torch.Tensor) else type(back).__name__
        raise Problem("unpacked_dtype", got=str(got).removeprefix("torch."))
    # exact: a conversion to another dtype and back rounds each value the same on any machine
    if torch.equal(back, saved):
        raise Problem("not_compressed")
    if torch.equal(back, saved.half().float()):
        raise Problem("ignored_dtype")
    expected = saved.to(torch.bfloat16).float()
    if back.shape != saved.shape or not torch.equal(back, expected):
        difference = (back - expected).abs().max().item() if back.shape == saved.shape else 0
        raise Problem("wrong_values", difference=difference)
    model, inputs, targets = _small_classifier()
    exact = _gradients(model, inputs, targets, saved_tensors_hooks(lambda t: t, lambda t: t))

    def error(dtype: torch.dtype) -> float:
        approx = _gradients(model, inputs, targets, low_precision_hooks(dtype))
        return max(float((a - e).norm() / e.norm()) for a, e in zip(approx, exact, strict=True))

    return {"error": error(torch.bfloat16), "float16": error(torch.float16)}


# -- page 13: debugging with hooks --------------------------------------------------------


@exercise(
    "13.1",
    passed=Text(
        "`SafeLog` gives `log(|x| + 1e-6)`, finite for negative inputs and for zero, and in "
        "the page's first model with `SafeLog` in place of its `log` no module's forward hook "
        "reported a non-finite value: the NaN search finds nothing.",
        "`SafeLog` 计算 `log(|x| + 1e-6)`，对负数和零也是有限值。把本页第一个模型中的 `log` "
        "换成 `SafeLog` 之后，没有一个模块的前向钩子报告非有限值，NaN 查找什么也没找到。",
    ),
    not_a_module=Text(
        "`SafeLog()` made a `{got}`, not a module: write a class, `class SafeLog(nn.Module)`, "
        "with a `forward(self, x)` method, and pass the class itself to the check.",
        "`SafeLog()` 生成的是一个 `{got}`，而不是模块，请写一个类 `class SafeLog(nn.Module)`，"
        "带有 `forward(self, x)` 方法，并把这个类本身传给检查。",
    ),
    still_nan=Text(
        "On inputs with negative values, `SafeLog` still gives {nan} NaN values: the logarithm "
        "of a negative number is NaN. Take the absolute value first, `x.abs()`.",
        "对含有负值的输入，`SafeLog` 仍然给出 {nan} 个 NaN，负数的对数是 NaN。请先取绝对值 `x.abs()`。",
    ),
    inf_at_zero=Text(
        "`SafeLog` is finite for negative inputs but gives -inf where the input is 0: "
        "`log(0)` is -inf. Add the small constant before the logarithm, "
        "`torch.log(x.abs() + 1e-6)`.",
        "`SafeLog` 对负数输入是有限值，但在输入为 0 的地方给出 -inf，因为 `log(0)` 是 -inf。"
        "请在取对数之前加上一个小常数：`torch.log(x.abs() + 1e-6)`。",
    ),
    wrong_values=Text(
        "`SafeLog` is finite, but its output is not `torch.log(x.abs() + 1e-6)` (largest "
        "difference {difference:.3g}).",
        "`SafeLog` 的输出是有限值，但不等于 `torch.log(x.abs() + 1e-6)`（最大相差 {difference:.3g}）。",
    ),
)
def _safe_log(answer: object) -> Values:
    made = answer if isinstance(answer, nn.Module) else require_callable(answer)()
    if not isinstance(made, nn.Module):
        raise Problem("not_a_module", got=type(made).__name__)
    safe_log = watch(made)
    x = torch.tensor([[-2.0, -0.5, 0.0, 0.5, 2.0]])
    out = safe_log(x).detach()
    nan = int(out.isnan().sum())
    if nan:
        raise Problem("still_nan", nan=nan)
    if not bool(torch.isfinite(out).all()):
        raise Problem("inf_at_zero")
    expected = torch.log(x.abs() + 1e-6)
    # allclose: an equivalent formula (log1p, another order) may round differently
    if out.shape != expected.shape or not torch.allclose(out, expected):
        difference = (out - expected).abs().max().item() if out.shape == expected.shape else 0
        raise Problem("wrong_values", difference=difference)
    model = watch(nn.Sequential(nn.Linear(8, 16), nn.Tanh(), safe_log, nn.Linear(16, 4)))
    reports: list[str] = []

    def check_output(module: nn.Module, args: object, output: torch.Tensor) -> None:
        if not bool(torch.isfinite(output).all()):
            reports.append(type(module).__name__)

    handles = [m.register_forward_hook(check_output) for m in model]
    try:
        model(torch.randn(5, 8))
    finally:
        for handle in handles:
            handle.remove()
    assert not reports, reports  # SafeLog is finite, and the layers after it keep it so
    return {}


def _dead_units_model() -> nn.Sequential:
    """Two ReLU layers of 6 units; a bias of -100 kills units 0 to 2 of the second.

    Units 3 to 5 get a bias of +100, which keeps them alive for any input of the check.
    """
    second = nn.Linear(6, 6)
    with torch.no_grad():
        second.bias[:3] = -100.0
        second.bias[3:] = 100.0
    return nn.Sequential(nn.Linear(4, 6), nn.ReLU(), second, nn.ReLU(), nn.Linear(6, 1))


@exercise(
    "13.3",
    passed=Text(
        "On the check's model, whose second hidden layer has 3 of its 6 units pushed below "
        "zero by a bias of -100, your function found the dead fractions `{found}`: a unit is "
        "dead when its output is zero for every input of the batch.",
        "在检查用的模型上（其第二个隐藏层 6 个单元中的 3 个被 -100 的偏置压到零以下），你的函数"
        "得到的死亡比例是 `{found}`。一个单元对批次中的每个输入输出都为零时，它才是死亡的。",
    ),
    not_fractions=Text(
        "`dead_units(model, inputs)` returned `{returned}`; it should return one fraction per "
        "ReLU of the model ({count} here), as a dictionary from a name to the fraction.",
        "`dead_units(model, inputs)` 返回了 `{returned}`；它应当为模型的每个 ReLU（这里有 "
        "{count} 个）返回一个比例，形式是从名字到比例的字典。",
    ),
    zero_fraction=Text(
        "Your function returned `{found}`, the fraction of outputs that are zero; a unit is "
        "dead only when it is zero for every input: `(output == 0).all(dim=0).float().mean()`.",
        "你的函数返回了 `{found}`，也就是输出为零的比例；一个单元只有对每个输入都为零时才是死亡的："
        "`(output == 0).all(dim=0).float().mean()`。",
    ),
    wrong_fractions=Text(
        "Your function returned `{found}`; the dead fractions of the check's model are "
        "`{expected}` (the second ReLU has 3 of 6 units dead): count the units whose output "
        "is zero for every input, `(output == 0).all(dim=0)`.",
        "你的函数返回了 `{found}`；检查用的模型的死亡比例是 `{expected}`（第二个 ReLU 的 6 个单元中"
        "有 3 个死亡），请统计对每个输入输出都为零的单元：`(output == 0).all(dim=0)`。",
    ),
)
def _dead_units(answer: object) -> Values:
    dead_units = require_callable(answer)
    model = watch(_dead_units_model())
    inputs = torch.randn(64, 4)
    relus = [m for m in model if isinstance(m, nn.ReLU)]
    with torch.no_grad():
        outputs = [model[1](model[0](inputs))]
        outputs.append(model[3](model[2](outputs[0])))
    expected = [(o == 0).all(dim=0).float().mean().item() for o in outputs]
    zeros = [(o == 0).float().mean().item() for o in outputs]
    assert expected[1] == 0.5  # the -100 bias, whatever the weights
    returned = dead_units(model, inputs)
    values = list(returned.values()) if isinstance(returned, dict) else returned
    if not (
        isinstance(values, (list, tuple))
        and len(values) == len(relus)
        and all(isinstance(v, (int, float)) for v in values)
    ):
        raise Problem("not_fractions", returned=repr(returned), count=len(relus))
    found = [round(float(v), 3) for v in values]
    shown: dict[str, object] = {"found": found, "expected": [round(v, 3) for v in expected]}
    # isclose: a fraction may be computed with another float type
    if all(math.isclose(a, b, abs_tol=1e-6) for a, b in zip(found, expected, strict=True)):
        return shown
    if all(math.isclose(a, b, abs_tol=1e-3) for a, b in zip(found, zeros, strict=True)):
        raise Problem("zero_fraction", **shown)
    raise Problem("wrong_fractions", **shown)


# -- page 14: pitfalls --------------------------------------------------------------------


@exercise(
    "14.1",
    passed=Text(
        "With a full backward hook on `model[0]` of the model `make_model()` builds, the "
        "forward and the backward pass ran and the hook fired: the out-of-place ReLU writes "
        "a new tensor and leaves the hooked module's output untouched. The model computes "
        "the same function as before.",
        "在 `make_model()` 构建的模型的 `model[0]` 上注册完整反向钩子后，前向和反向传播都能运行，"
        "钩子也触发了。非原地的 ReLU 写出一个新张量，不会改动被挂钩模块的输出。模型计算的函数与之前相同。",
    ),
    not_a_model=Text(
        "`make_model()` returned a `{got}`; it should return the model, an "
        "`nn.Sequential(nn.Linear(4, 6), ..., nn.Linear(6, 2))` of three layers.",
        "`make_model()` 返回了一个 `{got}`；它应当返回模型，一个三层的 "
        "`nn.Sequential(nn.Linear(4, 6), ..., nn.Linear(6, 2))`。",
    ),
    still_in_place=Text(
        "With a full backward hook on `model[0]`, the forward pass raised `{error}`: "
        "`model[1]` still changes the hooked module's output in place. Use `nn.ReLU()`, "
        "which writes a new tensor, instead of `nn.ReLU(inplace=True)`.",
        "在 `model[0]` 上注册完整反向钩子后，前向传播抛出了 `{error}`，`model[1]` 仍在原地修改"
        "被挂钩模块的输出。请用会写出新张量的 `nn.ReLU()` 代替 `nn.ReLU(inplace=True)`。",
    ),
    changed_function=Text(
        "The hook works now, but the model computes another function: its output is not "
        "`model[2](relu(model[0](x)))`. Keep the ReLU, only not in place: `nn.ReLU()`.",
        "钩子现在能用了，但模型计算的是另一个函数，它的输出不等于 `model[2](relu(model[0](x)))`。"
        "请保留 ReLU，只是不要原地运算：`nn.ReLU()`。",
    ),
)
def _make_model(answer: object) -> Values:
    make_model = require_callable(answer)
    model = make_model()
    if not (
        isinstance(model, nn.Sequential)
        and len(model) == 3
        and isinstance(model[0], nn.Linear)
        and isinstance(model[2], nn.Linear)
        and (model[0].in_features, model[2].out_features) == (4, 2)
    ):
        raise Problem("not_a_model", got=type(model).__name__)
    watch(model)
    fired: list[nn.Module] = []
    x = torch.randn(3, 4, requires_grad=True)
    with model[0].register_full_backward_hook(lambda m, gi, go: fired.append(m)):
        try:
            out = model(x)
        except RuntimeError as error:
            raise Problem("still_in_place", error=str(error).split(". ")[0]) from None
        out.sum().backward()
    assert fired == [model[0]]
    with torch.no_grad():
        expected = model[2](torch.relu(model[0](x)))
    # allclose: the same operations, but the learner's modules may order them differently
    if not torch.allclose(out.detach(), expected):
        raise Problem("changed_function")
    return {}
