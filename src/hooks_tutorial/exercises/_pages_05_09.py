"""The checks of chapter 2, module hooks (pages 5 to 9): forward, pre-, backward hooks, handles."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.nn.modules.module import register_module_forward_pre_hook
from torch.utils.hooks import RemovableHandle

from ..capture import capture_activations
from ..hooks import count_hooks
from ..tracing import TraceResult, TraceRow, trace
from ._guard import watch
from ._helpers import (
    close_to_a_printed_number,
    require_callable,
    returned_type,
    spy_forward_hook,
)
from ._language import Text
from ._registry import Problem, Values, exercise, prose

prose("05.2", "08.3")


class _TinyConvNet(nn.Module):
    """Page 5's model: ``conv`` (2x2 kernels, 2 channels), ``relu``, ``fc`` on a 1x4x4 input."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 2, kernel_size=2)
        self.relu = nn.ReLU()
        self.fc = nn.Linear(2 * 3 * 3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scores: torch.Tensor = self.fc(self.relu(self.conv(x)).flatten(1))
        return scores


# -- page 5: forward hooks ---------------------------------------------------------------


@exercise(
    "05.1",
    passed=Text(
        "Registered on the 3 layers of a `TinyConvNet`, your hook printed each output's "
        "mean and standard deviation, one line per layer in the order they run, and "
        "returned None, so the model's output did not change.",
        "注册在 `TinyConvNet` 的 3 个层上之后，你的钩子按各层运行的顺序，每层一行，"
        "打印了每个输出的均值和标准差，并且返回 None，因此模型的输出没有改变。",
    ),
    printed_nothing=Text(
        "Your hook printed nothing for the `{layer}` layer: print the mean and the standard "
        "deviation of `output` (`output.mean()`, `output.std()`).",
        "你的钩子对 `{layer}` 层什么也没有打印，请打印 `output` 的均值和标准差"
        "（`output.mean()`、`output.std()`）。",
    ),
    no_mean=Text(
        "For the `{layer}` layer your hook printed `{printed}`, with no number equal to the "
        "output's mean, {mean:.4f}: print `output.mean()`.",
        "对 `{layer}` 层，你的钩子打印了 `{printed}`，其中没有一个数等于输出的均值 {mean:.4f}，"
        "请打印 `output.mean()`。",
    ),
    no_std=Text(
        "For the `{layer}` layer your hook printed `{printed}`, with no number equal to the "
        "output's standard deviation, {std:.4f}: print `output.std()`.",
        "对 `{layer}` 层，你的钩子打印了 `{printed}`，其中没有一个数等于输出的标准差 {std:.4f}，"
        "请打印 `output.std()`。",
    ),
)
def _print_stats(answer: object) -> Values:
    hook = spy_forward_hook(require_callable(answer))
    model = watch(_TinyConvNet())
    images = torch.randn(4, 1, 4, 4)
    plain = model(images)
    handles = [layer.register_forward_hook(hook) for layer in model.children()]
    error: Exception | None = None
    try:
        output = model(images)
    except Exception as raised:  # noqa: BLE001 - a returned value may break the next layer
        error = raised
    finally:
        for handle in handles:
            handle.remove()
    for module, out, returned, printed in hook.calls:
        layer = type(module).__name__
        if returned is not None:
            raise Problem("replaced_output", layer=layer, returned=returned_type(returned))
        if not printed.strip():
            raise Problem("printed_nothing", layer=layer)
        mean = out.mean().item()
        stds = (out.std().item(), out.std(correction=0).item())
        shown = {"layer": layer, "printed": printed.strip(), "mean": mean, "std": stds[0]}
        if not close_to_a_printed_number(mean, printed):
            raise Problem("no_mean", **shown)
        if not any(close_to_a_printed_number(std, printed) for std in stds):
            raise Problem("no_std", **shown)
    if error is not None:  # the learner's hook raised: run_check reports it
        raise error
    assert torch.equal(output, plain)  # every call returned None
    return {}


@exercise(
    "05.3",
    passed=Text(
        "Your function returned the outputs of `net[0]` and `net[1]`, and the second equals "
        "the first clamped at zero (`True`), also when `net[1]` is `ReLU(inplace=True)`: the "
        "convolution's output you kept still has its negative values. No hook was left.",
        "你的函数返回了 `net[0]` 和 `net[1]` 的输出，第二个等于第一个在零处截断的结果（`True`），"
        "即使 `net[1]` 是 `ReLU(inplace=True)` 也是如此。你保存的卷积输出仍保留着负值。"
        "没有留下钩子。",
    ),
    not_two=Text(
        "`conv_and_relu(net, x)` returned a `{got}`; it should return two tensors, the "
        "outputs of `net[0]` and of `net[1]`.",
        "`conv_and_relu(net, x)` 返回了一个 `{got}`；它应当返回两个张量：`net[0]` 和 `net[1]` 的输出。",
    ),
    wrong_output=Text(
        "The {which} tensor your function returned is not the output of `{layer}`: register "
        "one forward hook on `net[0]` and one on `net[1]`, and keep each one's `output`.",
        "你的函数返回的第 {which} 个张量不是 `{layer}` 的输出，请在 `net[0]` 和 `net[1]` "
        "上各注册一个前向钩子，分别保存各自的 `output`。",
    ),
    overwritten=Text(
        "With `net[1] = ReLU(inplace=True)`, the convolution's output you returned has lost "
        "its negative values: `detach()` does not copy, and the in-place ReLU overwrote the "
        "tensor after your hook stored it. Store `output.detach().clone()`.",
        "当 `net[1] = ReLU(inplace=True)` 时，你返回的卷积输出丢失了负值：`detach()` 不会复制，"
        "原地 ReLU 在你的钩子保存之后改写了这个张量。请保存 `output.detach().clone()`。",
    ),
)
def _conv_and_relu(answer: object) -> Values:
    conv_and_relu = require_callable(answer)
    x = torch.randn(1, 1, 6, 6)
    for inplace in (False, True):
        net = watch(nn.Sequential(nn.Conv2d(1, 4, 3, padding=1, bias=False), nn.ReLU(inplace)))
        with torch.no_grad():
            expected_conv = net[0](x)
        returned = conv_and_relu(net, x)
        if not (
            isinstance(returned, (tuple, list))
            and len(returned) == 2
            and all(isinstance(t, torch.Tensor) for t in returned)
        ):
            raise Problem("not_two", got=type(returned).__name__)
        conv, relu = (t.detach() for t in returned)
        if inplace and torch.equal(conv, expected_conv.clamp(min=0)):
            raise Problem("overwritten")
        if not torch.allclose(conv, expected_conv):
            raise Problem("wrong_output", which=1, layer="net[0]")
        if not torch.allclose(relu, expected_conv.clamp(min=0)):
            raise Problem("wrong_output", which=2, layer="net[1]")
    return {}


# -- page 6: forward pre-hooks ------------------------------------------------------------


@exercise(
    "06.1",
    passed=Text(
        "In training mode your pre-hook added noise whose standard deviation is {std:.3f} "
        "(0.1 asked), and left the caller's tensor unchanged; in evaluation mode the output "
        "was exactly `layer(x)`. `module.training` is the flag that Dropout reads too.",
        "在训练模式下，你的预钩子加入的噪声标准差为 {std:.3f}（要求 0.1），并且没有改动调用者的张量；"
        "在评估模式下，输出与 `layer(x)` 完全相同。Dropout 读取的也正是 `module.training` 这个标志。",
    ),
    no_noise=Text(
        "In training mode the layer's output did not change: return the noisy input as a "
        "tuple, `return (args[0] + 0.1 * torch.randn_like(args[0]),)`.",
        "在训练模式下，这一层的输出没有变化，请以元组的形式返回加了噪声的输入："
        "`return (args[0] + 0.1 * torch.randn_like(args[0]),)`。",
    ),
    noise_in_eval=Text(
        "In evaluation mode (`layer.eval()`) the output changed too: add noise only when "
        "`module.training` is True, and return None otherwise.",
        "在评估模式下（`layer.eval()`），输出也变了，只在 `module.training` 为 True 时加噪声，"
        "否则返回 None。",
    ),
    wrong_scale=Text(
        "The noise your pre-hook added has a standard deviation of {std:.3f}, not 0.1: "
        "multiply `torch.randn_like(x)` (standard deviation 1) by 0.1.",
        "你的预钩子加入的噪声标准差是 {std:.3f}，而不是 0.1，请把 `torch.randn_like(x)`"
        "（标准差为 1）乘以 0.1。",
    ),
    changed_in_place=Text(
        "Your pre-hook changed the caller's tensor in place: after the call, `x` itself "
        "holds the noise. Make a new tensor (`args[0] + noise`) instead of `args[0].add_(...)`.",
        "你的预钩子原地修改了调用者的张量，调用之后，`x` 本身带上了噪声。请创建一个新张量"
        "（`args[0] + noise`），而不是 `args[0].add_(...)`。",
    ),
)
def _add_noise(answer: object) -> Values:
    add_noise = require_callable(answer)
    layer = watch(nn.Identity())  # the output is the (noisy) input itself
    x = torch.zeros(100, 100)
    with layer.register_forward_pre_hook(add_noise):
        layer.train()
        noisy = layer(x).clone()
        in_place = bool(x.abs().sum() > 0)
        layer.eval()
        clean = layer(torch.zeros(100, 100))
    if in_place:
        raise Problem("changed_in_place")
    if torch.equal(noisy, x):
        raise Problem("no_noise")
    if not torch.equal(clean, torch.zeros(100, 100)):
        raise Problem("noise_in_eval")
    # 10,000 samples: their standard deviation is within 3% of the noise's (about 4
    # standard errors; the check's random numbers are seeded, so the run is the same each time)
    std = noisy.std().item()
    if abs(std - 0.1) > 0.003:
        raise Problem("wrong_scale", std=std)
    return {"std": std}


@exercise(
    "06.2",
    passed=Text(
        "With your hook, the largest value the next hook saw was {largest:.2f} (it was "
        "{before:.2f} without it), and the values below 1.0 stayed as they were: the "
        "second hook received the output your hook returned.",
        "有了你的钩子，下一个钩子看到的最大值是 {largest:.2f}（没有它时是 {before:.2f}），"
        "小于 1.0 的值保持不变。第二个钩子收到的是你的钩子返回的输出。",
    ),
    returned_none=Text(
        "Your hook returned None, so the output was not clamped: `output.clamp(max=1.0)` "
        "makes a new tensor and leaves `output` as it was. Return it.",
        "你的钩子返回了 None，因此输出没有被截断：`output.clamp(max=1.0)` 会生成一个新张量，"
        "而 `output` 保持原样。请返回它。",
    ),
    not_clamped=Text(
        "The next hook still saw values above 1.0 (the largest: {largest:.2f}): clamp with "
        "`max=1.0`.",
        "下一个钩子仍然看到了大于 1.0 的值（最大为 {largest:.2f}），请用 `max=1.0` 截断。",
    ),
    changed_small_values=Text(
        "Your hook also changed values below 1.0 (the smallest is now {smallest:.2f}, it "
        "was {before:.2f}): clamp only from above, `output.clamp(max=1.0)`.",
        "你的钩子把小于 1.0 的值也改了（最小值现在是 {smallest:.2f}，原来是 {before:.2f}），"
        "只从上方截断，`output.clamp(max=1.0)`。",
    ),
)
def _clamp_hook(answer: object) -> Values:
    hook = require_callable(answer)
    layer = watch(nn.Linear(4, 8))
    x = torch.randn(16, 4) * 3
    plain = layer(x).detach()
    seen: list[torch.Tensor] = []
    spy = spy_forward_hook(hook)
    with (
        layer.register_forward_hook(spy),
        layer.register_forward_hook(lambda m, args, out: seen.append(out)),
    ):
        layer(x)
    if spy.calls and spy.calls[0][2] is None:
        raise Problem("returned_none")
    if not isinstance(seen[0], torch.Tensor):
        raise Problem("replaced_output", layer="Linear", returned=returned_type(seen[0]))
    largest = seen[0].detach().max().item()
    if largest > 1.0:
        raise Problem("not_clamped", largest=largest)
    clamped = seen[0].detach()
    if not torch.equal(clamped[plain < 1.0], plain[plain < 1.0]):
        raise Problem(
            "changed_small_values", smallest=clamped.min().item(), before=plain.min().item()
        )
    return {"largest": largest, "before": plain.max().item()}


class _Fragile(nn.Module):
    """Page 6's ``Fragile``: adds 1, and raises ``ValueError`` on an input with a NaN."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.isnan().any():
            msg = "input contains NaN"
            raise ValueError(msg)
        return x + 1


@exercise(
    "06.3",
    passed=Text(
        "On three inputs, the second with a NaN, your function counted "
        "`{counts}`: the pre-hook runs before every call, and the `always_call` hook runs "
        "after every call, with `output=None` when `forward` raised.",
        "对三个输入（第二个含 NaN），你的函数数出了 `{counts}`。预钩子在每次调用之前运行，"
        "`always_call` 钩子在每次调用之后运行，`forward` 抛出异常时它收到的是 `output=None`。",
    ),
    not_counts=Text(
        "`count_calls(module, inputs)` returned `{returned}`; it should return a dictionary "
        '`{{"started": ..., "finished": ...}}`.',
        "`count_calls(module, inputs)` 返回了 `{returned}`；它应当返回一个字典 "
        '`{{"started": ..., "finished": ...}}`。',
    ),
    stopped_at_error=Text(
        "The `ValueError` of the second input reached the check: catch it inside your loop "
        "(`try: module(x)` / `except ValueError: pass`), so that the third input runs too.",
        "第二个输入引发的 `ValueError` 传到了检查这里，请在循环中捕获它"
        "（`try: module(x)` / `except ValueError: pass`），让第三个输入也能运行。",
    ),
    counted_errors=Text(
        "Your function counted `{counts}`: the call that raised was counted as finished. "
        "The `always_call` hook runs after a failed call too, with `output=None`: count "
        "only the calls whose output is not None.",
        "你的函数数出了 `{counts}`，抛出异常的那次调用被算作完成了。`always_call` 钩子在调用失败后"
        "也会运行，此时 `output=None`，只统计输出不是 None 的调用。",
    ),
    missed_failed=Text(
        "Your function counted `{counts}`: the call that raised was not counted as started, "
        "or a call was missed. The pre-hook runs before `forward`, so it counts every call, "
        "the failed one included: 3 started.",
        "你的函数数出了 `{counts}`，抛出异常的调用没有算作开始，或者漏掉了某次调用。"
        "预钩子在 `forward` 之前运行，所以每次调用都会被它数到，包括失败的那次，应开始 3 次。",
    ),
    wrong_counts=Text(
        "Your function counted `{counts}`; three calls started and two finished without an "
        "error: `{{'started': 3, 'finished': 2}}`.",
        "你的函数数出了 `{counts}`；三次调用开始，两次无错完成：`{{'started': 3, 'finished': 2}}`。",
    ),
)
def _count_calls(answer: object) -> Values:
    count_calls = require_callable(answer)
    module = watch(_Fragile())
    inputs = [torch.ones(2), torch.tensor([float("nan")]), torch.zeros(2)]
    try:
        counts = count_calls(module, inputs)
    except ValueError:
        raise Problem("stopped_at_error") from None
    if not isinstance(counts, dict) or set(counts) != {"started", "finished"}:
        raise Problem("not_counts", returned=repr(counts))
    shown: dict[str, object] = {"counts": counts}
    if counts == {"started": 3, "finished": 2}:
        return shown
    if counts == {"started": 3, "finished": 3}:
        raise Problem("counted_errors", **shown)
    if counts["finished"] == 2:
        raise Problem("missed_failed", **shown)
    raise Problem("wrong_counts", **shown)


# -- page 7: backward hooks ---------------------------------------------------------------


@exercise(
    "07.1",
    passed=Text(
        "For `Sigmoid` and for `Tanh`, the `grad_input[0]` your hook captured equals "
        "`grad_output[0]` times the module's local derivative (`s * (1 - s)` for the "
        "sigmoid): the chain rule, one module at a time.",
        "对于 `Sigmoid` 和 `Tanh`，你的钩子捕获的 `grad_input[0]` 都等于 `grad_output[0]` "
        "乘以该模块的局部导数（sigmoid 的是 `s * (1 - s)`），这就是链式法则，一次一个模块。",
    ),
    not_two=Text(
        "`backward_grads(module, x)` returned a `{got}`; it should return two tensors, "
        "`grad_input[0]` and `grad_output[0]`.",
        "`backward_grads(module, x)` 返回了一个 `{got}`；它应当返回两个张量："
        "`grad_input[0]` 和 `grad_output[0]`。",
    ),
    swapped=Text(
        "The two gradients are swapped: a full backward hook is called as `hook(module, "
        "grad_input, grad_output)`, the gradient with respect to the module's input first.",
        "两个梯度的顺序反了，完整反向钩子的调用形式是 `hook(module, grad_input, grad_output)`，"
        "先是关于模块输入的梯度。",
    ),
    not_chain_rule=Text(
        "For `{name}`, the `grad_input[0]` you returned is not `grad_output[0]` times the "
        "module's local derivative (largest difference {difference:.3g}): return the "
        "gradients the hook received, from a `backward()` of `module(x).sum()`.",
        "对于 `{name}`，你返回的 `grad_input[0]` 不等于 `grad_output[0]` 乘以该模块的局部导数"
        "（最大相差 {difference:.3g}），请返回钩子收到的梯度，来自对 `module(x).sum()` 的 `backward()`。",
    ),
)
def _backward_grads(answer: object) -> Values:
    backward_grads = require_callable(answer)
    cases: list[tuple[nn.Module, Callable[[torch.Tensor], torch.Tensor]]] = [
        (nn.Sigmoid(), lambda y: y * (1 - y)),
        (nn.Tanh(), lambda y: 1 - y * y),
    ]
    for module, derivative in cases:
        x = torch.randn(5, requires_grad=True)
        returned = backward_grads(watch(module), x)
        if not (
            isinstance(returned, (tuple, list))
            and len(returned) == 2
            and all(isinstance(t, torch.Tensor) for t in returned)
        ):
            raise Problem("not_two", got=type(returned).__name__)
        grad_input, grad_output = (t.detach() for t in returned)
        local = derivative(module(x).detach())
        # allclose: autograd's backward formulas and these products may round differently
        if torch.allclose(grad_output, grad_input * local) and not torch.allclose(
            grad_input, grad_output * local
        ):
            raise Problem("swapped")
        if not torch.allclose(grad_input, grad_output * local):
            difference = (grad_input - grad_output * local).abs().max().item()
            raise Problem("not_chain_rule", name=type(module).__name__, difference=difference)
    return {}


@exercise(
    "07.2",
    passed=Text(
        "With your pre-hook, the weight gradient's row of unit 1 is zero and the row of "
        "unit 0 is its usual value: the pre-hook replaced `grad_output` before the layer's "
        "own gradients were computed.",
        "有了你的预钩子，权重梯度中单元 1 的那一行为零，单元 0 的那一行保持通常的值，预钩子在"
        "这一层自己的梯度计算之前替换了 `grad_output`。",
    ),
    returned_none=Text(
        "Your pre-hook returned None, so the gradient was not changed: return the masked "
        "gradient in a tuple, `return (grad_output[0] * mask,)`.",
        "你的预钩子返回了 None，因此梯度没有改变，请把遮罩后的梯度放进元组返回，"
        "`return (grad_output[0] * mask,)`。",
    ),
    kept_unit_1=Text(
        "The row of unit 0 is zero and the row of unit 1 is not: your mask keeps unit 1. "
        "Keep the first column of `grad_output[0]` (unit 0) and zero the second.",
        "单元 0 的那一行为零，而单元 1 的不是，你的遮罩保留的是单元 1。请保留 `grad_output[0]` "
        "的第一列（单元 0），把第二列置零。",
    ),
    wrong_rows=Text(
        "With your pre-hook, the weight gradient is `{grad}`; the row of unit 1 should be "
        "zero and the row of unit 0 `{expected}`, the sum of the inputs.",
        "有了你的预钩子，权重梯度是 `{grad}`；单元 1 的那一行应当为零，单元 0 的那一行应当是 "
        "`{expected}`，即输入之和。",
    ),
)
def _keep_unit_0(answer: object) -> Values:
    keep_unit_0 = require_callable(answer)
    linear = watch(nn.Linear(3, 2))
    # requires_grad: with no input needing a gradient, torch 2.9 warns that the
    # backward pre-hook fires for the outputs only, and the check would report the
    # warning instead of the answer
    inputs = torch.randn(4, 3, requires_grad=True)
    returned: list[object] = []

    def spy(module: nn.Module, grad_output: tuple[torch.Tensor, ...]) -> Any:
        returned.append(keep_unit_0(module, grad_output))
        return returned[-1]

    with linear.register_full_backward_pre_hook(spy):
        linear(inputs).sum().backward()
    grad = linear.weight.grad
    assert grad is not None
    expected = inputs.sum(dim=0)
    if returned and returned[0] is None:
        raise Problem("returned_none")
    # allclose: the gradient sums the batch in another order than inputs.sum()
    if torch.equal(grad[0], torch.zeros(3)) and torch.allclose(grad[1], expected):
        raise Problem("kept_unit_1")
    if not (torch.equal(grad[1], torch.zeros(3)) and torch.allclose(grad[0], expected)):
        raise Problem(
            "wrong_rows",
            grad=[[round(v, 3) for v in row] for row in grad.tolist()],
            expected=[round(v, 3) for v in expected.tolist()],
        )
    return {}


class _ReluTimesFive(nn.Module):
    """Page 7's ``ReluTimesFive``: ``relu(x) * 5``."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = torch.relu(x) * 5
        return out


@exercise(
    "07.3",
    passed=Text(
        "On `ReluTimesFive`, `x.grad` became `{grad}`: the true gradient, 0 or 5, clamped to "
        "at most 1. The tuple your hook returned replaced `grad_input`.",
        "在 `ReluTimesFive` 上，`x.grad` 变成了 `{grad}`，真实梯度（0 或 5）被截断到至多 1。"
        "你的钩子返回的元组替换了 `grad_input`。",
    ),
    returned_none=Text(
        "Your hook returned None, so `x.grad` kept the true gradient, `{grad}`: return the "
        "clamped gradients, `tuple(g.clamp(-1, 1) for g in grad_input)`.",
        "你的钩子返回了 None，所以 `x.grad` 保留了真实梯度 `{grad}`，请返回截断后的梯度，"
        "`tuple(g.clamp(-1, 1) for g in grad_input)`。",
    ),
    used_grad_output=Text(
        "`x.grad` is `{grad}`: 1 also where `x` is negative, where the ReLU's gradient is 0. "
        "Your hook clamped `grad_output`, the gradient of the module's output; clamp "
        "`grad_input` instead.",
        "`x.grad` 是 `{grad}`，在 `x` 为负、ReLU 梯度为 0 的地方也是 1。你的钩子截断的是 "
        "`grad_output`，即模块输出的梯度；请改为截断 `grad_input`。",
    ),
    wrong_grad=Text(
        "`x.grad` is `{grad}`; the true gradient `{true}` clamped to [-1, 1] is `{expected}`.",
        "`x.grad` 是 `{grad}`；真实梯度 `{true}` 截断到 [-1, 1] 之后应当是 `{expected}`。",
    ),
)
def _clamp_grad_input(answer: object) -> Values:
    hook = require_callable(answer)
    module = watch(_ReluTimesFive())
    x = torch.tensor([-1.0, 2.0, -3.0, 4.0], requires_grad=True)
    returned: list[object] = []

    def spy(m: nn.Module, grad_input: Any, grad_output: Any) -> Any:
        returned.append(hook(m, grad_input, grad_output))
        return returned[-1]

    with module.register_full_backward_hook(spy):
        module(x).sum().backward()
    assert x.grad is not None
    grad = x.grad.tolist()
    true = [0.0, 5.0, 0.0, 5.0]
    shown: dict[str, object] = {"grad": grad, "true": true, "expected": [0.0, 1.0, 0.0, 1.0]}
    if returned and returned[0] is None:
        raise Problem("returned_none", **shown)
    if grad == [1.0, 1.0, 1.0, 1.0]:
        raise Problem("used_grad_output", **shown)
    if grad != [0.0, 1.0, 0.0, 1.0]:
        raise Problem("wrong_grad", **shown)
    return shown


# -- page 8: handles and leaks ------------------------------------------------------------


@exercise(
    "08.1",
    passed=Text(
        "After 5 calls of your `get_activation`, the model holds no hook, and each call "
        "returned the layer's output: `ht.capture_activations` removes its hook when the "
        "`with` block ends.",
        "调用你的 `get_activation` 5 次之后，模型上没有钩子，而且每次调用都返回了该层的输出："
        "`ht.capture_activations` 在 `with` 块结束时移除它的钩子。",
    ),
    piled_up=Text(
        "After {calls} calls of your `get_activation`, the model holds {hooks} hooks: each "
        "call left its hook behind, and every later forward pass runs them all. Let "
        "`ht.capture_activations` register the hook in a `with` block, which removes it.",
        "调用你的 `get_activation` {calls} 次之后，模型上有 {hooks} 个钩子，每次调用都留下了它的钩子，"
        "之后的每次前向传播都会把它们全部运行一遍。请用 `ht.capture_activations` 在 `with` "
        "块中注册钩子，它会移除钩子。",
    ),
    wrong_activation=Text(
        '`get_activation(model, "{layer}", x)` returned something other than the output of '
        '`model.{layer}` for `x`: return `acts["{layer}"]`.',
        '`get_activation(model, "{layer}", x)` 返回的不是 `model.{layer}` 对 `x` 的输出，'
        '请返回 `acts["{layer}"]`。',
    ),
)
def _get_activation(answer: object) -> Values:
    get_activation = require_callable(answer)
    model = watch(_TinyConvNet())
    right = True
    for _ in range(5):
        x = torch.randn(1, 1, 4, 4)
        with capture_activations(model, ["conv"]) as expected:
            model(x)
        got = get_activation(model, "conv", x)
        right = right and isinstance(got, torch.Tensor) and torch.allclose(got, expected["conv"])
    hooks = count_hooks(model).total
    if hooks:
        raise Problem("piled_up", calls=5, hooks=hooks)
    if not right:
        raise Problem("wrong_activation", layer="conv")
    return {}


@exercise(
    "08.2",
    passed=Text(
        "Your function registered {registered} hooks, its `ValueError` reached the caller, "
        "and no hook was left on the module: the group removed both on its way out and did "
        "not swallow the exception.",
        "你的函数注册了 {registered} 个钩子，它的 `ValueError` 传到了调用者，模块上也没有留下钩子，"
        "钩子组在退出时移除了这两个钩子，并且没有吞掉异常。",
    ),
    no_error=Text(
        "No `ValueError` reached the caller: raise it inside the `with` block "
        '(`raise ValueError("something went wrong")`), and let it go on; the caller catches '
        "it.",
        '没有 `ValueError` 传到调用者，请在 `with` 块中抛出它（`raise ValueError("something '
        'went wrong")`），并让它继续传出去；由调用者捕获。',
    ),
    too_few=Text(
        "Your function registered {registered} hook(s); the exercise asks for two, a forward "
        "hook and a full backward hook, both through the group (`hooks.forward(...)`, "
        "`hooks.full_backward(...)`).",
        "你的函数注册了 {registered} 个钩子；练习要求两个，一个前向钩子和一个完整反向钩子，"
        "都通过钩子组注册（`hooks.forward(...)`、`hooks.full_backward(...)`）。",
    ),
    outside_group=Text(
        "After the error, the module still holds {hooks} hook(s): they were registered with "
        "`module.register_...` directly, so the group did not own them. Register them "
        "through the group, `hooks.forward(module, fn)`, or pass the handles to "
        "`hooks.add(...)`.",
        "出错之后，模块上仍有 {hooks} 个钩子，它们是直接用 `module.register_...` 注册的，"
        "不归钩子组管。请通过钩子组注册，`hooks.forward(module, fn)`，或者把句柄交给 "
        "`hooks.add(...)`。",
    ),
)
def _hook_group_error(answer: object) -> Values:
    hooks_then_error = require_callable(answer)
    model = watch(_TinyConvNet())
    first_id = RemovableHandle.next_id  # every registration takes the next handle id
    try:
        hooks_then_error(model.conv)
    except ValueError:
        pass
    else:
        raise Problem("no_error")
    registered = RemovableHandle.next_id - first_id
    left = count_hooks(model).total
    if left:
        raise Problem("outside_group", hooks=left)
    if registered < 2:
        raise Problem("too_few", registered=registered)
    return {"registered": registered}


# -- page 9: firing order ----------------------------------------------------------------


def _nested() -> nn.Sequential:
    """Exercise 9.1's model: a ``Linear``, then a ``Sequential`` of ``ReLU`` and ``Tanh``."""
    return nn.Sequential(nn.Linear(3, 2), nn.Sequential(nn.ReLU(), nn.Tanh()))


@exercise(
    "09.1",
    passed=Text(
        "Your prediction is right: `{order}`. A forward hook fires when its module's "
        "`forward` returns, so each `Sequential` comes after the modules it contains, and "
        "the outer one, which returns last, comes last.",
        "你的预测是对的：`{order}`。前向钩子在其模块的 `forward` 返回时触发，所以每个 "
        "`Sequential` 都排在它包含的模块之后，最外层的那个最后返回，也排在最后。",
    ),
    not_a_list=Text(
        'The check needs your prediction as a list of type names, such as `["Linear", '
        "...]`, five of them (one per module, the outer `Sequential` included); it got a "
        "`{got}`.",
        '检查需要你的预测，形式是类型名组成的列表，如 `["Linear", ...]`，共五个（每个模块一个，'
        "包括最外层的 `Sequential`）；它得到的是一个 `{got}`。",
    ),
    containers_first=Text(
        "Your prediction `{predicted}` puts each `Sequential` before what it contains: that "
        "is the order in which the modules *start*. A forward hook fires when a module's "
        "`forward` *returns*, after its children have returned: `{order}`.",
        "你的预测 `{predicted}` 把每个 `Sequential` 排在了它包含的模块之前，那是模块*开始*运行的顺序。"
        "前向钩子在模块的 `forward` *返回*时触发，也就是在它的子模块都返回之后：`{order}`。",
    ),
    wrong_order=Text(
        "Your prediction is `{predicted}`; the hooks fire in the order `{order}`: each "
        "module's hook fires when its `forward` returns.",
        "你的预测是 `{predicted}`；钩子触发的顺序是 `{order}`，每个模块的钩子在它的 `forward` "
        "返回时触发。",
    ),
)
def _firing_order(answer: object) -> Values:
    nested = watch(_nested())
    order: list[str] = []

    def note(module: nn.Module, args: object, out: object) -> None:
        order.append(type(module).__name__)

    handles = [module.register_forward_hook(note) for module in nested.modules()]
    try:
        nested(torch.randn(1, 3))
    finally:
        for handle in handles:
            handle.remove()
    if not isinstance(answer, (list, tuple)) or not all(isinstance(n, str) for n in answer):
        raise Problem("not_a_list", got=type(answer).__name__)
    predicted = list(answer)
    if predicted == order:
        return {"order": order}
    started = [type(m).__name__ for m in nested.modules()]
    if predicted == started:
        raise Problem("containers_first", predicted=predicted, order=order)
    raise Problem("wrong_order", predicted=predicted, order=order)


class _Shared(nn.Module):
    """A model that calls one ``ReLU`` twice: 4 module calls, 3 modules."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.act = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.act(self.fc(self.act(x)))
        return out


@exercise(
    "09.2",
    passed=Text(
        "Your function counted {plain} calls for a model of {plain} modules, and {shared} "
        "calls for a model of {shared_modules} modules that calls its ReLU twice: a global "
        "pre-hook sees every call, and yours was removed afterwards.",
        "对一个有 {plain} 个模块的模型，你的函数数出了 {plain} 次调用；对一个有 {shared_modules} "
        "个模块、但调用了两次 ReLU 的模型，数出了 {shared} 次，全局预钩子能看到每一次调用，"
        "而你的钩子在之后被移除了。",
    ),
    counted_modules=Text(
        "For a model that calls its ReLU twice, `{model}`, your function found {returned} "
        "calls, the number of modules; it makes {calls} module calls. Count the calls with "
        "the global pre-hook, `register_module_forward_pre_hook(lambda m, args: ...)`.",
        "对一个调用了两次 ReLU 的模型 `{model}`，你的函数找到了 {returned} 次调用，也就是模块的个数；"
        "它实际有 {calls} 次模块调用。请用全局预钩子统计调用次数，"
        "`register_module_forward_pre_hook(lambda m, args: ...)`。",
    ),
    wrong_count=Text(
        "For the model `{model}`, your function found {returned} calls; a forward pass makes "
        "{calls} module calls.",
        "对模型 `{model}`，你的函数找到了 {returned} 次调用；一次前向传播有 {calls} 次模块调用。",
    ),
    not_calls=Text(
        "`module_calls(model, x)` returned a `{got}`; it should return the modules called, "
        "one entry per call (a list), or their number.",
        "`module_calls(model, x)` 返回了一个 `{got}`；它应当返回被调用的模块，每次调用一项"
        "（一个列表），或者调用的次数。",
    ),
    global_left=Text(
        "Your function counted right, but its global hook stayed registered: every model "
        "of the session would call it from now on. Remove its handle in a `finally` block.",
        "你的函数数对了，但它的全局钩子一直没有移除，从此会话中的每个模型都会调用它。"
        "请在 `finally` 块中移除它的句柄。",
    ),
)
def _module_calls(answer: object) -> Values:
    module_calls = require_callable(answer)
    plain = watch(nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)))
    shared = watch(_Shared())
    x = torch.randn(2, 3)
    results = []
    cases = ((plain, "Sequential(Linear, ReLU, Linear)"), (shared, "act(fc(act(x)))"))
    for model, name in cases:
        calls: list[nn.Module] = []
        with register_module_forward_pre_hook(lambda m, args, seen=calls: seen.append(m)):
            model(x)
        found = module_calls(model, x)
        if isinstance(found, (list, tuple)):
            returned = len(found)
        elif isinstance(found, int) and not isinstance(found, bool):
            returned = found
        else:
            raise Problem("not_calls", got=type(found).__name__)
        modules = len(list(model.modules()))
        if returned != len(calls):
            shown = {"model": name, "returned": returned, "calls": len(calls)}
            raise Problem("counted_modules" if returned == modules else "wrong_count", **shown)
        results.append((len(calls), modules))
    from torch.nn.modules import module as module_globals  # noqa: PLC0415

    if module_globals._global_forward_pre_hooks:
        raise Problem("global_left")
    return {"plain": results[0][0], "shared": results[1][0], "shared_modules": results[1][1]}


@exercise(
    "09.3",
    passed=Text(
        "Your function returned the model's own row, the one whose name is the empty "
        "string: for the nested model its output shapes are `{shapes}`.",
        "你的函数返回了模型自己的那一行，也就是名字为空字符串的那一行，对嵌套模型，"
        "它的输出形状是 `{shapes}`。",
    ),
    not_a_row=Text(
        "`find_model_row(result)` returned a `{got}`; it should return one row of the trace (a "
        "`TraceRow`).",
        "`find_model_row(result)` 返回了一个 `{got}`；它应当返回追踪结果中的一行（一个 `TraceRow`）。",
    ),
    wrong_row=Text(
        "`find_model_row(result)` returned the row of `{name}` (a `{type}`). The model's own row "
        'is the one whose `name` is `""`, the name `named_modules()` gives the model '
        "itself (the table shows it as `(model)`).",
        "`find_model_row(result)` 返回的是 `{name}`（一个 `{type}`）的那一行。模型自己的那一行，"
        '`name` 是 `""`，也就是 `named_modules()` 给模型本身的名字（表格中显示为 `(model)`）。',
    ),
)
def _find_model_row(answer: object) -> Values:
    find_model_row = require_callable(answer)
    shapes = None
    for model in (watch(_nested()), watch(_Shared())):
        result: TraceResult = trace(model, torch.randn(2, 3), leaves_only=False)
        row = find_model_row(result)
        if not isinstance(row, TraceRow):
            raise Problem("not_a_row", got=type(row).__name__)
        if row.name != "":
            raise Problem("wrong_row", name=row.name, type=row.type)
        shapes = shapes or row.output_shapes
    return {"shapes": shapes}
