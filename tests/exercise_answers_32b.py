"""Right and wrong answers to the checked exercises of page 32b (tests/test_exercises.py)."""

from __future__ import annotations

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

# -- page 32b: hooks at the level of operations -------------------------------------------


class ReluCounter(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is torch.ops.aten.relu.default:
            self.count += 1
        return func(*args, **(kwargs or {}))


def count_relus(model, x):
    with ReluCounter() as counter:
        model(x)
    return counter.count


def count_relu_modules(model, x):  # module hooks: torch.relu in forward is not seen
    calls = []
    handles = [
        module.register_forward_hook(lambda *args: calls.append(1))
        for module in model.modules()
        if isinstance(module, nn.ReLU)
    ]
    model(x)
    for handle in handles:
        handle.remove()
    return len(calls)


def count_every_op(model, x):  # counts every operation, not only aten.relu
    class EveryOp(TorchDispatchMode):
        count = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            EveryOp.count += 1
            return func(*args, **(kwargs or {}))

    with EveryOp():
        model(x)
    return EveryOp.count


def count_relus_left_on(model, x):  # enters the mode and never leaves it
    counter = ReluCounter()
    counter.__enter__()
    model(x)
    return counter.count


def to_double(module, name, param):
    return nn.Parameter(param.to(torch.float64))


RIGHT = {
    "32b.1": count_relus,
    "32b.2": to_double,
}

WRONG = [
    ("32b.1", count_relu_modules, "module_hooks_only"),
    ("32b.1", count_every_op, "wrong_count"),
    ("32b.1", count_relus_left_on, "mode_left"),
    ("32b.1", lambda model, x: "3", "not_an_int"),
    ("32b.2", lambda module, name, param: param.double(), "not_a_parameter"),
    ("32b.2", lambda module, name, param: None, "returned_none"),
    ("32b.2", lambda module, name, param: nn.Parameter(param.half()), "wrong_dtype"),
]
