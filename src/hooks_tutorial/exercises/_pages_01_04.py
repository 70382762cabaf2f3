"""The checks of chapter 1, Python foundations (pages 1 to 4): callbacks, decorators, lambdas."""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from ._guard import watch
from ._helpers import (
    integers_in,
    numbers_in,
    printed_by,
    require_callable,
    returned_type,
    spy_forward_hook,
)
from ._language import Text
from ._registry import Problem, Values, exercise

# -- page 1: callbacks -----------------------------------------------------------------


def _calculate(a: int, b: int, callback: Callable[[int], object]) -> None:
    """Page 1's ``calculate``: add two numbers, then hand the sum to ``callback``."""
    callback(a + b)


@exercise(
    "01.1",
    passed=Text(
        "`calculate(3, 5, double_and_print)` printed 16 and `calculate(10, -4, "
        "double_and_print)` printed 12: your callback doubles the number it receives and "
        "prints it. `calculate` itself did not change: that is what a callback is for.",
        "`calculate(3, 5, double_and_print)` 打印了 16，`calculate(10, -4, double_and_print)` "
        "打印了 12。你的回调函数把收到的数翻倍并打印出来。`calculate` 本身没有改动，"
        "这正是回调函数的用处。",
    ),
    returned_not_printed=Text(
        "`calculate({a}, {b}, double_and_print)` printed nothing, but your callback returned "
        "{returned}. `calculate` ignores what its callback returns: print the number instead "
        "of returning it.",
        "`calculate({a}, {b}, double_and_print)` 什么也没有打印，而你的回调函数返回了 "
        "{returned}。`calculate` 不理会回调函数的返回值，请把这个数打印出来，而不是返回它。",
    ),
    printed_nothing=Text(
        "`calculate({a}, {b}, double_and_print)` printed nothing; it should print {expected}, "
        "twice the sum that `calculate` hands to the callback.",
        "`calculate({a}, {b}, double_and_print)` 什么也没有打印；它应当打印 {expected}，"
        "也就是 `calculate` 交给回调函数的和的两倍。",
    ),
    wrong_number=Text(
        "`calculate({a}, {b}, double_and_print)` printed `{printed}`, but it should print "
        "{expected}: the callback receives the sum, {total}, and prints twice that.",
        "`calculate({a}, {b}, double_and_print)` 打印的是 `{printed}`，应当打印 {expected}，"
        "回调函数收到的是和 {total}，要打印它的两倍。",
    ),
)
def _double_and_print(answer: object) -> Values:
    callback = require_callable(answer)
    for a, b in ((3, 5), (10, -4)):
        returned: list[object] = []
        _, printed = printed_by(_calculate, a, b, lambda r, kept=returned: kept.append(callback(r)))
        expected = 2 * (a + b)
        if not printed.strip():
            if returned and returned[0] == expected:
                raise Problem("returned_not_printed", a=a, b=b, returned=returned[0])
            raise Problem("printed_nothing", a=a, b=b, expected=expected)
        numbers = numbers_in(printed)
        if numbers[-1:] != [expected]:
            raise Problem(
                "wrong_number", a=a, b=b, printed=printed.strip(), expected=expected, total=a + b
            )
    return {}


@exercise(
    "01.2",
    passed=Text(
        "Two listeners, then `remove_listener(first)`: the next click ran only the second "
        "one, and `listeners` holds only the second. Removing a callback is what a hook's "
        "`handle.remove()` does too.",
        "注册两个监听器，再调用 `remove_listener(first)`，之后的点击只运行了第二个，"
        "`listeners` 里也只剩第二个。移除回调函数，也正是钩子句柄的 `handle.remove()` 所做的事。",
    ),
    not_a_button=Text(
        '`{name}("Undo")` has no `{missing}`: build on the page\'s `Button`, '
        "`class RemovableButton(Button):`, and add the one method.",
        '`{name}("Undo")` 没有 `{missing}`，请在本页的 `Button` 基础上编写，'
        "`class RemovableButton(Button):`，只添加这一个方法。",
    ),
    removed_others=Text(
        "After `remove_listener(first)`, the second listener no longer ran either: remove "
        "only the callback you are given (`self.listeners.remove(callback)`), not all of "
        "them.",
        "调用 `remove_listener(first)` 之后，第二个监听器也不再运行了，只移除传进来的那个回调函数"
        "（`self.listeners.remove(callback)`），而不是全部。",
    ),
    still_called=Text(
        "After `remove_listener(first)`, a click still ran `first`: take it out of "
        "`self.listeners`, the list that `click()` goes through.",
        "调用 `remove_listener(first)` 之后，点击仍然运行了 `first`，请把它从 "
        "`self.listeners` 中移除，`click()` 遍历的正是这个列表。",
    ),
)
def _removable_button(answer: object) -> Values:
    make = require_callable(answer)
    name = getattr(answer, "__name__", "RemovableButton")
    button = make("Undo")
    for missing in ("on_click", "click", "remove_listener", "listeners"):
        if not hasattr(button, missing):
            raise Problem("not_a_button", name=name, missing=missing)
    heard: list[str] = []

    def first(label: str) -> None:
        heard.append("first")

    def second(label: str) -> None:
        heard.append("second")

    button.on_click(first)
    button.on_click(second)
    printed_by(button.click)
    button.remove_listener(first)
    heard.clear()
    printed_by(button.click)
    if "second" not in heard:
        raise Problem("removed_others")
    if "first" in heard or first in list(button.listeners):
        raise Problem("still_called")
    return {}


@exercise(
    "01.3",
    passed=Text(
        "`calculate(3, 5)` returned 8, and `calculate(3, 5, callback)` still handed 8 to "
        "the callback: callers with a callback keep working, and the others get the result.",
        "`calculate(3, 5)` 返回了 8，`calculate(3, 5, callback)` 仍然把 8 交给回调函数。"
        "带回调函数的调用照常工作，不带的则拿到结果。",
    ),
    called_none=Text(
        "`calculate(3, 5)` raised `{error}`: without a callback, `callback` is None and "
        "your code calls it. Test `if callback is None:` first, and return the result then.",
        "`calculate(3, 5)` 抛出了 `{error}`，没有回调函数时，`callback` 是 None，而你的代码调用了它。"
        "请先判断 `if callback is None:`，这时返回结果。",
    ),
    not_optional=Text(
        "`calculate(3, 5)` raised `{error}`: the callback is not optional yet. Give it a "
        "default value, `def calculate(a, b, callback=None):`.",
        "`calculate(3, 5)` 抛出了 `{error}`，回调函数还不是可选的。请给它一个默认值："
        "`def calculate(a, b, callback=None):`。",
    ),
    wrong_result=Text(
        "`calculate(3, 5)` returned `{returned}`; it should return the sum, 8.",
        "`calculate(3, 5)` 返回了 `{returned}`；它应当返回和 8。",
    ),
    callback_skipped=Text(
        "`calculate(3, 5, callback)` called the callback with {received} instead of once "
        "with 8: callers that pass a callback must keep working as before.",
        "`calculate(3, 5, callback)` 调用回调函数时传入的是 {received}，而不是只用 8 调用一次，"
        "传入回调函数的调用必须和以前一样工作。",
    ),
)
def _optional_callback(answer: object) -> Values:
    calculate = require_callable(answer)
    try:
        returned = calculate(3, 5)
    except TypeError as error:
        text = f"TypeError: {error}"
        problem = "called_none" if "NoneType" in str(error) else "not_optional"
        raise Problem(problem, error=text) from None
    if returned != 8:
        raise Problem("wrong_result", returned=repr(returned))
    received: list[object] = []
    calculate(3, 5, received.append)
    if received != [8]:
        raise Problem("callback_skipped", received=received)
    return {}


# -- page 2: callbacks and decorators ---------------------------------------------------


@exercise(
    "02.1",
    passed=Text(
        "After three calls, `double.calls` is 3, and a second decorated function keeps a "
        "count of its own; the decorated functions return what the originals return, take "
        "keyword arguments, and keep their names, thanks to `functools.wraps`.",
        "调用三次之后，`double.calls` 是 3，另一个被装饰的函数有它自己的计数；被装饰的函数返回原函数的返回值，"
        "接受关键字参数，并且保留了原来的名字，这要归功于 `functools.wraps`。",
    ),
    not_a_decorator=Text(
        "`count_calls(double)` returned a `{got}`, not a function: a decorator returns the "
        "function that replaces the one it decorates (the wrapper).",
        "`count_calls(double)` 返回了一个 `{got}`，而不是函数，装饰器要返回替代被装饰函数的那个函数"
        "（即包装函数）。",
    ),
    no_calls=Text(
        "The decorated function has no `calls` attribute: set `wrapper.calls = 0` in the "
        "decorator, after defining `wrapper`, and add 1 in the wrapper.",
        "被装饰的函数没有 `calls` 属性，请在装饰器中定义 `wrapper` 之后写 `wrapper.calls = 0`，"
        "并在包装函数里每次加 1。",
    ),
    wrong_count=Text(
        "After three calls, `double.calls` is {count}, not 3.",
        "调用三次之后，`double.calls` 是 {count}，而不是 3。",
    ),
    shared_count=Text(
        "Two decorated functions share one count: after three calls of `double` and one of "
        "`square`, `square.calls` is {count}. Keep the count on each wrapper "
        "(`wrapper.calls`), not in a variable outside the decorator.",
        "两个被装饰的函数共用了一个计数，调用 `double` 三次、`square` 一次之后，`square.calls` "
        "是 {count}。请把计数放在各自的包装函数上（`wrapper.calls`），而不是装饰器外的变量里。",
    ),
    lost_result=Text(
        "The decorated `double(2)` returned `{returned}` instead of 4: the wrapper must "
        "return what the function returns, `return func(*args, **kwargs)`.",
        "被装饰的 `double(2)` 返回了 `{returned}`，而不是 4，包装函数必须返回原函数的返回值，"
        "`return func(*args, **kwargs)`。",
    ),
    lost_keywords=Text(
        "Calling the decorated function with a keyword argument raised `{error}`: let the "
        "wrapper take `*args, **kwargs` and pass both on.",
        "用关键字参数调用被装饰的函数时抛出了 `{error}`，请让包装函数接收 `*args, **kwargs`，"
        "并把两者都传下去。",
    ),
    lost_name=Text(
        "The decorated function is called `{name}`, not `double`: decorate the wrapper with "
        "`@functools.wraps(func)`, which copies the name (and the docstring) onto it.",
        "被装饰的函数名叫 `{name}`，而不是 `double`，请给包装函数加上 `@functools.wraps(func)`，"
        "它会把名字（和文档字符串）复制过去。",
    ),
)
def _count_calls(answer: object) -> Values:
    count_calls = require_callable(answer)

    def double(x: int) -> int:
        """Double ``x``."""
        return 2 * x

    def square(x: int, *, power: int = 2) -> int:
        return int(x**power)

    decorated = count_calls(double)
    if not callable(decorated):
        raise Problem("not_a_decorator", got=type(decorated).__name__)
    other = count_calls(square)
    returned = [decorated(value) for value in (2, 3, 4)]
    if returned[0] != 4:
        raise Problem("lost_result", returned=repr(returned[0]))
    if not hasattr(decorated, "calls"):
        raise Problem("no_calls")
    if decorated.calls != 3:
        raise Problem("wrong_count", count=decorated.calls)
    try:
        other(3, power=2)
    except TypeError as error:
        raise Problem("lost_keywords", error=f"TypeError: {error}") from None
    if getattr(other, "calls", None) != 1:
        raise Problem("shared_count", count=getattr(other, "calls", None))
    if decorated.__name__ != "double":
        raise Problem("lost_name", name=decorated.__name__)
    return {}


def _swap_registry(function: Callable[..., Any]) -> tuple[dict[str, Any], object]:
    """Put an empty registry in place of the page's ``callbacks``; return the globals and the old one."""
    namespace = getattr(function, "__globals__", None)
    if not isinstance(namespace, dict) or "callbacks" not in namespace:
        raise Problem("no_registry")
    old = namespace["callbacks"]
    namespace["callbacks"] = {}
    return namespace, old


_NO_REGISTRY = Text(
    "The check runs your function on a registry of its own, put for a moment in place of "
    "the page's `callbacks` dictionary; but where your function was defined there is no "
    "`callbacks`. Run the page's cells first, and use that dictionary.",
    "检查会临时用它自己的注册表替换本页的 `callbacks` 字典来运行你的函数；但在定义你的函数的地方"
    "没有 `callbacks`。请先运行本页前面的单元格，并使用那个字典。",
)


@exercise(
    "02.2",
    passed=Text(
        '`off("epoch_end", first)` took `first` out of `callbacks["epoch_end"]` and left '
        "`second`, and the other events, as they were: `emit` no longer calls `first`.",
        '`off("epoch_end", first)` 把 `first` 从 `callbacks["epoch_end"]` 中移除，'
        "`second` 和其他事件都保持原样：`emit` 不会再调用 `first`。",
    ),
    no_registry=_NO_REGISTRY,
    not_removed=Text(
        'After `off("epoch_end", first)`, `callbacks["epoch_end"]` still holds `first`, '
        "so `emit` would still call it: remove it from that list "
        "(`callbacks[event].remove(func)`).",
        '调用 `off("epoch_end", first)` 之后，`callbacks["epoch_end"]` 中仍有 `first`，'
        "`emit` 仍会调用它，请把它从这个列表中移除（`callbacks[event].remove(func)`）。",
    ),
    removed_others=Text(
        '`off("epoch_end", first)` also removed other callbacks: the registry is now '
        "{registry}. Remove only `func` from `callbacks[event]`.",
        '`off("epoch_end", first)` 把别的回调函数也移除了，注册表现在是 {registry}。'
        "只应从 `callbacks[event]` 中移除 `func`。",
    ),
    replaced_registry=Text(
        "Your `off` gave the name `callbacks` a new dictionary instead of changing the one "
        "`emit` reads: remove the callback from the existing list instead.",
        "你的 `off` 让 `callbacks` 这个名字指向了一个新字典，而没有修改 `emit` 读取的那个，"
        "请改为从已有的列表中移除回调函数。",
    ),
)
def _off(answer: object) -> Values:
    off = require_callable(answer)
    namespace, old = _swap_registry(off)
    try:

        def first(**info: object) -> None: ...

        def second(**info: object) -> None: ...

        registry = namespace["callbacks"]
        registry.update({"epoch_end": [first, second], "batch_end": [first]})
        off("epoch_end", first)
        if namespace["callbacks"] is not registry:
            raise Problem("replaced_registry")
        if first in registry.get("epoch_end", []):
            raise Problem("not_removed")
        if registry != {"epoch_end": [second], "batch_end": [first]}:
            shown = {event: [f.__name__ for f in funcs] for event, funcs in registry.items()}
            raise Problem("removed_others", registry=shown)
    finally:
        namespace["callbacks"] = old
    return {}


@exercise(
    "02.3",
    passed=Text(
        "`add_callback` put each function in `callbacks[event]` and returned a handle; "
        "`remove()` took out only its own function, and a second `remove()` did nothing, "
        "like PyTorch's `RemovableHandle`.",
        "`add_callback` 把每个函数放进 `callbacks[event]`，并返回一个句柄；`remove()` "
        "只移除它自己的函数，第二次 `remove()` 什么也不做，和 PyTorch 的 `RemovableHandle` 一样。",
    ),
    no_registry=_NO_REGISTRY,
    not_registered=Text(
        'After `add_callback("epoch_end", first)`, `callbacks` is {registry}: the function '
        'should be in `callbacks["epoch_end"]` (create the list when the event is new).',
        '调用 `add_callback("epoch_end", first)` 之后，`callbacks` 是 {registry}，这个函数应当在 '
        '`callbacks["epoch_end"]` 里（事件是新的时，先创建列表）。',
    ),
    no_handle=Text(
        "`add_callback` returned a `{got}`, which has no `remove()` method: return an object "
        "that remembers the event and the function, with a `remove()` that takes the "
        "function out.",
        "`add_callback` 返回了一个 `{got}`，它没有 `remove()` 方法，请返回一个记住事件和函数的对象，"
        "它的 `remove()` 会把这个函数移除。",
    ),
    wrong_removal=Text(
        "After `add_callback` of `first` and `second` and `remove()` of the first handle, "
        '`callbacks["epoch_end"]` holds {left}; it should hold only `second`.',
        "先后用 `add_callback` 注册 `first` 和 `second`，再调用第一个句柄的 `remove()` 之后，"
        '`callbacks["epoch_end"]` 里是 {left}；应当只剩 `second`。',
    ),
    second_remove_raised=Text(
        "A second `remove()` of the same handle raised `{error}`. Like PyTorch's "
        "`RemovableHandle`, it should do nothing: remove the function only if it is still "
        "in the list.",
        "对同一个句柄第二次调用 `remove()` 时抛出了 `{error}`。和 PyTorch 的 `RemovableHandle` "
        "一样，它应当什么也不做，只有函数仍在列表中时才移除它。",
    ),
)
def _add_callback(answer: object) -> Values:
    add_callback = require_callable(answer)
    namespace, old = _swap_registry(add_callback)
    try:

        def first(**info: object) -> None: ...

        def second(**info: object) -> None: ...

        handle = add_callback("epoch_end", first)
        registry = namespace["callbacks"]
        if first not in registry.get("epoch_end", []):
            shown = {event: [f.__name__ for f in funcs] for event, funcs in registry.items()}
            raise Problem("not_registered", registry=shown)
        if not callable(getattr(handle, "remove", None)):
            raise Problem("no_handle", got=type(handle).__name__)
        add_callback("epoch_end", second)
        handle.remove()
        left = [f.__name__ for f in namespace["callbacks"].get("epoch_end", [])]
        if left != ["second"]:
            raise Problem("wrong_removal", left=left)
        try:
            handle.remove()
        except Exception as error:  # noqa: BLE001 - any error is the finding
            text = f"{type(error).__name__}: {error}"
            raise Problem("second_remove_raised", error=text) from None
    finally:
        namespace["callbacks"] = old
    return {}


# -- page 3: lambda ------------------------------------------------------------------


@exercise(
    "03.1",
    passed=Text(
        "Your key sorts `{first}` as `{first_sorted}` and `{second}` as `{second_sorted}`: "
        "it turns each name into the number at its end (0 when there is none), and `sorted` "
        "compares those numbers.",
        "你的 key 把 `{first}` 排成 `{first_sorted}`，把 `{second}` 排成 `{second_sorted}`。"
        "它把每个名字变成名字末尾的数（没有数时为 0），`sorted` 比较的是这些数。",
    ),
    raised_on_name=Text(
        "Your key raised `{error}` for `{name}`. A name without a number at its end counts "
        "as 0: `int(digits or 0)`.",
        "你的 key 处理 `{name}` 时抛出了 `{error}`。末尾没有数的名字算作 0：`int(digits or 0)`。",
    ),
    compared_text=Text(
        "Your key sorts `{names}` as `{got}`: it compares the numbers as text, and as text "
        "'101' comes before '50'. Convert the digits with `int()`.",
        "你的 key 把 `{names}` 排成了 `{got}`，它把数当作文本比较，而按文本 '101' 排在 '50' 前面。"
        "请用 `int()` 转换这些数字。",
    ),
    wrong_order=Text(
        "Your key sorts `{names}` as `{got}`; by the number at the end it is `{expected}`.",
        "你的 key 把 `{names}` 排成了 `{got}`；按末尾的数排序应当是 `{expected}`。",
    ),
)
def _sort_key(answer: object) -> Values:
    key = require_callable(answer)
    cases = (
        (["resnet18", "vgg11", "alexnet"], ["alexnet", "vgg11", "resnet18"]),
        (["resnet101", "resnet9", "resnet50"], ["resnet9", "resnet50", "resnet101"]),
    )
    results = []
    for names, expected in cases:
        for name in names:
            try:
                key(name)
            except Exception as error:  # noqa: BLE001 - any error is the finding
                raise Problem(
                    "raised_on_name", name=name, error=f"{type(error).__name__}: {error}"
                ) from None
        got = sorted(names, key=key)
        if got != expected:
            as_text = sorted(names, key=lambda n: re.search(r"\d*$", n)[0])  # type: ignore[index]
            problem = "compared_text" if got == as_text else "wrong_order"
            raise Problem(problem, names=names, got=got, expected=expected)
        results.append(got)
    return {
        "first": cases[0][0],
        "first_sorted": results[0],
        "second": cases[1][0],
        "second_sorted": results[1],
    }


def _three_layers() -> nn.Sequential:
    """Page 3's model: ``Linear(4, 3)``, ``ReLU``, ``Linear(3, 2)``."""
    return watch(nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2)))


@exercise(
    "03.2",
    passed=Text(
        "Your hooks stored `{shapes}`, one shape under each layer's own name, the model's "
        "output did not change, and removing the handles you returned left no hook: each "
        "`lambda` kept its own `name` through the default argument, and returned None.",
        "你的钩子保存了 `{shapes}`，每个形状都在各自层的名字之下，模型的输出没有改变，"
        "移除你返回的句柄之后也没有留下钩子。每个 `lambda` 通过默认参数记住了自己的 `name`，"
        "并且返回 None。",
    ),
    late_binding=Text(
        "Every hook stored its shape under `{name}`, the last layer's name: the shapes are "
        "`{shapes}`. A `lambda` reads `name` when it runs, after the loop has ended; give it "
        "the name when it is made, with a default argument: `lambda m, args, out, "
        "name=name: ...`.",
        "每个钩子都把形状存在了最后一层的名字 `{name}` 之下，保存的形状是 `{shapes}`。"
        "`lambda` 在运行时才读取 `name`，那时循环早已结束；请在创建它时用默认参数把名字交给它："
        "`lambda m, args, out, name=name: ...`。",
    ),
    wrong_shapes=Text(
        "After a forward pass of a batch of 2, `shapes` is `{shapes}`; it should be "
        "`{expected}`: each child's name, from `named_children()`, and its output's shape "
        "as a tuple.",
        "一个大小为 2 的批次做完前向传播后，`shapes` 是 `{shapes}`；应当是 `{expected}`，"
        "每个子层的名字（来自 `named_children()`）和它输出形状的元组。",
    ),
    replaced_output=Text(
        "The hook on layer `{layer}` returned a `{returned}`, so it replaced the layer's "
        "output. `shapes.setdefault(...)` and the like return a value; `shapes.update(...)` "
        "returns None, or write a `def` that returns nothing.",
        "层 `{layer}` 上的钩子返回了一个 `{returned}`，于是它替换了这一层的输出。"
        "`shapes.setdefault(...)` 之类的方法有返回值；`shapes.update(...)` 返回 None，"
        "或者写一个什么也不返回的 `def` 函数。",
    ),
    no_handles=Text(
        "`record_shapes` returned a `{got}`; it should return the handles of the hooks it "
        "registered (a list), so that the caller can remove them.",
        "`record_shapes` 返回了一个 `{got}`；它应当返回所注册钩子的句柄（一个列表），"
        "以便调用者移除它们。",
    ),
)
def _record_shapes(answer: object) -> Values:
    record_shapes = require_callable(answer)
    model = _three_layers()
    batch = torch.randn(2, 4)
    plain = model(batch)
    shapes: dict[str, object] = {}
    handles = record_shapes(model, shapes)
    if not isinstance(handles, (list, tuple)) or not all(
        callable(getattr(h, "remove", None)) for h in handles
    ):
        raise Problem("no_handles", got=type(handles).__name__)
    seen: dict[str, object] = {}  # what each layer passed on, after the learner's hooks

    def spy_for(name: str) -> Callable[..., None]:
        def spy(module: nn.Module, args: object, out: object) -> None:
            seen[name] = out

        return spy

    spies = [layer.register_forward_hook(spy_for(name)) for name, layer in model.named_children()]
    error: Exception | None = None
    try:
        output = model(batch)
    except Exception as raised:  # noqa: BLE001 - a replaced output may break the next layer
        error = raised
    finally:
        for spy in spies:
            spy.remove()
        for handle in handles:
            handle.remove()
    for name, out in seen.items():
        if not isinstance(out, torch.Tensor):
            raise Problem("replaced_output", layer=name, returned=returned_type(out))
    if error is not None:  # the learner's hook raised: run_check reports it
        raise error
    if not torch.equal(output, plain):
        raise Problem("replaced_output", layer="2", returned="Tensor")
    expected = {"0": (2, 3), "1": (2, 3), "2": (2, 2)}
    if list(shapes) == ["2"]:
        raise Problem("late_binding", name="2", shapes=shapes)
    if shapes != expected:
        raise Problem("wrong_shapes", shapes=shapes, expected=expected)
    return {"shapes": shapes}


@exercise(
    "03.3",
    passed=Text(
        "With your hook on the first layer, the model's output equals the hand-computed "
        "`model[2](model[1](2 * model[0](x)))`, and gradients still flow through it: the "
        "value a forward hook returns replaces the layer's output, here on purpose.",
        "把你的钩子注册在第一层上之后，模型的输出等于手算的 `model[2](model[1](2 * model[0](x)))`，"
        "梯度也仍然能穿过它。前向钩子的返回值会替换这一层的输出，这里正是有意为之。",
    ),
    returned_none=Text(
        "Your hook returned None, so the layer's output stayed as it was. A forward hook "
        "changes the output only by returning the new one: `lambda module, args, output: "
        "output * 2`.",
        "你的钩子返回了 None，于是这一层的输出保持原样。前向钩子只有返回新的输出才能改变它："
        "`lambda module, args, output: output * 2`。",
    ),
    doubled_input=Text(
        "The model's output is what doubling the layer's input gives, not its output: "
        "`args[0]` is the input; double the third argument, `output`.",
        "模型的输出相当于把这一层的输入翻倍，而不是把输出翻倍：`args[0]` 是输入；"
        "请把第三个参数 `output` 翻倍。",
    ),
    detached=Text(
        "The output has the right values, but no gradient flows through it: the tensor "
        "your hook returned is detached from the graph. Return `output * 2`, without "
        "`detach()`.",
        "输出的值是对的，但梯度无法穿过它，你的钩子返回的张量已从计算图分离。"
        "请返回 `output * 2`，不要 `detach()`。",
    ),
    wrong_values=Text(
        "With your hook on the first layer, the model's output differs from the "
        "hand-computed `model[2](model[1](2 * model[0](x)))` by up to {difference:.3g}.",
        "把你的钩子注册在第一层上之后，模型的输出与手算的 `model[2](model[1](2 * model[0](x)))` "
        "最多相差 {difference:.3g}。",
    ),
)
def _doubling_hook(answer: object) -> Values:
    hook = spy_forward_hook(require_callable(answer))
    model = _three_layers()
    x = torch.randn(2, 4)
    by_hand = model[2](model[1](2 * model[0](x)))
    with model[0].register_forward_hook(hook):
        hooked = model(x)
    returned = hook.calls[0][2] if hook.calls else None
    if returned is None:
        raise Problem("returned_none")
    if not isinstance(hooked, torch.Tensor):
        raise Problem("replaced_output", layer="0", returned=returned_type(returned))
    if torch.allclose(hooked, model[2](model[1](model[0](2 * x)))):
        raise Problem("doubled_input")
    # allclose's default tolerance: both sides run the same float32 operations
    if not torch.allclose(hooked, by_hand):
        difference = (hooked - by_hand).abs().max().item()
        raise Problem("wrong_values", difference=difference)
    torch.autograd.backward(hooked.sum())
    if model[0].weight.grad is None:  # no gradient reached the hooked layer
        raise Problem("detached")
    return {}


# -- page 4: training callbacks ----------------------------------------------------------


def _train(callback: object, val_accuracies: list[float], batch_sizes: list[int]) -> None:
    """Call ``callback``'s methods as :func:`hooks_tutorial.fit` would, with made-up logs.

    One epoch per value of ``val_accuracies``, each with batches of
    ``batch_sizes``; the logs hold what ``fit``'s logs hold.
    """

    def notify(event: str, *args: object) -> None:
        method = getattr(callback, event, None)
        if method is not None:
            method(*args)

    epochs = len(val_accuracies)
    samples = sum(batch_sizes)
    notify("on_train_begin", nn.Linear(1, 1), {"epochs": epochs, "samples": samples})
    logs: dict[str, float] = {}
    for epoch, val_accuracy in enumerate(val_accuracies, start=1):
        for batch, size in enumerate(batch_sizes, start=1):
            notify("on_batch_end", batch, {"epoch": epoch, "loss": 1.0 / epoch, "size": size})
        logs = {
            "loss": 1.0 / epoch,
            "accuracy": val_accuracy,
            "val_loss": 1.0 - val_accuracy,
            "val_accuracy": val_accuracy,
            "seconds": 0.1,
        }
        notify("on_epoch_end", epoch, logs)
    notify("on_train_end", logs)


@exercise(
    "04.1",
    passed=Text(
        "Over validation accuracies `{first}`, your callback printed epoch {first_best}; over "
        "`{second}`, epoch {second_best}: it keeps the best value and its epoch between "
        "events, which a plain function could not do without a global variable.",
        "在验证准确率为 `{first}` 的训练中，你的回调打印了第 {first_best} 轮；在 `{second}` "
        "的训练中，打印了第 {second_best} 轮。它在事件之间保存了最佳值及其轮次，"
        "而普通函数不借助全局变量做不到这一点。",
    ),
    printed_nothing=Text(
        "`on_train_end` printed nothing. Print the best epoch there, with its `val_accuracy`.",
        "`on_train_end` 什么也没有打印。请在这里打印最佳轮次及其 `val_accuracy`。",
    ),
    last_epoch=Text(
        "Over validation accuracies `{accuracies}`, your callback printed epoch {printed}, "
        "the last one, but the highest accuracy came in epoch {best}: update the best "
        "value and its epoch only when `val_accuracy` is higher than the best so far.",
        "在验证准确率为 `{accuracies}` 的训练中，你的回调打印的是第 {printed} 轮，也就是最后一轮，"
        "但最高准确率出现在第 {best} 轮。只有当 `val_accuracy` 高于目前的最佳值时，"
        "才更新最佳值及其轮次。",
    ),
    lowest=Text(
        "Over validation accuracies `{accuracies}`, your callback printed epoch {printed}, "
        "which has the lowest accuracy: keep the highest (`>`), not the lowest.",
        "在验证准确率为 `{accuracies}` 的训练中，你的回调打印了第 {printed} 轮，"
        "那是准确率最低的一轮，应当保留最高的（`>`），而不是最低的。",
    ),
    wrong_epoch=Text(
        "Over validation accuracies `{accuracies}` (epochs 1 to {epochs}), `on_train_end` "
        "printed `{text}`; the highest accuracy came in epoch {best}. Epochs count from 1, "
        "as `fit` passes them to `on_epoch_end`.",
        "在验证准确率为 `{accuracies}`（第 1 到第 {epochs} 轮）的训练中，`on_train_end` 打印了 "
        "`{text}`；最高准确率出现在第 {best} 轮。轮次从 1 开始计数，和 `fit` 传给 "
        "`on_epoch_end` 的一样。",
    ),
)
def _best_epoch(answer: object) -> Values:
    make = require_callable(answer)
    found = []
    for accuracies in ([0.60, 0.85, 0.80, 0.70], [0.50, 0.60, 0.90]):
        callback = make()
        _train_all_but_end(callback, accuracies)
        _, text = printed_by(getattr(callback, "on_train_end", lambda logs: None), {})
        if not text.strip():
            raise Problem("printed_nothing")
        best = accuracies.index(max(accuracies)) + 1
        epochs = [n for n in integers_in(text) if 0 <= n <= len(accuracies)]
        if best not in epochs:
            shown = {"accuracies": accuracies, "best": best, "epochs": len(accuracies)}
            if epochs == [len(accuracies)]:
                raise Problem("last_epoch", printed=epochs[0], **shown)
            lowest = accuracies.index(min(accuracies)) + 1
            if epochs == [lowest]:
                raise Problem("lowest", printed=lowest, **shown)
            raise Problem("wrong_epoch", text=text.strip(), **shown)
        found.append((accuracies, best))
    return {
        "first": found[0][0],
        "first_best": found[0][1],
        "second": found[1][0],
        "second_best": found[1][1],
    }


def _train_all_but_end(callback: object, accuracies: list[float]) -> None:
    """:func:`_train` without its last event, ``on_train_end``: the check calls it itself."""

    class WithoutEnd:
        def __getattr__(self, event: str) -> Any:
            if event == "on_train_end":
                raise AttributeError(event)
            return getattr(callback, event)

    with contextlib.redirect_stdout(io.StringIO()):
        _train(WithoutEnd(), accuracies, [64, 64])


@exercise(
    "04.2",
    passed=Text(
        "Over 2 epochs of batches of 64, 64 and 32 samples, your counter counted "
        '{batches} batches and {samples} samples: `logs["size"]` gives the size of each '
        "batch, the last one included.",
        "在 2 轮、每轮批次大小为 64、64 和 32 的训练中，你的计数器数出了 {batches} 个批次和 "
        '{samples} 个样本：`logs["size"]` 给出每个批次的大小，包括最后一个。',
    ),
    missing_attributes=Text(
        "`BatchCounter()` has no `{missing}` attribute: set `self.batches` and "
        "`self.samples` to 0 in `__init__`, and add to them in `on_batch_end`.",
        "`BatchCounter()` 没有 `{missing}` 属性，请在 `__init__` 中把 `self.batches` 和 "
        "`self.samples` 设为 0，并在 `on_batch_end` 中累加。",
    ),
    assumed_size=Text(
        "Over 2 epochs of batches of 64, 64 and 32 samples, your counter counted {samples} "
        "samples instead of 320: the last batch of an epoch can be smaller than the batch "
        'size. Add `logs["size"]`, not a fixed number.',
        "在 2 轮、每轮批次大小为 64、64 和 32 的训练中，你的计数器数出了 {samples} 个样本，"
        '而不是 320，一轮中的最后一个批次可能比批次大小小。请累加 `logs["size"]`，'
        "而不是一个固定的数。",
    ),
    reset_each_epoch=Text(
        "Your counter counted {batches} batches and {samples} samples, one epoch's worth: "
        "it starts again every epoch. Set the counts to 0 once, in `__init__`.",
        "你的计数器数出了 {batches} 个批次和 {samples} 个样本，只是一轮的量，它每轮都重新开始了。"
        "请只在 `__init__` 中把计数设为 0 一次。",
    ),
    wrong_counts=Text(
        "Over 2 epochs of batches of 64, 64 and 32 samples, your counter counted {batches} "
        "batches and {samples} samples; it should count 6 batches and 320 samples.",
        "在 2 轮、每轮批次大小为 64、64 和 32 的训练中，你的计数器数出了 {batches} 个批次和 "
        "{samples} 个样本；应当是 6 个批次和 320 个样本。",
    ),
)
def _batch_counter(answer: object) -> Values:
    counter = require_callable(answer)()
    for missing in ("batches", "samples"):
        if not hasattr(counter, missing):
            raise Problem("missing_attributes", missing=missing)
    _train(counter, [0.5, 0.6], [64, 64, 32])
    batches, samples = counter.batches, counter.samples
    if (batches, samples) == (6, 320):
        return {"batches": batches, "samples": samples}
    if (batches, samples) == (3, 160):
        raise Problem("reset_each_epoch", batches=batches, samples=samples)
    if batches == 6 and samples == 6 * 64:
        raise Problem("assumed_size", samples=samples)
    raise Problem("wrong_counts", batches=batches, samples=samples)


@exercise(
    "04.3",
    passed=Text(
        "For the losses `{losses}` your function returned epoch {epoch}, and the right "
        "epoch for the other cases too: `min` with a `key=` lambda compares the losses and "
        "keeps the epoch, counted from 1.",
        "对于损失 `{losses}`，你的函数返回了第 {epoch} 轮，其他例子也都对。带 `key=` lambda 的 "
        "`min` 比较的是损失，保留的是从 1 开始计数的轮次。",
    ),
    zero_based=Text(
        "For the losses `{losses}` your function returned {returned}, but the lowest loss "
        "came in epoch {epoch}: epochs count from 1 (the first loss is epoch 1), list "
        "positions from 0. Use `enumerate(val_losses, start=1)`.",
        "对于损失 `{losses}`，你的函数返回了 {returned}，但最低损失出现在第 {epoch} 轮，"
        "轮次从 1 开始计数（第一个损失是第 1 轮），而列表的位置从 0 开始。"
        "请用 `enumerate(val_losses, start=1)`。",
    ),
    returned_loss=Text(
        "For the losses `{losses}` your function returned {returned}, the lowest loss "
        "itself; return its epoch, {epoch}.",
        "对于损失 `{losses}`，你的函数返回了 {returned}，也就是最低损失本身；"
        "请返回它所在的轮次 {epoch}。",
    ),
    wrong_epoch=Text(
        "For the losses `{losses}` your function returned {returned}; the lowest loss came "
        "in epoch {epoch}.",
        "对于损失 `{losses}`，你的函数返回了 {returned}；最低损失出现在第 {epoch} 轮。",
    ),
)
def _lowest_epoch(answer: object) -> Values:
    lowest_epoch = require_callable(answer)
    cases = ([0.9, 0.5, 0.7], [0.3, 0.4], [1.0, 0.9, 0.8, 0.7])
    for losses in cases:
        returned = lowest_epoch(list(losses))
        if isinstance(returned, tuple) and len(returned) == 2:  # (epoch, loss) is fine too
            returned = returned[0]
        epoch = losses.index(min(losses)) + 1
        if returned == epoch and not isinstance(returned, bool):
            continue
        shown = {"losses": losses, "returned": returned, "epoch": epoch}
        if returned == epoch - 1:
            raise Problem("zero_based", **shown)
        if returned == min(losses):
            raise Problem("returned_loss", **shown)
        raise Problem("wrong_epoch", **shown)
    return {"losses": cases[0], "epoch": 2}
