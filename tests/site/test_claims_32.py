"""Claims of page 32 (autograd graph hooks), checked against its outputs."""

from __future__ import annotations

import math
import re

import pytest
import torch
from sitecheck import number, numbers, outputs, run_page
from torch import nn

PAGE = "32"


def test_graph_walk() -> None:
    # "The graph reads from the loss back to x: AccumulateGrad ..."
    assert "SumBackward0\n  SinBackward0\n    MulBackward0\n      AccumulateGrad" in outputs(PAGE)


def test_node_hooks() -> None:
    printed = outputs(PAGE)
    assert "node of y = x * 3: MulBackward0" in printed
    # the prehook runs before the node, the hook after it
    assert printed.index("prehook: grad_outputs") < printed.index("hook:    grad_inputs")
    # "The prehook received cos(y), the gradient of the loss with respect to y"
    received = numbers(
        r"grad_outputs = \(tensor\(\[([-\d.]+),\s+([-\d.]+),\s+([-\d.]+)\]\),\)", printed
    )
    assert received == pytest.approx([math.cos(3 * v) for v in (1, 2, 3)], abs=1e-4)
    # "grad_inputs has one entry per input ...: the gradient for x, and None for the constant"
    assert re.search(r"grad_inputs  = \(tensor\(\[[^\]]+\]\), None\)", printed)
    assert "x.grad equals 3 * cos(y): True" in printed


def test_multi_grad_hook() -> None:
    printed = outputs(PAGE)
    expected = "['any: (2,)', 'tensor hook: bias', 'all: [(2, 3), (2,)]', 'tensor hook: weight']"
    # "In each backward pass the 'all' hook fired once, with both gradients, and the
    # 'any' hook fired once, with the first one to arrive (the bias)."
    assert f"step 0: {expected}" in printed
    assert f"step 1: {expected}" in printed


def test_multi_grad_hook_runs_as_a_tensor_hook_in_registration_order() -> None:
    printed = outputs(PAGE)
    # "Note where 'all' sits in the list: before the weight's tensor hook."
    events = printed.split("step 0: ", 1)[1].splitlines()[0]
    assert events.index("'all:") < events.index("'tensor hook: weight'")
    # "made of one ordinary tensor hook per tensor ... sees each gradient ... before hooks
    # registered after it change it and before it is added into .grad"
    layer = nn.Linear(3, 2)
    weight_hooks_before = len(layer.weight._backward_hooks or {})
    seen: list[torch.Tensor] = []
    group = torch.autograd.graph.register_multi_grad_hook(
        (layer.weight, layer.bias), lambda grads: seen.append(grads[0].clone()), mode="all"
    )
    assert len(layer.weight._backward_hooks) == weight_hooks_before + 1
    doubling = layer.weight.register_hook(lambda grad: 2 * grad)
    try:
        layer(torch.ones(4, 3)).sum().backward()
    finally:
        group.remove()
        doubling.remove()
    assert torch.equal(seen[0], torch.full((2, 3), 4.0))
    assert torch.equal(layer.weight.grad, torch.full((2, 3), 8.0))


def test_nan_hunt() -> None:
    printed = outputs(PAGE)
    # "The loss below is finite, yet a gradient is NaN"
    assert math.isfinite(number(r"loss: ([-\d.]+)", printed))
    assert re.search(r"a\.grad: tensor\(\[\s*nan,", printed)
    # detect_anomaly "names the node and, in a warning, shows the line of the forward pass"
    assert (
        "RuntimeError: Function 'SqrtBackward0' returned nan values in its 0th output." in printed
    )
    assert "warning: Error detected in SqrtBackward0." in printed
    assert re.search(r"forward line: .*a\.sqrt\(\)", printed)
    # "The first report is the birth place"
    assert "nodes that produced NaN, in order: ['SqrtBackward0']" in printed


def test_module_tracker_uses_multi_grad_hooks_on_inputs(monkeypatch: pytest.MonkeyPatch) -> None:
    # "torch.utils.module_tracker.ModuleTracker puts one on a module's inputs to learn
    # when the backward pass has left that module"
    from torch.utils import module_tracker  # noqa: PLC0415

    registered: list[tuple[int, ...]] = []
    original = module_tracker.register_multi_grad_hook

    def spy(tensors: tuple[torch.Tensor, ...], fn: object) -> object:
        registered.append(tuple(id(t) for t in tensors))
        return original(tensors, fn)  # type: ignore[arg-type]

    monkeypatch.setattr(module_tracker, "register_multi_grad_hook", spy)
    layer = nn.Linear(3, 2)
    x = torch.randn(4, 3, requires_grad=True)
    with module_tracker.ModuleTracker():
        out = layer(x)
        out.sum().backward()
    assert (id(x),) in registered  # one hook on the layer's input


def test_nodes_after_the_birth_place_pass_the_nan_on() -> None:
    # "in a longer graph, the nodes after it would only pass the NaN on"
    a = torch.tensor([0.0, 4.0], requires_grad=True)
    reports: list[str] = []

    def reporter(name: str):  # type: ignore[no-untyped-def]
        def hook(grad_inputs: tuple, grad_outputs: tuple) -> None:
            if any(g is not None and torch.isnan(g).any() for g in grad_inputs):
                reports.append(name)

        return hook

    loss = ((a * 2).sqrt() * torch.tensor([0.0, 1.0])).sum()
    handles, node = [], loss.grad_fn
    while node is not None:
        handles.append(node.register_hook(reporter(type(node).__name__)))
        node = next((c for c, _ in node.next_functions if c is not None), None)
    loss.backward()
    for handle in handles:
        handle.remove()
    assert reports == ["SqrtBackward0", "MulBackward0"]


def test_exercise_answers() -> None:
    solutions = run_page(PAGE).solutions
    # 1. "It doubles: x.grad is now 2 times 3 * cos(y)"
    assert "x.grad / (3 * cos(y)): [2.0, 2.0, 2.0]" in solutions
    # 2. "Yes, once (1 call) ... the weight's gradient of shape (2, 3), and None for the bias"
    assert "calls: 1\nreceived: [(2, 3), None]" in solutions
    # 3. "No ... the backward pass ends without an error and a.grad is silently NaN again"
    # "the first entry of a.grad is silently NaN again: [nan, 0.25]"
    assert "no error; a.grad: [nan, 0.25]" in solutions
