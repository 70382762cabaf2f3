"""Claims of page 9 (firing order and global hooks), checked against what the page printed."""

from __future__ import annotations

import re

import torch
from sitecheck import match, outputs, quoted_in_both_languages, run_page
from torch import nn
from torch.nn.modules.module import register_module_forward_pre_hook

import hooks_tutorial as ht

PAGE = "09"

FORWARD = [
    "forward pre-hook   Sequential",
    "forward pre-hook   Linear",
    "forward hook       Linear",
    "forward pre-hook   ReLU",
    "forward hook       ReLU",
    "forward hook       Sequential",
]
BACKWARD = [
    "backward pre-hook  Sequential",
    "backward pre-hook  ReLU",
    "backward hook      ReLU",
    "backward pre-hook  Linear",
    "backward hook      Linear",
    "backward hook      Sequential",
]


def test_firing_order() -> None:
    # "the container's pre-hook fires when ``model(x)`` starts, each layer's pre-hook
    # and hook fire around that layer, and the container's forward hook fires last";
    # "the container's backward pre-hook first ..., then ReLU before Linear, and the
    # container's backward hook last"
    lines = [line.strip() for line in outputs(PAGE).splitlines()]
    start = lines.index(FORWARD[0])
    assert lines[start : start + 13] == [*FORWARD, "--- loss.backward() ---", *BACKWARD]


def test_global_hooks() -> None:
    # "Global hooks fire before the per-module hooks of the same kind"; the last line
    # is a ``Tanh`` that is not part of ``model``; the hook is gone after remove()
    lines = [line.strip() for line in outputs(PAGE).splitlines()]
    start = lines.index("global hook      Linear")
    assert lines[start : start + 5] == [
        "global hook      Linear",
        "per-module hook  Linear",
        "global hook      ReLU",
        "global hook      Sequential",
        "global hook      Tanh",
    ]
    assert "events after remove(): []" in lines


def test_summary_table() -> None:
    # "three convolutional blocks, then a global pooling and a linear layer"
    printed = outputs(PAGE)
    table = printed.split("hooks left on cnn", 1)[0]
    convs = re.findall(r"^(conv\d)\s+Conv2d ", table, flags=re.MULTILINE)
    assert sorted(set(convs)) == ["conv1", "conv2", "conv3"]
    assert re.search(r"^\w+\s+Adaptive\w+Pool2d ", table, flags=re.MULTILINE)  # global pooling
    assert re.search(r"^fc\s+Linear ", table, flags=re.MULTILINE)
    # ``trace`` leaves no hook, finds the largest layer, and the totals agree
    assert "hooks left on cnn: 0" in printed
    assert match(r"layer with the most parameters: (\w+)", printed)[1] == "conv3"
    assert "same total as our table: True" in printed


def test_solution_values() -> None:
    # "The order is ``['Linear', 'ReLU', 'Tanh', 'Sequential', 'Sequential']``"; "A
    # forward pass of ``cnn`` makes 15 module calls, and ``cnn`` has 15 modules";
    # "The model's own row is ``SimpleCNN ((2, 5),)``" (the same computations as the
    # solutions)
    nested = nn.Sequential(nn.Linear(3, 2), nn.Sequential(nn.ReLU(), nn.Tanh()))
    order: list[str] = []
    with ht.HookGroup() as hooks:
        for module in nested.modules():
            label = type(module).__name__
            hooks.forward(module, lambda _m, _a, _o, label=label: order.append(label))
        nested(torch.randn(4, 3))
    assert order == ["Linear", "ReLU", "Tanh", "Sequential", "Sequential"]

    cnn = ht.SimpleCNN(seed=0).eval()
    images = torch.rand(2, 3, 64, 64)
    calls: list[nn.Module] = []
    handle = register_module_forward_pre_hook(lambda m, _a: calls.append(m))
    try:
        with torch.no_grad():
            cnn(images)
    finally:
        handle.remove()
    assert len(calls) == len(list(cnn.modules())) == 15
    row = next(r for r in ht.trace(cnn, images, leaves_only=False) if r.name == "")
    assert (row.type, row.output_shapes) == ("SimpleCNN", ((2, 5),))
    quoted_in_both_languages(PAGE, "SimpleCNN ((2, 5),)")


def test_solutions_state_their_answers() -> None:
    lines = run_page(PAGE).solutions.splitlines()
    assert lines == [
        "['Linear', 'ReLU', 'Tanh', 'Sequential', 'Sequential']",
        "module calls: 15  modules: 15",
        "SimpleCNN ((2, 5),)",
    ]
