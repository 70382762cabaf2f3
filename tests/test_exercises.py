"""hooks_tutorial.exercises: every check passes a right answer and names what is wrong in a
wrong one, in both languages; it leaves no hook, stops endless loops, and picks its language
from the download it runs in."""

from __future__ import annotations

import contextlib
import functools
import importlib
import json
import re
import string
import sys
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.nn.modules import module as module_globals
from torch.nn.modules.module import (
    register_module_forward_pre_hook,
    register_module_parameter_registration_hook,
)

import hooks_tutorial as ht
from hooks_tutorial import exercises
from hooks_tutorial.exercises import KIND_NAMES, SHARED, _language
from hooks_tutorial.exercises._registry import MESSAGES

# -- answers: one right and at least one wrong per exercise --------------------------------

callbacks: dict[str, list[object]] = {}  # page 2's registry: exercises 02.2 and 02.3 use it


def double_and_print(result):
    print(result * 2)


class Button:  # page 1's Button
    def __init__(self, label):
        self.label = label
        self.listeners = []

    def on_click(self, callback):
        self.listeners.append(callback)

    def click(self):
        print(f"[{self.label} clicked]")
        for callback in self.listeners:
            callback(self.label)


class RemovableButton(Button):
    def remove_listener(self, callback):
        self.listeners.remove(callback)


class ClearingButton(Button):
    def remove_listener(self, callback):
        self.listeners.clear()


def calculate(a, b, callback=None):
    result = a + b
    if callback is None:
        return result
    callback(result)
    return None


def calculate_calls_none(a, b, callback=None):
    callback(a + b)


def calculate_required(a, b, callback):
    callback(a + b)


def count_calls(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        wrapper.calls += 1
        return func(*args, **kwargs)

    wrapper.calls = 0
    return wrapper


def count_calls_unwrapped(func):
    def wrapper(*args, **kwargs):
        wrapper.calls += 1
        return func(*args, **kwargs)

    wrapper.calls = 0
    return wrapper


def count_calls_forgets_result(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        wrapper.calls += 1
        func(*args, **kwargs)

    wrapper.calls = 0
    return wrapper


def off(event, func):
    callbacks[event].remove(func)


def off_all(event, func):
    callbacks[event] = []


class Handle:
    def __init__(self, event, func):
        self.event, self.func = event, func

    def remove(self):
        if self.func in callbacks.get(self.event, []):
            callbacks[self.event].remove(self.func)


def add_callback(event, func):
    callbacks.setdefault(event, []).append(func)
    return Handle(event, func)


class StrictHandle(Handle):
    def remove(self):
        callbacks[self.event].remove(self.func)


def add_callback_strict(event, func):
    callbacks.setdefault(event, []).append(func)
    return StrictHandle(event, func)


def record_shapes(model, shapes):
    return [
        layer.register_forward_hook(
            lambda _m, _args, out, name=name: shapes.update({name: tuple(out.shape)})
        )
        for name, layer in model.named_children()
    ]


def record_shapes_late(model, shapes):
    return [
        # the mistake this answer makes on purpose: name is read when the hook runs
        layer.register_forward_hook(lambda _m, _args, out: shapes.update({name: tuple(out.shape)}))  # noqa: B023
        for name, layer in model.named_children()
    ]


def record_shapes_setdefault(model, shapes):
    return [
        layer.register_forward_hook(
            lambda _m, _args, out, name=name: shapes.setdefault(name, tuple(out.shape))
        )
        for name, layer in model.named_children()
    ]


class BestEpoch:
    def __init__(self):
        self.best, self.epoch = -1.0, 0

    def on_epoch_end(self, epoch, logs):
        if logs["val_accuracy"] > self.best:
            self.best, self.epoch = logs["val_accuracy"], epoch

    def on_train_end(self, logs):
        print(f"best val_accuracy {self.best:.3f} at epoch {self.epoch}")


class LastEpoch(BestEpoch):
    def on_epoch_end(self, epoch, logs):
        self.best, self.epoch = logs["val_accuracy"], epoch


class BatchCounter:
    def __init__(self):
        self.batches, self.samples = 0, 0

    def on_batch_end(self, batch, logs):
        self.batches += 1
        self.samples += logs["size"]


class FixedSizeCounter(BatchCounter):
    def on_batch_end(self, batch, logs):
        self.batches += 1
        self.samples += 64


def lowest_epoch(val_losses):
    return min(enumerate(val_losses, start=1), key=lambda pair: pair[1])[0]


def lowest_index(val_losses):
    return min(range(len(val_losses)), key=lambda i: val_losses[i])


def print_stats(module, args, output):
    print(f"{type(module).__name__} mean {output.mean().item():.3f} std {output.std().item():.3f}")


def conv_and_relu(net, x):
    kept = {}
    with (
        net[0].register_forward_hook(lambda m, a, out: kept.update(conv=out.detach().clone())),
        net[1].register_forward_hook(lambda m, a, out: kept.update(relu=out.detach().clone())),
    ):
        net(x)
    return kept["conv"], kept["relu"]


def conv_and_relu_detached(net, x):
    kept = {}
    with (
        net[0].register_forward_hook(lambda m, a, out: kept.update(conv=out.detach())),
        net[1].register_forward_hook(lambda m, a, out: kept.update(relu=out.detach())),
    ):
        net(x)
    return kept["conv"], kept["relu"]


def add_noise(module, args):
    if module.training:
        return (args[0] + 0.1 * torch.randn_like(args[0]),)
    return None


def add_noise_always(module, args):
    return (args[0] + 0.1 * torch.randn_like(args[0]),)


def clamp_hook(module, args, output):
    return output.clamp(max=1.0)


def clamp_hook_no_return(module, args, output):
    output.clamp(max=1.0)


def count_calls_of(module, inputs):
    counts = {"started": 0, "finished": 0}

    def on_start(m, args):
        counts["started"] += 1

    def on_end(m, args, output):
        if output is not None:
            counts["finished"] += 1

    with (
        module.register_forward_pre_hook(on_start),
        module.register_forward_hook(on_end, always_call=True),
    ):
        for x in inputs:
            with contextlib.suppress(ValueError):
                module(x)
    return counts


def count_calls_counting_errors(module, inputs):
    counts = {"started": 0, "finished": 0}
    with (
        module.register_forward_pre_hook(lambda m, a: counts.update(started=counts["started"] + 1)),
        module.register_forward_hook(
            lambda m, a, out: counts.update(finished=counts["finished"] + 1), always_call=True
        ),
    ):
        for x in inputs:
            with contextlib.suppress(ValueError):
                module(x)
    return counts


def backward_grads(module, x):
    store = {}
    with module.register_full_backward_hook(
        lambda m, grad_input, grad_output: store.update(gi=grad_input[0], go=grad_output[0])
    ):
        module(x).sum().backward()
    return store["gi"], store["go"]


def backward_grads_swapped(module, x):
    store = {}
    with module.register_full_backward_hook(
        lambda m, grad_output, grad_input: store.update(gi=grad_input[0], go=grad_output[0])
    ):
        module(x).sum().backward()
    return store["gi"], store["go"]


def keep_unit_0(module, grad_output):
    return (grad_output[0] * torch.tensor([1.0, 0.0]),)


def keep_unit_0_no_return(module, grad_output):
    grad_output[0] * torch.tensor([1.0, 0.0])


def clamp_grad_input(module, grad_input, grad_output):
    return tuple(g.clamp(-1.0, 1.0) for g in grad_input)


def clamp_grad_output(module, grad_input, grad_output):
    return tuple(g.clamp(-1.0, 1.0) for g in grad_output)


def get_activation(model, layer_name, x):
    with ht.capture_activations(model, [layer_name]) as acts:
        model(x)
    return acts[layer_name]


def get_activation_leaky(model, layer_name, x):
    store = {}
    getattr(model, layer_name).register_forward_hook(
        lambda m, a, out: store.update(act=out.detach())
    )
    model(x)
    return store["act"]


def hooks_then_error(module):
    with ht.HookGroup() as hooks:
        hooks.forward(module, lambda m, args, out: None)
        hooks.full_backward(module, lambda m, grad_in, grad_out: None)
        msg = "something went wrong"
        raise ValueError(msg)


def hooks_outside_group(module):
    with ht.HookGroup():
        module.register_forward_hook(lambda m, args, out: None)
        module.register_full_backward_hook(lambda m, grad_in, grad_out: None)
        msg = "something went wrong"
        raise ValueError(msg)


def module_calls(model, x):
    calls = []
    handle = register_module_forward_pre_hook(lambda m, args: calls.append(m))
    try:
        model(x)
    finally:
        handle.remove()
    return calls


def count_modules(model, x):
    return len(list(model.modules()))


def find_model_row(result):
    return next(row for row in result if row.name == "")


RIGHT = {
    "01.1": double_and_print,
    "01.2": RemovableButton,
    "01.3": calculate,
    "02.1": count_calls,
    "02.2": off,
    "02.3": add_callback,
    "03.1": lambda n: int(re.search(r"\d*$", n)[0] or 0),
    "03.2": record_shapes,
    "03.3": lambda module, args, output: output * 2,
    "04.1": BestEpoch,
    "04.2": BatchCounter,
    "04.3": lowest_epoch,
    "05.1": print_stats,
    "05.3": conv_and_relu,
    "06.1": add_noise,
    "06.2": clamp_hook,
    "06.3": count_calls_of,
    "07.1": backward_grads,
    "07.2": keep_unit_0,
    "07.3": clamp_grad_input,
    "08.1": get_activation,
    "08.2": hooks_then_error,
    "09.1": ["Linear", "ReLU", "Tanh", "Sequential", "Sequential"],
    "09.2": module_calls,
    "09.3": find_model_row,
}

WRONG = [
    ("01.1", lambda result: result * 2, "returned_not_printed"),
    ("01.1", print, "wrong_number"),
    ("01.2", ClearingButton, "removed_others"),
    ("01.2", Button, "not_a_button"),
    ("01.3", calculate_calls_none, "called_none"),
    ("01.3", calculate_required, "not_optional"),
    ("02.1", count_calls_unwrapped, "lost_name"),
    ("02.1", count_calls_forgets_result, "lost_result"),
    ("02.2", off_all, "removed_others"),
    ("02.3", add_callback_strict, "second_remove_raised"),
    ("03.1", lambda n: re.search(r"\d*$", n)[0], "compared_text"),
    ("03.1", lambda n: int(re.search(r"\d*$", n)[0]), "raised_on_name"),
    ("03.2", record_shapes_late, "late_binding"),
    ("03.2", record_shapes_setdefault, "replaced_output"),
    ("03.3", lambda module, args, output: print(output * 2), "returned_none"),
    ("03.3", lambda module, args, output: (output * 2).detach(), "detached"),
    ("04.1", LastEpoch, "last_epoch"),
    ("04.2", FixedSizeCounter, "assumed_size"),
    ("04.3", lowest_index, "zero_based"),
    ("04.3", min, "returned_loss"),
    ("05.1", lambda module, args, output: (output.mean(), output.std()), "replaced_output"),
    ("05.1", lambda module, args, output: print(output.mean()), "no_std"),
    ("05.3", conv_and_relu_detached, "overwritten"),
    ("06.1", add_noise_always, "noise_in_eval"),
    ("06.2", clamp_hook_no_return, "returned_none"),
    ("06.3", count_calls_counting_errors, "counted_errors"),
    ("07.1", backward_grads_swapped, "swapped"),
    ("07.2", keep_unit_0_no_return, "returned_none"),
    ("07.3", clamp_grad_output, "used_grad_output"),
    ("08.1", get_activation_leaky, "piled_up"),
    ("08.2", hooks_outside_group, "outside_group"),
    ("09.1", ["Sequential", "Linear", "Sequential", "ReLU", "Tanh"], "containers_first"),
    ("09.2", count_modules, "counted_modules"),
    ("09.2", lambda model, x: list(model.modules()), "counted_modules"),
    ("09.2", lambda model, x: str(model), "not_calls"),
    ("09.3", lambda result: result[-1], "wrong_row"),
]

# The answers of the later pages' exercises: one module per range of pages,
# tests/exercise_answers_NN_MM.py, each with its own RIGHT (dict) and WRONG (list)
for _path in sorted(Path(__file__).parent.glob("exercise_answers_*.py")):
    _answers = importlib.import_module(_path.stem)
    assert not set(_answers.RIGHT) & set(RIGHT), _path.name
    RIGHT.update(_answers.RIGHT)
    WRONG.extend(_answers.WRONG)


def test_every_code_exercise_has_a_right_and_a_wrong_answer_here() -> None:
    code = {name for name, kind in exercises.exercise_kinds().items() if kind == "code"}
    assert set(RIGHT) == code
    assert {name for name, _, _ in WRONG} == code


@pytest.mark.parametrize("language", ["en", "zh_CN"])
@pytest.mark.parametrize("name", sorted(RIGHT))
def test_a_right_answer_passes(name: str, language: str) -> None:
    result = exercises.run_check(name, RIGHT[name], language=language)
    assert result.passed, result.message
    assert result.problem is None
    assert result.message.startswith("练习" if language == "zh_CN" else "Exercise")
    assert result.leftovers == ()


@pytest.mark.parametrize("language", ["en", "zh_CN"])
@pytest.mark.parametrize(("name", "answer", "problem"), WRONG)
def test_a_wrong_answer_fails_with_its_message(
    name: str, answer: object, problem: str, language: str
) -> None:
    result = exercises.run_check(name, answer, language=language)
    assert (result.passed, result.problem) == (False, problem), result.message
    assert result.message.startswith("练习" if language == "zh_CN" else "Exercise")
    assert f"{name}：还没通过。" in result.message or f"{name}: not yet." in result.message


def test_the_registry_restores_the_learners_callbacks() -> None:
    callbacks["epoch_end"] = ["mine"]
    assert exercises.run_check("02.2", off, language="en").passed
    assert exercises.run_check("02.3", add_callback_strict, language="en").problem
    assert callbacks == {"epoch_end": ["mine"]}
    callbacks.clear()


# -- the messages ----------------------------------------------------------------


def _all_texts() -> list[tuple[str, _language.Text]]:
    texts = [(f"shared {k}", t) for k, t in SHARED.items()]
    texts += [(f"kind {k}", t) for k, t in KIND_NAMES.items()]
    texts += [(f"{e} {k}", t) for e, messages in MESSAGES.items() for k, t in messages.items()]
    return texts


def _fields(template: str) -> set[str]:
    return {f for _, f, _, _ in string.Formatter().parse(template) if f}


@pytest.mark.parametrize(
    ("key", "text"), _all_texts(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_every_message_has_both_languages(key: str, text: _language.Text) -> None:
    assert text.en.strip(), key
    assert text.zh_CN.strip(), key
    assert re.search(r"[\u4e00-\u9fff]", text.zh_CN), f"{key}: no Chinese in the zh_CN text"
    assert not re.search(r"[\u4e00-\u9fff]", text.en), f"{key}: Chinese in the English text"
    assert _fields(text.en) == _fields(text.zh_CN), key
    # the same inline code in both (in any order): names and calls are not translated
    assert sorted(re.findall(r"`[^`]+`", text.en)) == sorted(re.findall(r"`[^`]+`", text.zh_CN)), (
        key
    )


def test_prose_exercises_say_so() -> None:
    result = exercises.run_check("05.2", print_stats, language="zh_CN")
    assert (result.passed, result.problem) == (False, "prose")
    assert "文字作答" in result.message
    assert exercises.exercise_kinds()["08.3"] == "prose"


def test_exercise_names_are_normalised_and_checked() -> None:
    assert exercises.run_check("5.1", print_stats, language="en").exercise == "05.1"
    with pytest.raises(ValueError, match=r"no exercise 05\.7; the exercises of page 05 are: 05\.1"):
        exercises.run_check("05.7", print_stats)
    with pytest.raises(ValueError, match=r"like '05\.1'"):
        exercises.run_check("five", print_stats)
    with pytest.raises(ValueError, match="'en' or 'zh_CN'"):
        exercises.run_check("05.1", print_stats, language="fr")


def test_check_prints_the_report(capsys: pytest.CaptureFixture[str]) -> None:
    assert exercises.check("01.1", double_and_print, language="en") is None
    out = capsys.readouterr().out
    assert out.startswith("Exercise 01.1: passed.")
    assert "16" not in out.splitlines()[0][:22]  # the answer's own printing is not shown


def test_not_a_function() -> None:
    result = exercises.run_check("01.1", double_and_print(8), language="en")
    assert result.problem == "not_callable"
    assert "`NoneType`" in result.message


def test_messages_are_wrapped_for_a_terminal() -> None:
    result = exercises.run_check("05.1", lambda m, a, o: o.mean(), language="zh_CN")
    widths = [
        sum(2 if ord(c) > 0x2E80 else 1 for c in line) for line in result.message.splitlines()
    ]
    assert max(widths) <= 79, result.message
    assert "`Tensor`" in result.message  # inline code is never split


# -- the learner's errors, loops and hooks -----------------------------------------


def raises_inside(module, args, output):
    return output.mean(dim=7)


def test_an_error_names_the_learners_line() -> None:
    result = exercises.run_check("05.1", raises_inside, language="en")
    assert result.problem == "raised_at"
    assert "IndexError" in result.message
    assert "test_exercises.py" in result.message
    assert "output.mean(dim=7)" in result.message.replace("\n", " ")


def endless(module, args, output):
    while True:
        pass


def endless_catching(module, args, output):
    n = 0
    while True:
        try:  # noqa: SIM105
            n += 1
        except Exception:  # noqa: BLE001, S110 - a learner's loop may catch everything
            pass


@pytest.mark.parametrize("answer", [endless, endless_catching])
def test_an_endless_loop_is_stopped_and_the_trace_function_restored(answer: object) -> None:
    def previous(frame, event, arg):
        return None

    old = sys.gettrace()
    sys.settrace(previous)
    try:
        result = exercises.run_check("05.1", answer, language="en", max_steps=20_000)
        assert sys.gettrace() is previous
    finally:
        sys.settrace(old)
    assert result.problem == "too_many_steps"
    assert "20,000 steps" in result.message


def test_a_time_bound_stops_a_loop_too() -> None:
    result = exercises.run_check("05.1", endless, language="en", max_seconds=0.0)
    assert result.problem == "too_many_seconds"


model = nn.Sequential(nn.Linear(2, 2))  # a model in the learner's namespace


def leaks_on_the_learners_model(module, args, output):
    model[0].register_forward_hook(lambda m, a, out: None)
    print_stats(module, args, output)


def leaks_on_the_checks_model(module, args, output):
    module.register_forward_pre_hook(lambda m, a: None)
    print_stats(module, args, output)


def leaks_a_global_hook(module, args, output):
    register_module_forward_pre_hook(lambda m, a: None)
    print_stats(module, args, output)


def leaks_a_registration_hook(module, args, output):
    register_module_parameter_registration_hook(lambda m, name, param: None)
    print_stats(module, args, output)


@pytest.mark.parametrize(
    ("answer", "where"),
    [
        (leaks_on_the_learners_model, "3 forward hooks on `model.0`"),
        (leaks_on_the_checks_model, "on `_TinyConvNet.conv`"),
        (leaks_a_global_hook, "global forward pre-hooks"),
        (leaks_a_registration_hook, "global parameter registration hook"),
    ],
)
def test_hooks_left_are_removed_and_named(answer: object, where: str) -> None:
    kept = model[0].register_forward_hook(lambda m, a, out: None)  # there before: stays
    before = len(module_globals._global_forward_pre_hooks)
    try:
        result = exercises.run_check("05.1", answer, language="en")
        assert result.problem == "hooks_left", result.message
        assert where in result.message.replace("\n", " ")
        assert result.leftovers
        assert list(model[0]._forward_hooks) == [kept.id]
        assert len(module_globals._global_forward_pre_hooks) == before
        assert not module_globals._global_parameter_registration_hooks
    finally:
        kept.remove()
    zh = exercises.run_check("05.1", answer, language="zh_CN")
    assert "钩子" in zh.message
    assert zh.problem == "hooks_left"
    assert ht.count_hooks(model) == {}


def test_hooks_left_after_another_problem_are_removed_too() -> None:
    def leaks_and_returns(module, args, output):
        module.register_forward_hook(lambda m, a, out: None)
        return output.mean()

    result = exercises.run_check("05.1", leaks_and_returns, language="en")
    assert result.problem == "replaced_output"
    assert "The check removed the hooks your code left behind" in result.message


def test_the_random_state_is_restored() -> None:
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    exercises.run_check("06.1", add_noise, language="en")
    assert torch.equal(torch.rand(3), expected)


# -- the language ------------------------------------------------------------------


@pytest.fixture
def no_language_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "HOOKS_TUTORIAL_LANGUAGE",
        "JPY_SESSION_NAME",
        "LC_ALL",
        "LC_MESSAGES",
        "LANGUAGE",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LANG", "C.UTF-8")
    monkeypatch.setattr(_language.locale, "getlocale", lambda: (None, None))
    exercises.set_language(None)


@pytest.mark.usefixtures("no_language_settings")
def test_the_language_of_a_downloaded_script(tmp_path) -> None:
    script = tmp_path / "plot_05_forward_hooks.py"
    script.write_text(
        "# hooks_tutorial.exercises language: zh_CN\n"
        "import hooks_tutorial as ht\n"
        "def hook(module, args, output):\n    return output\n"
        "result = ht.exercises.run_check('05.1', hook)\n",
        encoding="utf-8",
    )
    namespace: dict[str, object] = {"__name__": "__main__"}
    exec(compile(script.read_text(encoding="utf-8"), str(script), "exec"), namespace)  # noqa: S102
    assert namespace["result"].language == "zh_CN"
    assert "替换" in namespace["result"].message


@pytest.mark.usefixtures("no_language_settings")
def test_the_language_of_a_notebook(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    notebook = tmp_path / "plot_05_forward_hooks.ipynb"
    notebook.write_text(json.dumps({"metadata": {"hooks_tutorial_language": "zh_CN"}}))
    assert _language.detect_language("/tmp/ipykernel_1/123.py", {}) == ("en", "default")
    monkeypatch.setenv("JPY_SESSION_NAME", str(notebook))
    assert _language.detect_language("/tmp/ipykernel_1/123.py", {}) == ("zh_CN", "notebook")
    monkeypatch.delenv("JPY_SESSION_NAME")
    vscode = {"__vsc_ipynb_file__": str(notebook)}
    assert _language.detect_language("/tmp/ipykernel_1/123.py", vscode) == ("zh_CN", "notebook")


@pytest.mark.usefixtures("no_language_settings")
def test_the_order_of_the_language_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    assert exercises.language() == "en"
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    assert _language.detect_language("<stdin>", {}) == ("zh_CN", "locale")
    monkeypatch.setenv("LANG", "C.UTF-8")
    monkeypatch.setattr(
        _language.locale, "getlocale", lambda: ("Chinese (Simplified)_China", "936")
    )
    assert exercises.language() == "zh_CN"  # Windows names its locales in words
    monkeypatch.setenv("HOOKS_TUTORIAL_LANGUAGE", "en")
    assert _language.detect_language("<stdin>", {}) == ("en", "environment")
    exercises.set_language("zh_CN")
    try:
        assert exercises.language() == "zh_CN"
        assert exercises.run_check("05.1", print_stats).language == "zh_CN"
    finally:
        exercises.set_language(None)
    with pytest.raises(ValueError, match="'en' or 'zh_CN'"):
        exercises.set_language("zh_TW")


def test_wrap_keeps_inline_code_whole_and_breaks_between_chinese_characters() -> None:
    text = "你" * 50 + "`a long piece of code`" + "。" + "好" * 10
    lines = _language.wrap(text, 40).splitlines()
    assert all(not line.startswith("。") for line in lines)
    assert any("`a long piece of code`" in line for line in lines)
    assert _language.wrap("one two three", 7) == "one two\nthree"


def test_wrap_never_breaks_between_a_bracket_and_inline_code() -> None:
    text = "word " * 14 + "(`s * (1 - s)` for the sigmoid)"
    assert "(\n" not in _language.wrap(text, 79)
