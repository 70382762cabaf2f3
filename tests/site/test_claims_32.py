"""Claims of page 32 (autograd graph hooks), checked against its outputs."""

from __future__ import annotations

import math
import re

import pytest
import torch
from sitecheck import number, numbers, outputs
from torch import nn
from torch.autograd.graph import register_multi_grad_hook

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


def test_exercise_answers() -> None:
    # 1. "it doubles"
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 3
    loss = y.sin().sum()
    y.grad_fn.register_prehook(lambda grad_outputs: tuple(2 * g for g in grad_outputs))  # type: ignore[union-attr]
    loss.backward()
    assert torch.allclose(x.grad / (3 * torch.cos(y.detach())), torch.full((3,), 2.0))  # type: ignore[operator]
    # 2. "yes, once: ... its entry is None"
    layer = nn.Linear(3, 2)
    received: list[object] = []
    register_multi_grad_hook((layer.weight, layer.bias), received.append, mode="all")
    (layer.weight**2).sum().backward()
    assert len(received) == 1
    weight_grad, bias_grad = received[0]  # type: ignore[misc]
    assert weight_grad is not None
    assert bias_grad is None
    # 3. "no: ... a.grad is silently NaN again"
    a = torch.tensor([0.0, 4.0], requires_grad=True)
    with (
        pytest.warns(UserWarning, match="Anomaly Detection has been enabled"),
        torch.autograd.detect_anomaly(check_nan=False),
    ):
        (a.sqrt() * torch.tensor([0.0, 1.0])).sum().backward()
    assert torch.isnan(a.grad[0])  # type: ignore[index]
    assert a.grad[1].item() == pytest.approx(0.25)  # type: ignore[index]
