"""The checks of page 32c, ``torch.compile`` and hooks (chapter 6).

Exercise 1 makes a hook added after compiling run, with Dynamo's guards on hook
dictionaries. Exercises 2 and 3 ask why: they are answered in words.
"""

from __future__ import annotations

from unittest import mock

import torch
from torch import nn

from ._helpers import require_callable, returned_type
from ._language import Text
from ._registry import Problem, Values, exercise, prose

prose("32c.2", "32c.3")


# torch._dynamo is imported where the check runs, not with the package: it took 1.3 s of
# the 3.2 s of `import hooks_tutorial` (python -X importtime), paid by every page's reader
def _settings() -> tuple[bool, bool]:
    from torch._dynamo import config as dynamo_config  # noqa: PLC0415

    return dynamo_config.skip_nnmodule_hook_guards, dynamo_config.compiled_autograd


@exercise(
    "32c.1",
    passed=Text(
        "Your function made the hook added after compiling run in the next compiled call, "
        "without discarding compiled code and leaving `torch._dynamo.config` as it was: "
        "Dynamo guarded on the hook dictionaries and traced the hooked model again.",
        "你的函数让编译之后添加的钩子在下一次编译后的调用中运行，既没有丢弃已编译的代码，"
        "也没有改变 `torch._dynamo.config`。Dynamo 对钩子字典加了守卫，并重新追踪了加了钩子的模型。",
    ),
    hook_ignored=Text(
        "Your function returned 0: the compiled model reused the graph traced without the "
        "hook. By default `skip_nnmodule_hook_guards` is True, so Dynamo does not check "
        "the hook dictionaries; set it False with `mock.patch.object` around both calls "
        "(the guards are made at the first call).",
        "你的函数返回了 0。编译后的模型复用了没有钩子时追踪的图。"
        "`skip_nnmodule_hook_guards` 默认为 True，所以 Dynamo 不检查钩子字典；"
        "请用 `mock.patch.object` 把它设为 False，并覆盖两次调用（守卫在第一次调用时生成）。",
    ),
    used_reset=Text(
        "Your function called `torch.compiler.reset()` (or `torch._dynamo.reset()`): the "
        "hook runs, but every compiled graph of every model was thrown away. Guard on the "
        "hooks instead, with `skip_nnmodule_hook_guards` set False.",
        "你的函数调用了 `torch.compiler.reset()`（或 `torch._dynamo.reset()`）。钩子会运行，"
        "但所有模型的所有已编译图都被丢弃了。请改为对钩子加守卫，把 "
        "`skip_nnmodule_hook_guards` 设为 False。",
    ),
    config_changed=Text(
        "After your function, `torch._dynamo.config` differs from before ({before} became "
        "{after}); the check restored it. Change the setting with `mock.patch.object` (or "
        "`torch._dynamo.config.patch`), which restores it at the end of the `with` block.",
        "运行你的函数之后，`torch._dynamo.config` 与之前不同（{before} 变成了 {after}），"
        "检查已把它恢复。请用 `mock.patch.object`（或 `torch._dynamo.config.patch`）修改设置，"
        "它会在 `with` 块结束时恢复原值。",
    ),
    wrong_count=Text(
        "Your function returned {count} instead of 1: the hook should be called once, by "
        "the second compiled call only.",
        "你的函数返回了 {count}，而不是 1。钩子应当只被调用一次，即只在第二次编译后的调用中。",
    ),
    not_an_int=Text(
        "Your function returned a `{returned}`; it should return the number of hook calls, "
        "an `int`.",
        "你的函数返回了一个 `{returned}`，它应当返回钩子的调用次数，即一个 `int`。",
    ),
)
def _hook_calls_after_compiling(answer: object) -> Values:
    from torch import _dynamo as dynamo  # noqa: PLC0415
    from torch._dynamo import config as dynamo_config  # noqa: PLC0415

    hook_calls_after_compiling = require_callable(answer)
    torch.manual_seed(0)
    # Dynamo keeps a limited number of graphs per function (the code of Module._call_impl,
    # shared by every module); past the limit it runs the model eagerly, and then every hook
    # runs. Discarding the compiled code first makes the check see what compiling does.
    torch.compiler.reset()
    before = _settings()
    resets = mock.Mock(wraps=dynamo.reset)
    try:
        # torch.compiler.reset() calls torch._dynamo.reset(): the spy sees both
        with mock.patch.object(dynamo, "reset", resets):
            count = hook_calls_after_compiling(nn.Linear(4, 4), torch.randn(2, 4))
    finally:
        after = _settings()
        dynamo_config.skip_nnmodule_hook_guards, dynamo_config.compiled_autograd = before
    if after != before:
        raise Problem("config_changed", before=before, after=after)
    if resets.called:
        raise Problem("used_reset")
    if not isinstance(count, int) or isinstance(count, bool):
        raise Problem("not_an_int", returned=returned_type(count))
    if count == 0:
        raise Problem("hook_ignored")
    if count != 1:
        raise Problem("wrong_count", count=count)
    return {}
