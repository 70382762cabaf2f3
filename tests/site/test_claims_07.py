"""Claims of page 7 (backward hooks), checked against what the page printed."""

from __future__ import annotations

import re
import warnings

import pytest
import torch
from sitecheck import match, outputs, quoted_in_both_languages, run_page
from torch import nn

PAGE = "07"


def test_old_hook_on_conv2d() -> None:
    printed = outputs(PAGE)
    # "The deprecation warning comes from the forward pass, not from the registration."
    assert "warnings after registering: 0" in printed
    assert "warnings after the forward pass: 1" in printed
    assert (
        "FutureWarning: Using a non-full backward hook when the forward contains multiple autograd Nodes"
        in printed
    )
    # "Three "input gradients" ...: their shapes are those of ``x``, of the weight and of the bias"
    assert "number of input gradients:  3, shapes [(1, 1, 4, 4), (2, 1, 2, 2), (2,)]" in printed


def test_why_multiple_nodes() -> None:
    # "The convolution node has three inputs: ``x``, the weight and the bias (each a
    # leaf, so an ``AccumulateGrad`` node feeds it). The module's input ``x`` is a
    # leaf with no ``grad_fn`` at all."
    printed = outputs(PAGE)
    assert "node that made the output: ConvolutionBackward0" in printed
    assert "nodes feeding it: ['AccumulateGrad', 'AccumulateGrad', 'AccumulateGrad']" in printed
    assert "grad_fn of the module's input x: None" in printed


def _warns(module: nn.Module, x: torch.Tensor) -> bool:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        handle = module.register_backward_hook(lambda _m, _gi, _go: None)
        module(x)
        handle.remove()
    return any("multiple autograd Nodes" in str(w.message) for w in caught)


def test_every_layer_with_parameters_gets_the_warning() -> None:
    # "a weight or a bias ... is never an input's ``grad_fn``, so every layer with
    # parameters gets this warning" (a unit test of the check)
    x = torch.randn(1, 1, 4, 4, requires_grad=True)
    frozen = nn.Conv2d(1, 2, kernel_size=2, bias=False).requires_grad_(False)
    assert _warns(nn.Conv2d(1, 2, kernel_size=2), x * 1)  # input made by an operation
    assert _warns(frozen, x * 1)  # even with parameters that need no gradient
    assert _warns(nn.Linear(4, 2), x.view(4, 4) * 1)
    # a one-operation module without parameters, on an operation's output: no warning
    assert not _warns(nn.ReLU(), x * 1)


def test_a_leaf_input_is_the_second_cause() -> None:
    # "the leaf ``x`` is fed by an ``AccumulateGrad`` node too, but it has no
    # ``grad_fn`` to match it, so any module called on a leaf gets the warning"
    x = torch.randn(1, 1, 4, 4, requires_grad=True)
    assert _warns(nn.ReLU(), x)
    assert _warns(nn.Tanh(), x)
    # "A bare ``nn.ReLU`` (one operation, no parameters) warns on the leaf ``x`` and
    # not on ``x * 1``, a tensor made by an operation. A convolution warns on ``x * 1``
    # too (its parameters), and so do two operations in a row"
    printed = outputs(PAGE)
    assert re.search(r"^ReLU on the leaf x\s+warns: True$", printed, flags=re.MULTILINE)
    assert re.search(r"^ReLU on x \* 1\s+warns: False$", printed, flags=re.MULTILINE)
    assert re.search(r"^Conv2d on x \* 1\s+warns: True$", printed, flags=re.MULTILINE)
    assert re.search(r"^ReLU then Tanh on x \* 1\s+warns: True$", printed, flags=re.MULTILINE)


def test_full_backward_hook() -> None:
    printed = outputs(PAGE)
    # "one entry per input"; "The loss is a plain sum, so ``grad_output`` is all ones"
    assert "grad_input:  [(1, 1, 4, 4)]" in printed
    assert "grad_output: [(1, 2, 3, 3)]" in printed
    assert "grad_input[0] equals x.grad: True" in printed
    assert "grad_output is all ones: True" in printed
    # "Its full backward hook still fires, with ``grad_input = (None,)``, and PyTorch warns about it"
    assert "grad_input: (None,)" in printed
    assert "UserWarning: Full backward hook is firing" in printed


def test_old_hook_is_wrong_for_several_operations() -> None:
    # "the true gradient is 5 where ``x > 0`` and 0 elsewhere"; the summary quotes
    # ``[5, 5, 5, 5]`` instead of ``[0, 5, 0, 5]``
    printed = outputs(PAGE)
    assert match(r"old hook\s+(tensor\(.*\))", printed)[1] == "tensor([5., 5., 5., 5.])"
    assert match(r"full hook\s+(tensor\(.*\))", printed)[1] == "tensor([0., 5., 0., 5.])"
    assert match(r"autograd \(x\.grad\)\s+(tensor\(.*\))", printed)[1] == "tensor([0., 5., 0., 5.])"
    assert "full hook == autograd: True" in printed
    assert "old hook == autograd:  False" in printed
    quoted_in_both_languages(PAGE, "[5, 5, 5, 5]", "[0, 5, 0, 5]")


def test_linear_three_entries_against_one() -> None:
    # "the old hook's ``grad_input`` holds the gradients for the bias, the input and
    # the transposed weight. The full hook's has one entry, for the input."
    printed = outputs(PAGE)
    assert (
        "register_backward_hook       len(grad_input) = 3, shapes [(2,), (4, 3), (3, 2)]" in printed
    )
    assert "register_full_backward_hook  len(grad_input) = 1, shapes [(4, 3)]" in printed


def test_mixing_raises() -> None:
    # "Registering the other kind raises an error at once"; "even after the handle is removed"
    printed = outputs(PAGE)
    assert "RuntimeError: Cannot use both regular backward hooks and full backward hooks" in printed
    assert "RuntimeError after remove(): Cannot use both" in printed


def test_pre_hook_and_grad_input_replacement() -> None:
    # "doubling ``grad_output`` doubles both ``x.grad`` and ``linear.weight.grad``";
    # "``x.grad`` becomes zero while the weight's gradient is the plain one"
    printed = outputs(PAGE)
    for line in ["x.grad doubled:      True", "weight.grad doubled: True"]:
        assert line in printed
    for line in ["x.grad all zero:       True", "weight.grad unchanged: True"]:
        assert line in printed


def test_solution_values() -> None:
    # "The second prints ``tensor([0., 0., 0.])``" and "The third prints
    # ``tensor([0., 1., 0., 1.])``" (the same computations as the solutions)
    linear = nn.Linear(3, 2)
    linear.register_full_backward_pre_hook(lambda _m, go: (go[0] * torch.tensor([1.0, 0.0]),))
    linear(torch.randn(4, 3)).sum().backward()
    assert linear.weight.grad is not None
    assert torch.equal(linear.weight.grad[1], torch.zeros(3))

    class ReluTimesFive(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(x) * 5

    module = ReluTimesFive()
    module.register_full_backward_hook(lambda _m, gi, _go: tuple(g.clamp(-1.0, 1.0) for g in gi))
    x = torch.tensor([-1.0, 2.0, -3.0, 4.0], requires_grad=True)
    module(x).sum().backward()
    assert x.grad is not None
    assert x.grad.tolist() == pytest.approx([0.0, 1.0, 0.0, 1.0])
    quoted_in_both_languages(PAGE, "tensor([0., 0., 0.])", "tensor([0., 1., 0., 1.])")


def test_solutions_state_their_answers() -> None:
    lines = run_page(PAGE).solutions.splitlines()
    # "The first solution prints ``True``. The second prints ``tensor([0., 0., 0.])`` ...
    # The third prints ``tensor([0., 1., 0., 1.])``"
    assert lines == ["True", "tensor([0., 0., 0.])", "tensor([0., 1., 0., 1.])"]
