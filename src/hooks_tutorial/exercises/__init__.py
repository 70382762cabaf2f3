"""Check your answers to the tutorial's exercises, offline, in the downloaded notebook or script.

Write your answer, then pass it to :func:`check` with the exercise's name,
the page number, a dot and the exercise number::

    import hooks_tutorial as ht

    def print_stats(module, args, output):
        ...  # your answer to exercise 1 of page 5

    ht.exercises.check("05.1", print_stats)

The check runs your function on a few small cases of its own and prints
what is wrong, in words that point to the cause (``the hook returned a
Tensor, so it replaced the layer's output``), or what is right when it
passes. It never leaves a hook behind: every hook that your code adds during
the check and does not remove (on the check's models, on the models in your
notebook, or a global hook) is removed, and the report says so. Code that
runs too long (an endless loop) is stopped.

Messages are in English or in Chinese: the language of the download you
run (recorded in it), else your locale; :func:`set_language` chooses.
Exercises that ask *why* are answered in words and have no check.

Each exercise's check is a plain function in this package's private
modules (``_pages_01_04.py``, ``_pages_05_09.py``): read it to see what it
tries.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import traceback
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import torch

from . import (  # importing them registers their checks
    _pages_01_04,  # noqa: F401
    _pages_05_09,  # noqa: F401
    _pages_10_14,  # noqa: F401
    _pages_15_18b,  # noqa: F401
    _pages_19_22,  # noqa: F401
    _pages_23_27,  # noqa: F401
    _pages_28_32,  # noqa: F401
    _pages_32b,  # noqa: F401
    _pages_32c,  # noqa: F401
    _pages_33_37,  # noqa: F401
    _pages_34b,  # noqa: F401
    _pages_35b,  # noqa: F401
    _pages_36b,  # noqa: F401
    _pages_40,  # noqa: F401
)
from ._guard import HookGuard, Leftover, OutOfSteps, StepBudget, is_learner_code
from ._language import CHOSEN, LANGUAGES, Text, detect_language, wrap
from ._registry import CHECKS, MESSAGES, PROSE, Problem, exercise_id

__all__ = ["CheckResult", "check", "exercise_kinds", "language", "run_check", "set_language"]

#: Steps (bytecode instructions) of your code, and seconds, that one check lets run.
MAX_STEPS = 5_000_000
MAX_SECONDS = 30.0

# The messages every check may use (each check's own are beside it).
SHARED = {
    "passed_header": Text("Exercise {exercise}: passed.", "练习 {exercise}：通过。"),
    "failed_header": Text("Exercise {exercise}: not yet.", "练习 {exercise}：还没通过。"),
    "prose": Text(
        "Exercise {exercise} asks why: answer it in words. It has no check; compare your "
        "answer with the solution's explanation.",
        "练习 {exercise} 问的是“为什么”，请用文字作答。它没有检查，请把你的回答与答案中的解释对照。",
    ),
    "raised": Text(
        "Your code raised `{error}` when the check ran it.",
        "检查运行你的代码时，它抛出了 `{error}`。",
    ),
    "raised_at": Text(
        "Your code raised `{error}` at line {line} of {file}: `{code}`.",
        "你的代码在 {file} 第 {line} 行抛出了 `{error}`：`{code}`。",
    ),
    "too_many_steps": Text(
        "Your code was still running after {steps:,} steps, so the check stopped it. Is there "
        "a loop that never ends? A `while` loop needs a condition that becomes false, or a "
        "`break`.",
        "你的代码运行了 {steps:,} 步仍未结束，检查把它停下了。是不是有一个永远不会结束的循环？"
        "`while` 循环需要一个会变为假的条件，或者一个 `break`。",
    ),
    "too_many_seconds": Text(
        "Your code was still running after {seconds:.0f} seconds, so the check stopped it. "
        "Is there a loop that never ends? The check's cases are small: a right answer takes "
        "well under a second.",
        "你的代码运行了 {seconds:.0f} 秒仍未结束，检查把它停下了。是不是有一个永远不会结束的循环？"
        "检查用的例子都很小，正确的答案用不了一秒。",
    ),
    "not_callable": Text(
        "The check needs a function, but it got a `{got}`. Pass the function's name "
        'without parentheses: `check("{exercise}", my_function)`, not `my_function()`.',
        "检查需要一个函数，却得到了一个 `{got}`。请传入函数名本身，不要加括号："
        '`check("{exercise}", my_function)`，而不是 `my_function()`。',
    ),
    "replaced_output": Text(
        "The hook on `{layer}` returned a `{returned}`, so it replaced the layer's output: "
        "PyTorch takes anything a forward hook returns, other than None, as the layer's new "
        "output. A hook that only looks at the output returns None.",
        "`{layer}` 上的钩子返回了一个 `{returned}`，于是它替换了这一层的输出。前向钩子返回的"
        "任何非 None 的值，PyTorch 都会当作这一层新的输出。只查看输出的钩子应当返回 None。",
    ),
    "hooks_left": Text(
        "Everything else is right, but your code left hooks behind: {where}. A hook stays "
        "until its handle's `remove()` runs; keep the handles and remove them (in a "
        "`finally` block, or with a `with` block).",
        "其余都对，但你的代码留下了钩子：{where}。钩子会一直留着，直到调用它的句柄的 "
        "`remove()`；请保存句柄并移除它们（放在 `finally` 块中，或使用 `with` 块）。",
    ),
    "removed": Text(
        "The check removed the hooks your code left behind: {where}.",
        "检查移除了你的代码留下的钩子：{where}。",
    ),
    "leftover": Text("{count} {kind} on `{where}`", "`{where}` 上的 {count} 个{kind}"),
    "leftover_global": Text("{count} global {kind}", "{count} 个全局{kind}"),
}

# The kinds of hooks the guard finds (Leftover.kind), by name, singular and plural.
KIND_NAMES = {
    "forward": Text("forward hook|forward hooks", "前向钩子"),
    "forward_pre": Text("forward pre-hook|forward pre-hooks", "前向预钩子"),
    "backward": Text("backward hook|backward hooks", "反向钩子"),
    "backward_pre": Text("backward pre-hook|backward pre-hooks", "反向预钩子"),
    "tensor": Text("tensor hook|tensor hooks", "张量钩子"),
    "step_pre": Text("optimizer pre-hook|optimizer pre-hooks", "优化器前置钩子"),
    "step_post": Text("optimizer hook|optimizer hooks", "优化器钩子"),
    "parameter_registration": Text(
        "parameter registration hook|parameter registration hooks", "参数注册钩子"
    ),
    "buffer_registration": Text(
        "buffer registration hook|buffer registration hooks", "缓冲区注册钩子"
    ),
    "module_registration": Text(
        "module registration hook|module registration hooks", "模块注册钩子"
    ),
}


@dataclass(frozen=True)
class CheckResult:
    """What :func:`run_check` found.

    Attributes
    ----------
    exercise : str
        The exercise, as ``"05.1"``.
    passed : bool
        Whether the answer passed.
    problem : str or None
        The name of the message that says what is wrong (``None`` when it
        passed; ``"prose"`` for an exercise answered in words).
    message : str
        The report, in :attr:`language`: what :func:`check` prints.
    language : str
        ``"en"`` or ``"zh_CN"``.
    leftovers : tuple of Leftover
        The hooks the learner's code left behind, which the check removed.
    """

    exercise: str
    passed: bool
    problem: str | None
    message: str
    language: str
    leftovers: tuple[Leftover, ...] = field(default=())

    def __str__(self) -> str:
        return self.message


def _caller() -> types.FrameType:
    """The frame of the code that called :func:`check` or :func:`run_check`."""
    frame = inspect.currentframe()
    assert frame is not None  # CPython always has frames
    while frame.f_back is not None and str(frame.f_globals.get("__name__", "")).startswith(
        __name__
    ):
        frame = frame.f_back
    return frame


def set_language(language: str | None) -> None:
    """Make every check speak ``language`` ("en" or "zh_CN"); ``None`` detects it again.

    Parameters
    ----------
    language : {"en", "zh_CN"} or None
        The language of the checks' messages.

    Raises
    ------
    ValueError
        If ``language`` is not one of the two.
    """
    if language is not None and language not in LANGUAGES:
        msg = f"language must be 'en' or 'zh_CN' (or None to detect it), got {language!r}"
        raise ValueError(msg)
    CHOSEN["language"] = language


def language() -> str:
    """The language the checks speak here: ``"en"`` or ``"zh_CN"``.

    In order: what :func:`set_language` chose; the environment variable
    ``HOOKS_TUTORIAL_LANGUAGE``; the language of the downloaded script or
    notebook that calls the check (the site records it in each download);
    the locale (``LANG``: ``zh_CN.UTF-8`` means Chinese); else English.

    Returns
    -------
    str
        ``"en"`` or ``"zh_CN"``.

    Examples
    --------
    >>> set_language("zh_CN")
    >>> language()
    'zh_CN'
    >>> set_language(None)  # detect it again
    """
    frame = _caller()
    return detect_language(frame.f_code.co_filename, frame.f_globals)[0]


def exercise_kinds() -> dict[str, Literal["code", "prose"]]:
    """Every exercise the tutorial has a check for (``"code"``) or answers in words (``"prose"``).

    Returns
    -------
    dict
        Exercise name (``"05.1"``) -> its kind, sorted by name.

    Examples
    --------
    >>> exercise_kinds()["05.1"], exercise_kinds()["05.2"]
    ('code', 'prose')
    """
    kinds: dict[str, Literal["code", "prose"]] = dict.fromkeys(CHECKS, "code")
    kinds.update(dict.fromkeys(PROSE, "prose"))
    return dict(sorted(kinds.items()))


def _leftover_text(leftovers: tuple[Leftover, ...], lang: str) -> str:
    parts = []
    for left in leftovers:
        names = KIND_NAMES[left.kind.removeprefix("global_")].format(lang).split("|")
        kind = names[-1] if left.count > 1 else names[0]
        where = left.where.removeprefix("check:")
        key = "leftover_global" if left.kind.startswith("global_") else "leftover"
        parts.append(SHARED[key].format(lang, count=left.count, kind=kind, where=where))
    return ("、" if lang == "zh_CN" else ", ").join(parts)


def _learner_frame(error: BaseException) -> traceback.FrameSummary | None:
    """The last line of the learner's own code in ``error``'s traceback."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if is_learner_code(f.filename)]
    return frames[-1] if frames else None


def run_check(
    exercise: str,
    answer: object,
    *,
    language: str | None = None,
    max_steps: int = MAX_STEPS,
    max_seconds: float = MAX_SECONDS,
) -> CheckResult:
    """Check ``answer`` to ``exercise`` and return the result, printing nothing.

    :func:`check` prints what this returns. The answer runs with the check's
    own small models and inputs, its printed output captured, the random
    number generator's state restored afterwards, and every hook it leaves
    removed (``HookGuard`` in ``_guard.py`` says how).

    Parameters
    ----------
    exercise : str
        ``"05.1"``: page 5, exercise 1 (``"5.1"`` works too).
    answer : object
        Your answer: usually a function (a hook, a callback), sometimes a
        class or a value; the exercise says which.
    language : {"en", "zh_CN"}, optional
        The language of the message; by default :func:`language`.
    max_steps : int, default MAX_STEPS
        Steps (bytecode instructions) of your code that may run before the
        check stops it.
    max_seconds : float, default MAX_SECONDS
        Seconds your code may run before the check stops it.

    Returns
    -------
    CheckResult
        Whether the answer passed, the name of the problem if not, and the
        report.

    Raises
    ------
    ValueError
        If there is no exercise ``exercise``, or ``language`` is unknown.

    Examples
    --------
    >>> def double_and_print(result):
    ...     return result * 2  # returns, does not print
    >>> result = run_check("01.1", double_and_print, language="en")
    >>> result.passed, result.problem
    (False, 'returned_not_printed')
    >>> print(result)  # doctest: +NORMALIZE_WHITESPACE
    Exercise 01.1: not yet. `calculate(3, 5, double_and_print)` printed nothing, but your
    callback returned 16. `calculate` ignores what its callback returns: print the number
    instead of returning it.
    """
    name = exercise_id(exercise)
    frame = _caller()
    if language is None:
        language = detect_language(frame.f_code.co_filename, frame.f_globals)[0]
    elif language not in LANGUAGES:
        msg = f"language must be 'en' or 'zh_CN', got {language!r}"
        raise ValueError(msg)
    if name in PROSE:
        message = wrap(SHARED["prose"].format(language, exercise=name))
        return CheckResult(name, False, "prose", message, language)
    if name not in CHECKS:
        page = name.split(".")[0]
        same_page = [e for e in (*CHECKS, *PROSE) if e.startswith(f"{page}.")]
        known = ", ".join(sorted(same_page)) or "none"
        msg = f"no exercise {name}; the exercises of page {page} are: {known}"
        raise ValueError(msg)
    problem: str | None = None
    values: dict[str, object] = {}
    guard = HookGuard(frame.f_globals)
    budget = StepBudget(max_steps, max_seconds)
    with torch.random.fork_rng(devices=[]), contextlib.redirect_stdout(io.StringIO()), guard:
        torch.manual_seed(0)
        try:
            with budget:
                values = CHECKS[name](answer)
        except Problem as found:
            problem, values = found.name, found.values
        except OutOfSteps:
            problem = f"too_many_{budget.over}"
            values = {"steps": max_steps, "seconds": max_seconds}
        except Exception as error:  # noqa: BLE001 - the learner's error is the finding
            where = _learner_frame(error)
            text = f"{type(error).__name__}: {error}".strip().rstrip(":")
            if where is None or not where.line:
                problem, values = "raised", {"error": text}
            else:
                file = Path(where.filename).name
                values = {"error": text, "line": where.lineno, "file": file, "code": where.line}
                problem = "raised_at"
    leftovers = tuple(guard.leftovers)
    if problem is None and leftovers:
        problem, values = "hooks_left", {"where": _leftover_text(leftovers, language)}
    own = MESSAGES[name]
    body = (own.get(problem or "passed") or SHARED[problem or "passed"]).format(
        language, exercise=name, **values
    )
    header = SHARED["failed_header" if problem else "passed_header"].format(language, exercise=name)
    message = header + ("" if language == "zh_CN" else " ") + body
    if leftovers and problem != "hooks_left":
        places = _leftover_text(leftovers, language)
        message += "\n" + SHARED["removed"].format(language, where=places)
    return CheckResult(name, problem is None, problem, wrap(message), language, leftovers)


def check(exercise: str, answer: object, *, language: str | None = None) -> None:
    """Check your answer to an exercise, and print what is wrong or what is right.

    Parameters
    ----------
    exercise : str
        ``"05.1"``: page 5, exercise 1.
    answer : object
        Your answer, as the exercise asks for it: usually a function, passed
        by its name (``my_hook``, not ``my_hook()``).
    language : {"en", "zh_CN"}, optional
        The language of the report; by default :func:`language`.

    See Also
    --------
    run_check : The same check, returning its result instead of printing it.

    Examples
    --------
    >>> def double_and_print(result):
    ...     print(result * 2)
    >>> check("01.1", double_and_print, language="en")  # doctest: +NORMALIZE_WHITESPACE
    Exercise 01.1: passed. `calculate(3, 5, double_and_print)` printed 16 and
    `calculate(10, -4, double_and_print)` printed 12: your callback doubles the number it
    receives and prints it. `calculate` itself did not change: that is what a callback is for.
    """
    result = run_check(exercise, answer, language=language)
    # printing is this function's job: it reports to the learner (like doctest.testmod)
    print(result.message)  # noqa: T201
