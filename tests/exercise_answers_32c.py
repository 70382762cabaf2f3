"""Right and wrong answers to the checked exercises of page 32c (tests/test_exercises.py)."""

from __future__ import annotations

from unittest import mock

import torch
import torch._dynamo.config as dynamo_config

# -- page 32c: torch.compile and hooks ----------------------------------------------------


def hook_calls_after_compiling(model, x):
    calls = []
    compiled = torch.compile(model, backend="eager")
    with mock.patch.object(dynamo_config, "skip_nnmodule_hook_guards", False):
        compiled(x)
        handle = model.register_forward_hook(lambda module, args, output: calls.append(1))
        try:
            compiled(x)
        finally:
            handle.remove()
    return len(calls)


def hook_calls_by_default(model, x):  # the default: the hook added after compiling is ignored
    calls = []
    compiled = torch.compile(model, backend="eager")
    compiled(x)
    handle = model.register_forward_hook(lambda module, args, output: calls.append(1))
    compiled(x)
    handle.remove()
    return len(calls)


def hook_calls_after_reset(model, x):  # makes the hook run by discarding all compiled code
    calls = []
    compiled = torch.compile(model, backend="eager")
    compiled(x)
    handle = model.register_forward_hook(lambda module, args, output: calls.append(1))
    torch.compiler.reset()
    compiled(x)
    handle.remove()
    return len(calls)


def hook_calls_setting_left(model, x):  # sets the option and never restores it
    calls = []
    dynamo_config.skip_nnmodule_hook_guards = False
    compiled = torch.compile(model, backend="eager")
    compiled(x)
    handle = model.register_forward_hook(lambda module, args, output: calls.append(1))
    compiled(x)
    handle.remove()
    return len(calls)


def hook_calls_also_eager(model, x):  # counts the hook's call in an eager call too
    calls = []
    compiled = torch.compile(model, backend="eager")
    with mock.patch.object(dynamo_config, "skip_nnmodule_hook_guards", False):
        compiled(x)
        handle = model.register_forward_hook(lambda module, args, output: calls.append(1))
        compiled(x)
        model(x)
        handle.remove()
    return len(calls)


RIGHT = {"32c.1": hook_calls_after_compiling}

WRONG = [
    ("32c.1", hook_calls_by_default, "hook_ignored"),
    ("32c.1", hook_calls_after_reset, "used_reset"),
    ("32c.1", hook_calls_setting_left, "config_changed"),
    ("32c.1", hook_calls_also_eager, "wrong_count"),
    ("32c.1", lambda model, x: "1", "not_an_int"),
]
