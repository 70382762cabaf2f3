"""The checks of page 40, error messages and silent failures."""

from __future__ import annotations

import torch
from torch import nn

from ..cam import GradCAM
from ._guard import watch
from ._helpers import require_callable
from ._language import Text
from ._registry import Problem, Values, exercise


def _small_cnn() -> nn.Sequential:
    """A small CNN ending in global average pooling: ``"1"`` is its ReLU, the layer explained."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = nn.Sequential(
            nn.Conv2d(3, 4, 3, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(4, 3),
        )
    return watch(model.eval())


@exercise(
    "40.1",
    passed=Text(
        "Your function returned the Grad-CAM maps, `{shape}`, and 0 parameters with a "
        "`.grad`: the library takes the gradient with `torch.autograd.grad`, with respect "
        "to the activation only, so the parameters' `.grad` stays None.",
        "你的函数返回了 Grad-CAM 图 `{shape}`，以及 0 个带 `.grad` 的参数。本库用 "
        "`torch.autograd.grad` 求梯度，而且只对激活值求，所以参数的 `.grad` 一直是 None。",
    ),
    not_a_pair=Text(
        "`grads_after_cam(model, layer, images)` returned `{got}`; it should return two "
        "things, the maps and the number of parameters with a `.grad`: "
        "`return maps, count`.",
        "`grads_after_cam(model, layer, images)` 返回了 `{got}`；它应当返回两样东西，"
        "即热力图和带 `.grad` 的参数个数：`return maps, count`。",
    ),
    filled_grads=Text(
        "After your function, {count} parameters of the model have a `.grad`: something "
        "called `backward()`, which fills the `.grad` of every parameter the score "
        "depends on. The library's `GradCAM` alone does not: call it inside "
        "`torch.no_grad()` and nothing else.",
        "运行你的函数之后，模型有 {count} 个参数带有 `.grad`，有什么地方调用了 `backward()`，"
        "它会填充得分所依赖的每个参数的 `.grad`。本库的 `GradCAM` 本身不会这样做，"
        "请只在 `torch.no_grad()` 中调用它。",
    ),
    miscounted=Text(
        "Your function returned {got} as the number of parameters with a `.grad`, but "
        "{count} have one: count `p.grad is not None` over `model.parameters()`.",
        "你的函数返回的带 `.grad` 参数个数是 {got}，但实际有 {count} 个，"
        "请在 `model.parameters()` 上统计 `p.grad is not None`。",
    ),
    wrong_maps=Text(
        "The maps your function returned are not `ht.GradCAM(model, layer)(images)`: "
        "call the library's `GradCAM` on the `layer` given.",
        "你的函数返回的图不是 `ht.GradCAM(model, layer)(images)`，请在给定的 `layer` 上调用本库的 "
        "`GradCAM`。",
    ),
)
def _grads_after_cam(answer: object) -> Values:
    grads_after_cam = require_callable(answer)
    model = _small_cnn()
    images = torch.randn(2, 3, 8, 8, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        expected = GradCAM(model, "1")(images)
    returned = grads_after_cam(model, "1", images.clone())
    count = sum(p.grad is not None for p in model.parameters())
    if count:
        raise Problem("filled_grads", count=count)
    if not (isinstance(returned, (tuple, list)) and len(returned) == 2):
        raise Problem("not_a_pair", got=f"a {type(returned).__name__}")
    maps, got = returned
    if isinstance(got, torch.Tensor) and got.numel() == 1:
        got = got.item()
    if got != count:
        raise Problem("miscounted", got=got, count=count)
    # the same method on the same model and images: equal up to float rounding
    if not (
        isinstance(maps, torch.Tensor)
        and maps.shape == expected.shape
        and torch.allclose(maps.detach(), expected, atol=1e-5)
    ):
        raise Problem("wrong_maps")
    return {"shape": list(expected.shape)}


class _TwiceReLU(nn.Module):
    """A residual block like torchvision's ``BasicBlock``: its ``relu`` runs twice."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(2, 2, 3, padding=1)
        self.conv2 = nn.Conv2d(2, 2, 3, padding=1)
        self.relu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.relu(x + self.conv2(self.relu(self.conv1(x))))
        return out


@exercise(
    "40.2",
    passed=Text(
        "Your function counted {twice} calls of the block's `relu`, which its `forward` "
        "calls twice, and {once} of a ReLU called once: a hook fires once per call of its "
        "module, not once per module.",
        "你的函数数出区块的 `relu` 被调用了 {twice} 次（它的 `forward` 调用了它两次），"
        "只调用一次的 ReLU 被调用了 {once} 次。钩子在其模块每次被调用时触发一次，而不是每个模块一次。",
    ),
    not_a_count=Text(
        "`count_fires(model, module, x)` returned a `{got}`; it should return how many "
        "times the hook fired, an int (`len(fired)`).",
        "`count_fires(model, module, x)` 返回了一个 `{got}`；它应当返回钩子触发的次数，"
        "一个整数（`len(fired)`）。",
    ),
    once_per_module=Text(
        "Your function counted {got} for the block's `relu`, but its `forward` calls it "
        "twice, so a forward hook on it fires {twice} times per batch: count in the hook, "
        "`fired.append(1)`, and return `len(fired)`.",
        "你的函数对区块的 `relu` 数出了 {got}，但它的 `forward` 调用了它两次，所以它上面的前向钩子"
        "每个批次触发 {twice} 次。请在钩子中计数（`fired.append(1)`），然后返回 `len(fired)`。",
    ),
    wrong_count=Text(
        "Your function counted {got} for `{module}`; a forward hook on it fires {expected} "
        "time(s) for one call of the model.",
        "你的函数对 `{module}` 数出了 {got}；对模型的一次调用，它上面的前向钩子触发 {expected} 次。",
    ),
)
def _count_fires(answer: object) -> Values:
    count_fires = require_callable(answer)
    block = watch(_TwiceReLU())
    plain = watch(nn.Sequential(nn.Conv2d(2, 2, 3), nn.ReLU()))
    x = torch.randn(1, 2, 5, 5, generator=torch.Generator().manual_seed(0))
    counts = []
    for model, module, name, expected in (
        (block, block.relu, "relu", 2),
        (plain, plain[1], "1", 1),
    ):
        got = count_fires(model, module, x.clone())
        if isinstance(got, (list, tuple)):
            got = len(got)
        if not isinstance(got, int) or isinstance(got, bool):
            raise Problem("not_a_count", got=type(got).__name__)
        if got != expected:
            if expected == 2 and got == 1:
                raise Problem("once_per_module", got=got, twice=expected)
            raise Problem("wrong_count", got=got, module=name, expected=expected)
        counts.append(got)
    return {"twice": counts[0], "once": counts[1]}


class _Shared(nn.Module):
    """Page 40's ``SharedReLU``: ``act`` runs after both linear layers."""

    def __init__(self) -> None:
        super().__init__()
        self.first, self.second = nn.Linear(4, 8), nn.Linear(8, 2)
        self.act = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.act(self.second(self.act(self.first(x))))
        return out


class _Functional(nn.Module):
    """Page 40's ``FunctionalReLU``: ``act`` is registered but never called."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)
        self.act = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(x))


@exercise(
    "40.3",
    passed=Text(
        "Your function listed the calls, `{shared}` for `SharedReLU` and `{functional}` for "
        "`FunctionalReLU`: the trace shows the module called twice and leaves out the one "
        "never called.",
        "你的函数列出了调用：对 `SharedReLU` 是 `{shared}`，对 `FunctionalReLU` 是 `{functional}`。"
        "追踪结果显示了被调用两次的模块，并且略去了从未被调用的模块。",
    ),
    not_names=Text(
        "`called_names(model, x)` returned `{got}`; it should return a list of module "
        'names, one per call, such as `["first", ...]`: `[row.name for row in '
        "ht.trace(model, x)]`.",
        "`called_names(model, x)` 返回了 `{got}`；它应当返回一个模块名组成的列表，每次调用一项，"
        '例如 `["first", ...]`：`[row.name for row in ht.trace(model, x)]`。',
    ),
    modules_not_calls=Text(
        "For `{model}` your function returned `{got}`: the model's modules, not its "
        "calls. `named_modules()` lists each module once, called or not; the trace records "
        "each call: `{expected}`.",
        "对 `{model}`，你的函数返回了 `{got}`，这是模型的模块，而不是它的调用。"
        "`named_modules()` 把每个模块列出一次，不管它是否被调用；追踪记录的是每一次调用：`{expected}`。",
    ),
    wrong_calls=Text(
        "For `{model}` your function returned `{got}`; one call of the model calls `{expected}`.",
        "对 `{model}`，你的函数返回了 `{got}`；模型的一次调用依次调用了 `{expected}`。",
    ),
)
def _called_names(answer: object) -> Values:
    called_names = require_callable(answer)
    x = torch.randn(3, 4, generator=torch.Generator().manual_seed(0))
    found = {}
    cases = (
        (watch(_Shared()), "SharedReLU", ["first", "act", "second", "act"]),
        (watch(_Functional()), "FunctionalReLU", ["linear"]),
    )
    for model, label, expected in cases:
        got = called_names(model, x.clone())
        if not isinstance(got, (list, tuple)) or not all(isinstance(n, str) for n in got):
            text = repr(got)
            raise Problem("not_names", got=text if len(text) < 60 else text[:57] + "...")
        names = [n for n in got if n]  # the model's own row ("") may be listed
        if names != expected:
            shown = {"model": label, "got": list(got), "expected": expected}
            modules = [n for n, m in model.named_modules() if n]
            leaves = [n for n, m in model.named_modules() if n and not list(m.children())]
            raise Problem(
                "modules_not_calls" if names in (modules, leaves) else "wrong_calls", **shown
            )
        found[label] = names
    return {"shared": found["SharedReLU"], "functional": found["FunctionalReLU"]}
