"""Claims of page 6 (forward pre-hooks), checked against what the page printed."""

from __future__ import annotations

import contextlib

import torch
from sitecheck import match, number, numbers, outputs, quoted_in_both_languages, run_page
from torch import nn

PAGE = "06"


def test_pre_hook_runs_before_forward() -> None:
    # "it sees the positional arguments, but no output yet ... the output shows the order"
    printed = outputs(PAGE)
    pre = printed.index("pre-hook sees args = (tensor([1., 2.]),)")
    assert (
        pre
        < printed.index("forward runs")
        < printed.index("forward hook sees output = tensor([2., 4.])")
    )


def test_returned_arguments_replace_the_input() -> None:
    # "a pre-hook clamps the input of a linear layer to ``[0, 1]``"
    printed = outputs(PAGE)
    assert "layer saw, no hook:   tensor([[-2.0000,  0.5000,  3.0000,  0.2500]])" in printed
    assert "layer saw, with hook: tensor([[0.0000, 0.5000, 1.0000, 0.2500]])" in printed
    assert "outputs differ: True" in printed
    # "standardises each sample to mean 0 and standard deviation 1"
    mean, std = numbers(r"mean: (-?[\d.]+)  std: ([\d.]+)", printed)
    assert (mean, std) == (0.0, 1.0)


def test_ablation_changes_the_output() -> None:
    # "zeroes channel 0 (an *ablation*), and the model's output changes"
    printed = outputs(PAGE)
    before = match(r"logits before: tensor\((\[\[.*?\]\])", printed)[1]
    after = match(r"logits after:  tensor\((\[\[.*?\]\])", printed)[1]
    assert before != after


def test_lambda_returning_a_handle_becomes_the_output() -> None:
    # "that handle becomes the layer's "output""
    assert "<class 'torch.utils.hooks.RemovableHandle'>" in outputs(PAGE)


def test_with_kwargs_pre_hook() -> None:
    # "a pre-hook caps the keyword argument ``factor``" (to 2.0)
    printed = outputs(PAGE)
    assert "tensor([2., 2., 2.])" in printed
    # "Returning only the arguments is an error that says what is expected"
    error = match(r"RuntimeError: (.*)", printed)[1]
    assert "must return None or a tuple of (new_args, new_kwargs)" in error


def test_always_call() -> None:
    # "When ``forward`` raises, ordinary forward hooks never run. A hook registered
    # with ``always_call=True`` runs anyway, with ``output=None``, and then the
    # exception continues to the caller."
    printed = outputs(PAGE)
    assert (
        "good input: ['pre-hook', 'ordinary hook', 'always_call hook, output=tensor([2., 2.])']"
        in printed
    )
    assert "bad input:  ['pre-hook', 'always_call hook, output=None']" in printed
    assert "caught: input contains NaN" in printed


def test_prepend_and_order() -> None:
    # "Hooks on one module run in the order they were registered. ``prepend=True``
    # puts a new hook in front"
    printed = outputs(PAGE)
    assert "['third, prepend=True', 'first registered', 'second registered']" in printed
    # ""add 1" then "double" differs from "double" then "add 1""
    assert "add_one, then double: tensor([4.])" in printed
    assert "double, then add_one: tensor([3.])" in printed


def test_solution_values() -> None:
    # "It prints ``{'started': 2, 'finished': 1}``" and "the second hook saw at most
    # 1.00" (the same computations as the solutions, on fresh modules)

    class Fragile(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if x.isnan().any():
                msg = "input contains NaN"
                raise ValueError(msg)
            return x + 1

    fragile = Fragile()
    counts = {"started": 0, "finished": 0}
    fragile.register_forward_pre_hook(
        lambda _m, _a: counts.__setitem__("started", counts["started"] + 1)
    )
    fragile.register_forward_hook(
        lambda _m, _a, out: counts.__setitem__("finished", counts["finished"] + (out is not None)),
        always_call=True,
    )
    fragile(torch.ones(2))
    with contextlib.suppress(ValueError):
        fragile(torch.tensor([float("nan")]))
    assert counts == {"started": 2, "finished": 1}
    quoted_in_both_languages(PAGE, "{'started': 2, 'finished': 1}")

    torch.manual_seed(0)
    conv = nn.Conv2d(1, 3, kernel_size=3)
    captured: list[torch.Tensor] = []
    conv.register_forward_hook(lambda _m, _a, out: out.clamp(max=1.0))
    conv.register_forward_hook(lambda _m, _a, out: captured.append(out))
    conv(torch.randn(1, 1, 6, 6) * 10)
    assert captured[0].max().item() <= 1.0


def test_solutions_state_their_answers() -> None:
    lines = run_page(PAGE).solutions.splitlines()
    # 1. "In training mode the noise changes the output (``True``); in evaluation mode
    #    the hook returns ``None`` and the output is exactly the plain ``layer(x)``"
    assert lines[:2] == [
        "training mode, output changed: True",
        "eval mode, output unchanged:   True",
    ]
    # 2. "Without the hook the layer's largest value is 1.56; the second hook saw at
    #    most 1.00"
    largest = number(r"^largest value without the hook: ([\d.]+)$", lines[2])
    assert largest > 1.0
    assert lines[3] == "largest value the second hook saw: 1.00"
    quoted_in_both_languages(PAGE, f"{largest:.2f}")
    # 3. "It prints ``{'started': 2, 'finished': 1}``"
    assert lines[4:] == ["{'started': 2, 'finished': 1}"]
