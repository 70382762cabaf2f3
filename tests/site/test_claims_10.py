"""Claims of page 10 (tensor hooks), checked against what the page printed."""

from __future__ import annotations

import warnings

import torch
from sitecheck import match, number, numbers, outputs, quoted_in_both_languages, run_page
from torch import nn

PAGE = "10"


def test_96_with_the_hook_and_192_without() -> None:
    # "why the notes' example gives x.grad = 96 with the hook and 192 without"
    # "The same computation without any hook gives twice as much"
    printed = outputs(PAGE)
    with_hook = number(r"x\.grad with the hook: tensor\(\[([\d.]+)\]\)", printed)
    without = number(r"x\.grad without a hook: tensor\(\[([\d.]+)\]\)", printed)
    assert (with_hook, without) == (96, 192)
    assert without == 2 * with_hook
    quoted_in_both_languages(PAGE, "96", "192")


def test_the_hook_halves_dz_dy_from_48_to_24() -> None:
    # "The hook sits between them: it changes dz/dy before autograd multiplies it by dy/dx"
    # Summary: "the hook halves dz/dy from 48 to 24, so x.grad becomes 24 * 4 = 96 instead of 192"
    printed = outputs(PAGE)
    assert "original gradient arriving at y: tensor([48.])" in printed
    assert "dz/dy = 3*y**2 = 48.0, halved by the hook to 24.0" in printed
    assert "dy/dx = 2*x = 4.0" in printed
    assert "with the hook:    24.0 * 4.0 = 96.0" in printed
    assert "without the hook: 48.0 * 4.0 = 192.0" in printed
    quoted_in_both_languages(PAGE, "48", "24 * 4 = 96")


def test_retain_grad_stores_the_gradient_after_the_hook_in_either_order() -> None:
    # "It then stores the gradient *after* the tensor's hooks have run, whichever was
    # registered first."  Summary: "in either registration order"
    printed = outputs(PAGE)
    for order in ["hook first", "retain_grad first"]:
        y_grad, x_grad = (
            float(v)
            for v in match(rf"{order}: y\.grad = ([\d.]+), x\.grad = ([\d.]+)", printed).groups()
        )
        assert (y_grad, x_grad) == (48 / 2, 96)


def test_a_non_leaf_keeps_no_grad_unless_retain_grad() -> None:
    # "y is not a leaf, so autograd does not keep y.grad unless asked with y.retain_grad()"
    x = torch.tensor([2.0], requires_grad=True)
    y, kept = x**2, x**2
    kept.retain_grad()
    (y**3 + kept**3).backward()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns when .grad of a non-leaf is read
        assert y.grad is None
    assert kept.grad is not None
    assert kept.grad.item() == 48


def test_a_removed_hook_no_longer_fires() -> None:
    # "After handle.remove() the hook no longer fires, so the next backward pass through the
    # same graph gives the unmodified gradient."
    printed = outputs(PAGE)
    assert number(r"with the hook: ([\d.]+)\n", printed) == 96
    assert number(r"after handle\.remove\(\): ([\d.]+)", printed) == 192
    # the hook printed its line in the first example and before removal, not after
    assert printed.count("original gradient arriving at y") == 2


def test_which_hook_methods_tensors_have() -> None:
    # "Tensors have register_hook and register_post_accumulate_grad_hook, as the table below
    # shows"; "register_full_backward_hook ... is a method of nn.Module"
    printed = outputs(PAGE)
    table = {
        "register_hook": ("True", "False"),
        "register_post_accumulate_grad_hook": ("True", "False"),
        "register_full_backward_hook": ("False", "True"),
    }
    for name, (on_tensor, on_module) in table.items():
        row = match(rf"{name}\s+on torch\.Tensor: (\w+)\s+on nn\.Module: (\w+)", printed)
        assert row.groups() == (on_tensor, on_module)


def test_post_accumulate_hook_gets_the_tensor_after_accumulation_and_leaves_only() -> None:
    # "register_hook gets the gradient ... register_post_accumulate_grad_hook gets the tensor
    # itself, after its .grad has been accumulated, and works on leaf tensors only."
    printed = outputs(PAGE)
    first = printed.index("register_hook got the gradient tensor([5.])")
    second = printed.index("post-accumulate hook: w.grad = tensor([5.])")
    assert first < second
    assert "RuntimeError: post accumulate grad hooks cannot be registered on non-leaf" in printed


def test_forward_hook_plus_tensor_hook_gives_the_layer_output_gradient() -> None:
    # "registering a tensor hook on that output makes autograd hand us its gradient"
    # "its gradient with respect to the ReLU output is the column sum of W for every row"
    printed = outputs(PAGE)
    assert "activation shape: (3, 8)" in printed
    assert "gradient shape:   (3, 8)" in printed
    assert "matches the hand-derived gradient: True" in printed


def test_a_lambda_forward_hook_that_returns_the_handle_replaces_the_output() -> None:
    # "Written as lambda m, args, out: out.register_hook(...) it would return the handle, and a
    # forward hook that returns something other than None replaces the module's output."
    layer = nn.Linear(4, 8)
    layer.register_forward_hook(lambda m, args, out: out.register_hook(lambda g: None))
    result = layer(torch.randn(3, 4))
    assert not isinstance(result, torch.Tensor)
    assert hasattr(result, "remove")  # a RemovableHandle took the output's place


def test_solutions_state_their_answers() -> None:
    run = run_page(PAGE)
    lines = run.solutions.splitlines()
    # 1. "``x.grad`` is 576: the hook turns dz/dy = 48 into 144, and autograd multiplies
    #    that by dy/dx = 4"
    assert lines[:2] == [
        "gradient arriving at y: 48.0, tripled: 144.0",
        "dy/dx = 2*x = 4.0, x.grad = 576.0",
    ]
    # 2. "halving first gives ``(48 / 2 + 1) * 4``, so ``x.grad`` is 100; adding 1 first
    #    gives ``(48 + 1) / 2 * 4``, so 98"
    assert lines[2:4] == ["halve, then add 1: x.grad = 100.0", "add 1, then halve: x.grad = 98.0"]
    assert ((48 / 2 + 1) * 4, (48 + 1) / 2 * 4) == (100, 98)
    # 3. "The two gradients are equal where the ReLU is active and differ exactly where
    #    its output is zero (14 of 24 entries here): there ... the gradient before it is
    #    zero, while the gradient after it is not."
    assert lines[4:6] == [
        "equal where the ReLU is active: True",
        "zero before the ReLU where it is inactive: True",
    ]
    differ, total, inactive = numbers(
        r"entries that differ: (\d+) of (\d+), inactive entries: (\d+)", lines[6]
    )
    assert differ == inactive
    assert total == 24
    ns = run.namespace
    active = ns["active"]
    assert bool((ns["saved"]["gradient"][~active] != 0).all())  # so they really differ there
